//! The REST API (interface.md, "Service"), one file per resource, and what every route shares:
//! JSON bodies and errors, the body cap (413), the bearer token (401), query parameters.

mod console;
mod events;
mod indexes;
mod runs;
mod schedules;
mod validate;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use lucille_server::axum::body::Bytes;
use lucille_server::axum::extract::rejection::BytesRejection;
use lucille_server::axum::extract::{DefaultBodyLimit, Request, State};
use lucille_server::axum::http::{header, HeaderValue, StatusCode};
use lucille_server::axum::middleware::{self, Next};
use lucille_server::axum::response::{IntoResponse, Response};
use lucille_server::axum::routing::{get, post};
use lucille_server::axum::Router;
use serde_json::{json, Value};

use crate::executor::{Executor, RunError};
use crate::model::Mode;
use crate::schedule::{ScheduleError, Scheduler};
use crate::store::StoreError;
use crate::submit::{Problem, Source};

/// What the routes share.
pub struct App {
    pub executor: Arc<Executor>,
    pub scheduler: Arc<Scheduler>,
    /// `--token-file` / `LUCILLE_TOKEN`: every route but the probes and the console's static
    /// files needs it.
    pub token: Option<String>,
    /// Set when the service stops: progress streams end.
    pub stopping: Arc<AtomicBool>,
}

/// The service's routes: the API, the console, and the observability endpoint's.
pub fn router(app: Arc<App>, health: Arc<lucille_core::health::Health>, max_body: usize) -> Router {
    let api = Router::new()
        .route("/api/runs", post(runs::submit).get(runs::list))
        .route("/api/runs/{id}", get(runs::get))
        .route("/api/runs/{id}/cancel", post(runs::cancel))
        .route("/api/runs/{id}/events", get(events::stream))
        .route("/api/runs/{id}/failures", get(runs::failures))
        .route("/api/runs/{id}/replay", post(runs::replay))
        .route("/api/runs/{id}/timeline", get(runs::timeline))
        .route("/api/indexes", get(indexes::list))
        .route("/api/indexes/{name}/search", get(indexes::search))
        .route("/api/validate", post(validate::validate))
        .route(
            "/api/schedules",
            post(schedules::create).get(schedules::list),
        )
        .route(
            "/api/schedules/{id}",
            lucille_server::axum::routing::delete(schedules::delete),
        )
        .route("/api/schedules/{id}/pause", post(schedules::pause))
        .route("/api/schedules/{id}/resume", post(schedules::resume))
        .route("/", get(console::index))
        .route("/console/{file}", get(console::asset))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route") })
        .with_state(app.clone());
    api.merge(lucille_observe::routes(health))
        .layer(middleware::from_fn_with_state(app, authorize))
        .layer(DefaultBodyLimit::max(max_body))
}

/// Routes anyone may call: the probes (for an orchestrator) and the console's static files (a
/// browser cannot send a header with a page load; the console asks for the token and sends it
/// with every API call).
fn is_open(path: &str) -> bool {
    matches!(path, "/healthz" | "/ready" | "/") || path.starts_with("/console/")
}

async fn authorize(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let Some(token) = &app.token else {
        return next.run(req).await;
    };
    if is_open(req.uri().path()) {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme is case-insensitive (RFC 9110).
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    match given {
        Some(g) if same_token(g.as_bytes(), token.as_bytes()) => next.run(req).await,
        Some(_) => unauthorized("the token is wrong"),
        None => unauthorized("this service needs a token: send Authorization: Bearer <token>"),
    }
}

fn unauthorized(message: &str) -> Response {
    let mut r = error(StatusCode::UNAUTHORIZED, message);
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// Compares a given token with the expected one in time that depends only on the expected
/// token's length: every byte of it is compared, whatever was given (`subtle`'s constant-time
/// equality over the given bytes padded or cut to that length, and the lengths compared the
/// same way).
fn same_token(given: &[u8], expected: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    let padded: Vec<u8> = (0..expected.len())
        .map(|i| given.get(i).copied().unwrap_or(0))
        .collect();
    let lengths = (given.len() as u64).ct_eq(&(expected.len() as u64));
    bool::from(padded.ct_eq(expected) & lengths)
}

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `{"error": message}`.
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, &json!({ "error": message }))
}

/// `400 {"errors": [...]}`, secrets hidden.
pub(crate) fn problems(problems: &[Problem], secrets: &[String]) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({ "errors": problems.iter().map(|p| p.to_json(secrets)).collect::<Vec<_>>() }),
    )
}

/// Why a request is refused before any work: `{"error"}` with a status, or a list of
/// problems (400).
pub(crate) enum Refusal {
    Error(StatusCode, String),
    Problems(Vec<Problem>),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Error(status, m) => error(status, &m),
            Refusal::Problems(p) => problems(&p, &[]),
        }
    }
}

/// A request's body as a JSON object; 413 over the cap, 400 when it is not an object.
pub(crate) fn body_object(
    body: Result<Bytes, BytesRejection>,
) -> Result<serde_json::Map<String, Value>, Refusal> {
    let bytes = body.map_err(|e| {
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            Refusal::Error(
                status,
                "the request body is larger than --max-body-bytes".into(),
            )
        } else {
            Refusal::Error(status, e.body_text())
        }
    })?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Refusal::Error(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object".into(),
        )),
        Err(e) => Err(Refusal::Error(
            StatusCode::BAD_REQUEST,
            format!("the body is not JSON: {e}"),
        )),
    }
}

/// `config` (HOCON text) or `configPath`, exactly one.
pub(crate) fn source_of(body: &serde_json::Map<String, Value>) -> Result<Source, Refusal> {
    match (body.get("config"), body.get("configPath")) {
        (Some(Value::String(text)), None) => Ok(Source::Text(text.clone())),
        (None, Some(Value::String(path))) => Ok(Source::Path(crate::submit::absolute(
            std::path::Path::new(path),
        ))),
        (Some(_), Some(_)) => Err(field_error("config", "give config or configPath, not both")),
        (None, None) => Err(field_error(
            "config",
            "give config (HOCON text) or configPath (a file the service can read)",
        )),
        (Some(_), None) => Err(field_error("config", "must be a string of HOCON text")),
        (None, Some(_)) => Err(field_error("configPath", "must be a string")),
    }
}

/// `mode`: local (default) or test.
pub(crate) fn mode_of(body: &serde_json::Map<String, Value>) -> Result<Mode, Refusal> {
    match body.get("mode") {
        None | Some(Value::Null) => Ok(Mode::Local),
        Some(Value::String(m)) => Mode::parse(m).ok_or_else(|| {
            field_error(
                "mode",
                &format!("{m:?} is not a mode the service runs: \"local\" or \"test\""),
            )
        }),
        Some(_) => Err(field_error("mode", "must be \"local\" or \"test\"")),
    }
}

/// An optional string field.
pub(crate) fn string_of(
    body: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<String>, Refusal> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(field_error(key, "must be a string")),
    }
}

pub(crate) fn field_error(path: &str, message: &str) -> Refusal {
    Refusal::Problems(vec![Problem::new(path, message)])
}

/// `limit` and `offset` from a query string (defaults 50 and 0; limit at most 1000).
pub(crate) fn page(query: Option<&str>) -> Result<(u64, u64), Refusal> {
    let mut limit = 50;
    let mut offset = 0;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let n = || {
            v.parse::<u64>().map_err(|_| {
                Refusal::Error(
                    StatusCode::BAD_REQUEST,
                    format!("{k} must be a whole number, not {v:?}"),
                )
            })
        };
        match k {
            "limit" => limit = n()?.clamp(1, 1000),
            "offset" => offset = n()?,
            _ => {}
        }
    }
    Ok((limit, offset))
}

/// A store failure: 500, logged.
pub(crate) fn store_error(e: &StoreError) -> Response {
    tracing::error!("{e}");
    if e.is_storage_failure() {
        // 507: the request was fine, the service's disk is not; the history it has is kept.
        return error(
            StatusCode::INSUFFICIENT_STORAGE,
            &format!(
                "the service cannot write to its data directory ({e}): free space there (lucille \
                 serve --data-dir) and try again; the runs it has are kept"
            ),
        );
    }
    error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
}

pub(crate) fn run_error(e: RunError) -> Response {
    match e {
        RunError::Invalid(p, secrets) => problems(&p, &secrets),
        RunError::NotFound(id) => error(StatusCode::NOT_FOUND, &format!("no run {id}")),
        RunError::Conflict(m) => error(StatusCode::CONFLICT, &m),
        RunError::Store(e) => store_error(&e),
        RunError::Io(m) => {
            tracing::error!("{m}");
            error(StatusCode::INTERNAL_SERVER_ERROR, &m)
        }
    }
}

pub(crate) fn schedule_error(e: ScheduleError) -> Response {
    match e {
        ScheduleError::Invalid(p, secrets) => problems(&p, &secrets),
        ScheduleError::NotFound(id) => error(StatusCode::NOT_FOUND, &format!("no schedule {id}")),
        ScheduleError::Store(e) => store_error(&e),
        ScheduleError::Io(m) => error(StatusCode::INTERNAL_SERVER_ERROR, &m),
    }
}

/// Runs blocking work (loading and validating a config may read files, import Python
/// modules, open a model) off the server's one thread.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        Refusal::Error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the request failed: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::same_token;

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token(b"s3cret-token", b"s3cret-token"));
        assert!(!same_token(b"s3cret-toke", b"s3cret-token"));
        assert!(!same_token(b"s3cret-token!", b"s3cret-token"));
        assert!(!same_token(b"", b"s3cret-token"));
        assert!(!same_token(b"S3cret-token", b"s3cret-token"));
    }
}
