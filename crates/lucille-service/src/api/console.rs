//! The web console: one page and its script and style, built into the binary (no CDN, no
//! Node toolchain, nothing fetched at run time).

use lucille_server::axum::extract::Path;
use lucille_server::axum::http::{header, StatusCode};
use lucille_server::axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("../console/index.html");
const SCRIPT: &str = include_str!("../console/app.js");
const STYLE: &str = include_str!("../console/style.css");

/// The console's pages are static: the data comes from the API, with the token.
const SECURITY: [(header::HeaderName, &str); 3] = [
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::X_FRAME_OPTIONS, "DENY"),
    (
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; frame-ancestors 'none'",
    ),
];

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut r = (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response();
    for (k, v) in SECURITY {
        if let Ok(v) = v.parse() {
            r.headers_mut().insert(k, v);
        }
    }
    r
}

pub async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

pub async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "app.js" => page("text/javascript; charset=utf-8", SCRIPT),
        "style.css" => page("text/css; charset=utf-8", STYLE),
        _ => super::error(StatusCode::NOT_FOUND, "no such file"),
    }
}
