//! Lucille-rs's distributed mode on Kafka: the broker behind the `--mode external` and
//! `--mode distributed` runs and the `lucille worker` / `indexer` / `worker-indexer`
//! processes, and Lucille's KafkaConnector. One messenger per role, each implementing only its
//! role's traits from `lucille_core::messaging`, so the worker pool, the indexer thread and the
//! Publisher run unchanged. Documents travel as their JSON keyed by id; events as Lucille's
//! event JSON.
//!
//! - [`publisher`]: the runner's side (`--mode distributed` / `external`).
//! - [`worker`]: a worker process (`lucille worker`) or external mode's worker threads.
//! - [`indexer`]: an indexer process (`lucille indexer`) or external mode's indexer thread.
//! - [`worker_indexer`]: the two in one process (`lucille worker-indexer`).
//! - [`distributed`]: the transport the runner finds in the registry (the `kafka` block, a
//!   connector's roles per mode) and the long-running processes.
//! - [`connector`]: Lucille's KafkaConnector.

pub mod admin;
pub mod config;
pub mod connector;
pub mod consumer;
pub mod distributed;
pub mod events;
pub mod indexer;
pub mod offsets;
pub mod producer;
pub mod publisher;
pub mod retries;
pub mod topics;
pub mod worker;
pub mod worker_indexer;

use std::sync::Arc;

pub use config::KafkaSettings;
pub use events::{
    by_run, event_from_json, event_json, event_messages, events_from_json, events_json, BadEvent,
    EVENT_MESSAGE_BYTES,
};
use lucille_core::messaging::MessagingError;

/// The hasher of the maps keyed by document id that every message passes (SipHash showed up
/// in the runner's and the workers' profiles).
pub(crate) type Fast = foldhash::fast::RandomState;
pub use topics::Topics;

/// Why a Kafka client could not be made, or a message not written or read.
#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    /// A client property file (`consumerPropertyFile`, ...) cannot be used.
    #[error("kafka config: {0}")]
    Config(#[from] config::PropertyFileError),
    /// A librdkafka call failed; `action` says what it was for ("cannot create a consumer").
    #[error("kafka: {action}: {source}")]
    Client {
        action: String,
        #[source]
        source: rdkafka::error::KafkaError,
    },
    /// A partition could not be added to the list a reader is assigned.
    #[error("kafka: {0}")]
    PartitionList(#[source] rdkafka::error::KafkaError),
    /// The broker refused to create a topic.
    #[error("kafka: cannot create topic {topic:?}: {code}")]
    CreateTopic {
        topic: String,
        code: rdkafka::types::RDKafkaErrorCode,
    },
    /// The broker reported a message it did not store.
    #[error("kafka: {key} was not delivered to {topic}")]
    NotDelivered { key: String, topic: String },
    /// No acknowledgement of a message came within `timeout`.
    #[error("kafka: {key} was not acknowledged by {topic} within {} s", timeout.as_secs())]
    NotAcknowledged {
        key: String,
        topic: String,
        timeout: std::time::Duration,
    },
    /// The broker did not answer at start within `kafka.connectTimeoutSecs`.
    #[error(
        "kafka: the broker at {servers} (kafka.bootstrapServers) did not answer within {secs} s \
         (kafka.connectTimeoutSecs): {reason}"
    )]
    Unreachable {
        servers: String,
        secs: u64,
        reason: String,
    },
    /// A thread the client needs could not be started.
    #[error("kafka: cannot start {what}: {source}")]
    Thread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A topic could not be read up to `offset` in time.
    #[error("kafka: {topic} could not be read to offset {offset}")]
    ReadIncomplete { topic: String, offset: i64 },
}

impl KafkaError {
    /// A `map_err` for a librdkafka call: its error, with what the call was for.
    pub(crate) fn client(
        action: impl Into<String>,
    ) -> impl FnOnce(rdkafka::error::KafkaError) -> KafkaError {
        let action = action.into();
        move |source| KafkaError::Client { action, source }
    }
}

/// The W3C trace context of a document's message (source and dest topics), when its run is
/// traced: the run's trace id, so a worker's and an indexer's spans join the run's trace.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// The message header that names a document's run (source and dest messages), so a message
/// whose payload is not a document can still be FAILed in its run.
pub const RUN_HEADER: &str = "lucille-run";

/// The message header that carries a document's [`Origin`] from the worker to the indexer.
pub const ORIGIN_HEADER: &str = "lucille-origin";

impl From<KafkaError> for MessagingError {
    fn from(e: KafkaError) -> Self {
        MessagingError::Kafka(e.to_string())
    }
}

/// librdkafka's log lines and client errors, into this crate's log (rdkafka writes them to the
/// `log` crate, which nothing here listens to).
pub(crate) fn log_librdkafka(level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
    use rdkafka::config::RDKafkaLogLevel as L;
    match level {
        L::Emerg | L::Alert | L::Critical | L::Error => {
            tracing::error!("librdkafka {fac}: {message}")
        }
        L::Warning => tracing::warn!("librdkafka {fac}: {message}"),
        L::Notice | L::Info => tracing::info!("librdkafka {fac}: {message}"),
        L::Debug => tracing::debug!("librdkafka {fac}: {message}"),
    }
}

/// Creates the run's topics when absent: source, dest and fail with `kafka.topicPartitions`,
/// the run's event topic with one partition.
pub fn prepare_run_topics(
    settings: &KafkaSettings,
    topics: &Topics,
    run_id: &str,
) -> Result<(), KafkaError> {
    let n = i32::try_from(settings.topic_partitions).unwrap_or(i32::MAX);
    let event = topics.event(run_id);
    admin::ensure_topics(
        settings,
        &[
            (topics.source.as_str(), n),
            (topics.dest.as_str(), n),
            (topics.fail.as_str(), n),
            (event.as_str(), 1),
        ],
    )?;
    Ok(())
}

/// Creates the pipeline's long-lived topics when absent (a worker or indexer process).
pub fn prepare_pipeline_topics(
    settings: &KafkaSettings,
    topics: &Topics,
) -> Result<(), KafkaError> {
    let n = i32::try_from(settings.topic_partitions).unwrap_or(i32::MAX);
    admin::ensure_topics(
        settings,
        &[
            (topics.source.as_str(), n),
            (topics.dest.as_str(), n),
            (topics.fail.as_str(), n),
        ],
    )?;
    Ok(())
}

pub fn worker_messenger(
    settings: &KafkaSettings,
    topics: &Topics,
    producer: Arc<producer::KafkaProducer>,
) -> Result<worker::KafkaWorkerMessenger, KafkaError> {
    let consumer = consumer::GroupConsumer::new(
        settings,
        &topics.source,
        &settings.consumer_group_id,
        &format!("com.kmwllc.lucille-worker-{}", topics.pipeline),
    )?;
    Ok(worker::KafkaWorkerMessenger::new(
        consumer,
        producer,
        topics.clone(),
        settings.events,
    ))
}

/// The indexer's group is `{consumerGroupId}_indexer`: Lucille shares one group between the
/// workers (source topic) and the indexers (dest topic); separate groups keep a worker joining
/// or leaving from pausing the indexers for a rebalance.
pub fn indexer_messenger(
    settings: &KafkaSettings,
    topics: &Topics,
    producer: Arc<producer::KafkaProducer>,
) -> Result<indexer::KafkaIndexerMessenger, KafkaError> {
    let consumer = consumer::GroupConsumer::new(
        settings,
        &topics.dest,
        &format!("{}_indexer", settings.consumer_group_id),
        &format!("com.kmwllc.lucille-indexer-{}", topics.pipeline),
    )?;
    Ok(indexer::KafkaIndexerMessenger::new(
        consumer,
        producer,
        topics.clone(),
        settings.events,
    ))
}
