//! `lucille serve`: Lucille-rs as a long-running service. Clients submit configs over a REST
//! API (`api`); they are validated as `lucille validate` does and queued, then run by the core's
//! runner as `lucille run` runs them (`executor`), at most `--max-concurrent-runs` at once;
//! runs, their numbers, their failures and the schedules (`schedule`) live in SQLite in the data
//! directory (`store`), so the history survives a restart (a run the last process was killed
//! in shows `interrupted`). The same server answers `/metrics`, `/healthz` and `/ready`
//! (`lucille-observe`) and serves the web console (`api::console`).

mod api;
pub mod executor;
pub mod model;
pub mod schedule;
pub mod store;
pub mod submit;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lucille_core::health::Health;
use lucille_server::{Server, ServerError};

use crate::executor::Executor;
use crate::schedule::Scheduler;
use crate::store::{Failure, Store, StoreError};

/// `lucille serve`'s options.
#[derive(Clone, Debug)]
pub struct ServiceSettings {
    pub host: String,
    pub port: u16,
    pub data_dir: PathBuf,
    /// Every API route needs `Authorization: Bearer <token>` when set.
    pub token: Option<String>,
    pub max_concurrent_runs: usize,
    pub max_body_bytes: usize,
    /// How much history to keep (`--keep-runs`, `--keep-days`).
    pub retention: executor::Retention,
}

impl Default for ServiceSettings {
    fn default() -> Self {
        ServiceSettings {
            host: "127.0.0.1".into(),
            port: 8765,
            data_dir: PathBuf::from("lucille-data"),
            token: None,
            max_concurrent_runs: 1,
            max_body_bytes: 1 << 20,
            retention: executor::Retention::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(
        "refusing to listen on {host} without a token: anyone who can reach that address could \
         run configs (which read files and write indexes) on this machine. Give a token \
         (--token-file FILE or LUCILLE_TOKEN), or listen on 127.0.0.1"
    )]
    NeedsToken { host: String },
    #[error("the token file {path}: {message}")]
    Token { path: PathBuf, message: String },
    #[error("the data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("{0}")]
    Start(String),
}

/// The token: from `--token-file` (its first line), else `LUCILLE_TOKEN`; an empty one is an
/// error, not "no token".
pub fn read_token(
    file: Option<&Path>,
    env: Option<String>,
) -> Result<Option<String>, ServiceError> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|e| ServiceError::Token {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let token = text.lines().next().unwrap_or_default().trim().to_string();
        if token.is_empty() {
            return Err(ServiceError::Token {
                path: path.to_path_buf(),
                message: "it is empty: its first line is the token".into(),
            });
        }
        return Ok(Some(token));
    }
    match env.map(|t| t.trim().to_string()) {
        Some(t) if t.is_empty() => Err(ServiceError::Invalid(
            "LUCILLE_TOKEN is set but empty: unset it, or give a token".into(),
        )),
        t => Ok(t),
    }
}

/// Whether every address `host` names is a loopback one.
fn is_loopback(host: &str, port: u16) -> bool {
    match (host, port).to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// The running service; [`Service::stop`] ends it.
pub struct Service {
    server: parking_lot::Mutex<Option<Server>>,
    executor: Arc<Executor>,
    scheduler: Arc<Scheduler>,
    stopping: Arc<AtomicBool>,
    health: Arc<Health>,
}

impl Service {
    /// Opens the history (runs left `running` become `interrupted`, runs left `queued` are
    /// queued again), starts the runner threads and the scheduler, and binds the address
    /// (an address in use is an error before anything runs).
    pub fn start(settings: &ServiceSettings, health: Arc<Health>) -> Result<Service, ServiceError> {
        if settings.token.is_none() && !is_loopback(&settings.host, settings.port) {
            return Err(ServiceError::NeedsToken {
                host: settings.host.clone(),
            });
        }
        if settings.max_concurrent_runs == 0 {
            return Err(ServiceError::Invalid(
                "--max-concurrent-runs must be at least 1".into(),
            ));
        }
        health.restart("opening the history");
        std::fs::create_dir_all(settings.data_dir.join("runs")).map_err(|source| {
            ServiceError::DataDir {
                path: settings.data_dir.clone(),
                source,
            }
        })?;
        let data_dir = settings
            .data_dir
            .canonicalize()
            .unwrap_or_else(|_| settings.data_dir.clone());
        let store = Arc::new(Store::open(&data_dir)?);
        for id in store.interrupt_running(&model::now())? {
            tracing::warn!(
                run_id = id.as_str(),
                "the run was going when the service stopped: interrupted"
            );
            recover_failures(&store, &data_dir, &id);
        }
        let executor = Executor::start(
            store.clone(),
            data_dir,
            settings.max_concurrent_runs,
            settings.retention,
        )
        .map_err(|e| ServiceError::Start(e.to_string()))?;
        let scheduler = Scheduler::start(store, executor.clone())
            .map_err(|e| ServiceError::Start(e.to_string()))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let app = Arc::new(api::App {
            executor: executor.clone(),
            scheduler: scheduler.clone(),
            token: settings.token.clone(),
            stopping: stopping.clone(),
        });
        let routes = api::router(app, health.clone(), settings.max_body_bytes);
        let server = match Server::start("service", &settings.host, settings.port, routes) {
            Ok(s) => s,
            Err(e) => {
                scheduler.stop();
                executor.shutdown();
                return Err(e.into());
            }
        };
        health.ready();
        tracing::info!("lucille serve: listening on http://{}", server.addr());
        Ok(Service {
            server: parking_lot::Mutex::new(Some(server)),
            executor,
            scheduler,
            stopping,
            health,
        })
    }

    pub fn addr(&self) -> Option<SocketAddr> {
        self.server.lock().as_ref().map(Server::addr)
    }

    /// Whether any run is going on.
    pub fn busy(&self) -> bool {
        self.executor.busy()
    }

    /// Stops the running runs at once (a second Ctrl-C), after [`Service::stop`] began.
    pub fn force(&self) {
        self.executor.force();
    }

    /// Stops: no new schedule fires, running runs drain and end `interrupted` (queued ones
    /// stay queued for the next start), then the server stops.
    pub fn stop(&self) {
        self.health.draining();
        self.stopping.store(true, Ordering::SeqCst);
        self.scheduler.stop();
        self.executor.shutdown();
        let server = self.server.lock().take();
        drop(server);
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if self.server.lock().is_some() {
            self.stop();
        }
    }
}

/// A run the last process was killed in: its FAILs not yet in the store, from its
/// dead-letter file (the file is appended as they happen; the store is written each second).
fn recover_failures(store: &Store, data_dir: &Path, id: &str) {
    let secrets = match store.run_config(id) {
        Ok(Some(c)) => lucille_core::config::secrets(&c.config),
        _ => Vec::new(),
    };
    let path = data_dir.join("runs").join(id).join("dead-letter.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let failures: Vec<Failure> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let reason = lucille_core::config::scrub(v.get("error")?.as_str()?, &secrets);
            Some(Failure {
                doc_id: v.get("id")?.as_str()?.to_string(),
                connector: String::new(),
                stage: lucille_core::stage::failed_stage(&reason),
                reason,
            })
        })
        .collect();
    if let Err(e) = store.add_failures(id, &failures) {
        tracing::warn!(run_id = id, "cannot recover its failures: {e}");
    }
}
