//! `lucille serve` (`lucille.run_service`): the service of `lucille-service` in this process,
//! with the Python hooks installed (configs may name Python stages, connectors and indexers),
//! until Ctrl-C / SIGTERM (which the CLI turns into KeyboardInterrupt): the first stops it
//! gracefully (running runs drain and end `interrupted`), a second stops the runs now.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use lucille_service::{read_token, Service, ServiceError, ServiceSettings};

fn service_err(e: ServiceError) -> PyErr {
    match e {
        ServiceError::Server(e) => PyOSError::new_err(e.to_string()),
        ServiceError::DataDir { .. } | ServiceError::Token { .. } => {
            PyOSError::new_err(e.to_string())
        }
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Runs the service until interrupted (`data_dir` None: ./lucille-data). `on_ready(url)` is called once it listens (the CLI
/// prints the address).
#[pyfunction]
#[pyo3(signature = (*, host = "127.0.0.1", port = 8765, data_dir = None, token_file = None, max_concurrent_runs = 1, max_body_bytes = 1_048_576, keep_runs = 1000, keep_days = 30, on_ready = None))]
#[allow(clippy::too_many_arguments)]
pub fn run_service(
    py: Python<'_>,
    host: &str,
    port: u16,
    data_dir: Option<PathBuf>,
    token_file: Option<PathBuf>,
    max_concurrent_runs: usize,
    max_body_bytes: usize,
    keep_runs: u64,
    keep_days: u64,
    on_ready: Option<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let token = read_token(token_file.as_deref(), std::env::var("LUCILLE_TOKEN").ok())
        .map_err(service_err)?;
    let settings = ServiceSettings {
        host: host.to_string(),
        port,
        data_dir: data_dir.unwrap_or_else(|| PathBuf::from("lucille-data")),
        token,
        max_concurrent_runs,
        max_body_bytes,
        retention: lucille_service::executor::Retention {
            keep_runs,
            keep_days,
        },
    };
    let health = super::run::process_health();
    let service = Arc::new(
        py.detach(|| Service::start(&settings, health))
            .map_err(service_err)?,
    );
    if let (Some(f), Some(addr)) = (&on_ready, service.addr()) {
        f.call1((format!("http://{addr}"),))?;
    }
    let mut stopping: Option<std::thread::JoinHandle<()>> = None;
    loop {
        let ended = py.detach(|| {
            std::thread::sleep(Duration::from_millis(100));
            stopping.as_ref().is_some_and(|t| t.is_finished())
        });
        if ended {
            break;
        }
        if py.check_signals().is_err() || super::logging::take_interrupt() {
            match &stopping {
                None => {
                    tracing::warn!(
                        "stopping: running runs drain and end interrupted; queued runs wait for \
                         the next start (interrupt again to stop the runs now)"
                    );
                    let s = service.clone();
                    stopping = Some(
                        std::thread::Builder::new()
                            .name("lucille-service-stop".into())
                            .spawn(move || s.stop())
                            .map_err(|e| PyRuntimeError::new_err(format!("cannot stop: {e}")))?,
                    );
                }
                Some(_) => {
                    tracing::warn!("interrupted again: stopping the runs now");
                    service.force();
                }
            }
        }
    }
    if let Some(t) = stopping {
        py.detach(|| t.join())
            .map_err(|_| PyRuntimeError::new_err("stopping the service panicked"))?;
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_service, m)?)?;
    Ok(())
}
