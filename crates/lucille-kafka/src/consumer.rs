//! A group consumer shared by the threads of one role in a process (worker threads, or the
//! indexer thread): offsets are stored only when the caller says a message is done (through
//! the [`OffsetTracker`], so out-of-order completions never skip one) and committed by
//! librdkafka's auto-commit of stored offsets, on partition revocation (so a rebalance neither
//! replays what was done nor skips what was not), and on close.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError as RdError;
use rdkafka::error::KafkaResult;
use rdkafka::message::{Headers, Message};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::admin::client_config;
use super::config::KafkaSettings;
use super::offsets::OffsetTracker;
use super::KafkaError;
use lucille_core::document::{Document, DocumentError};
use lucille_core::event::Origin;

/// Told the committed offsets `(partition, next offset to read)` after each commit.
pub type CommitHook = Box<dyn Fn(&[(i32, i64)]) + Send + Sync>;

pub struct GroupContext {
    tracker: Arc<OffsetTracker>,
    /// Counts partition assignments (a reader of shared state catches up when it moved).
    generation: AtomicU64,
    /// Per partition, one past the offset stored last: what a synchronous commit commits.
    stored: Mutex<HashMap<i32, i64>>,
    on_commit: Mutex<Option<CommitHook>>,
}

impl GroupContext {
    fn committed(&self, offsets: &[(i32, i64)]) {
        if offsets.is_empty() {
            return;
        }
        if let Some(hook) = &*self.on_commit.lock() {
            hook(offsets);
        }
    }

    /// After a synchronous commit of what was stored.
    fn committed_stored(&self) {
        let stored: Vec<(i32, i64)> = self.stored.lock().iter().map(|(p, o)| (*p, *o)).collect();
        self.committed(&stored);
    }
}

impl ClientContext for GroupContext {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        super::log_librdkafka(level, fac, message);
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        tracing::error!("librdkafka: {error}: {reason}");
    }
}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            if commit_stored(consumer) {
                self.committed_stored();
            }
            let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            tracing::info!("Kafka partitions {parts:?} revoked; stored offsets committed");
            self.tracker.forget(&parts);
            let mut stored = self.stored.lock();
            for p in &parts {
                stored.remove(p);
            }
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            self.generation.fetch_add(1, Ordering::AcqRel);
            let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            let committed = consumer
                .committed_offsets((*tpl).clone(), Duration::from_secs(10))
                .map(|c| {
                    c.elements()
                        .iter()
                        .map(|e| format!("{}:{:?}", e.partition(), e.offset()))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_else(|e| e.to_string());
            tracing::info!("Kafka partitions {parts:?} assigned (committed: {committed})");
        }
    }

    /// librdkafka's auto-commits (a synchronous commit is reported by its caller).
    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        if result.is_err() {
            return;
        }
        let done: Vec<(i32, i64)> = offsets
            .elements()
            .iter()
            .filter_map(|e| match e.offset() {
                Offset::Offset(o) => Some((e.partition(), o)),
                _ => None,
            })
            .collect();
        self.committed(&done);
    }
}

/// Commits what is stored; whether everything stored is now committed.
fn commit_stored<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> bool {
    match consumer.commit_consumer_state(CommitMode::Sync) {
        Ok(()) => true,
        // Nothing stored since the last commit.
        Err(RdError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => true,
        Err(e) => {
            tracing::warn!("committing Kafka offsets: {e}");
            false
        }
    }
}

/// A document read from a topic, with where it came from.
pub struct Taken {
    pub doc: Document,
    pub partition: i32,
    pub offset: i64,
    /// The origin a worker gave the document (on `{pipeline}_dest`).
    pub origin: Option<Origin>,
}

/// Why a message is not a document (it is logged and skipped).
#[derive(Debug, thiserror::Error)]
enum NotADocument {
    #[error("an empty message")]
    Empty,
    #[error("{0}")]
    Document(#[from] DocumentError),
}

pub struct GroupConsumer {
    consumer: BaseConsumer<GroupContext>,
    tracker: Arc<OffsetTracker>,
    pub topic: String,
}

impl GroupConsumer {
    pub fn new(
        settings: &KafkaSettings,
        topic: &str,
        group_id: &str,
        client_id: &str,
    ) -> Result<Arc<Self>, KafkaError> {
        let mut props = settings.consumer_properties(client_id, group_id)?;
        // At-least-once: only offsets stored after the work is done are committed.
        props.insert("enable.auto.offset.store".into(), "false".into());
        props.insert("enable.auto.commit".into(), "true".into());
        props
            .entry("auto.commit.interval.ms".into())
            .or_insert_with(|| "1000".into());
        let tracker = Arc::new(OffsetTracker::default());
        let consumer: BaseConsumer<GroupContext> = client_config(&props)
            .create_with_context(GroupContext {
                tracker: tracker.clone(),
                generation: AtomicU64::new(0),
                stored: Mutex::new(HashMap::new()),
                on_commit: Mutex::new(None),
            })
            .map_err(KafkaError::client("cannot create a consumer"))?;
        consumer
            .subscribe(&[topic])
            .map_err(KafkaError::client(format!("cannot subscribe to {topic:?}")))?;
        Ok(Arc::new(GroupConsumer {
            consumer,
            tracker,
            topic: topic.to_string(),
        }))
    }

    /// The next document, tracked as in flight until [`GroupConsumer::done`]. A message that
    /// is not a document is logged and skipped (its offset is done).
    pub fn poll(&self, timeout: Duration) -> Option<Taken> {
        let msg = match self.consumer.poll(timeout)? {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("polling {}: {e}", self.topic);
                return None;
            }
        };
        let (partition, offset) = (msg.partition(), msg.offset());
        let origin = msg.headers().and_then(|h| {
            h.iter()
                .find(|h| h.key == super::ORIGIN_HEADER)
                .and_then(|h| h.value)
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(Origin::parse)
        });
        let parsed = match msg.payload() {
            Some(bytes) => Document::from_json_bytes(bytes).map_err(NotADocument::from),
            None => Err(NotADocument::Empty),
        };
        match parsed {
            Ok(doc) => {
                if let (Some(run_id), Some(header)) = (doc.run_id(), msg.headers()) {
                    if let Some(t) = header
                        .iter()
                        .find(|h| h.key == super::TRACEPARENT_HEADER)
                        .and_then(|h| h.value)
                        .and_then(|v| std::str::from_utf8(v).ok())
                    {
                        lucille_core::trace::accept_traceparent(run_id, t);
                    }
                }
                self.tracker.begin(partition, offset);
                Some(Taken {
                    doc,
                    partition,
                    offset,
                    origin,
                })
            }
            Err(e) => {
                tracing::error!(
                    "skipping the message at {}[{partition}]@{offset}: not a document ({e})",
                    self.topic
                );
                self.tracker.begin(partition, offset);
                self.done(partition, offset);
                None
            }
        }
    }

    /// The message at `offset` is done: stores the partition's safe offset when it moved.
    pub fn done(&self, partition: i32, offset: i64) {
        if let Some(o) = self.tracker.complete(partition, offset) {
            match self.consumer.store_offset(&self.topic, partition, o) {
                Ok(()) => {
                    self.consumer
                        .context()
                        .stored
                        .lock()
                        .insert(partition, o + 1);
                }
                // The partition was revoked meanwhile: its new owner replays the message.
                Err(e) => {
                    tracing::debug!("storing offset {o} of {}[{partition}]: {e}", self.topic)
                }
            }
        }
    }

    /// How many partition assignments this consumer has seen (moves on each rebalance that
    /// gives it partitions, before any message of theirs is returned).
    pub fn generation(&self) -> u64 {
        self.consumer.context().generation.load(Ordering::Acquire)
    }

    /// Calls `hook` with the committed offsets after each commit.
    pub fn on_commit(&self, hook: CommitHook) {
        *self.consumer.context().on_commit.lock() = Some(hook);
    }

    pub fn in_flight(&self) -> usize {
        self.tracker.in_flight()
    }

    /// Commits what is stored and leaves the group.
    pub fn close(&self) {
        if commit_stored(&self.consumer) {
            self.consumer.context().committed_stored();
        }
        self.consumer.unsubscribe();
    }
}
