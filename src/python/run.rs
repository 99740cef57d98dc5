//! `lucille.run(...)`, `validate`, `render`, `RunResult`, and Python connectors
//! (`lucille.Connector` subclasses named `module:Class`, with a `Publisher` to publish into).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use super::convert::{config_err, py_to_value, ConfigError};
use super::document::PyDocument;
use super::stage::{config_dict, describe_py_err, instantiate};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigError as CfgError};
use crate::connector::{Common, Connector, ConnectorError, PythonConnectorFactory};
use crate::document::Document;
use crate::health::Health;
use crate::runner::{self, ConnectorStatus, RunMode, RunOptions, RunResult};

fn overrides_list(overrides: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Some(o) = overrides else {
        return Ok(Vec::new());
    };
    if let Ok(d) = o.cast::<PyDict>() {
        return d
            .iter()
            .map(|(k, v)| Ok((k.extract::<String>()?, v.str()?.to_cow()?.into_owned())))
            .collect();
    }
    let items: Vec<String> = o.extract()?;
    items
        .into_iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.to_string())),
            None => Err(PyValueError::new_err(format!(
                "override {s:?} must be path=value"
            ))),
        })
        .collect()
}

/// Resolves the three ways of giving a config into (config, base dir).
fn load(
    py: Python<'_>,
    path: Option<PathBuf>,
    config: Option<&Bound<'_, PyDict>>,
    hocon: Option<String>,
    overrides: &[(String, String)],
    base_dir: Option<PathBuf>,
) -> PyResult<(Value, Option<PathBuf>)> {
    load_checked(py, path, config, hocon, overrides, base_dir)?.map_err(config_err)
}

/// As [`load`], with the config's own errors (HOCON syntax, includes) kept as a list.
fn load_checked(
    py: Python<'_>,
    path: Option<PathBuf>,
    config: Option<&Bound<'_, PyDict>>,
    hocon: Option<String>,
    overrides: &[(String, String)],
    base_dir: Option<PathBuf>,
) -> PyResult<Result<(Value, Option<PathBuf>), crate::config::ConfigErrors>> {
    match (path, config, hocon) {
        (Some(p), None, None) => Ok(py.detach(|| runner::load_config(&p, overrides))),
        (None, Some(c), None) => {
            let mut v = py_to_value(c.as_any(), "config")?;
            for (k, val) in overrides {
                let parsed = runner::parse_config_text(&format!("v = {val}"), None, &[])
                    .ok()
                    .and_then(|mut o| o.as_object_mut().and_then(|m| m.remove("v")))
                    .unwrap_or(Value::String(val.clone()));
                crate::config::set_path(&mut v, k, parsed);
            }
            Ok(Ok((v, base_dir)))
        }
        (None, None, Some(text)) => {
            let dir = base_dir.clone();
            Ok(py
                .detach(|| runner::parse_config_text(&text, dir.as_deref(), overrides))
                .map(|v| (v, base_dir)))
        }
        _ => Err(PyValueError::new_err(
            "give exactly one of: a config path, config=dict, or hocon=str",
        )),
    }
}

/// One connector's part of a run: its name, status and document counts.
#[pyclass(name = "ConnectorResult", module = "lucille._lucille", frozen, get_all)]
pub struct PyConnectorResult {
    /// The connector's configured name.
    name: String,
    /// "complete", "failed", ...: how the connector ended.
    status: String,
    /// Why the connector failed, or None.
    message: Option<String>,
    /// Documents the connector published.
    published: u64,
    /// Documents (children included) that reached FINISH.
    succeeded: u64,
    /// Documents (children included) that reached FAIL.
    failed: u64,
    /// Documents (children included) that were dropped.
    dropped: u64,
    /// Documents `skipUnchanged` found unchanged (0 when the key is off).
    unchanged: u64,
    /// How long the connector's run took, in seconds.
    seconds: f64,
}

#[pymethods]
impl PyConnectorResult {
    fn __repr__(&self) -> String {
        format!(
            "ConnectorResult(name={:?}, status={:?}, published={}, succeeded={}, failed={}, dropped={}, unchanged={})",
            self.name, self.status, self.published, self.succeeded, self.failed, self.dropped, self.unchanged
        )
    }
}

/// What `lucille.run` returns: the status, counts, summary and, in test mode, the documents
/// and events.
#[pyclass(name = "RunResult", module = "lucille._lucille", frozen)]
pub struct PyRunResult {
    result: RunResult,
    mode: RunMode,
    interrupted: bool,
}

#[pymethods]
impl PyRunResult {
    /// "Success" or "Failure".
    #[getter]
    fn status(&self) -> &'static str {
        self.result.status()
    }
    /// The run's id, stamped on every document.
    #[getter]
    fn run_id(&self) -> &str {
        &self.result.run_id
    }
    /// Documents the connectors published.
    #[getter]
    fn published(&self) -> u64 {
        self.result.totals().published
    }
    /// Documents (children included) that reached FINISH.
    #[getter]
    fn succeeded(&self) -> u64 {
        self.result.totals().succeeded
    }
    /// Documents (children included) that reached FAIL.
    #[getter]
    fn failed(&self) -> u64 {
        self.result.totals().failed
    }
    /// Documents (children included) that were dropped.
    #[getter]
    fn dropped(&self) -> u64 {
        self.result.totals().dropped
    }
    /// Documents `skipUnchanged` found unchanged since the last run (0 when the key is off):
    /// counted as published, not as dropped.
    #[getter]
    fn unchanged(&self) -> u64 {
        self.result.totals().unchanged
    }
    /// How long the run took, in seconds.
    #[getter]
    fn seconds(&self) -> f64 {
        self.result.seconds
    }
    /// The RUN SUMMARY text, as logged.
    #[getter]
    fn summary(&self) -> &str {
        &self.result.summary
    }
    /// True when the run was stopped by Ctrl-C / SIGTERM.
    #[getter]
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// One ConnectorResult per connector, in run order.
    #[getter]
    fn connectors(&self) -> Vec<PyConnectorResult> {
        self.result
            .connectors
            .iter()
            .map(|c| PyConnectorResult {
                name: c.name.clone(),
                status: c.status_text().to_string(),
                message: match &c.status {
                    ConnectorStatus::Failed(m) => Some(m.clone()),
                    _ => None,
                },
                published: c.published,
                succeeded: c.succeeded,
                failed: c.failed,
                dropped: c.dropped,
                unchanged: c.unchanged,
                seconds: c.seconds,
            })
            .collect()
    }
    /// Test mode: the documents the indexer received, in order.
    #[getter]
    fn documents(&self) -> PyResult<Vec<PyDocument>> {
        self.test_only()?;
        Ok(runner::test_history(&self.result)
            .0
            .into_iter()
            .map(PyDocument::new_from)
            .collect())
    }
    /// Test mode: (doc_id, type, message) for every event, in order.
    #[getter]
    fn events(&self) -> PyResult<Vec<(String, &'static str, Option<String>)>> {
        self.test_only()?;
        Ok(runner::test_history(&self.result)
            .1
            .into_iter()
            .map(|e| (e.doc_id, e.kind.as_str(), e.message))
            .collect())
    }
    /// Per-stage metrics of every pipeline run: list of dicts.
    #[getter]
    fn stage_metrics<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for (pipeline, metrics) in &self.result.stage_metrics {
            for m in metrics {
                let d = super::pipeline::metrics_dict(py, m)?;
                d.set_item("pipeline", pipeline)?;
                out.push(d);
            }
        }
        Ok(out)
    }
    /// Test mode: one dict per document the indexer received, in order (`id`, then the
    /// fields).
    fn to_records<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("lucille._notebook")?
            .call_method1("records", (slf,))
    }
    /// Test mode: `to_records()` as a pandas DataFrame (ImportError when pandas is absent).
    fn to_pandas<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("lucille._notebook")?
            .call_method1("to_pandas", (slf,))
    }
    /// The status, totals and per-connector table as HTML, for notebooks.
    fn _repr_html_(slf: &Bound<'_, Self>) -> PyResult<String> {
        slf.py()
            .import("lucille._notebook")?
            .call_method1("run_result_html", (slf,))?
            .extract()
    }
    fn __repr__(&self) -> String {
        let t = self.result.totals();
        format!(
            "RunResult(status={:?}, published={}, succeeded={}, failed={}, dropped={})",
            self.result.status(),
            t.published,
            t.succeeded,
            t.failed,
            t.dropped
        )
    }
}

impl PyRunResult {
    fn test_only(&self) -> PyResult<()> {
        if self.mode == RunMode::Test {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(
                "documents and events are recorded only in mode=\"test\"",
            ))
        }
    }
}

/// The last progress a run reported: connector name and published, succeeded, failed, dropped.
type Snapshot = (String, [u64; 4]);

fn py_progress(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("lucille._notebook")?.call_method0("Progress")
}

/// Hands the latest progress (if any since the last call) to the Python progress display.
fn show_progress(
    bar: &Bound<'_, PyAny>,
    latest: &parking_lot::Mutex<Option<Snapshot>>,
) -> PyResult<()> {
    let Some((name, [published, succeeded, failed, dropped])) = latest.lock().take() else {
        return Ok(());
    };
    bar.call_method1("update", (name, published, succeeded, failed, dropped))?;
    Ok(())
}

/// Runs a config (a path, `config=dict` or `hocon=str`) and returns its `RunResult`.
///
/// `mode="test"` records what the indexer received (`result.documents`, `result.events`).
/// `stages=[...]` (lucille.Stage objects, lucille.stages.* stages or config dicts) replace the
/// stages of the config's one pipeline, `connector=` becomes the only connector and `indexer=`
/// the indexer, so a notebook can run objects defined in a cell; with only objects, no config
/// is needed. An object is used as it is, shared by every worker thread: its start() runs once
/// before the first document and stop() once after the last.
///
/// `replay="dead-letter.jsonl"` runs the documents of a dead-letter file (what
/// `worker.deadLetterPath` collected) again through the config's pipelines and indexer, in
/// place of its connectors (`lucille replay`).
///
/// The GIL is released while the run goes on. Ctrl-C (a notebook's interrupt, or SIGTERM, which
/// the CLI turns into KeyboardInterrupt) stops it gracefully and returns the partial result; a
/// second one stops at once. Progress: a line on a terminal, a tqdm bar (plain text without
/// tqdm) in a notebook or with `progress=True`; `progress=False` shows none.
#[pyfunction]
#[pyo3(signature = (path = None, *, config = None, hocon = None, mode = "local", overrides = None, base_dir = None, progress = None, stages = None, connector = None, indexer = None, replay = None))]
#[allow(clippy::too_many_arguments)]
pub fn run(
    py: Python<'_>,
    path: Option<PathBuf>,
    config: Option<&Bound<'_, PyDict>>,
    hocon: Option<String>,
    mode: &str,
    overrides: Option<&Bound<'_, PyAny>>,
    base_dir: Option<PathBuf>,
    progress: Option<bool>,
    stages: Option<&Bound<'_, PyList>>,
    connector: Option<&Bound<'_, PyAny>>,
    indexer: Option<&Bound<'_, PyAny>>,
    replay: Option<PathBuf>,
) -> PyResult<PyRunResult> {
    let mode = RunMode::parse(mode).ok_or_else(|| {
        PyValueError::new_err(format!(
            "mode must be \"local\", \"test\", \"external\" or \"distributed\", not {mode:?}"
        ))
    })?;
    let overrides = overrides_list(overrides)?;
    let objects = stages.is_some() || connector.is_some() || indexer.is_some_and(|i| !i.is_none());
    let (mut value, dir) = if objects && path.is_none() && config.is_none() && hocon.is_none() {
        // A run made only of objects: an empty config, with the overrides laid on it.
        let empty = PyDict::new(py);
        load(py, None, Some(&empty), None, &overrides, base_dir)?
    } else {
        load(py, path, config, hocon, &overrides, base_dir)?
    };
    if let Some(dead_letter) = replay {
        // `lucille replay`: the config's pipelines and indexer, its connectors replaced by the
        // dead-letter file's records.
        value = py
            .detach(|| crate::connector::dead_letter::replay_config(&value, &dead_letter))
            .map_err(config_err)?;
    }
    // Released (the loader forgets the objects) when the run returns.
    let _given = objects
        .then(|| super::given::Given::attach(py, &mut value, stages, connector, indexer))
        .transpose()?;
    let plan = py
        .detach(|| runner::plan(&value, dir.as_deref()))
        .map_err(config_err)?;
    runner::check_mode(&plan, mode).map_err(config_err)?;
    let _json_logs = super::logging::JsonLogs::attach(py, plan.log_format)?;
    let health = observe(py, &plan, "starting the run")?;
    let terminal = if progress != Some(false) {
        runner::terminal_progress()
    } else {
        None
    };
    // Outside a terminal (a notebook, or progress=True in a script) the run loop below shows
    // the progress through lucille._notebook.Progress: tqdm when installed, else plain text.
    let shown = match (&terminal, progress) {
        (Some(_), _) | (None, Some(false)) => None,
        (None, Some(true)) => Some(py_progress(py)?),
        (None, None) => py
            .import("lucille._notebook")?
            .call_method0("in_notebook")?
            .is_truthy()?
            .then(|| py_progress(py))
            .transpose()?,
    };
    let latest: Arc<parking_lot::Mutex<Option<Snapshot>>> = Arc::default();
    let opts = RunOptions {
        mode,
        progress: match &shown {
            Some(_) => {
                let latest = latest.clone();
                Some(Arc::new(move |name: &str, p: &Publisher| {
                    let c = p.counts();
                    *latest.lock() = Some((
                        name.to_string(),
                        [c.published, c.succeeded, c.failed, c.dropped],
                    ));
                }))
            }
            None => terminal,
        },
        health: Some(health.clone()),
        ..Default::default()
    };
    let (stop, force) = (opts.stop.clone(), opts.force.clone());
    let (tx, rx) = crossbeam_channel::bounded(1);
    let handle = std::thread::Builder::new()
        .name("lucille-runner".into())
        .spawn(move || {
            let r = runner::run_plan(&plan, &opts);
            let _ = tx.send(());
            r
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the run: {e}")))?;
    let mut interrupted = false;
    loop {
        let done = py.detach(|| rx.recv_timeout(Duration::from_millis(100)).is_ok());
        if let Some(bar) = &shown {
            show_progress(bar, &latest)?;
        }
        if done {
            break;
        }
        let signalled = py.check_signals().is_err();
        if signalled || super::logging::take_interrupt() {
            if !interrupted {
                interrupted = true;
                health.draining();
                tracing::warn!(
                    "interrupted: stopping the run; workers drain and the indexer flushes \
                     (interrupt again to stop now)"
                );
                stop.store(true, Ordering::SeqCst);
            } else if !force.swap(true, Ordering::SeqCst) {
                tracing::warn!(
                    "interrupted again: stopping now; unfinished documents are reported in flight"
                );
            }
        }
    }
    let result = py
        .detach(|| {
            let joined = handle.join();
            // The run's last spans, before the process may exit.
            lucille_observe::otlp::flush(Duration::from_secs(5));
            joined
        })
        .map_err(|_| PyRuntimeError::new_err("the run panicked"))?;
    if let Some(bar) = &shown {
        // The last progress report can precede the last events: end on the final counts.
        if let Some(c) = result.connectors.last() {
            bar.call_method1(
                "update",
                (&c.name, c.published, c.succeeded, c.failed, c.dropped),
            )?;
        }
        bar.call_method0("close")?;
    }
    Ok(PyRunResult {
        result,
        mode,
        interrupted,
    })
}

/// Runs a long-lived `worker`, `indexer` or `worker-indexer` process of distributed mode
/// (Kafka) for one pipeline until Ctrl-C / SIGTERM (which the CLI turns into
/// KeyboardInterrupt), then stops cleanly: documents in progress finish, the indexer flushes,
/// offsets are committed.
#[pyfunction]
#[pyo3(signature = (role, path = None, *, config = None, hocon = None, pipeline = None, overrides = None, base_dir = None))]
#[allow(clippy::too_many_arguments)]
pub fn serve(
    py: Python<'_>,
    role: &str,
    path: Option<PathBuf>,
    config: Option<&Bound<'_, PyDict>>,
    hocon: Option<String>,
    pipeline: Option<String>,
    overrides: Option<&Bound<'_, PyAny>>,
    base_dir: Option<PathBuf>,
) -> PyResult<()> {
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (py, role, path, config, hocon, pipeline, overrides, base_dir);
        Err(super::missing_component("Kafka", "kafka"))
    }
    #[cfg(feature = "kafka")]
    {
        use runner::distributed::{self, Role};
        let role = Role::parse(role).ok_or_else(|| {
            PyValueError::new_err(format!(
                "role must be \"worker\", \"indexer\" or \"worker-indexer\", not {role:?}"
            ))
        })?;
        let overrides = overrides_list(overrides)?;
        let (value, dir) = load(py, path, config, hocon, &overrides, base_dir)?;
        let plan = py
            .detach(|| runner::plan(&value, dir.as_deref()))
            .map_err(config_err)?;
        runner::check_mode(&plan, RunMode::Distributed).map_err(config_err)?;
        let pipeline =
            distributed::choose_pipeline(&plan, pipeline.as_deref()).map_err(config_err)?;
        let _json_logs = super::logging::JsonLogs::attach(py, plan.log_format)?;
        let health = observe(py, &plan, "starting")?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop2, health2) = (stop.clone(), health.clone());
        let handle = std::thread::Builder::new()
            .name(format!("lucille-{pipeline}"))
            .spawn(move || distributed::serve(&plan, role, &pipeline, &stop2, &health2))
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start: {e}")))?;
        loop {
            if py.detach(|| {
                let deadline = std::time::Instant::now() + Duration::from_millis(100);
                while !handle.is_finished() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                handle.is_finished()
            }) {
                break;
            }
            if py.check_signals().is_err() || super::logging::take_interrupt() {
                tracing::info!("interrupted: stopping");
                health.draining();
                stop.store(true, Ordering::SeqCst);
            }
        }
        py.detach(|| {
            let joined = handle.join();
            lucille_observe::otlp::flush(Duration::from_secs(5));
            joined
        })
        .map_err(|_| PyRuntimeError::new_err("the process panicked"))?
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }
}

/// The process's readiness, which every endpoint it serves reports: the runs and roles it
/// starts set it.
static HEALTH: std::sync::LazyLock<Arc<Health>> = std::sync::LazyLock::new(Arc::default);

/// The process's one readiness (the service reports it too).
pub(super) fn process_health() -> Arc<Health> {
    HEALTH.clone()
}

/// The process's endpoints, one per address asked for: they serve the process's metrics
/// (which add up over its runs) until it exits, as a Prometheus exporter does, so the values
/// a run ended with can still be scraped after it (from a notebook or a script).
static ENDPOINTS: parking_lot::Mutex<Vec<(runner::MetricsSettings, lucille_observe::Endpoint)>> =
    parking_lot::Mutex::new(Vec::new());

/// Starts the trace exporter (`tracing`) and the metrics and health endpoint
/// (`metrics.port`) the plan asks for, unless the process already has them, and marks the
/// process not ready for `starting`.
fn observe(py: Python<'_>, plan: &runner::RunPlan, starting: &str) -> PyResult<Arc<Health>> {
    let health = HEALTH.clone();
    health.restart(starting);
    if let Some(tracing) = &plan.tracing {
        py.detach(|| lucille_observe::otlp::start(tracing));
    }
    let Some(settings) = &plan.metrics else {
        return Ok(health);
    };
    // The lock is taken without the GIL: a thread holding the GIL never waits on it.
    py.detach(|| {
        let mut endpoints = ENDPOINTS.lock();
        // Port 0 asks for a new free port each time; a fixed one is served once.
        if settings.port == 0 || !endpoints.iter().any(|(s, _)| s == settings) {
            let started = lucille_observe::Endpoint::start(settings, health.clone())
                .map_err(|e| PyOSError::new_err(format!("metrics: {e}")))?;
            endpoints.push((settings.clone(), started));
        }
        Ok::<_, PyErr>(())
    })?;
    Ok(health)
}

/// Every config error, as a list of strings (empty when the config is valid).
#[pyfunction]
#[pyo3(signature = (path = None, *, config = None, hocon = None, overrides = None, base_dir = None))]
pub fn validate(
    py: Python<'_>,
    path: Option<PathBuf>,
    config: Option<&Bound<'_, PyDict>>,
    hocon: Option<String>,
    overrides: Option<&Bound<'_, PyAny>>,
    base_dir: Option<PathBuf>,
) -> PyResult<Vec<String>> {
    let overrides = overrides_list(overrides)?;
    let (value, dir) = match load_checked(py, path, config, hocon, &overrides, base_dir)? {
        Ok(v) => v,
        Err(errors) => return Ok(errors.0.iter().map(ToString::to_string).collect()),
    };
    Ok(match py.detach(|| runner::plan(&value, dir.as_deref())) {
        Ok(_) => Vec::new(),
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    })
}

/// The resolved config as HOCON (or JSON), with secrets redacted.
#[pyfunction]
#[pyo3(signature = (path = None, *, config = None, hocon = None, overrides = None, base_dir = None, json = false))]
pub fn render(
    py: Python<'_>,
    path: Option<PathBuf>,
    config: Option<&Bound<'_, PyDict>>,
    hocon: Option<String>,
    overrides: Option<&Bound<'_, PyAny>>,
    base_dir: Option<PathBuf>,
    json: bool,
) -> PyResult<String> {
    let overrides = overrides_list(overrides)?;
    let (mut value, _) = load(py, path, config, hocon, &overrides, base_dir)?;
    crate::config::redact(&mut value);
    Ok(if json {
        serde_json::to_string_pretty(&value).unwrap_or_default()
    } else {
        lucille_hocon::render_hocon(&value)
    })
}

// ----- Python connectors -----

/// The publisher handed to a Python connector's `execute`.
#[pyclass(name = "Publisher", module = "lucille._lucille", frozen)]
pub struct PyPublisher {
    inner: Arc<Publisher>,
    /// The connector's name and `maxDocumentBytes`.
    common: Common,
}

#[pymethods]
impl PyPublisher {
    /// Publishes a document (it is moved into the run; do not reuse the object). Blocks,
    /// without holding the GIL, while the run applies backpressure.
    fn publish(&self, py: Python<'_>, doc: &Bound<'_, PyDocument>) -> PyResult<()> {
        let inner = std::mem::replace(&mut doc.borrow_mut().inner, Document::placeholder());
        if inner.id().is_empty() {
            return Err(PyValueError::new_err(
                "this Document was already published or lent out; publish a new Document",
            ));
        }
        let p = self.inner.clone();
        let common = self.common.clone();
        py.detach(move || match common.oversize(&inner) {
            None => p.publish(inner),
            // `maxDocumentBytes`: a larger document FAILs (its id says which), not published.
            Some(size) => p.publish_failed(
                inner.id(),
                &format!(
                    "{}: document {}: the record is larger than maxDocumentBytes ({}): {size} \
                     bytes as JSON",
                    common.name,
                    inner.id(),
                    common.max_document_bytes.unwrap_or_default()
                ),
            ),
        })
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    #[getter]
    fn run_id(&self) -> &str {
        self.inner.run_id()
    }

    /// Documents published so far (after collapsing).
    #[getter]
    fn published(&self) -> u64 {
        self.inner.num_published()
    }
}

struct PyConnector {
    obj: Py<PyAny>,
    common: Common,
}

impl PyConnector {
    fn hook(&self, name: &str, arg: Option<&str>) -> Result<(), ConnectorError> {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if !obj.hasattr(name).unwrap_or(false) {
                return Ok(());
            }
            let r = match arg {
                Some(a) => obj.call_method1(name, (a,)),
                None => obj.call_method0(name),
            };
            r.map(|_| ())
                .map_err(|e| ConnectorError::new(describe_py_err(py, &e)))
        })
    }
}

impl Connector for PyConnector {
    fn pre_execute(&mut self, run_id: &str) -> Result<(), ConnectorError> {
        self.hook("pre_execute", Some(run_id))
    }

    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        Python::attach(|py| {
            let p = Py::new(
                py,
                PyPublisher {
                    inner: publisher.clone(),
                    common: self.common.clone(),
                },
            )
            .map_err(|e| ConnectorError::new(e.to_string()))?;
            self.obj
                .bind(py)
                .call_method1("execute", (p,))
                .map(|_| ())
                .map_err(|e| ConnectorError::new(describe_py_err(py, &e)))
        })
    }

    fn post_execute(&mut self, run_id: &str) -> Result<(), ConnectorError> {
        self.hook("post_execute", Some(run_id))
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        self.hook("close", None)
    }
}

pub struct PyConnectorFactory;

fn load_connector_class<'py>(
    py: Python<'py>,
    class: &str,
    config: &ComponentConfig,
) -> Result<Bound<'py, PyAny>, CfgError> {
    if class == crate::connector::PYTHON_SCRIPT_CONNECTOR {
        return super::stages::script_class(py, config, "connector");
    }
    let base = config.base_dir().map(|p| p.to_string_lossy().into_owned());
    py.import("lucille._loader")
        .and_then(|m| m.call_method1("load_connector_class", (class, base)))
        .map_err(|e| {
            config.error(
                "class",
                format!("cannot load Python connector {class:?}: {}", e.value(py)),
            )
        })
}

impl PythonConnectorFactory for PyConnectorFactory {
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), CfgError> {
        Python::attach(|py| load_connector_class(py, class, config).map(|_| ()))
    }

    fn build(
        &self,
        class: &str,
        config: &ComponentConfig,
        common: &Common,
    ) -> Result<Box<dyn Connector>, CfgError> {
        Python::attach(|py| {
            let cls = load_connector_class(py, class, config)?;
            let fail = |e: PyErr| {
                config.error(
                    "class",
                    format!(
                        "cannot create Python connector {class:?}: {}",
                        describe_py_err(py, &e)
                    ),
                )
            };
            let obj = instantiate(&cls, || config_dict(py, config)).map_err(fail)?;
            obj.setattr("name", &common.name).map_err(fail)?;
            Ok(Box::new(PyConnector {
                obj: obj.unbind(),
                common: common.clone(),
            }) as Box<dyn Connector>)
        })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRunResult>()?;
    m.add_class::<PyConnectorResult>()?;
    m.add_class::<PyPublisher>()?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    crate::connector::PYTHON.install(Box::new(PyConnectorFactory));
    Ok(())
}
