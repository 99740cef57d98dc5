//! The Kafka run modes: `External` (workers and the indexer as threads of
//! this process, every message over the broker) and `Distributed` (this process runs the
//! connector and the publisher only; `lucille worker` / `lucille indexer` processes do the
//! rest). Here: the messenger of a run's connector, and the long-running worker and indexer
//! processes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::any::Any;

use crate::{producer::KafkaProducer, retries::RetryCounter, KafkaSettings, Topics};
use lucille_core::config::{ComponentConfig, ConfigError, ConfigErrors};
use lucille_core::health::Health;
use lucille_core::indexer::{self, IndexerHandle};
use lucille_core::messaging::transport::{
    Connection, Transport, TransportDescriptor, TransportError, TransportRun,
};
use lucille_core::messaging::{IndexerSide, Topology, WorkerSide};
use lucille_core::runner::RunPlan;
use lucille_core::worker::WorkerPool;

// Kafka, the broker of the Kafka modes: configured by the `kafka` block.
inventory::submit!(TransportDescriptor {
    name: "kafka",
    settings: read_settings,
    connect,
});

fn read_settings(
    block: &ComponentConfig,
    pipelines: &[&str],
) -> Result<Arc<dyn Any + Send + Sync>, Vec<ConfigError>> {
    let mut errors = Vec::new();
    for name in pipelines {
        if !crate::config::valid_topic_name(&format!("{name}_source")) {
            errors.push(ConfigError::new(
                "pipelines",
                format!(
                    "pipeline name {name:?} cannot name Kafka topics (letters, digits, '.', \
                     '_' and '-' only)"
                ),
            ));
        }
    }
    match KafkaSettings::from_config(block) {
        Ok(settings) if errors.is_empty() => Ok(Arc::new(settings)),
        Ok(_) => Err(errors),
        Err(e) => {
            errors.splice(0..0, e);
            Err(errors)
        }
    }
}

/// The run's `kafka` settings.
pub fn kafka_settings(plan: &RunPlan) -> Option<&KafkaSettings> {
    plan.transport.as_ref()?.settings::<KafkaSettings>()
}

fn connect(transport: &Transport, c: &Connection) -> Result<TransportRun, TransportError> {
    let settings = transport.settings::<KafkaSettings>().ok_or_else(|| {
        TransportError::from(Box::from("the kafka transport has no kafka settings"))
    })?;
    connector_messenger(settings, c).map_err(|e| TransportError(Box::new(e)))
}

fn connector_messenger(
    settings: &KafkaSettings,
    c: &Connection,
) -> Result<TransportRun, crate::KafkaError> {
    let (pipeline, run_id, worker_threads) = (c.pipeline, c.run_id, c.worker_threads);
    let topics = Topics::new(pipeline, settings);
    crate::admin::wait_for_broker(settings, settings.connect_timeout, |reason| {
        tracing::warn!(
            "waiting for the Kafka broker at {}: {reason}",
            settings.bootstrap_servers
        )
    })?;
    crate::prepare_run_topics(settings, &topics, run_id)?;
    let producer = KafkaProducer::new(settings)?;
    let publisher = crate::publisher::KafkaPublisherMessenger::new(
        settings,
        producer.clone(),
        topics.clone(),
        run_id.clone(),
    )?;
    let publisher = Arc::new(publisher);
    if c.publisher_only {
        let p = publisher.clone();
        let topology = Topology {
            publisher,
            worker: None,
            indexer: None,
        };
        return Ok(TransportRun::new(topology, move || p.close()));
    }
    // `--mode external`: the publisher, the worker threads and the indexer thread of this
    // process, each with its own Kafka role.
    crate::admin::warn_if_fewer_partitions(settings, &topics.source, worker_threads);
    let worker = Arc::new(crate::worker_messenger(
        settings,
        &topics,
        producer.clone(),
    )?);
    let indexer = Arc::new(crate::indexer_messenger(settings, &topics, producer)?);
    let (p, w, i) = (publisher.clone(), worker.clone(), indexer.clone());
    let topology = Topology {
        publisher,
        worker: Some(worker),
        indexer: Some(indexer),
    };
    Ok(TransportRun::new(topology, move || {
        w.close();
        i.close();
        p.close();
    }))
}

/// What a long-running process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Worker,
    Indexer,
    WorkerIndexer,
}

impl Role {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "worker" => Some(Role::Worker),
            "indexer" => Some(Role::Indexer),
            "worker-indexer" | "worker_indexer" => Some(Role::WorkerIndexer),
            _ => None,
        }
    }
}

/// The pipeline a worker or indexer process serves: `--pipeline`, else `worker.pipeline`, else
/// the only pipeline of the config (or the only connector's).
pub fn choose_pipeline(plan: &RunPlan, requested: Option<&str>) -> Result<String, ConfigErrors> {
    let err = |m: String| ConfigErrors(vec![ConfigError::new("pipeline", m)]);
    let name = match requested.or(plan.worker_pipeline.as_deref()) {
        Some(p) => p.to_string(),
        None => {
            let mut names: Vec<&String> = plan.pipelines.keys().collect();
            names.sort();
            match names.as_slice() {
                [one] => (*one).clone(),
                [] => return Err(err("the config defines no pipeline to serve".into())),
                many => {
                    return Err(err(format!(
                        "the config defines several pipelines ({}): choose one with --pipeline \
                         or worker.pipeline",
                        many.iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
        }
    };
    if !plan.pipelines.contains_key(&name) {
        return Err(err(format!("no pipeline named {name:?} is defined")));
    }
    Ok(name)
}

/// Why a worker, indexer or worker-indexer process could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("a worker or indexer process needs a kafka block (kafka.bootstrapServers)")]
    NoKafka,
    #[error("no pipeline named {0:?}")]
    NoPipeline(String),
    #[error(transparent)]
    Kafka(#[from] crate::KafkaError),
    #[error("cannot start workers: {0}")]
    Workers(#[source] std::io::Error),
    /// The backend's config: every problem, joined by "; ".
    #[error("indexer: {}", join_config_errors(.0))]
    IndexerConfig(Vec<ConfigError>),
    /// The backend's connection check, or its flush at the end.
    #[error("indexer: {0}")]
    Indexer(#[source] indexer::BackendError),
    #[error("cannot start the indexer: {0}")]
    IndexerThread(#[source] std::io::Error),
    /// A worker or the indexer thread died while serving.
    #[error("{0}")]
    Died(String),
}

fn join_config_errors(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs a worker, indexer or worker-indexer process until `stop` is set (SIGTERM): serves
/// every run of `pipeline`, logs rates (and heartbeats) as local mode does, then stops
/// cleanly: the workers finish their documents, the indexer flushes, offsets are committed.
pub fn serve(
    plan: &RunPlan,
    role: Role,
    pipeline: &str,
    stop: &AtomicBool,
    health: &Health,
) -> Result<(), ServeError> {
    let settings = kafka_settings(plan).ok_or(ServeError::NoKafka)?;
    health.not_ready(format!(
        "connecting to the broker at {}",
        settings.bootstrap_servers
    ));
    let pipeline_plan = plan
        .pipelines
        .get(pipeline)
        .ok_or_else(|| ServeError::NoPipeline(pipeline.to_string()))?
        .clone();
    let topics = Topics::new(pipeline, settings);
    crate::admin::wait_for_broker(settings, settings.connect_timeout, |reason| {
        let reason = format!(
            "waiting for the Kafka broker at {} (kafka.bootstrapServers): {reason}",
            settings.bootstrap_servers
        );
        tracing::warn!("{reason}");
        health.not_ready(reason);
    })?;
    crate::prepare_pipeline_topics(settings, &topics)?;
    let producer = KafkaProducer::new(settings)?;
    // The pool and indexer stamp no run of their own: each event goes to the run of its
    // document (the messengers look it up).
    let no_run: Arc<str> = Arc::from("");
    let mut worker = plan.worker.clone();
    if let Some(n) = plan.pipeline_threads.get(pipeline) {
        worker.threads = *n;
    }
    let threads = worker.threads;
    // What each role reads and writes: its messenger, and how to close it at the end.
    let mut closers: Vec<Box<dyn Fn()>> = Vec::new();
    // The worker role's messenger, counting starts when worker.maxRetries is set.
    let worker_messenger = || -> Result<_, crate::KafkaError> {
        let w = crate::worker_messenger(settings, &topics, producer.clone())?;
        match worker.max_retries {
            Some(n) => {
                RetryCounter::new(settings, pipeline, &topics.source, n).map(|c| w.with_retries(c))
            }
            None => Ok(w),
        }
    };
    type Roles = (Option<Arc<dyn WorkerSide>>, Option<Arc<dyn IndexerSide>>);
    let (pool_messenger, indexer_messenger): Roles = match role {
        Role::Worker => {
            let m = Arc::new(worker_messenger()?);
            let m2 = m.clone();
            closers.push(Box::new(move || m2.close()));
            (Some(m), None)
        }
        Role::Indexer => {
            let m = Arc::new(crate::indexer_messenger(
                settings,
                &topics,
                producer.clone(),
            )?);
            let m2 = m.clone();
            closers.push(Box::new(move || m2.close()));
            (None, Some(m))
        }
        Role::WorkerIndexer => {
            let m = Arc::new(crate::worker_indexer::KafkaWorkerIndexerMessenger::new(
                worker_messenger()?,
                producer.clone(),
                topics.clone(),
                settings.events,
                plan.queue_capacity,
            ));
            let m2 = m.clone();
            closers.push(Box::new(move || m2.close()));
            (
                Some(m.clone() as Arc<dyn WorkerSide>),
                Some(m as Arc<dyn IndexerSide>),
            )
        }
    };
    let mut pool = None;
    if let Some(m) = pool_messenger {
        crate::admin::warn_if_fewer_partitions(settings, &topics.source, threads);
        pool = Some(
            WorkerPool::start(pipeline_plan, worker, m, no_run.clone(), None)
                .map_err(ServeError::Workers)?,
        );
    }
    let mut indexer_handle = None;
    if let Some(m) = indexer_messenger {
        let bypass = !plan.indexer.send_enabled;
        if !bypass {
            if let Some(w) = indexer::backend_warning(&plan.indexer, &plan.backend_config) {
                tracing::warn!("{w}");
            }
        }
        let mut backend = if bypass {
            Box::new(indexer::nop::NopBackend) as Box<dyn indexer::Backend>
        } else {
            indexer::build_backend(
                &plan.indexer,
                &plan.backend_config,
                indexer::Opening::Serving,
            )
            .map_err(ServeError::IndexerConfig)?
        };
        if !bypass {
            backend.validate_connection().map_err(ServeError::Indexer)?;
        }
        indexer_handle = Some(
            IndexerHandle::start(plan.indexer.clone(), backend, m, no_run, bypass)
                .map_err(ServeError::IndexerThread)?,
        );
    }
    health.ready();
    tracing::info!(
        "{} serving pipeline {pipeline:?} on {} (source {}, dest {}); SIGTERM stops it",
        match role {
            Role::Worker => format!("worker process with {threads} thread(s)"),
            Role::Indexer => "indexer process".to_string(),
            Role::WorkerIndexer => format!("worker-indexer process with {threads} thread(s)"),
        },
        settings.bootstrap_servers,
        topics.source,
        topics.dest
    );
    let mut last_status = Instant::now();
    let mut died = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        // A dead worker or indexer thread would leave this process up but its partitions
        // unserved: the process ends instead (non-zero exit), saying which, for its
        // supervisor to restart it; its uncommitted messages go to another worker.
        died = pool
            .as_ref()
            .and_then(WorkerPool::dead_worker)
            .or_else(|| indexer_handle.as_mut().and_then(IndexerHandle::dead));
        if let Some(reason) = &died {
            tracing::error!("{reason}: stopping this process");
            break;
        }
        if last_status.elapsed() >= plan.worker.log_interval {
            last_status = Instant::now();
            if let Some(h) = &indexer_handle {
                tracing::info!(
                    "Indexer: {} docs indexed, {} failed.",
                    h.stats.indexed.load(Ordering::Relaxed),
                    h.stats.failed.load(Ordering::Relaxed)
                );
            }
        }
    }
    tracing::info!("stopping: finishing documents in progress and committing offsets");
    let mut result = Ok(());
    if let Some(p) = pool {
        let metrics = p.stop();
        lucille_core::runner::log_stage_metrics(pipeline, &metrics, plan.metrics_level);
    }
    if let Some(h) = indexer_handle {
        if let Err(e) = h.terminate() {
            result = Err(ServeError::Indexer(e));
        }
    }
    for close in &closers {
        close();
    }
    tracing::info!("stopped");
    match died {
        Some(reason) => Err(ServeError::Died(reason)),
        None => result,
    }
}
