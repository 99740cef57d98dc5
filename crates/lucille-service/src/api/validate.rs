//! `POST /api/validate {"config": HOCON}`: every problem of a config, as `lucille validate`
//! lists them; nothing is run.

use std::sync::Arc;

use lucille_server::axum::body::Bytes;
use lucille_server::axum::extract::rejection::BytesRejection;
use lucille_server::axum::extract::State;
use lucille_server::axum::http::StatusCode;
use lucille_server::axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{blocking, body_object, json_response, source_of, App};
use crate::submit;

pub async fn validate(
    State(_app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let source = match body_object(body).and_then(|b| source_of(&b)) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let checked = blocking(move || match submit::load(&source) {
        Err(problems) => (problems, Vec::new()),
        Ok(loaded) => match submit::validate(&loaded) {
            Ok(_) => (Vec::new(), Vec::new()),
            Err(problems) => (problems, loaded.secrets),
        },
    })
    .await;
    match checked {
        Ok((problems, secrets)) => json_response(
            StatusCode::OK,
            &json!({
                "valid": problems.is_empty(),
                "errors": problems.iter().map(|p| p.to_json(&secrets)).collect::<Vec<Value>>(),
            }),
        ),
        Err(r) => r.into_response(),
    }
}
