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
pub mod indexer;
pub mod offsets;
pub mod producer;
pub mod publisher;
pub mod retries;
pub mod topics;
pub mod worker;
pub mod worker_indexer;

use std::sync::Arc;

use serde_json::{json, Value};

pub use config::KafkaSettings;
use lucille_core::event::Origin;
use lucille_core::event::{Event, EventType};
use lucille_core::messaging::MessagingError;
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

/// An event as Lucille writes it on the event topic.
pub fn event_json(e: &Event) -> String {
    let mut v = json!({"documentId": e.doc_id, "runId": &*e.run_id, "type": e.kind.as_str()});
    if let Some(m) = &e.message {
        v["message"] = Value::from(m.as_str());
    }
    if let Some(o) = &e.origin {
        v["origin"] = Value::from(o.to_string());
    }
    v.to_string()
}

/// Why a message on an event topic is not an event.
#[derive(Debug, thiserror::Error)]
pub enum BadEvent {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no documentId")]
    NoDocumentId,
    #[error("unknown event type {0:?}")]
    UnknownType(Option<String>),
}

/// An event as Lucille writes it on an event topic; `run_id` is the run reading it (an
/// event without a `runId` belongs to it).
pub fn event_from_json(bytes: &[u8], run_id: &Arc<str>) -> Result<Event, BadEvent> {
    let v: Value = serde_json::from_slice(bytes)?;
    let id = v
        .get("documentId")
        .and_then(Value::as_str)
        .ok_or(BadEvent::NoDocumentId)?;
    let kind = match v.get("type").and_then(Value::as_str) {
        Some("CREATE") => EventType::Create,
        Some("FINISH") => EventType::Finish,
        Some("FAIL") => EventType::Fail,
        Some("DROP") => EventType::Drop,
        other => return Err(BadEvent::UnknownType(other.map(str::to_string))),
    };
    let run = match v.get("runId").and_then(Value::as_str) {
        Some(r) if r == &**run_id => run_id.clone(),
        Some(r) => Arc::from(r),
        None => run_id.clone(),
    };
    let mut e = Event::new(id, run, kind);
    e.message = v.get("message").and_then(Value::as_str).map(str::to_string);
    e.origin = v
        .get("origin")
        .and_then(Value::as_str)
        .and_then(Origin::parse);
    Ok(e)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_as_lucille_json() {
        let run: Arc<str> = Arc::from("r1");
        let e = Event::new("d1", run.clone(), EventType::Fail).with_message("bad");
        let text = event_json(&e);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["documentId"], "d1");
        assert_eq!(v["type"], "FAIL");
        let back = event_from_json(text.as_bytes(), &run).unwrap();
        assert_eq!(back, e);
        let mut replayable = e.clone();
        replayable.origin = Some(Origin {
            partition: 2,
            offset: 41,
            ordinal: 3,
        });
        let text = event_json(&replayable);
        assert!(text.contains(r#""origin":"2:41:3""#), "{text}");
        assert_eq!(event_from_json(text.as_bytes(), &run).unwrap(), replayable);
        assert!(event_from_json(br#"{"documentId":"x","type":"NOPE"}"#, &run).is_err());
    }
}
