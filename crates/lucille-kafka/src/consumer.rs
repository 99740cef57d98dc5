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
use rdkafka::message::{BorrowedMessage, Headers, Message};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::admin::client_config;
use super::config::KafkaSettings;
use super::offsets::OffsetTracker;
use super::KafkaError;
use lucille_core::document::{Document, DocumentError, ObjectParser, ParseError};
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
            let committed = commit_stored(consumer);
            if committed {
                self.committed_stored();
            }
            let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            if committed {
                tracing::info!("Kafka partitions {parts:?} revoked; stored offsets committed");
            } else {
                tracing::info!(
                    "Kafka partitions {parts:?} revoked; their stored offsets could not be \
                     committed, so their next owner replays from the last commit"
                );
            }
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

/// A message read from a topic, with where it came from.
pub struct Taken {
    pub payload: Payload,
    pub partition: i32,
    pub offset: i64,
    /// The origin a worker gave the document (on `{pipeline}_dest`).
    pub origin: Option<Origin>,
}

/// What a message held.
pub enum Payload {
    Doc(Document),
    /// Not a document: FAILed by its reader, never skipped silently.
    Unreadable(Unreadable),
}

/// A message that is not a document, as its reader reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The message's key (a document id, as Lucille keys its messages), else its position.
    pub id: String,
    /// The run named by the message's `lucille-run` header, if any.
    pub run_id: Option<Arc<str>>,
    /// Why it is not a document, and where it is (`topic[partition]@offset`).
    pub reason: String,
    /// Its text (lossy UTF-8, at most [`UNREADABLE_TEXT_BYTES`]), for the dead-letter output.
    pub text: Option<String>,
}

/// How much of an unreadable message's text the dead-letter output keeps.
pub const UNREADABLE_TEXT_BYTES: usize = 64 * 1024;

/// Why a message is not a document.
#[derive(Debug, thiserror::Error)]
enum NotADocument {
    #[error("an empty message")]
    Empty,
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("{0}")]
    Parse(#[from] ParseError),
    #[error("{0}")]
    Document(#[from] DocumentError),
}

/// A message's document: its text checked UTF-8 once, then parsed into a map sized from the
/// messages before it (the JSON lines handler's parser: serde_json's own grows every map
/// several times, a fifth of a worker's CPU under perf).
fn parse_document(parser: &ObjectParser, bytes: Option<&[u8]>) -> Result<Document, NotADocument> {
    let bytes = bytes.ok_or(NotADocument::Empty)?;
    let text = std::str::from_utf8(bytes).map_err(|_| NotADocument::NotUtf8)?;
    Ok(Document::from_fields(parser.parse(text)?)?)
}

fn header<'a>(msg: &'a BorrowedMessage<'_>, key: &str) -> Option<&'a str> {
    msg.headers().and_then(|h| {
        h.iter()
            .find(|h| h.key == key)
            .and_then(|h| h.value)
            .and_then(|v| std::str::from_utf8(v).ok())
    })
}

/// The dead-letter view of a message that is not a document.
fn unreadable(topic: &str, msg: &BorrowedMessage<'_>, e: &NotADocument) -> Unreadable {
    let at = format!("{topic}[{}]@{}", msg.partition(), msg.offset());
    let id = msg
        .key()
        .and_then(|k| std::str::from_utf8(k).ok())
        .filter(|k| !k.is_empty())
        .map_or_else(|| at.clone(), str::to_string);
    let text = msg.payload().map(|p| {
        let cut = &p[..p.len().min(UNREADABLE_TEXT_BYTES)];
        let mut t = String::from_utf8_lossy(cut).into_owned();
        if p.len() > cut.len() {
            t.push_str(" (truncated)");
        }
        t
    });
    Unreadable {
        id,
        run_id: header(msg, super::RUN_HEADER).map(Arc::from),
        reason: format!("not a document ({e}) at {at}"),
        text,
    }
}

pub struct GroupConsumer {
    consumer: BaseConsumer<GroupContext>,
    tracker: Arc<OffsetTracker>,
    parser: ObjectParser,
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
            parser: ObjectParser::new(),
            topic: topic.to_string(),
        }))
    }

    /// The next message, tracked as in flight until [`GroupConsumer::done`]: a document, or
    /// what its reader must FAIL (a message that is not one).
    pub fn poll(&self, timeout: Duration) -> Option<Taken> {
        let msg = match self.consumer.poll(timeout)? {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("polling {}: {e}", self.topic);
                return None;
            }
        };
        let (partition, offset) = (msg.partition(), msg.offset());
        let origin = header(&msg, super::ORIGIN_HEADER).and_then(Origin::parse);
        let payload = match parse_document(&self.parser, msg.payload()) {
            Ok(doc) => {
                if let (Some(run_id), Some(t)) =
                    (doc.run_id(), header(&msg, super::TRACEPARENT_HEADER))
                {
                    lucille_core::trace::accept_traceparent(run_id, t);
                }
                Payload::Doc(doc)
            }
            Err(e) => {
                let u = unreadable(&self.topic, &msg, &e);
                tracing::error!(doc_id = u.id.as_str(), "{}", u.reason);
                Payload::Unreadable(u)
            }
        };
        self.tracker.begin(partition, offset);
        Some(Taken {
            payload,
            partition,
            offset,
            origin,
        })
    }

    /// The message at `offset` is done: stores the partition's safe offset when it moved.
    pub fn done(&self, partition: i32, offset: i64) {
        if let Some(o) = self.tracker.complete(partition, offset) {
            self.store(partition, o);
        }
    }

    /// Several messages are done (a block or a batch): one store per partition whose safe
    /// offset moved.
    pub fn done_all(&self, offsets: impl IntoIterator<Item = (i32, i64)>) {
        for (partition, o) in self.tracker.complete_all(offsets) {
            self.store(partition, o);
        }
    }

    fn store(&self, partition: i32, o: i64) {
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
