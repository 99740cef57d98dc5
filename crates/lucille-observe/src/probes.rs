//! `GET /healthz` and `GET /ready`, for a supervisor (Kubernetes probes, systemd, a load
//! balancer).

use std::sync::Arc;

use lucille_core::health::Health;
use lucille_server::axum::extract::State;
use lucille_server::axum::http::header::CONTENT_TYPE;
use lucille_server::axum::http::StatusCode;
use lucille_server::axum::response::{IntoResponse, Response};

fn json(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Alive: the process answers.
pub(crate) async fn healthz() -> Response {
    json(StatusCode::OK, serde_json::json!({"status": "alive"}))
}

/// Ready, or 503 with the reason (still validating, connecting, or draining).
pub(crate) async fn ready(State(health): State<Arc<Health>>) -> Response {
    match health.status() {
        Ok(()) => json(StatusCode::OK, serde_json::json!({"status": "ready"})),
        Err(reason) => json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({ "reason": reason.to_string() }),
        ),
    }
}
