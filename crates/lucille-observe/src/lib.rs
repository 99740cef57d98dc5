//! Observability: the OTLP trace exporter (`otlp`: the spans `lucille_core::trace` makes,
//! sent to a collector) and the endpoint every long-running Lucille-rs process serves when `metrics.port` (or
//! `--metrics-port`) is set: `GET /metrics` (the process's metrics, `lucille_core::metrics`,
//! plus the standard `process_*` ones, in the Prometheus text format 0.0.4), `GET /healthz`
//! (200 while the process answers) and `GET /ready` (200 once its [`Health`] says ready, else
//! 503 with the reason as JSON). The routes are also what the service mounts on its own
//! server (`routes`).

mod exposition;
pub mod otlp;
mod probes;

use std::sync::Arc;

use lucille_core::health::Health;
use lucille_core::runner::MetricsSettings;
use lucille_server::axum::routing::get;
use lucille_server::axum::Router;
use lucille_server::{Server, ServerError};

pub use exposition::render;

/// `/metrics`, `/healthz` and `/ready` for a process whose readiness is `health`.
pub fn routes(health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(exposition::metrics))
        .route("/healthz", get(probes::healthz))
        .route("/ready", get(probes::ready))
        .with_state(health)
}

/// The running endpoint; stops when dropped.
pub struct Endpoint {
    server: Server,
}

impl Endpoint {
    /// Binds `settings`' address and serves the routes there. A port in use (or an address
    /// that does not resolve) is an error, before the process does any work.
    pub fn start(settings: &MetricsSettings, health: Arc<Health>) -> Result<Endpoint, ServerError> {
        exposition::register_process_collector();
        let server = Server::start("metrics", &settings.host, settings.port, routes(health))?;
        tracing::info!(
            "serving metrics at http://{}/metrics (health: /healthz, /ready)",
            server.addr()
        );
        Ok(Endpoint { server })
    }

    /// The address it listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }
}

#[cfg(test)]
mod tests;
