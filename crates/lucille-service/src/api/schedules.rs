//! `/api/schedules`: create, list, pause, resume, delete.

use std::sync::Arc;

use lucille_server::axum::body::Bytes;
use lucille_server::axum::extract::rejection::BytesRejection;
use lucille_server::axum::extract::{Path, State};
use lucille_server::axum::http::StatusCode;
use lucille_server::axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{
    blocking, body_object, field_error, json_response, mode_of, schedule_error, source_of,
    string_of, App,
};
use crate::schedule::NewSchedule;

/// `POST /api/schedules {"config" | "configPath", "cron"? | "everySecs"?, "name"?, "mode"?}`.
pub async fn create(State(app): State<Arc<App>>, body: Result<Bytes, BytesRejection>) -> Response {
    let request = match body_object(body).and_then(|b| {
        let every_secs = match b.get("everySecs") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| field_error("everySecs", "must be a whole number of seconds"))?,
            ),
        };
        Ok(NewSchedule {
            source: source_of(&b)?,
            mode: mode_of(&b)?,
            name: string_of(&b, "name")?,
            cron: string_of(&b, "cron")?,
            every_secs,
        })
    }) {
        Ok(r) => r,
        Err(r) => return r.into_response(),
    };
    let scheduler = app.scheduler.clone();
    match blocking(move || scheduler.create(request)).await {
        Ok(Ok(s)) => json_response(StatusCode::CREATED, &json!({ "id": s.id })),
        Ok(Err(e)) => schedule_error(e),
        Err(r) => r.into_response(),
    }
}

pub async fn list(State(app): State<Arc<App>>) -> Response {
    match app.scheduler.list() {
        Ok(all) => json_response(StatusCode::OK, &json!({ "schedules": all })),
        Err(e) => schedule_error(e),
    }
}

pub async fn pause(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    paused(&app, &id, true)
}

pub async fn resume(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    paused(&app, &id, false)
}

fn paused(app: &App, id: &str, paused: bool) -> Response {
    match app.scheduler.set_paused(id, paused) {
        Ok(s) => json_response(StatusCode::OK, &json!(s)),
        Err(e) => schedule_error(e),
    }
}

pub async fn delete(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    match app.scheduler.delete(&id) {
        Ok(()) => json_response(StatusCode::OK, &json!({ "id": id, "deleted": true })),
        Err(e) => schedule_error(e),
    }
}
