//! `/api/runs`: submit, list, read, cancel, failures, replay.

use std::sync::Arc;

use lucille_server::axum::body::Bytes;
use lucille_server::axum::extract::rejection::BytesRejection;
use lucille_server::axum::extract::{Path, RawQuery, State};
use lucille_server::axum::http::StatusCode;
use lucille_server::axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{
    blocking, body_object, error, json_response, mode_of, page, run_error, source_of, store_error,
    string_of, App,
};
use crate::executor::Submission;
use crate::model::RunView;

fn created(run: &RunView) -> Response {
    json_response(
        StatusCode::CREATED,
        &json!({ "id": run.id, "state": run.state.as_str() }),
    )
}

/// `POST /api/runs {"config" | "configPath", "mode"?, "name"?}`.
pub async fn submit(State(app): State<Arc<App>>, body: Result<Bytes, BytesRejection>) -> Response {
    let request = match body_object(body).and_then(|b| {
        Ok(Submission {
            source: source_of(&b)?,
            mode: mode_of(&b)?,
            name: string_of(&b, "name")?,
            schedule_id: None,
        })
    }) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let executor = app.executor.clone();
    match blocking(move || executor.submit(request)).await {
        Ok(Ok(run)) => created(&run),
        Ok(Err(e)) => run_error(e),
        Err(r) => r.into_response(),
    }
}

/// `GET /api/runs?limit=&offset=`: newest first.
pub async fn list(State(app): State<Arc<App>>, RawQuery(query): RawQuery) -> Response {
    let (limit, offset) = match page(query.as_deref()) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    match app.executor.list(limit, offset) {
        Ok((runs, total)) => json_response(
            StatusCode::OK,
            &json!({
                "runs": runs.iter().map(RunView::to_json).collect::<Vec<Value>>(),
                "total": total,
            }),
        ),
        Err(e) => store_error(&e),
    }
}

/// `GET /api/runs/{id}`.
pub async fn get(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    match app.executor.view(&id) {
        Ok(Some(run)) => json_response(StatusCode::OK, &run.to_json()),
        Ok(None) => error(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(e) => store_error(&e),
    }
}

/// `POST /api/runs/{id}/cancel`: 202 with the run (a running one drains, then ends
/// `cancelled`).
pub async fn cancel(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    match app.executor.cancel(&id) {
        Ok(run) => json_response(StatusCode::ACCEPTED, &run.to_json()),
        Err(e) => run_error(e),
    }
}

/// `GET /api/runs/{id}/failures?limit=&offset=`: the documents it FAILed, in order.
pub async fn failures(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let (limit, offset) = match page(query.as_deref()) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    match app.executor.view(&id) {
        Ok(Some(_)) => {}
        Ok(None) => return error(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(e) => return store_error(&e),
    }
    match app.executor.failures(&id, limit, offset) {
        Ok((failures, total)) => json_response(
            StatusCode::OK,
            &json!({
                "failures": failures.iter().map(|f| json!({
                    "id": f.doc_id, "connector": f.connector, "stage": f.stage, "reason": f.reason,
                })).collect::<Vec<Value>>(),
                "total": total,
            }),
        ),
        Err(e) => store_error(&e),
    }
}

/// `GET /api/runs/{id}/timeline`: its progress samples, oldest first, each with `t`, the
/// seconds since the run started (since the first sample if it has no start).
pub async fn timeline(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let started = match app.executor.view(&id) {
        Ok(Some(view)) => view.started_at,
        Ok(None) => return error(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(e) => return store_error(&e),
    };
    let points = match app.executor.timeline(&id) {
        Ok(p) => p,
        Err(e) => return store_error(&e),
    };
    let start_ms = started
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(&s).ok())
        .map(|t| t.timestamp_millis())
        .or_else(|| points.first().map(|p| p.at_ms))
        .unwrap_or(0);
    json_response(
        StatusCode::OK,
        &json!({
            "points": points.iter().map(|p| json!({
                "t": (p.at_ms - start_ms) as f64 / 1000.0,
                "connector": p.connector,
                "published": p.published,
                "succeeded": p.succeeded,
                "failed": p.failed,
                "dropped": p.dropped,
            })).collect::<Vec<Value>>(),
        }),
    )
}

/// `POST /api/runs/{id}/replay`: a new run of exactly the documents it failed.
pub async fn replay(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let executor = app.executor.clone();
    match blocking(move || executor.replay(&id)).await {
        Ok(Ok(run)) => created(&run),
        Ok(Err(e)) => run_error(e),
        Err(r) => r.into_response(),
    }
}
