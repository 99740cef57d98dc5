//! `GET /metrics`: the process's registry in the Prometheus text format.

use std::sync::Once;

use lucille_server::axum::http::header::CONTENT_TYPE;
use lucille_server::axum::http::StatusCode;
use lucille_server::axum::response::{IntoResponse, Response};
use prometheus::{Encoder, TextEncoder};

/// Adds the `process_*` metrics to the process's registry, once.
pub(crate) fn register_process_collector() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let collector = prometheus::process_collector::ProcessCollector::for_self();
        if let Err(e) = lucille_core::metrics::global().register(Box::new(collector)) {
            tracing::warn!("the process_* metrics are not available: {e}");
        }
    });
}

/// The process's metrics as the text a scrape gets.
pub fn render() -> Result<String, prometheus::Error> {
    let families = lucille_core::metrics::global().gather();
    let mut text = Vec::new();
    TextEncoder::new().encode(&families, &mut text)?;
    // The encoder writes UTF-8 (names, help and label values are Rust strings).
    Ok(String::from_utf8_lossy(&text).into_owned())
}

pub(crate) async fn metrics() -> Response {
    match render() {
        Ok(text) => ([(CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the metrics: {e}\n"),
        )
            .into_response(),
    }
}
