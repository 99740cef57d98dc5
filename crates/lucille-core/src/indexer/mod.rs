//! The indexer: one thread per run takes processed documents from the destination
//! queue, batches them by `indexer.batchSize` / `indexer.batchTimeout`, turns each into an
//! upsert or a delete (id and index overrides, whitelist / blacklist, deletion markers), hands
//! the batch to a backend, and sends FINISH or FAIL for every document by the backend's
//! per-document result.
//!
//! Backends implement [`Backend`]; each lives in its own file.

pub mod grouped;

pub mod nop;
pub mod prepare;
pub mod version_type;
pub mod watchdog;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::accounting::EventType;
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::{is_reserved, Document};
use crate::messaging::IndexerSide;
pub use crate::op::{take_encoded, EncodeError, Encoded, IndexOp, PreparedOp, ToIndex};
use crate::registry;
use crate::retry::RetryPolicy;
pub use prepare::{Encoder, Preparer};

pub const DEFAULT_BATCH_SIZE: usize = 100;
pub const DEFAULT_BATCH_TIMEOUT_MS: u64 = 100;

/// Why a whole batch could not be sent (every document in it FAILs with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    pub message: String,
}

impl BackendError {
    pub fn new(message: impl Into<String>) -> Self {
        BackendError {
            message: message.into(),
        }
    }
}

/// A search backend (or file) that documents are written to.
pub trait Backend: Send {
    /// Checked once before the run starts; a failure fails the connector up front.
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Applies the operations in order. Returns one entry per op: `None` for success,
    /// `Some(reason)` when the backend rejected that document; `Err` when the whole batch failed.
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError>;

    /// An encoder the worker threads run on each operation before it reaches the indexer
    /// thread (see `prepare`); `None` (the default) sends ops as they are.
    fn encoder(&self) -> Option<Arc<dyn prepare::Encoder>> {
        None
    }

    /// As `send`, with `encoded[i]` this backend's encoding of `ops[i]` (`None` where the
    /// encoder left the op as it is, or the backend has no encoder). By default, `send`.
    fn send_encoded(
        &mut self,
        ops: &[IndexOp],
        encoded: Vec<Option<Encoded>>,
    ) -> Result<Vec<Option<String>>, BackendError> {
        let _ = encoded;
        self.send(ops)
    }

    /// Makes writes durable (end of run).
    fn close(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// `Some(commits so far)` for a backend whose accepted documents become durable only at a
    /// commit (Tantivy: lost if the commit fails, e.g. on a full disk). The indexer then holds
    /// their FINISH events until a commit succeeds, and FAILs them when it fails. `None` (the
    /// default): a document accepted by `send` is durable.
    fn commits(&self) -> Option<u64> {
        None
    }

    /// Commits now (called by the indexer when it holds `HELD_MAX` documents).
    fn commit(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
}

/// The most accepted documents held for a commit before the indexer asks for one.
const HELD_MAX: usize = 100_000;
/// With documents held and nothing arriving, the indexer commits at most this often (the
/// run waits for their terminal events, so an idle indexer must not keep them).
const IDLE_COMMIT_EVERY: Duration = Duration::from_millis(200);

/// The generic `indexer { ... }` keys.
#[derive(Debug, Clone, Default)]
pub struct IndexerSettings {
    /// `indexer.type`, lowercased; `"python"` when `indexer.class` names a Python indexer.
    pub kind: String,
    /// `indexer.class`: a Python indexer as `module:Class` (its config is the indexer block).
    pub class: Option<String>,
    pub batch_size: usize,
    /// `batchByteSize`: a batch is also sent before the JSON size of its documents would pass
    /// this many bytes (Lucille's SingleBatch); with it and no `batchSize`, only bytes count.
    pub batch_byte_size: Option<u64>,
    /// `logRate`: log the documents indexed so far and the rate every this many documents.
    pub log_rate: Option<u64>,
    pub batch_timeout: Duration,
    pub id_override_field: Option<String>,
    pub index_override_field: Option<String>,
    pub whitelist: Option<Vec<String>>,
    pub blacklist: Option<Vec<String>>,
    pub deletion_marker_field: Option<String>,
    pub deletion_marker_field_value: Option<String>,
    pub delete_by_field_field: Option<String>,
    pub delete_by_field_value: Option<String>,
    /// `sendEnabled: false` skips the backend (documents still FINISH), as Lucille.
    pub send_enabled: bool,
    /// `inactivityTimeout` (ms): how long the indexer may make no progress while work waits
    /// before the run calls it wedged (see `watchdog`); `None` disables.
    pub inactivity_timeout: Option<Duration>,
    /// `routingField`: the document field holding the backend's routing key.
    pub routing_field: Option<String>,
    /// `versionType` (external versioning) and `versionField` (where the version is).
    pub version_type: Option<version_type::VersionType>,
    pub version_field: Option<String>,
    /// `maxRetries`, `retryWaitDurationMs`, ...: how HTTP backends retry a failed request.
    pub retry: RetryPolicy,
    /// `indexerConnectionTimeout` (ms): HTTP backends' connect timeout.
    pub connection_timeout: Option<Duration>,
    /// `indexerRequestTimeout` (ms, a Lucille-rs key): HTTP backends' limit on one attempt
    /// (a server that never answers); default: the HTTP client's.
    pub request_timeout: Option<Duration>,
}

pub fn indexer_spec() -> Spec {
    Spec::new()
        .optional("type", Kind::String)
        .optional("class", Kind::String)
        .optional("batchSize", Kind::Integer)
        .optional("batchByteSize", Kind::Integer)
        .optional("logRate", Kind::Integer)
        .optional("batchTimeout", Kind::Integer)
        .optional("idOverrideField", Kind::String)
        .optional("indexOverrideField", Kind::String)
        .optional("routingField", Kind::String)
        .optional("versionType", Kind::String)
        .optional("versionField", Kind::String)
        .optional("whitelist", Kind::StringList)
        .optional("blacklist", Kind::StringList)
        .optional("ignoreFields", Kind::StringList)
        .optional("deletionMarkerField", Kind::String)
        .optional("deletionMarkerFieldValue", Kind::String)
        .optional("deleteByFieldField", Kind::String)
        .optional("deleteByFieldValue", Kind::String)
        .optional("maxRetries", Kind::Integer)
        .optional("retryWaitDurationMs", Kind::Integer)
        .optional("retryMaxWaitDurationMs", Kind::Integer)
        .optional("retryRandomizationFactor", Kind::Number)
        .optional("retryableStatusCodes", Kind::List)
        .optional("sendEnabled", Kind::Bool)
        .optional("indexerConnectionTimeout", Kind::Integer)
        .optional("indexerRequestTimeout", Kind::Integer)
        .optional("inactivityTimeout", Kind::Integer)
        .alias("ignoreFields", "blacklist")
}

/// An indexer backend: its `indexer.type`, Lucille's class names for it, how to check its
/// block without opening anything, and how to build it. Each backend's file submits its
/// descriptor to the [registry](crate::registry).
pub struct IndexerDescriptor {
    /// The `indexer.type`.
    pub name: &'static str,
    /// Lucille's full class names for it (`indexer.class`); the last segment alone resolves
    /// too. Other spellings of the type (`none`).
    pub aliases: &'static [&'static str],
    pub validate: fn(&IndexerSettings, &ComponentConfig) -> Vec<ConfigError>,
    /// `continuing` is set for the second and later connectors of a run (file backends
    /// append to what the first wrote).
    pub build: BuildBackend,
    /// A warning about the block to log once per run (a TLS check turned off), if any.
    pub warning: Option<fn(&IndexerSettings, &ComponentConfig) -> Option<String>>,
}

pub type BuildBackend =
    fn(&IndexerSettings, &ComponentConfig, bool) -> Result<Box<dyn Backend>, Vec<ConfigError>>;

inventory::collect!(IndexerDescriptor);

impl registry::Descriptor for IndexerDescriptor {
    const PACKAGES: &'static [&'static str] = &[];

    fn name(&self) -> &'static str {
        self.name
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }
}

/// Boxes a backend built by its `from_config`, for an [`IndexerDescriptor`]'s `build`.
pub fn boxed<B: Backend + 'static>(
    built: Result<B, Vec<ConfigError>>,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    built.map(|b| Box::new(b) as Box<dyn Backend>)
}

/// The `indexer.type` a Lucille indexer class (or a type) stands for.
pub fn lucille_indexer_type(class: &str) -> Option<&'static str> {
    registry::find::<IndexerDescriptor>(class).map(|d| d.name)
}

/// The backends of this build, for messages: `nop, jsonl, ...; or indexer.class for a
/// Python indexer`.
fn available() -> String {
    format!(
        "{}; or indexer.class for a Python indexer",
        registry::names::<IndexerDescriptor>().join(", ")
    )
}

impl IndexerSettings {
    /// Reads and checks the `indexer` block (`path` is `indexer`). Every error at once.
    pub fn from_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let mut map = config.map().clone();
        // A Python indexer takes its own keys from the indexer block.
        let python_class = map
            .get("class")
            .and_then(crate::config::as_string)
            .is_some_and(|c| registry::is_python_reference(&c) || c == PYTHON_SCRIPT_INDEXER);
        let spec = if python_class {
            indexer_spec().open()
        } else {
            indexer_spec()
        };
        spec.normalize(&mut map);
        let mut errors = spec.validate(&map, config.path());
        let c = ComponentConfig::new(map, config.path());
        let mut take = |r: Result<Option<String>, ConfigError>| match r {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let class = take(c.string("class"));
        let type_ = take(c.string("type"));
        let id_override_field = take(c.string("idOverrideField"));
        let index_override_field = take(c.string("indexOverrideField"));
        let deletion_marker_field = take(c.string("deletionMarkerField"));
        let deletion_marker_field_value = take(c.string("deletionMarkerFieldValue"));
        let delete_by_field_field = take(c.string("deleteByFieldField"));
        let delete_by_field_value = take(c.string("deleteByFieldValue"));
        let routing_field = take(c.string("routingField"));
        let version_field = take(c.string("versionField"));
        // As in Lucille, indexer.class wins over indexer.type when both are given.
        let (kind, class) = match (type_, class) {
            (type_, Some(class)) => {
                if let Some(t) = type_.filter(|t| !t.eq_ignore_ascii_case(&class)) {
                    tracing::debug!("indexer.type {t:?} is not used: indexer.class {class:?} wins, as in Lucille");
                }
                if let Some(kind) = lucille_indexer_type(&class) {
                    (kind.to_string(), None)
                } else if registry::is_python_reference(&class) || class == PYTHON_SCRIPT_INDEXER {
                    ("python".to_string(), Some(class))
                } else {
                    let known = registry::all::<IndexerDescriptor>()
                        .into_iter()
                        .flat_map(|d| d.aliases.iter().filter(|a| a.contains('.')))
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ");
                    let message = format!("unknown indexer class {class:?}; use one of Lucille's ({known}), indexer.type, or a Python indexer as \"module:Class\" or \"file.py:Class\"");
                    errors.push(c.error("class", message));
                    ("nop".to_string(), None)
                }
            }
            // A type is kept as given when unknown: validation reports it.
            (Some(t), None) => (lucille_indexer_type(&t).map_or(t, str::to_string), None),
            (None, None) => ("nop".into(), None),
        };
        let pairs = [
            (
                "deletionMarkerField",
                &deletion_marker_field,
                "deletionMarkerFieldValue",
                &deletion_marker_field_value,
            ),
            (
                "deleteByFieldField",
                &delete_by_field_field,
                "deleteByFieldValue",
                &delete_by_field_value,
            ),
        ];
        for (a, va, b, vb) in pairs {
            if va.is_some() != vb.is_some() {
                errors.push(c.error(a, format!("{a:?} and {b:?} must be set together")));
            }
        }
        if delete_by_field_field.is_some() && deletion_marker_field.is_none() {
            errors.push(c.error("deleteByFieldField", "delete by field needs deletionMarkerField / deletionMarkerFieldValue to mark deletions"));
        }
        let mut positive = |key: &str| match c.usize(key) {
            Ok(Some(0)) => {
                errors.push(c.error(key, "must be at least 1"));
                None
            }
            Ok(v) => v.map(|n| n as u64),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let batch_byte_size = positive("batchByteSize");
        let log_rate = positive("logRate");
        let batch_size = match c.usize("batchSize") {
            Ok(Some(0)) => {
                errors.push(c.error("batchSize", "must be at least 1"));
                DEFAULT_BATCH_SIZE
            }
            // As Lucille: a byte limit alone leaves the count unlimited.
            Ok(None) if batch_byte_size.is_some() => usize::MAX,
            Ok(v) => v.unwrap_or(DEFAULT_BATCH_SIZE),
            Err(e) => {
                errors.push(e);
                DEFAULT_BATCH_SIZE
            }
        };
        let batch_timeout = match c.usize("batchTimeout") {
            Ok(v) => Duration::from_millis(v.map_or(DEFAULT_BATCH_TIMEOUT_MS, |v| v as u64)),
            Err(e) => {
                errors.push(e);
                Duration::from_millis(DEFAULT_BATCH_TIMEOUT_MS)
            }
        };
        let mut list = |key: &str| match c.string_list(key) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let whitelist = list("whitelist");
        let blacklist = list("blacklist");
        let send_enabled = match c.bool_or("sendEnabled", true) {
            Ok(b) => b,
            Err(e) => {
                errors.push(e);
                true
            }
        };
        let inactivity_timeout = match c.i64("inactivityTimeout") {
            Ok(None) => Some(watchdog::DEFAULT_INACTIVITY_TIMEOUT),
            Ok(Some(ms)) if ms <= 0 => None,
            Ok(Some(ms)) => Some(Duration::from_millis(ms as u64)),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let version_type = version_type::VersionType::from_config(&c, &mut errors);
        if version_field.is_some() != version_type.is_some() {
            errors.push(c.error(
                "versionField",
                "indexer.versionType and indexer.versionField must be set together",
            ));
        }
        let retry = RetryPolicy::from_config(&c, &mut errors);
        let mut millis = |key: &str| match c.i64(key) {
            Ok(Some(ms)) if ms <= 0 => {
                errors.push(c.error(key, "must be a positive number of milliseconds"));
                None
            }
            Ok(v) => v.map(|ms| Duration::from_millis(ms as u64)),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let connection_timeout = millis("indexerConnectionTimeout");
        let request_timeout = millis("indexerRequestTimeout");
        if !errors.is_empty() {
            // A key the spec found of the wrong type is reported again by its typed read: once.
            let mut seen = std::collections::HashSet::new();
            errors.retain(|e| seen.insert(e.path.clone()));
            return Err(errors);
        }
        Ok(IndexerSettings {
            routing_field,
            version_type,
            version_field,
            retry,
            connection_timeout,
            request_timeout,
            inactivity_timeout,
            kind: kind.to_ascii_lowercase(),
            class,
            batch_size,
            batch_byte_size,
            log_rate,
            batch_timeout,
            id_override_field,
            index_override_field,
            whitelist,
            blacklist,
            deletion_marker_field,
            deletion_marker_field_value,
            delete_by_field_field,
            delete_by_field_value,
            send_enabled,
        })
    }

    fn is_deletion(&self, doc: &Document) -> bool {
        match (
            &self.deletion_marker_field,
            &self.deletion_marker_field_value,
        ) {
            (Some(f), Some(v)) => {
                doc.has_non_null(f)
                    && doc.get_string(f).ok().flatten().as_deref() == Some(v.as_str())
            }
            _ => false,
        }
    }

    fn override_value(&self, doc: &Document, field: &Option<String>) -> Option<String> {
        field
            .as_deref()
            .and_then(|f| doc.get_string(f).ok().flatten())
            .filter(|s| !s.is_empty())
    }

    /// The operation for one processed document (its fields copied; see [`Self::op_into`]).
    pub fn op_for(&self, doc: &Document) -> IndexOp {
        self.op_into(doc.clone())
    }

    /// The operation for one processed document, its fields moved out of it: reserved fields
    /// and those the whitelist / blacklist exclude are removed in place, so nothing is copied.
    pub fn op_into(&self, doc: Document) -> IndexOp {
        let index = self.override_value(&doc, &self.index_override_field);
        let routing = self.override_value(&doc, &self.routing_field);
        let version = self.override_value(&doc, &self.version_field);
        let id_override = self.override_value(&doc, &self.id_override_field);
        if self.is_deletion(&doc) {
            if let (Some(ff), Some(fv)) = (&self.delete_by_field_field, &self.delete_by_field_value)
            {
                if let (Some(field), Some(value)) = (
                    doc.get_string(ff).ok().flatten(),
                    doc.get_string(fv).ok().flatten(),
                ) {
                    return IndexOp::DeleteByField {
                        field,
                        value,
                        index,
                    };
                }
            }
            return IndexOp::DeleteById {
                id: id_override.unwrap_or_else(|| doc.id().to_string()),
                index,
                routing,
                version,
            };
        }
        let mut fields = doc.into_map();
        // One pass: the id is taken out of its entry, then `retain` drops it with the other
        // reserved and filtered fields (removing it by key would shift every later entry).
        let id = match (id_override, fields.get_mut(crate::document::ID_FIELD)) {
            (Some(id), _) => id,
            (None, Some(Value::String(id))) => std::mem::take(id),
            // Every document has a string id.
            (None, _) => String::new(),
        };
        fields.retain(|k, _| !is_reserved(k) && self.keeps_field(k));
        IndexOp::Upsert {
            id,
            index,
            fields,
            routing,
            version,
        }
    }

    /// Whether the whitelist / blacklist let `field` through (backends that copy the index id
    /// into the stored document ask this for `id`, as Lucille does).
    pub fn keeps_field(&self, field: &str) -> bool {
        self.whitelist
            .as_ref()
            .is_none_or(|w| w.iter().any(|x| x == field))
            && !self
                .blacklist
                .as_ref()
                .is_some_and(|b| b.iter().any(|x| x == field))
    }
}

/// Counters the indexer exposes for progress lines and logs.
#[derive(Debug, Default)]
pub struct IndexerStats {
    pub indexed: AtomicU64,
    pub failed: AtomicU64,
    pub batches: AtomicU64,
    /// Bumped whenever the indexer takes a document or a backend call returns: the
    /// watchdog's progress signal.
    pub progress: AtomicU64,
    /// A backend call is in flight.
    pub sending: AtomicBool,
}

/// The running indexer thread.
pub struct IndexerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), BackendError>>>,
    pub stats: Arc<IndexerStats>,
    /// How the thread died before it was asked to stop, once seen ([`IndexerHandle::dead`]).
    died: Option<String>,
}

impl IndexerHandle {
    /// Starts the indexer thread. `bypass` (test mode) skips the backend: every document
    /// FINISHes as if indexed.
    pub fn start(
        settings: IndexerSettings,
        backend: Box<dyn Backend>,
        messenger: Arc<dyn IndexerSide>,
        run_id: Arc<str>,
        bypass: bool,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(IndexerStats::default());
        let (s2, st2) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("lucille-indexer".into())
            .spawn(move || {
                crate::thread_scope::run(move || {
                    let encoder = backend.encoder();
                    let mut loop_ = IndexerLoop {
                        rate: RateLine::new(settings.log_rate),
                        settings,
                        backend,
                        encoder,
                        messenger,
                        run_id,
                        bypass,
                        stats: st2,
                        held: Vec::new(),
                        commits_seen: 0,
                        last_commit: Instant::now(),
                    };
                    loop_.run(&s2)
                })
            })?;
        Ok(IndexerHandle {
            stop,
            thread: Some(thread),
            stats,
            died: None,
        })
    }

    /// The indexer thread ended before it was asked to stop, observed rather than inferred
    /// from the inactivity watchdog: how it ended, or `None` while it lives. The thread is
    /// joined (it has ended) and the answer kept.
    pub fn dead(&mut self) -> Option<String> {
        let ended = self.thread.as_ref().is_some_and(JoinHandle::is_finished);
        if self.died.is_none() && ended && !self.stop.load(Ordering::SeqCst) {
            let how = match self.thread.take().map(JoinHandle::join) {
                Some(Err(p)) => format!("panicked: {}", lucille_panic::message(p.as_ref())),
                Some(Ok(Err(e))) => format!("failed: {e}"),
                Some(Ok(Ok(()))) | None => "returned while the run went on".to_string(),
            };
            self.died = Some(format!("the indexer thread died ({how})"));
        }
        self.died.clone()
    }

    /// Asks the thread to flush what it has and exit; waits for it.
    pub fn terminate(mut self) -> Result<(), BackendError> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(BackendError::new("the indexer thread panicked")),
            None => self
                .died
                .take()
                .map_or(Ok(()), |m| Err(BackendError::new(m))),
        }
    }

    /// As `terminate`, but gives up on a wedged thread after `grace`: it is left behind (a
    /// call that never returns cannot be interrupted) and the run goes on to report.
    pub fn terminate_within(mut self, grace: Duration) -> Result<(), BackendError> {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        while self.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            if Instant::now() >= deadline {
                // Dropping the handle detaches the thread.
                drop(self.thread.take());
                return Err(BackendError::new(
                    "the indexer thread did not stop; it was left behind",
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.terminate()
    }
}

impl Drop for IndexerHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct IndexerLoop {
    settings: IndexerSettings,
    backend: Box<dyn Backend>,
    encoder: Option<Arc<dyn prepare::Encoder>>,
    messenger: Arc<dyn IndexerSide>,
    run_id: Arc<str>,
    bypass: bool,
    stats: Arc<IndexerStats>,
    rate: RateLine,
    /// Accepted documents waiting for a commit (see `Backend::commits`), and the commits seen.
    held: Vec<String>,
    commits_seen: u64,
    last_commit: Instant,
}

/// `indexer.logRate`: a line every `every` documents the indexer has finished with.
struct RateLine {
    every: Option<u64>,
    started: Instant,
    logged: u64,
}

impl RateLine {
    fn new(every: Option<u64>) -> Self {
        RateLine {
            every,
            started: Instant::now(),
            logged: 0,
        }
    }

    fn after_batch(&mut self, stats: &IndexerStats) {
        let Some(every) = self.every else { return };
        let indexed = stats.indexed.load(Ordering::Relaxed);
        let failed = stats.failed.load(Ordering::Relaxed);
        let done = indexed + failed;
        if done / every > self.logged / every {
            self.logged = done;
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            tracing::info!(
                "Indexer: {done} docs indexed ({indexed} succeeded, {failed} failed). Rate: {:.2} docs/sec.",
                done as f64 / secs
            );
        }
    }
}

/// One document of a batch: its id, and its operation unless it already failed to encode.
struct Pending {
    doc_id: String,
    op: Result<(IndexOp, Option<Encoded>), EncodeError>,
}

impl IndexerLoop {
    fn run(&mut self, stop: &AtomicBool) -> Result<(), BackendError> {
        let mut batch: Vec<ToIndex> = Vec::with_capacity(self.settings.batch_size.min(4096));
        let mut batch_bytes: u64 = 0;
        let mut last_flush = Instant::now();
        let poll = self
            .settings
            .batch_timeout
            .clamp(Duration::from_millis(1), Duration::from_millis(10));
        // Items taken without waiting since the clock was last read: while the queue is
        // busy the batch timeout is checked every QUICK_TAKES items, not per item (a clock
        // read per document was a third of this thread's samples under perf); whenever the
        // queue runs dry it is checked before waiting.
        const QUICK_TAKES: u32 = 256;
        let mut quick = 0u32;
        loop {
            let stopping = stop.load(Ordering::SeqCst);
            let mut item = self.messenger.poll_doc_to_index(Duration::ZERO);
            quick += u32::from(item.is_some());
            if item.is_none() || quick >= QUICK_TAKES {
                quick = 0;
                if !batch.is_empty() && last_flush.elapsed() >= self.settings.batch_timeout {
                    self.flush(&mut batch);
                    last_flush = Instant::now();
                    batch_bytes = 0;
                }
            }
            if item.is_none() && !stopping {
                item = self.messenger.poll_doc_to_index(poll);
            }
            match item {
                Some(item) => {
                    #[cfg(any(test, feature = "testing"))]
                    crate::fault_point::hit("indexer", item.id());
                    self.stats.progress.fetch_add(1, Ordering::Relaxed);
                    if let Some(cap) = self.settings.batch_byte_size {
                        // As Lucille's SingleBatch: a document that would take the batch past
                        // the byte limit starts the next batch (one larger than the limit
                        // goes alone).
                        let size = match &item {
                            ToIndex::Doc(doc) => doc.byte_size(),
                            ToIndex::Op(p) => p.bytes,
                        };
                        if !batch.is_empty() && batch_bytes + size > cap {
                            self.flush(&mut batch);
                            last_flush = Instant::now();
                            batch_bytes = 0;
                        }
                        batch_bytes += size;
                    }
                    batch.push(item);
                    if batch.len() >= self.settings.batch_size {
                        self.flush(&mut batch);
                        last_flush = Instant::now();
                        batch_bytes = 0;
                    }
                }
                // Stopping and drained.
                None if stopping => break,
                // Timed out: the next turn finds the queue empty and checks the clock.
                None => {
                    if !self.held.is_empty()
                        && batch.is_empty()
                        && self.last_commit.elapsed() >= IDLE_COMMIT_EVERY
                    {
                        self.commit_held();
                    }
                }
            }
        }
        self.flush(&mut batch);
        if self.bypass {
            Ok(())
        } else {
            let closed = self.backend.close();
            self.settle_held(closed.as_ref().err());
            closed
        }
    }

    /// Sends the held documents' terminal events: FINISH once a commit made them durable,
    /// FAIL with the commit's error when it failed.
    fn settle_held(&mut self, failed: Option<&BackendError>) {
        if let (Some(e), false) = (failed, self.held.is_empty()) {
            tracing::error!(
                "{} accepted documents FAIL: the commit that would make them durable failed: {e}",
                self.held.len()
            );
        }
        for doc_id in std::mem::take(&mut self.held) {
            match failed {
                None => {
                    self.stats.indexed.fetch_add(1, Ordering::Relaxed);
                    self.event(&doc_id, EventType::Finish, None);
                }
                Some(e) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    self.event(
                        &doc_id,
                        EventType::Fail,
                        Some(format!("not indexed: {}", e.message)),
                    );
                }
            }
        }
    }

    /// After a batch: releases the held documents when the backend committed, or commits
    /// when too many are held.
    fn after_send(&mut self) {
        let Some(commits) = self.backend.commits() else {
            return;
        };
        if commits > self.commits_seen {
            self.commits_seen = commits;
            self.last_commit = Instant::now();
            self.settle_held(None);
        } else if self.held.len() >= HELD_MAX {
            self.commit_held();
        }
    }

    /// Asks the backend to commit, then settles the held documents by the outcome.
    fn commit_held(&mut self) {
        self.last_commit = Instant::now();
        self.stats.sending.store(true, Ordering::Relaxed);
        let committed = self.backend.commit();
        self.stats.sending.store(false, Ordering::Relaxed);
        self.stats.progress.fetch_add(1, Ordering::Relaxed);
        if committed.is_ok() {
            self.commits_seen = self.backend.commits().unwrap_or(self.commits_seen);
        }
        self.settle_held(committed.as_ref().err());
    }

    fn event(&self, doc_id: &str, kind: EventType, message: Option<String>) {
        crate::messaging::send_event(self.messenger.as_ref(), doc_id, &self.run_id, kind, message);
    }

    /// The batch's items as operations; documents that came whole are turned (and encoded)
    /// here.
    fn pending(&self, batch: &mut Vec<ToIndex>) -> Vec<Pending> {
        batch
            .drain(..)
            .map(|item| match item {
                ToIndex::Op(p) => Pending {
                    doc_id: p.doc_id,
                    op: p.encoded.map(|e| (p.op, e)),
                },
                ToIndex::Doc(doc) => {
                    let doc_id = doc.id().to_string();
                    let mut op = self.settings.op_into(doc);
                    let encoded = prepare::encode(self.encoder.as_deref(), &mut op);
                    Pending {
                        doc_id,
                        op: encoded.map(|e| (op, e)),
                    }
                }
            })
            .collect()
    }

    fn flush(&mut self, batch: &mut Vec<ToIndex>) {
        if batch.is_empty() {
            return;
        }
        self.send_batch(batch);
        self.rate.after_batch(&self.stats);
    }

    fn send_batch(&mut self, batch: &mut Vec<ToIndex>) {
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        if self.bypass || !self.settings.send_enabled {
            for item in batch.drain(..) {
                self.stats.indexed.fetch_add(1, Ordering::Relaxed);
                self.event(item.id(), EventType::Finish, None);
            }
            return;
        }
        let pending = self.pending(batch);
        // Documents whose encoding failed FAIL here and never reach the backend.
        let mut ops = Vec::with_capacity(pending.len());
        let mut encoded = Vec::with_capacity(pending.len());
        let mut ids = Vec::with_capacity(pending.len());
        for p in pending {
            match p.op {
                Ok((op, e)) => {
                    ops.push(op);
                    encoded.push(e);
                    ids.push(p.doc_id);
                }
                Err(reason) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(doc_id = p.doc_id, "cannot index document: {reason}");
                    self.event(&p.doc_id, EventType::Fail, Some(reason.to_string()));
                }
            }
        }
        if ops.is_empty() {
            return;
        }
        let results = self.send(&ops, encoded);
        drop(ops);
        let deferred = self.backend.commits().is_some();
        match results {
            Ok(results) => {
                for (doc_id, result) in ids.into_iter().zip(results) {
                    match result {
                        None if deferred => self.held.push(doc_id),
                        None => {
                            self.stats.indexed.fetch_add(1, Ordering::Relaxed);
                            self.event(&doc_id, EventType::Finish, None);
                        }
                        Some(reason) => {
                            self.stats.failed.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(doc_id, "backend rejected document: {reason}");
                            self.event(&doc_id, EventType::Fail, Some(reason));
                        }
                    }
                }
                self.after_send();
            }
            Err(e) => {
                tracing::error!("indexing a batch of {} documents failed: {e}", ids.len());
                for doc_id in &ids {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    self.event(doc_id, EventType::Fail, Some(e.message.clone()));
                }
            }
        }
    }

    /// Hands the ops to the backend; a panic or a wrong number of results fails the batch.
    fn send(
        &mut self,
        ops: &[IndexOp],
        encoded: Vec<Option<Encoded>>,
    ) -> Result<Vec<Option<String>>, BackendError> {
        let backend = &mut self.backend;
        self.stats.sending.store(true, Ordering::Relaxed);
        // A backend without an encoder gets no encodings; send_encoded then is send.
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            backend.send_encoded(ops, encoded)
        }));
        self.stats.sending.store(false, Ordering::Relaxed);
        self.stats.progress.fetch_add(1, Ordering::Relaxed);
        match sent {
            Ok(Ok(r)) if r.len() == ops.len() => Ok(r),
            Ok(Ok(r)) => Err(BackendError::new(format!(
                "backend returned {} results for {} documents",
                r.len(),
                ops.len()
            ))),
            Ok(Err(e)) => Err(e),
            Err(p) => Err(BackendError::new(format!(
                "backend panicked: {}",
                lucille_panic::message(p.as_ref())
            ))),
        }
    }
}

/// `indexer.class: "PythonIndexer"`: a Python indexer class defined by inline code (`script`)
/// or a file (`scriptPath`), chosen by `className` when the code defines several.
pub const PYTHON_SCRIPT_INDEXER: &str = "PythonIndexer";

/// Builds Python indexers (`indexer.class: "module:Class"`, or `PythonIndexer` with its
/// script); installed by the Python bindings.
pub trait PythonIndexerFactory: Send + Sync {
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError>;
    fn build(&self, class: &str, config: &ComponentConfig)
        -> Result<Box<dyn Backend>, ConfigError>;
}

/// Python indexer classes, installed by the Python bindings.
pub static PYTHON: registry::PythonHook<dyn PythonIndexerFactory> =
    registry::PythonHook::new("Python indexers");

fn python_factory(
    settings: &IndexerSettings,
    config: &ComponentConfig,
) -> Result<(&'static dyn PythonIndexerFactory, String), ConfigError> {
    let factory = PYTHON.get(config)?;
    Ok((factory, settings.class.clone().unwrap_or_default()))
}

/// Checks the backend block (`jsonl { }`) without opening anything.
pub fn validate_backend(
    settings: &IndexerSettings,
    backend_config: &ComponentConfig,
) -> Result<(), Vec<ConfigError>> {
    let errors = if settings.kind == "python" {
        match python_factory(settings, backend_config)
            .and_then(|(f, class)| f.check(&class, backend_config))
        {
            Ok(()) => Vec::new(),
            Err(e) => vec![e],
        }
    } else {
        match backend_descriptor(&settings.kind) {
            Ok(d) => (d.validate)(settings, backend_config),
            Err(e) => vec![e],
        }
    };
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Builds the backend named by `indexer.type`; `backend_config` is its own block (`jsonl { }`;
/// for a Python indexer, the `indexer` block itself).
/// `continuing` is set for the second and later connectors of a run, so file backends append
/// to what the first connector wrote instead of truncating it.
pub fn build_backend(
    settings: &IndexerSettings,
    backend_config: &ComponentConfig,
    continuing: bool,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    validate_backend(settings, backend_config)?;
    if settings.kind == "python" {
        return python_factory(settings, backend_config)
            .and_then(|(f, class)| f.build(&class, backend_config))
            .map_err(|e| vec![e]);
    }
    let d = backend_descriptor(&settings.kind).map_err(|e| vec![e])?;
    (d.build)(settings, backend_config, continuing)
}

/// The registered backend of an `indexer.type`.
/// The warning the configured backend logs once per run about its block, if any.
pub fn backend_warning(settings: &IndexerSettings, backend: &ComponentConfig) -> Option<String> {
    let warn = backend_descriptor(&settings.kind).ok()?.warning?;
    warn(settings, backend)
}

fn backend_descriptor(kind: &str) -> Result<&'static IndexerDescriptor, ConfigError> {
    registry::find::<IndexerDescriptor>(kind).ok_or_else(|| {
        let hint = registry::suggest::<IndexerDescriptor>(kind)
            .map(|n| format!(" (did you mean {n:?}?)"))
            .unwrap_or_default();
        ConfigError::new(
            "indexer.type",
            format!(
                "unknown indexer type {kind:?}{hint}; available here: {}",
                available()
            ),
        )
    })
}

#[cfg(any(test, feature = "testing"))]
pub mod test_backends;
#[cfg(test)]
mod tests;
