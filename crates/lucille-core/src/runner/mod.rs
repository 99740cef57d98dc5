//! The runner: validates the whole config first (every error at once), then
//! runs the connectors one after another, each with its own publisher, worker pool and indexer
//! thread; a failed connector stops the run and the ones after it are reported as skipped.
//!
//! Modes: `Local` (in-memory queues, real backend) and `Test` (the same, with the backend
//! bypassed and every document and event recorded); `External` and `Distributed` message over
//! a broker: a registered [`Transport`] (Kafka, `lucille::runner::distributed`).

pub mod stall;
pub mod summary;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::accounting::publisher::PublisherLabels;
use crate::accounting::EventType;
use crate::accounting::{Event, Publisher, PublisherSettings};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Options, PathContext};
use crate::connector::{ConnectorError, ConnectorPlan};
use crate::document::Document;
use crate::indexer::watchdog::Watchdog;
use crate::indexer::{self, IndexerHandle, IndexerSettings};
use crate::messaging::transport::{Connection, Transport};
use crate::messaging::{
    IndexerSide, LocalMessenger, TestMessenger, Topology, DEFAULT_QUEUE_CAPACITY, EVENT_WAKE,
};
use crate::pipeline::{PipelinePlan, StageMetrics};
use crate::worker::{WorkerPool, WorkerSettings};
use lucille_hocon::{self as hocon, ParseOptions};

pub use summary::{ConnectorResult, ConnectorStatus, RunResult};

pub const DEFAULT_CONNECTOR_TIMEOUT: Duration = Duration::from_millis(86_400_000);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    Local,
    Test,
    /// Workers and the indexer as threads of this process, messaging over Kafka.
    External,
    /// The connector and publisher only; worker and indexer processes serve the run.
    Distributed,
}

impl RunMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "local" => Some(RunMode::Local),
            "test" => Some(RunMode::Test),
            "external" => Some(RunMode::External),
            "distributed" => Some(RunMode::Distributed),
            _ => None,
        }
    }
}

/// Loads a HOCON config file with `--set path=value` overrides and the process environment
/// for `${?ENV}`. Returns the resolved config and its folder.
/// Environment overrides (Typesafe's `CONFIG_FORCE_`), then `--set` overrides, which win.
fn parse_options(overrides: &[(String, String)]) -> ParseOptions {
    let mut opts = ParseOptions::default();
    for (k, v) in env_overrides(std::env::vars_os())
        .into_iter()
        .chain(overrides.iter().cloned())
    {
        opts = opts.with_override(k, v);
    }
    opts
}

/// Typesafe Config's environment overrides: `CONFIG_FORCE_worker_threads=4` sets
/// `worker.threads`. In the name after the prefix `_` is a dot, `__` a dash and `___` an
/// underscore (`CONFIG_FORCE_my___key` sets `my_key`). Sorted, so the result does not depend on
/// the environment's order.
pub fn env_overrides(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(String, String)> {
    const PREFIX: &str = "CONFIG_FORCE_";
    let mut out: Vec<(String, String)> = vars
        .filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            let name = k.strip_prefix(PREFIX)?;
            let v = v.into_string().ok()?;
            let path = name
                .replace("___", "\u{0}")
                .replace("__", "-")
                .replace('_', ".")
                .replace('\u{0}', "_");
            (!path.is_empty()).then_some((path, v))
        })
        .collect();
    out.sort();
    out
}

pub fn load_config(
    path: &Path,
    overrides: &[(String, String)],
) -> Result<(Value, Option<PathBuf>), ConfigErrors> {
    let opts = parse_options(overrides);
    let value = hocon::parse_file(path, &opts)
        .map_err(|e| ConfigErrors(vec![ConfigError::new("", e.to_string())]))?;
    let dir = path
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    Ok((value, dir))
}

/// Parses HOCON text (for `lucille.run(hocon=...)`); `base_dir` resolves includes.
pub fn parse_config_text(
    text: &str,
    base_dir: Option<&Path>,
    overrides: &[(String, String)],
) -> Result<Value, ConfigErrors> {
    let opts = parse_options(overrides);
    hocon::parse_str(text, base_dir, &opts)
        .map_err(|e| ConfigErrors(vec![ConfigError::new("", e.to_string())]))
}

/// A fully validated run.
pub struct RunPlan {
    pub connectors: Vec<ConnectorPlan>,
    pub pipelines: HashMap<String, PipelinePlan>,
    /// `pipelines[].threads`: worker threads for that pipeline, instead of `worker.threads`
    /// (as Lucille's WorkerPool).
    pub pipeline_threads: HashMap<String, usize>,
    pub indexer: IndexerSettings,
    pub backend_config: ComponentConfig,
    /// What the backend writes on this machine (the embedded index's folder, a JSONL file), as
    /// its check found it: the service lists the indexes its runs wrote.
    pub output: Option<indexer::BackendOutput>,
    pub worker: WorkerSettings,
    pub queue_capacity: usize,
    pub max_pending_docs: Option<usize>,
    pub connector_timeout: Option<Duration>,
    /// `runner.stallWarningSecs` (`None`: 0, no warning).
    pub stall_warning: Option<Duration>,
    /// The broker, when the config has its block (`kafka`): needed by the Kafka modes and
    /// processes.
    pub transport: Option<Transport>,
    /// `worker.pipeline`: the pipeline a worker process serves by default.
    pub worker_pipeline: Option<String>,
    /// `runner.metricsLoggingLevel`: the level of the per-stage metrics lines.
    pub metrics_level: tracing::Level,
    /// `log.format`: how the process writes its log lines.
    pub log_format: LogFormat,
    /// `metrics { port, host }`: where the process serves `/metrics`, `/healthz` and
    /// `/ready` (`None`: no endpoint).
    pub metrics: Option<MetricsSettings>,
    /// `tracing { ... }` or the `OTEL_EXPORTER_OTLP_*` variables: where the process sends its
    /// trace spans (`None`: it makes none).
    pub tracing: Option<TracingSettings>,
}

/// Where and how a process exports trace spans (OTLP over HTTP, protobuf).
#[derive(Debug, Clone, PartialEq)]
pub struct TracingSettings {
    /// The collector's traces URL (`.../v1/traces`).
    pub endpoint: String,
    /// The share of documents traced (decided by id).
    pub sample_ratio: f64,
    pub service_name: String,
    /// Sent with every export (an API key, for example).
    pub headers: Vec<(String, String)>,
}

/// The default share of documents traced: spans for every document of a large run would
/// cost more than they tell.
pub const DEFAULT_SAMPLE_RATIO: f64 = 0.01;

/// Where a process serves its metrics and health endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    pub host: String,
    /// 0: a free port the system picks (logged).
    pub port: u16,
}

/// How log lines are written (`log.format`, or `--log-format` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// A line of text per event (the default).
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, target, message, run id and the event's
    /// fields, for log shippers.
    Json,
}

/// The `publisher { }` block.
#[derive(Options)]
struct PublisherOptions {
    /// How many documents the source queue holds before `publish` blocks (backpressure).
    #[option(min = 1)]
    queue_capacity: Option<usize>,
    /// The most documents published and not yet finished before `publish` blocks.
    #[option(min = 1)]
    max_pending_docs: Option<usize>,
}

/// The `runner { }` block.
#[derive(Options)]
struct RunnerOptions {
    /// Milliseconds a connector may run before the run fails it (0 or less: no limit;
    /// default 24 hours).
    connector_timeout: Option<i64>,
    /// Seconds without progress before the run logs what is pending (0: never).
    stall_warning_secs: Option<i64>,
    /// The log level of the per-stage metrics lines each connector logs when it ends.
    #[option(default = "INFO", one_of = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"])]
    metrics_logging_level: String,
    /// The folders `classpath:` paths resolve against, in order (default:
    /// src/main/resources, src/test/resources, conf/, then the config's folder).
    resource_roots: Option<Vec<String>>,
}

/// The `log { }` block.
#[derive(Options)]
struct LogOptions {
    /// Seconds between the progress lines a long run logs.
    seconds: Option<usize>,
    /// How log lines are written: text, or json (one JSON object per line, for log shippers).
    #[option(default = "text", one_of = ["text", "json"])]
    format: String,
}

/// The `metrics { }` block (`--metrics-port` / `--metrics-host` on the command line).
#[derive(Options)]
struct MetricsOptions {
    /// The port of the endpoint serving /metrics (Prometheus text format), /healthz and
    /// /ready; 0 lets the system pick a free one (logged). Without it there is no endpoint.
    #[option(min = 0, max = 65535)]
    port: Option<usize>,
    /// The address the endpoint listens on.
    #[option(default = "127.0.0.1")]
    host: String,
}

/// The `tracing { }` block (OpenTelemetry traces over OTLP/HTTP). The standard variables
/// fill in what the block leaves out: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the traces URL) or
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (its base), `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`.
#[derive(Options)]
struct TracingOptions {
    /// The collector's OTLP/HTTP address (http://host:4318; /v1/traces is added unless the
    /// URL already ends with it). Without it (or OTEL_EXPORTER_OTLP_ENDPOINT) nothing is traced.
    otlp_endpoint: Option<String>,
    /// The share of documents traced, from 0 to 1, decided by document id (so a replay is
    /// sampled alike); default 0.01. Runs, connectors and indexer batches are always traced.
    #[option(min = 0.0, max = 1.0)]
    sample_ratio: Option<f64>,
    /// The service.name of the spans (default OTEL_SERVICE_NAME, else "lucille").
    service_name: Option<String>,
    /// Headers sent with every export (for example an API key).
    headers: Option<Vec<(String, String)>>,
}

/// The tracing settings from the block and the OTLP environment variables.
fn tracing_settings(
    block: &ComponentConfig,
    errors: &mut Vec<ConfigError>,
) -> Option<TracingSettings> {
    let o = TracingOptions::from_config(block)
        .map_err(|e| errors.extend(e))
        .ok()?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let traces_url = |base: &str| {
        let base = base.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        }
    };
    let endpoint = match o.otlp_endpoint {
        Some(url) => traces_url(&url),
        None => match env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url,
            None => traces_url(&env("OTEL_EXPORTER_OTLP_ENDPOINT")?),
        },
    };
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        errors.push(block.error(
            "otlpEndpoint",
            format!("{endpoint:?} is not an http:// or https:// URL (OTLP over HTTP)"),
        ));
        return None;
    }
    let headers = o.headers.unwrap_or_else(|| {
        env("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|h| {
                h.split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    });
    Some(TracingSettings {
        endpoint,
        sample_ratio: o.sample_ratio.unwrap_or(DEFAULT_SAMPLE_RATIO),
        service_name: o
            .service_name
            .or_else(|| env("OTEL_SERVICE_NAME"))
            .unwrap_or_else(|| "lucille".into()),
        headers,
    })
}

/// One entry of `pipelines`.
#[derive(Options)]
struct PipelineOptions {
    /// The pipeline's name, which connectors name in their `pipeline` key.
    name: String,
    /// Its stages, in order.
    #[option(kind = Kind::List)]
    stages: Value,
    /// Worker threads for this pipeline (default: worker.threads).
    #[option(min = 1)]
    threads: Option<usize>,
}

/// Where the config's relative paths point: the working directory, the config's folder, and the
/// `classpath:` roots (`runner.resourceRoots`, else the defaults of `config::paths`).
fn path_context(roots: Option<Vec<String>>, base_dir: Option<&Path>) -> Arc<PathContext> {
    let dir = base_dir.map(Path::to_path_buf);
    Arc::new(match roots {
        None => PathContext::new(dir),
        Some(roots) => PathContext::with(
            std::env::current_dir().ok(),
            dir,
            roots.into_iter().map(PathBuf::from).collect(),
        ),
    })
}

/// A `metricsLoggingLevel` (one of its choices) as a tracing level.
fn log_level(name: &str) -> tracing::Level {
    match name {
        "TRACE" => tracing::Level::TRACE,
        "DEBUG" => tracing::Level::DEBUG,
        "WARN" => tracing::Level::WARN,
        "ERROR" => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    }
}

fn block(
    root: &Map<String, Value>,
    key: &str,
    errors: &mut Vec<ConfigError>,
    paths: &Arc<PathContext>,
) -> ComponentConfig {
    let map = match root.get(key) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            errors.push(ConfigError::new(key, "must be an object"));
            Map::new()
        }
    };
    ComponentConfig::new(map, key).with_paths(paths.clone())
}

/// Validates everything a run needs, reporting every problem at once: each top-level block is
/// read by a function of its own, in the order below, and each pushes its problems (with their
/// key paths) into the one list, so a problem is reported once whatever else is wrong.
pub fn plan(config: &Value, base_dir: Option<&Path>) -> Result<RunPlan, ConfigErrors> {
    let Value::Object(root) = config else {
        return Err(ConfigErrors(vec![ConfigError::new(
            "",
            "the config must be an object",
        )]));
    };
    let mut errors = Vec::new();
    // The runner block first: its resource roots place every `classpath:` path below.
    let runner = plan_runner(root, base_dir, &mut errors);
    let paths = path_context(
        runner.as_ref().and_then(|r| r.resource_roots.clone()),
        base_dir,
    );
    let (pipelines, pipeline_threads) = plan_pipelines(root, &paths, &mut errors);
    let mut connectors = plan_connectors(root, &pipelines, &paths, &mut errors);
    let indexer = plan_indexer(root, &paths, &mut errors);
    if let Some(settings) = &indexer.settings {
        plan_skip_unchanged(
            root,
            settings,
            indexer.output.as_ref(),
            &mut connectors,
            &mut errors,
        );
    }
    let (log_seconds, log_format) = plan_log(root, &paths, &mut errors);
    let metrics = plan_metrics(root, &paths, &mut errors);
    let tracing = tracing_settings(&block(root, "tracing", &mut errors, &paths), &mut errors);
    let (worker, worker_block) = plan_worker(root, log_seconds, &paths, &mut errors);
    let (queue_capacity, max_pending_docs) = plan_publisher(root, &paths, &mut errors);
    check_worker_pipeline(&worker, &worker_block, &pipelines, &mut errors);
    let transport = plan_transport(root, &pipelines, &paths, &mut errors);
    let timing = runner_settings(runner.as_ref(), &mut errors);

    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    Ok(RunPlan {
        connectors: connectors.into_iter().map(|c| c.plan).collect(),
        pipelines,
        pipeline_threads,
        indexer: indexer.settings.unwrap_or_default(),
        backend_config: indexer.backend_config,
        output: indexer.output,
        worker_pipeline: worker.pipeline.clone(),
        worker,
        queue_capacity,
        max_pending_docs,
        connector_timeout: timing.connector_timeout,
        stall_warning: timing.stall_warning,
        transport,
        metrics_level: timing.metrics_level,
        log_format,
        metrics,
        tracing,
    })
}

/// Whether an error was reported inside `pipelines`: a pipeline that failed to plan is then
/// not reported again as missing where it is named.
fn pipelines_failed(errors: &[ConfigError]) -> bool {
    errors.iter().any(|e| e.path.starts_with("pipelines"))
}

/// The `runner` block, read with the config's own folder only (its `resourceRoots` are what
/// every other block's paths resolve with).
fn plan_runner(
    root: &Map<String, Value>,
    base_dir: Option<&Path>,
    errors: &mut Vec<ConfigError>,
) -> Option<RunnerOptions> {
    let unresolved = Arc::new(PathContext::new(base_dir.map(Path::to_path_buf)));
    RunnerOptions::from_config(&block(root, "runner", errors, &unresolved))
        .map_err(|e| errors.extend(e))
        .ok()
}

/// The `pipelines` list: each pipeline's plan by name, and the `threads` of those that set it.
fn plan_pipelines(
    root: &Map<String, Value>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> (HashMap<String, PipelinePlan>, HashMap<String, usize>) {
    let mut pipelines = HashMap::new();
    let mut pipeline_threads = HashMap::new();
    let items = match root.get("pipelines") {
        None => return (pipelines, pipeline_threads),
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.push(ConfigError::new("pipelines", "must be a list of pipelines"));
            return (pipelines, pipeline_threads);
        }
    };
    for (i, p) in items.iter().enumerate() {
        let path = format!("pipelines[{i}]");
        let Value::Object(m) = p else {
            errors.push(ConfigError::new(path, "a pipeline must be an object"));
            continue;
        };
        let pc = ComponentConfig::new(m.clone(), path.clone());
        let o = match PipelineOptions::from_config(&pc) {
            Ok(o) => o,
            Err(e) => {
                errors.extend(e);
                continue;
            }
        };
        let name = o.name;
        if pipelines.contains_key(&name) {
            errors.push(pc.error("name", format!("duplicate pipeline name {name:?}")));
            continue;
        }
        if let Some(n) = o.threads {
            pipeline_threads.insert(name.clone(), n);
        }
        let Value::Array(stages) = o.stages else {
            continue;
        };
        match PipelinePlan::from_config(&name, &stages, &format!("{path}.stages"), paths) {
            Ok(plan) => {
                pipelines.insert(name, plan);
            }
            Err(e) => errors.extend(e.0),
        }
    }
    (pipelines, pipeline_threads)
}

/// A connector's plan, with its key path and its block (its default name filled in), which
/// `skipUnchanged` hashes.
struct PlannedConnector {
    plan: ConnectorPlan,
    path: String,
    block: Map<String, Value>,
}

/// The `connectors` list (required), each connector checked by its own options.
fn plan_connectors(
    root: &Map<String, Value>,
    pipelines: &HashMap<String, PipelinePlan>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> Vec<PlannedConnector> {
    let mut connectors = Vec::new();
    let items = match root.get("connectors") {
        None | Some(Value::Null) => {
            errors.push(ConfigError::new(
                "connectors",
                "missing required key \"connectors\" (a list of connectors)",
            ));
            return connectors;
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.push(ConfigError::new(
                "connectors",
                "must be a list of connectors",
            ));
            return connectors;
        }
    };
    let mut names: Vec<String> = Vec::new();
    for (i, c) in items.iter().enumerate() {
        let path = format!("connectors[{i}]");
        let Value::Object(m) = c else {
            errors.push(ConfigError::new(path, "a connector must be an object"));
            continue;
        };
        // As Lucille: a connector without a name is `connector_N` (1-based).
        let mut m = m.clone();
        if !m.contains_key("name") {
            m.insert("name".into(), Value::from(format!("connector_{}", i + 1)));
        }
        if let Some(name) = m.get("name").and_then(crate::config::as_string) {
            if names.contains(&name) {
                errors.push(ConfigError::new(
                    format!("{path}.name"),
                    format!("duplicate connector name {name:?}"),
                ));
            }
            names.push(name);
        }
        match ConnectorPlan::from_config(m.clone(), &path, paths) {
            Ok(plan) => {
                if let Some(p) = &plan.common.pipeline {
                    if !pipelines.contains_key(p) && !pipelines_failed(errors) {
                        errors.push(ConfigError::new(
                            format!("{path}.pipeline"),
                            format!("no pipeline named {p:?} is defined"),
                        ));
                    }
                }
                connectors.push(PlannedConnector {
                    plan,
                    path,
                    block: m,
                });
            }
            Err(e) => errors.extend(e),
        }
    }
    connectors
}

/// The `indexer` block and its backend's block.
struct IndexerBlocks {
    /// `None` when the indexer block has errors.
    settings: Option<IndexerSettings>,
    /// The backend's block (`opensearch { }`), or the indexer block for a Python indexer.
    backend_config: ComponentConfig,
    /// The local file or folder the backend writes, if any (where `skipUnchanged` keeps its
    /// store).
    output: Option<indexer::BackendOutput>,
}

/// The `indexer` block, and the block of the backend it names, checked by that backend.
fn plan_indexer(
    root: &Map<String, Value>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> IndexerBlocks {
    let indexer_block = block(root, "indexer", errors, paths);
    let settings = IndexerSettings::from_config(&indexer_block)
        .map_err(|e| errors.extend(e))
        .ok();
    let Some(s) = &settings else {
        return IndexerBlocks {
            settings,
            backend_config: ComponentConfig::new(Map::new(), ""),
            output: None,
        };
    };
    // A Python indexer's own keys sit in the indexer block (`indexer { class, ... }`).
    let backend_config = if s.class.is_some() {
        indexer_block
    } else {
        block(root, &s.kind, errors, paths)
    };
    let output = match indexer::validate_backend(s, &backend_config) {
        Ok(check) => check.output,
        Err(e) => {
            errors.extend(e);
            None
        }
    };
    IndexerBlocks {
        settings,
        backend_config,
        output,
    }
}

/// Each connector's `skipUnchanged` (reported at `connectors[i].skipUnchanged`), once the
/// indexer is known.
fn plan_skip_unchanged(
    root: &Map<String, Value>,
    indexer: &IndexerSettings,
    output: Option<&indexer::BackendOutput>,
    connectors: &mut [PlannedConnector],
    errors: &mut Vec<ConfigError>,
) {
    for c in connectors {
        let Some(mode) = c.plan.common.skip_unchanged else {
            continue;
        };
        match skip_settings(root, indexer, output, &c.plan, &c.block, mode) {
            Ok(s) => c.plan.skip = Some(s),
            Err(e) => errors.push(ConfigError::new(
                format!("{}.skipUnchanged", c.path),
                e.to_string(),
            )),
        }
    }
}

/// The `log` block: the seconds between progress lines, and the format of log lines.
fn plan_log(
    root: &Map<String, Value>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> (Option<u64>, LogFormat) {
    let log = LogOptions::from_config(&block(root, "log", errors, paths))
        .map_err(|e| errors.extend(e))
        .ok();
    let seconds = log.as_ref().and_then(|o| o.seconds).map(|s| s as u64);
    let format = match log.as_ref().map(|o| o.format.as_str()) {
        Some("json") => LogFormat::Json,
        _ => LogFormat::Text,
    };
    (seconds, format)
}

/// The `metrics` block: where the endpoint listens (`None`: no port, no endpoint).
fn plan_metrics(
    root: &Map<String, Value>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> Option<MetricsSettings> {
    let metrics_block = block(root, "metrics", errors, paths);
    match MetricsOptions::from_config(&metrics_block) {
        Ok(MetricsOptions {
            port: Some(port),
            host,
        }) => Some(MetricsSettings {
            host,
            port: u16::try_from(port).unwrap_or(u16::MAX),
        }),
        Ok(_) if metrics_block.map().contains_key("host") => {
            errors.push(metrics_block.error(
                "port",
                "metrics.host is set but metrics.port is not: set the port to serve /metrics \
                 (or remove the block)",
            ));
            None
        }
        Ok(_) => None,
        Err(e) => {
            errors.extend(e);
            None
        }
    }
}

/// The `worker` block (its defaults when it has errors), and the block itself, at whose
/// `pipeline` key [`check_worker_pipeline`] reports.
fn plan_worker(
    root: &Map<String, Value>,
    log_seconds: Option<u64>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> (WorkerSettings, ComponentConfig) {
    let worker_block = block(root, "worker", errors, paths);
    let worker = WorkerSettings::from_config(&worker_block, log_seconds).unwrap_or_else(|e| {
        errors.extend(e);
        WorkerSettings::default()
    });
    (worker, worker_block)
}

/// `worker.pipeline` names a pipeline of the config.
fn check_worker_pipeline(
    worker: &WorkerSettings,
    worker_block: &ComponentConfig,
    pipelines: &HashMap<String, PipelinePlan>,
    errors: &mut Vec<ConfigError>,
) {
    if let Some(p) = &worker.pipeline {
        if !pipelines.contains_key(p) && !pipelines_failed(errors) {
            errors.push(
                worker_block.error("pipeline", format!("no pipeline named {p:?} is defined")),
            );
        }
    }
}

/// The `publisher` block: the source queue's capacity and the most documents pending.
fn plan_publisher(
    root: &Map<String, Value>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> (usize, Option<usize>) {
    let publisher = PublisherOptions::from_config(&block(root, "publisher", errors, paths))
        .map_err(|e| errors.extend(e))
        .ok();
    let queue_capacity = publisher
        .as_ref()
        .and_then(|p| p.queue_capacity)
        .unwrap_or(DEFAULT_QUEUE_CAPACITY);
    (queue_capacity, publisher.and_then(|p| p.max_pending_docs))
}

/// The broker of the Kafka modes, configured by its block (`kafka`), read by the transport the
/// registry holds; `zookeeper` is accepted and unused.
fn plan_transport(
    root: &Map<String, Value>,
    pipelines: &HashMap<String, PipelinePlan>,
    paths: &Arc<PathContext>,
    errors: &mut Vec<ConfigError>,
) -> Option<Transport> {
    let pipeline_names: Vec<&str> = pipelines.keys().map(String::as_str).collect();
    let transport = Transport::from_root(
        |name| root.get(name).map(|_| block(root, name, errors, paths)),
        &pipeline_names,
    )
    .and_then(|read| read.map_err(|e| errors.extend(e)).ok());
    if root.get("zookeeper").is_some() {
        // Lucille's retry counter; accepted (Lucille configs carry it) but not used.
        tracing::warn!(
            "zookeeper is not used: a worker process counts worker.maxRetries in the Kafka \
             topic {{pipeline}}_retries (docs/guide/distributed.md)"
        );
    }
    transport
}

/// What the `runner` block sets besides its resource roots.
struct RunnerSettings {
    connector_timeout: Option<Duration>,
    stall_warning: Option<Duration>,
    metrics_level: tracing::Level,
}

/// The `runner` block's timeouts and metrics level ([`plan_runner`] read the block; its one
/// check across values is reported here, after the other blocks', where it always was).
fn runner_settings(
    runner: Option<&RunnerOptions>,
    errors: &mut Vec<ConfigError>,
) -> RunnerSettings {
    let connector_timeout = match runner.and_then(|r| r.connector_timeout) {
        Some(ms) if ms <= 0 => None,
        Some(ms) => Some(Duration::from_millis(ms.unsigned_abs())),
        None => Some(DEFAULT_CONNECTOR_TIMEOUT),
    };
    let stall_warning = match runner.and_then(|r| r.stall_warning_secs) {
        Some(secs) if secs < 0 => {
            errors.push(ConfigError::new(
                "runner.stallWarningSecs",
                "must be 0 (no warning) or a number of seconds",
            ));
            None
        }
        Some(0) => None,
        Some(secs) => Some(Duration::from_secs(secs.unsigned_abs())),
        None => Some(stall::DEFAULT_STALL_WARNING),
    };
    let metrics_level = runner.map_or(tracing::Level::INFO, |r| {
        log_level(&r.metrics_logging_level)
    });
    RunnerSettings {
        connector_timeout,
        stall_warning,
        metrics_level,
    }
}

/// Why a connector's `skipUnchanged` cannot be set up (reported at its `skipUnchanged` key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SkipError {
    /// The change store is a crate of its own, registered when linked.
    #[error(
        "this build links no change store (the lucille-changes crate): use a build with it, \
         or remove skipUnchanged"
    )]
    NoStore,
    /// The indexer's output is written anew by each run (`kind` as named by the config).
    #[error(
        "the {kind} indexer replaces {} at each run, so the documents a run skips would be \
         missing from it: set {block}.append: true (or remove skipUnchanged)",
        output.display()
    )]
    OutputReplaced {
        kind: String,
        output: PathBuf,
        /// The backend's block (`jsonl`), whose `append` key keeps the output.
        block: String,
    },
    /// No `skipUnchangedPath`, and the indexer writes no local file to put the store beside.
    #[error(
        "the {kind} indexer keeps nothing on this machine to put the store beside: set \
         skipUnchangedPath (a file, e.g. \"state/{connector}.unchanged.sqlite\")"
    )]
    NoPlace { kind: String, connector: String },
}

/// A connector's `skipUnchanged`: where its store is, and the hash of the config its
/// documents are processed with (its own block, its pipeline's, the indexer's and the
/// backend's), so a changed config processes every document again.
fn skip_settings(
    root: &Map<String, Value>,
    indexer: &IndexerSettings,
    output: Option<&indexer::BackendOutput>,
    plan: &ConnectorPlan,
    block: &Map<String, Value>,
    mode: crate::unchanged::SkipMode,
) -> Result<crate::unchanged::SkipSettings, SkipError> {
    if !crate::unchanged::store_available() {
        return Err(SkipError::NoStore);
    }
    let kind = indexer.class.as_deref().unwrap_or(&indexer.kind);
    if let Some(o) = output.filter(|o| o.replaced) {
        return Err(SkipError::OutputReplaced {
            kind: kind.to_string(),
            output: o.path.clone(),
            block: indexer.kind.clone(),
        });
    }
    let path = match (&plan.common.skip_unchanged_path, output) {
        (Some(p), _) => p.clone(),
        (None, Some(o)) => crate::unchanged::beside(&o.path),
        (None, None) => {
            return Err(SkipError::NoPlace {
                kind: kind.to_string(),
                connector: plan.common.name.clone(),
            })
        }
    };
    let pipeline = plan.common.pipeline.as_deref().and_then(|name| {
        root.get("pipelines")
            .and_then(Value::as_array)
            .and_then(|ps| {
                ps.iter()
                    .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            })
    });
    let mut hashed = serde_json::json!([
        block,
        pipeline,
        root.get("indexer"),
        root.get(&indexer.kind),
    ]);
    // A Python object given to the run is named anew by each run: the same object for this.
    fn same_objects(v: &mut Value) {
        match v {
            Value::String(s) if s.starts_with(crate::registry::GIVEN_OBJECT_PREFIX) => {
                s.truncate(crate::registry::GIVEN_OBJECT_PREFIX.len())
            }
            Value::Array(items) => items.iter_mut().for_each(same_objects),
            Value::Object(m) => m.values_mut().for_each(same_objects),
            _ => {}
        }
    }
    same_objects(&mut hashed);
    let config = crate::unchanged::json_hash(&hashed);
    Ok(crate::unchanged::SkipSettings { mode, path, config })
}

/// Called between completion polls with the connector name and its publisher.
pub type ProgressFn = Arc<dyn Fn(&str, &Publisher) + Send + Sync>;

/// Called with the connector name, doc id and reason of every FAIL a run counts.
pub type FailureFn = Arc<dyn Fn(&str, &str, &str) + Send + Sync>;

/// Options for one run.
#[derive(Clone)]
pub struct RunOptions {
    pub mode: RunMode,
    /// Set (by a signal handler, or Ctrl-C in Python) to stop gracefully: the connector stops
    /// publishing, workers drain, the indexer flushes, and the summary covers what was done.
    pub stop: Arc<AtomicBool>,
    /// Set (by a second signal) to stop now: stop waiting for the drain, leave workers still
    /// busy behind, give the indexer a moment to flush, and report every published document
    /// that had not reached a terminal event as in flight.
    pub force: Arc<AtomicBool>,
    /// Called between polls of the completion loop with the connector name and publisher.
    pub progress: Option<ProgressFn>,
    pub run_id: Option<String>,
    /// Record documents and events (as test mode does) while still using the real backend.
    pub record_history: bool,
    /// Told when the run is ready (its first connector's workers and indexer started, the
    /// backend reached), for `/ready`.
    pub health: Option<Arc<crate::health::Health>>,
    /// Told of every FAIL the run counts, with its reason (a service keeps them).
    pub on_fail: Option<FailureFn>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            mode: RunMode::Local,
            stop: Arc::new(AtomicBool::new(false)),
            force: Arc::new(AtomicBool::new(false)),
            progress: None,
            run_id: None,
            record_history: false,
            health: None,
            on_fail: None,
        }
    }
}

/// Why the runner stopped waiting for a connector's documents before they all ended.
#[derive(Debug, thiserror::Error)]
enum Abort {
    #[error("forced stop (a second interrupt)")]
    Forced,
    /// A worker thread died (the reason names it).
    #[error("{0}")]
    DeadWorker(String),
    /// The indexer thread died.
    #[error("{0}")]
    DeadIndexer(String),
    /// The indexer stopped making progress (`indexer.indexerInactivityTimeout`).
    #[error("{0}")]
    Wedged(String),
}

/// A run in `mode` needs the broker's block (`kafka`); checked before anything starts.
pub fn check_mode(plan: &RunPlan, mode: RunMode) -> Result<(), ConfigErrors> {
    let mut errors = Vec::new();
    if matches!(mode, RunMode::Distributed | RunMode::External) && plan.transport.is_none() {
        errors.push(ConfigError::new(
            "kafka",
            "mode distributed / external needs a kafka block (at least kafka.bootstrapServers)",
        ));
    }
    if mode == RunMode::Distributed {
        for (i, c) in plan.connectors.iter().enumerate() {
            if c.common.skip_unchanged == Some(crate::unchanged::SkipMode::Output) {
                errors.push(ConfigError::new(
                    format!("connectors[{i}].skipUnchanged"),
                    "\"output\" compares what the indexer sends, and in distributed mode the \
                     indexer is another process: use skipUnchanged: true (the records as read), \
                     or mode external",
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ConfigErrors(errors))
    }
}

/// Validates and runs a config. Config errors come back before anything starts.
pub fn run(
    config: &Value,
    base_dir: Option<&Path>,
    opts: &RunOptions,
) -> Result<RunResult, ConfigErrors> {
    let plan = plan(config, base_dir)?;
    check_mode(&plan, opts.mode)?;
    Ok(run_plan(&plan, opts))
}

pub fn run_plan(plan: &RunPlan, opts: &RunOptions) -> RunResult {
    let started = Instant::now();
    let run_id: Arc<str> = Arc::from(
        opts.run_id
            .clone()
            .unwrap_or_else(crate::document::ids::random_id)
            .as_str(),
    );
    // Every line the run logs, from this thread and the ones it starts, carries the run id (a
    // span at error level: enabled whatever level the log filter lets through).
    let span = tracing::error_span!("run", run_id = &*run_id);
    let _in_run = span.enter();
    tracing::info!(
        run_id = &*run_id,
        "starting run with {} connector(s)",
        plan.connectors.len()
    );
    // Once per run, however many connectors or indexer threads build the backend.
    if opts.mode != RunMode::Test && plan.indexer.send_enabled {
        if let Some(w) = indexer::backend_warning(&plan.indexer, &plan.backend_config) {
            tracing::warn!("{w}");
        }
    }
    let run_trace = crate::trace::start_run(&run_id);
    let run_started = std::time::SystemTime::now();
    let mut results = Vec::new();
    let mut stage_metrics: Vec<(String, Vec<StageMetrics>)> = Vec::new();
    for (i, connector) in plan.connectors.iter().enumerate() {
        if opts.stop.load(Ordering::SeqCst)
            || results
                .iter()
                .any(|r: &ConnectorResult| r.status != ConnectorStatus::Complete)
        {
            results.push(ConnectorResult::skipped(&connector.common.name));
            continue;
        }
        let (result, metrics) = run_connector(plan, connector, i > 0, &run_id, opts);
        if let Some(m) = metrics {
            stage_metrics.push((connector.common.pipeline.clone().unwrap_or_default(), m));
        }
        results.push(result);
    }
    let result = RunResult::new(
        run_id.to_string(),
        results,
        started.elapsed(),
        stage_metrics,
    );
    for line in result.summary.lines() {
        tracing::info!("{line}");
    }
    if let Some(t) = run_trace {
        let status = if result.ok { "Success" } else { "Failure" };
        let span = crate::trace::SpanData::new(
            "run",
            t.trace_id,
            t.span_id.unwrap_or_else(crate::trace::random_span_id),
            None,
            run_started,
        )
        .attr("lucille.run_id", &*run_id)
        .attr("lucille.status", status);
        let error = (!result.ok).then(|| {
            result
                .connectors
                .iter()
                .find_map(|c| match &c.status {
                    ConnectorStatus::Failed(m) => Some(format!("{}: {m}", c.name)),
                    _ => None,
                })
                .unwrap_or_else(|| "the run failed".into())
        });
        crate::trace::emit(span.failed(error));
        crate::trace::end_run(&run_id);
    }
    result
}

fn run_connector(
    plan: &RunPlan,
    cplan: &ConnectorPlan,
    continuing: bool,
    run_id: &Arc<str>,
    opts: &RunOptions,
) -> (ConnectorResult, Option<Vec<StageMetrics>>) {
    let name = cplan.common.name.clone();
    let started = Instant::now();
    let trace_started = std::time::SystemTime::now();
    let fail = |message: String| ConnectorResult::failed(&name, message, started.elapsed());
    let mut connector = match cplan.instantiate() {
        Ok(c) => c,
        Err(e) => return (fail(e.to_string()), None),
    };
    let pipeline = match &cplan.common.pipeline {
        Some(p) => match plan.pipelines.get(p) {
            Some(pp) => pp.clone(),
            None => return (fail(format!("no pipeline named {p:?}")), None),
        },
        None => PipelinePlan {
            name: crate::connector::no_pipeline_name(&name),
            stages: Vec::new(),
        },
    };
    let mut worker = plan.worker.clone();
    if let Some(n) = cplan
        .common
        .pipeline
        .as_ref()
        .and_then(|p| plan.pipeline_threads.get(p))
    {
        worker.threads = *n;
    }
    let broker_mode = matches!(opts.mode, RunMode::External | RunMode::Distributed);
    let mut transport_run = None;
    let (topology, test_messenger): (Topology, Option<Arc<TestMessenger>>) = if broker_mode {
        let Some(transport) = &plan.transport else {
            return (fail("this mode needs a kafka block".into()), None);
        };
        let connection = Connection {
            pipeline: &pipeline.name,
            run_id,
            publisher_only: opts.mode == RunMode::Distributed,
            worker_threads: worker.threads,
        };
        match transport.connect(&connection) {
            Ok(k) => {
                let t = k.topology.clone();
                transport_run = Some(k);
                (t, None)
            }
            Err(e) => return (fail(e.to_string()), None),
        }
    } else if opts.mode == RunMode::Test || opts.record_history {
        let t = Arc::new(TestMessenger::new(plan.queue_capacity));
        (Topology::local(t.clone()), Some(t))
    } else {
        (
            Topology::local(Arc::new(LocalMessenger::with_event_wake(
                plan.queue_capacity,
                // Under maxPendingDocs, publishes wait for events: applied in smaller steps.
                plan.max_pending_docs
                    .map_or(EVENT_WAKE, |m| (m / 4).clamp(1, EVENT_WAKE)),
            ))),
            None,
        )
    };
    // Distributed: workers and indexers are other processes.
    let local_roles = topology.worker.is_some() && topology.indexer.is_some();
    // Test mode, and `indexer.sendEnabled: false` as in Lucille, run without the backend.
    let bypass = opts.mode == RunMode::Test || !plan.indexer.send_enabled || !local_roles;
    let backend = if bypass {
        Ok(Box::new(indexer::nop::NopBackend) as Box<dyn indexer::Backend>)
    } else {
        indexer::build_backend(
            &plan.indexer,
            &plan.backend_config,
            if continuing {
                indexer::Opening::Continuing
            } else {
                indexer::Opening::Fresh
            },
        )
        .map_err(|e| {
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    };
    let mut backend = match backend {
        Ok(b) => b,
        Err(m) => return (fail(format!("indexer: {m}")), None),
    };
    if !bypass {
        if let Err(e) = backend.validate_connection() {
            return (fail(format!("indexer: {e}")), None);
        }
    }
    let pool_pipeline_name = pipeline.name.clone();
    // Workers turn documents into index operations (and encode them) in parallel, unless the
    // run records whole documents (test mode, history) or ships them (Kafka).
    let preparer = (!bypass && test_messenger.is_none() && !topology.publisher.records_documents())
        .then(|| {
            let output = cplan
                .skip
                .as_ref()
                .is_some_and(|s| s.mode == crate::unchanged::SkipMode::Output);
            indexer::Preparer::new(plan.indexer.clone(), backend.encoder()).hashing_output(output)
        });
    let pool = if let Some(worker_side) = topology.worker.clone() {
        match WorkerPool::start(pipeline, worker, worker_side, run_id.clone(), preparer) {
            Ok(p) => Some(p),
            Err(e) => return (fail(format!("cannot start workers: {e}")), None),
        }
    } else {
        None
    };
    // skipUnchanged: the connector's run against its change store, read only when nothing
    // this run does reaches a backend (test mode, `indexer.sendEnabled: false`).
    let changes = match &cplan.skip {
        None => None,
        Some(skip) => {
            let writes = opts.mode != RunMode::Test && plan.indexer.send_enabled;
            let marker = plan
                .indexer
                .deletion_marker_field
                .clone()
                .zip(plan.indexer.deletion_marker_field_value.clone());
            match crate::unchanged::ChangeTracker::open(&name, skip, writes, marker) {
                Ok(t) => Some(t),
                Err(e) => {
                    if let Some(p) = pool {
                        p.stop();
                    }
                    return (fail(format!("skipUnchanged: {e}")), None);
                }
            }
        }
    };
    let output_changes = changes
        .clone()
        .filter(|c| c.mode() == crate::unchanged::SkipMode::Output);
    let mut indexer = if let Some(indexer_side) = topology.indexer.clone() {
        match IndexerHandle::start_with(
            plan.indexer.clone(),
            backend,
            indexer_side,
            run_id.clone(),
            bypass,
            output_changes,
        ) {
            Ok(i) => Some(i),
            Err(e) => {
                if let Some(p) = pool {
                    p.stop();
                }
                return (fail(format!("cannot start the indexer: {e}")), None);
            }
        }
    } else {
        None
    };
    let publisher = Arc::new(Publisher::new(
        run_id.clone(),
        topology.publisher.clone(),
        PublisherSettings {
            max_pending_docs: plan.max_pending_docs,
            collapse: cplan.common.collapse,
            metrics: Some(PublisherLabels {
                connector: name.clone(),
                pipeline: pool_pipeline_name.clone(),
            }),
        },
        opts.stop.clone(),
    ));
    crate::metrics::global().watch_messenger(Arc::downgrade(&topology.publisher));
    if let Some(c) = &changes {
        publisher.skip_unchanged(c.clone());
    }
    if let Some(on_fail) = opts.on_fail.clone() {
        let connector = name.clone();
        publisher.on_fail(Box::new(move |id, reason| on_fail(&connector, id, reason)));
    }
    if let Some(health) = &opts.health {
        health.ready();
    }
    if let Some(dead_letter) = pool.as_ref().and_then(WorkerPool::dead_letter) {
        let (run, pipeline) = (run_id.clone(), pool_pipeline_name.clone());
        publisher.on_failed_record(Box::new(move |id, reason| {
            dead_letter.write_record(id, &run, &pipeline, reason)
        }));
    }

    let mut error: Option<String> = None;
    let mut wedged = false;
    let mut forced = false;
    let mut drainer: Option<FailDrain> = None;
    let mut connector_back = None;
    match catch(|| connector.pre_execute(run_id)) {
        Err(e) => error = Some(format!("pre_execute failed: {e}")),
        Ok(()) => {
            let p2 = publisher.clone();
            let thread = std::thread::Builder::new()
                .name(format!("lucille-connector-{name}"))
                .spawn(crate::thread_scope::in_current_span(move || {
                    let r = catch(|| connector.execute(&p2));
                    // Also after a failed execute: what it published before failing was
                    // accepted and must run, not wait in the publisher's block.
                    let flushed = p2.flush().map_err(ConnectorError::from);
                    let r = r.and(flushed);
                    (connector, r)
                }));
            match thread {
                Err(e) => error = Some(format!("cannot start the connector thread: {e}")),
                Ok(handle) => {
                    let progress = opts.progress.clone();
                    let mut rates = RateLog::new(plan.worker.log_interval);
                    let indexer_stats = indexer
                        .as_ref()
                        .map_or_else(Default::default, |i| i.stats.clone());
                    let mut watchdog =
                        Watchdog::new(plan.indexer.inactivity_timeout, Instant::now());
                    let mut dead_indexer = false;
                    let mut stall = stall::StallWatch::new(plan.stall_warning, Instant::now());
                    let r = publisher.wait_for_completion(&handle, plan.connector_timeout, |p| {
                        if let Some(f) = &progress {
                            f(&name, p);
                        }
                        if opts.force.load(Ordering::SeqCst) {
                            forced = true;
                            return Err(Abort::Forced);
                        }
                        rates.maybe_log(p, &indexer_stats);
                        stall.watch(&name, p, plan.connector_timeout);
                        if !local_roles {
                            return Ok(());
                        }
                        // A dead thread raises no flag: it is looked at at every poll.
                        if let Some(reason) = pool.as_ref().and_then(WorkerPool::dead_worker) {
                            return Err(Abort::DeadWorker(reason));
                        }
                        if let Some(reason) = indexer.as_mut().and_then(IndexerHandle::dead) {
                            dead_indexer = true;
                            return Err(Abort::DeadIndexer(reason));
                        }
                        let waiting = topology
                            .indexer
                            .as_ref()
                            .map_or(0, |i| i.waiting_to_index());
                        match watchdog.check(&indexer_stats, waiting, Instant::now()) {
                            Some(reason) => {
                                wedged = true;
                                Err(Abort::Wedged(reason))
                            }
                            None => Ok(()),
                        }
                    });
                    if !r.ok {
                        error = r.message;
                        if wedged || dead_indexer {
                            // A wedged or dead indexer takes nothing more: FAIL what waits for
                            // it (never drop it silently) so workers blocked on the full
                            // destination queue, and the connector behind them, can finish.
                            let why = if wedged { "was wedged" } else { "thread died" };
                            drainer = topology.indexer.clone().map(|i| {
                                FailDrain::start(
                                    i,
                                    run_id.clone(),
                                    format!("not indexed: the indexer {why}"),
                                )
                            });
                            wedged = true;
                        }
                        // Unblock a connector stuck in publish so its thread can end, and give
                        // it a moment to do so (the workers still drain the queue meanwhile).
                        opts.stop.store(true, Ordering::SeqCst);
                        let grace = if forced { 1 } else { 5 };
                        let deadline = Instant::now() + Duration::from_secs(grace);
                        while !handle.is_finished() && Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        if wedged {
                            // What the connector handed over last (its held block goes at its
                            // end) is taken by the workers and FAILed by the drain, not left
                            // queued when the pool stops.
                            let queued =
                                || topology.publisher.queue_depths().map_or(0, |d| d.source);
                            while queued() > 0 && Instant::now() < deadline {
                                std::thread::sleep(Duration::from_millis(5));
                            }
                        }
                    }
                    if handle.is_finished() || error.is_none() {
                        match handle.join() {
                            Ok((c, Ok(()))) => connector_back = Some(c),
                            Ok((c, Err(e))) => {
                                error.get_or_insert_with(|| format!("execute failed: {e}"));
                                connector_back = Some(c);
                            }
                            Err(_) => {
                                error.get_or_insert_with(|| "the connector thread panicked".into());
                            }
                        }
                    } else {
                        tracing::error!(
                            "connector {name:?} did not stop; leaving its thread behind"
                        );
                    }
                }
            }
        }
    }
    if let Some(c) = connector_back.as_mut() {
        if error.is_none() {
            if let Err(e) = catch(|| c.post_execute(run_id)) {
                error = Some(format!("post_execute failed: {e}"));
            }
        }
        if let Err(e) = catch(|| c.close()) {
            tracing::error!("closing connector {name:?} failed: {e}");
        }
    }
    let metrics = match pool {
        Some(pool) if forced => pool.abandon(Duration::from_secs(1)),
        Some(pool) => pool.stop(),
        None => Vec::new(),
    };
    let terminated = match indexer {
        None => Ok(()),
        Some(indexer) if forced => indexer.terminate_within(Duration::from_secs(2)),
        Some(indexer) if wedged => {
            if let Some(d) = drainer {
                d.finish();
            }
            indexer.terminate_within(Duration::from_secs(2))
        }
        Some(indexer) => indexer.terminate(),
    };
    if let Err(e) = terminated {
        error.get_or_insert_with(|| format!("indexer: {e}"));
    }
    // Events still queued after a failed wait (the FAILs above among them) belong in the counts.
    while let Some(e) = topology.publisher.try_poll_event() {
        publisher.handle_event(&e);
    }
    // Every terminal event is applied: what they recorded is written before the next run.
    if let Some(c) = &changes {
        c.finish();
    }
    if let Some(k) = &transport_run {
        k.close();
    }
    if let Some(m) = error.as_mut() {
        let pending = publisher.pending();
        if forced {
            m.push_str(&format!(
                "; {pending} documents in flight (published, not finished)"
            ));
        } else if pending > 0 {
            m.push_str(&format!(
                "; {pending} documents did not reach a terminal event"
            ));
        }
    }
    log_stage_metrics(&name, &metrics, plan.metrics_level);
    let history = test_messenger.map(|t| t.history());
    let counts = publisher.counts();
    let mut result = match error {
        None => ConnectorResult::complete(&name, counts, started.elapsed()),
        Some(m) => ConnectorResult::failed_with_counts(&name, m, counts, started.elapsed()),
    };
    result.received = publisher.num_received();
    result.skip_unchanged = changes.is_some();
    result.in_flight = publisher.pending() as u64;
    result.history = history;
    if let Some(t) = crate::trace::run_trace(run_id) {
        let span = crate::trace::SpanData::new(
            "connector",
            t.trace_id,
            crate::trace::random_span_id(),
            t.span_id,
            trace_started,
        )
        .attr("lucille.run_id", &**run_id)
        .attr("lucille.connector", name.clone())
        .attr("lucille.pipeline", pool_pipeline_name.clone());
        let error = match &result.status {
            ConnectorStatus::Failed(m) => Some(m.clone()),
            _ => None,
        };
        crate::trace::emit(span.failed(error));
    }
    (result, Some(metrics))
}

/// FAILs every document taken from the destination queue until finished (after the indexer
/// was found wedged or dead), with `reason`.
struct FailDrain {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FailDrain {
    fn start(messenger: Arc<dyn IndexerSide>, run_id: Arc<str>, reason: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lucille-fail-drain".into())
            .spawn(move || loop {
                let stopping = s2.load(Ordering::SeqCst);
                let wait = if stopping {
                    Duration::ZERO
                } else {
                    Duration::from_millis(10)
                };
                match messenger.poll_doc_to_index(wait) {
                    Some(item) => crate::messaging::send_event(
                        messenger.as_ref(),
                        item.id(),
                        &run_id,
                        EventType::Fail,
                        Some(reason.clone()),
                    ),
                    None if stopping => break,
                    None => {}
                }
            })
            .ok();
        FailDrain { stop, thread }
    }

    fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The publisher's and the indexer's periodic rate lines (every `log.seconds`), next to the
/// worker pool's own.
struct RateLog {
    every: Duration,
    last: Instant,
    last_published: u64,
    last_indexed: u64,
}

impl RateLog {
    fn new(every: Duration) -> Self {
        RateLog {
            every,
            last: Instant::now(),
            last_published: 0,
            last_indexed: 0,
        }
    }

    fn maybe_log(&mut self, p: &Publisher, indexer: &crate::indexer::IndexerStats) {
        let elapsed = self.last.elapsed();
        if elapsed < self.every {
            return;
        }
        let secs = elapsed.as_secs_f64();
        let published = p.num_published();
        let indexed = indexer.indexed.load(Ordering::Relaxed);
        let failed = indexer.failed.load(Ordering::Relaxed);
        tracing::info!(
            "Publisher: {published} docs published, {} pending. Rate: {:.2} docs/sec.",
            p.pending(),
            (published - self.last_published) as f64 / secs
        );
        tracing::info!(
            "Indexer: {indexed} docs indexed, {failed} failed. Rate: {:.2} docs/sec.",
            (indexed - self.last_indexed) as f64 / secs
        );
        self.last = Instant::now();
        self.last_published = published;
        self.last_indexed = indexed;
    }
}

fn catch<T>(f: impl FnOnce() -> Result<T, ConnectorError>) -> Result<T, ConnectorError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(ConnectorError::new(format!(
            "panicked: {}",
            lucille_panic::message(p.as_ref())
        ))),
    }
}

/// Logs one line per stage at `level` (`runner.metricsLoggingLevel`).
pub fn log_stage_metrics(connector: &str, metrics: &[StageMetrics], level: tracing::Level) {
    for m in metrics {
        let line = format!(
            "{connector} stage {}: {} docs processed, {} children, {} errors, mean {:.3} ms, total {:.2} s",
            m.name,
            m.processed,
            m.children,
            m.errors,
            m.mean_time().as_secs_f64() * 1e3,
            m.total_time().as_secs_f64()
        );
        // tracing's macros take their level as a constant.
        match level {
            tracing::Level::TRACE => tracing::trace!("{line}"),
            tracing::Level::DEBUG => tracing::debug!("{line}"),
            tracing::Level::WARN => tracing::warn!("{line}"),
            tracing::Level::ERROR => tracing::error!("{line}"),
            _ => tracing::info!("{line}"),
        }
    }
}

/// Documents the indexer received and events, over every connector (test mode).
pub fn test_history(result: &RunResult) -> (Vec<Document>, Vec<Event>) {
    let mut docs = Vec::new();
    let mut events = Vec::new();
    for c in &result.connectors {
        if let Some(h) = &c.history {
            docs.extend(h.sent_for_indexing.iter().cloned());
            events.extend(h.events.iter().cloned());
        }
    }
    (docs, events)
}

/// A progress line on stderr when it is a terminal: published, indexed, failed, rate.
pub fn terminal_progress() -> Option<ProgressFn> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let started = Instant::now();
    let last = parking_lot::Mutex::new(Instant::now() - Duration::from_secs(1));
    Some(Arc::new(move |name: &str, p: &Publisher| {
        let mut last = last.lock();
        if last.elapsed() < Duration::from_millis(200) {
            return;
        }
        *last = Instant::now();
        let c = p.counts();
        let done = c.succeeded + c.failed + c.dropped;
        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "{name}: {} published, {} indexed, {} failed, {} dropped ({rate:.0} docs/s)",
            c.published, c.succeeded, c.failed, c.dropped
        ));
        bar.tick();
    }))
}
