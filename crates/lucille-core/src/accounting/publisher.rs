//! The Publisher: stamps the run id on each document,
//! tracks it before sending it for processing (rolling back if the send fails), consumes the
//! events workers and the indexer send, and decides when a connector's run is complete.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};

use super::ledger::{Counts, Ledger};
use crate::document::Document;
use crate::event::{Event, EventType};
use crate::messaging::{MessagingError, PublisherSide};
use crate::metrics::PublisherMetrics;
use crate::record::{Record, ToProcess};
use crate::unchanged::{ChangeTracker, Hash, SkipMode, UnitRef};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    #[error("the run is stopping; document {0:?} was not published")]
    Stopped(String),
    #[error("document {id:?} already carries run id {run_id:?}; publish a fresh document")]
    AlreadyStamped { id: String, run_id: String },
    #[error("could not send document {id:?} for processing: {source}")]
    Send { id: String, source: MessagingError },
}

/// Publisher settings (`publisher { queueCapacity, maxPendingDocs }` and the connector's
/// `collapse`).
#[derive(Debug, Clone, Default)]
pub struct PublisherSettings {
    pub max_pending_docs: Option<usize>,
    pub collapse: bool,
    /// The labels of the process's document metrics (`None`: not counted, as in tests that
    /// drive a publisher alone).
    pub metrics: Option<PublisherLabels>,
}

/// The connector and pipeline a publisher's documents are counted under.
#[derive(Debug, Clone, Default)]
pub struct PublisherLabels {
    pub connector: String,
    pub pipeline: String,
}

/// How `wait_for_completion` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherResult {
    pub ok: bool,
    pub message: Option<String>,
}

/// What the main thread needs to know about the connector thread.
pub trait ConnectorStatus {
    fn is_finished(&self) -> bool;
}

impl<T> ConnectorStatus for std::thread::JoinHandle<T> {
    fn is_finished(&self) -> bool {
        std::thread::JoinHandle::is_finished(self)
    }
}

pub struct Publisher {
    run_id: Arc<str>,
    messenger: Arc<dyn PublisherSide>,
    ledger: Mutex<Ledger>,
    below_max: Condvar,
    max_pending: Option<usize>,
    collapsing: Option<Mutex<Option<Held>>>,
    paused: AtomicBool,
    pause_lock: Mutex<()>,
    resumed: Condvar,
    stopping: Arc<AtomicBool>,
    num_received: AtomicU64,
    /// Told the id of every document that reaches a terminal event (see `on_terminal`).
    terminal_listener: parking_lot::RwLock<Option<TerminalListener>>,
    /// Told of every record `publish_failed` accounts for (the dead-letter file).
    failed_record_sink: parking_lot::RwLock<Option<FailedRecordSink>>,
    /// Told the id and reason of every FAIL the ledger counts (see `on_fail`).
    fail_listener: parking_lot::RwLock<Option<FailListener>>,
    metrics: Option<PublisherMetrics>,
    /// The run's trace (when this process traces it), and when each traced document still
    /// in flight was published or created: its `document` span ends at its terminal event.
    trace: Option<crate::trace::RunTrace>,
    traced: Mutex<HashMap<String, SystemTime>>,
    /// `skipUnchanged`: the connector's run against the change store.
    changes: std::sync::OnceLock<Arc<ChangeTracker>>,
    /// Documents held back to be handed over as one block (see [`Publisher::hold`]): not yet
    /// tracked, so no event can name them. `held` counts them for readers without the lock.
    outbox: Mutex<Vec<ToProcess>>,
    held: AtomicUsize,
    /// The most documents held back: the messenger's block size, lower under
    /// `maxPendingDocs`; 1 sends each at once.
    block: usize,
}

/// A document held back by collapsing, with the unit it was read from.
type Held = (Document, Option<UnitRef>);

/// What `send_for_processing` checks against the change store.
#[derive(Clone, Copy)]
enum Check {
    /// The document's content, or the hash of the record it was built from.
    Content(Option<Hash>),
    /// A delete marker for a vanished document: sent, and its entry removed once it ends.
    Deletion,
}

/// Called with the id and reason of each record a connector could not turn into a document.
pub type FailedRecordSink = Box<dyn Fn(&str, &str) + Send + Sync>;

/// Called with the doc id of each terminal event, on the thread that applies events.
pub type TerminalListener = Box<dyn Fn(&str) + Send + Sync>;

/// Called with the doc id and reason of each FAIL the ledger counts, on the thread that
/// applies events.
pub type FailListener = Box<dyn Fn(&str, &str) + Send + Sync>;

const UNCHANGED_MSG: &str = crate::unchanged::UNCHANGED;

/// How long a blocked `publish` sleeps before re-checking its condition (a safety net for a
/// missed wake-up, as in Lucille).
const RECHECK: Duration = Duration::from_millis(200);
/// How long `wait_for_completion` waits for an event before re-checking completion.
const EVENT_POLL: Duration = Duration::from_millis(10);

impl Publisher {
    pub fn new(
        run_id: Arc<str>,
        messenger: Arc<dyn PublisherSide>,
        settings: PublisherSettings,
        stopping: Arc<AtomicBool>,
    ) -> Self {
        let block = match settings.max_pending_docs {
            Some(max) => messenger.block_size().min(max / 2),
            None => messenger.block_size(),
        }
        .max(1);
        Publisher {
            outbox: Mutex::new(Vec::new()),
            held: AtomicUsize::new(0),
            block,
            messenger,
            ledger: Mutex::new(Ledger::new()),
            below_max: Condvar::new(),
            max_pending: settings.max_pending_docs,
            collapsing: settings.collapse.then(|| Mutex::new(None)),
            paused: AtomicBool::new(false),
            pause_lock: Mutex::new(()),
            resumed: Condvar::new(),
            stopping,
            num_received: AtomicU64::new(0),
            terminal_listener: parking_lot::RwLock::new(None),
            failed_record_sink: parking_lot::RwLock::new(None),
            fail_listener: parking_lot::RwLock::new(None),
            metrics: settings
                .metrics
                .map(|l| crate::metrics::global().publisher(&l.connector, &l.pipeline)),
            trace: crate::trace::run_trace(&run_id),
            traced: Mutex::new(HashMap::new()),
            changes: std::sync::OnceLock::new(),
            run_id,
        }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// True once the run is stopping: a polling connector ends its wait and returns.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Hands a document to the run. Blocks while the publisher is paused, while
    /// `maxPendingDocs` documents are in flight, or while the source queue is full.
    pub fn publish(&self, doc: Document) -> Result<(), PublishError> {
        self.publish_in(doc, None)
    }

    /// As `publish`, for a document read from `unit` (see [`ChangeTracker::begin_unit`]).
    pub fn publish_in(&self, doc: Document, unit: Option<UnitRef>) -> Result<(), PublishError> {
        self.publish_checked(doc, unit, None)
    }

    fn publish_checked(
        &self,
        doc: Document,
        unit: Option<UnitRef>,
        hash: Option<Hash>,
    ) -> Result<(), PublishError> {
        if self.stopping.load(Ordering::Relaxed) {
            return Err(PublishError::Stopped(doc.id().to_string()));
        }
        if let Some(run_id) = doc.run_id() {
            return Err(PublishError::AlreadyStamped {
                id: doc.id().to_string(),
                run_id: run_id.to_string(),
            });
        }
        self.wait_while_paused(doc.id())?;
        self.num_received.fetch_add(1, Ordering::Relaxed);
        match &self.collapsing {
            None => self.send_for_processing(doc, unit, Check::Content(hash)),
            Some(previous) => {
                let mut held = previous.lock();
                match held.as_mut() {
                    Some((prev, _)) if prev.id() == doc.id() => {
                        prev.set_or_add_all(&doc);
                        Ok(())
                    }
                    _ => match held.replace((doc, unit)) {
                        Some((prev, unit)) => {
                            self.send_for_processing(prev, unit, Check::Content(None))
                        }
                        None => Ok(()),
                    },
                }
            }
        }
    }

    /// Hands the run a record a worker will build into a document (see `record`):
    /// tracked by its id before it is sent, as `publish` tracks a document. When the run keeps
    /// whole documents (test mode) or collapses them, the record is built here instead, and
    /// one that cannot be built is accounted as `publish_failed` does.
    pub fn publish_record(&self, record: Record) -> Result<(), PublishError> {
        self.publish_record_in(record, None)
    }

    /// As `publish_record`, for a record read from `unit`.
    pub fn publish_record_in(
        &self,
        mut record: Record,
        unit: Option<UnitRef>,
    ) -> Result<(), PublishError> {
        // The record as read, before anything is built from it (a collapsed document is
        // hashed whole instead).
        let hash = self
            .record_mode()
            .filter(|_| self.collapsing.is_none())
            .map(|_| crate::unchanged::record_hash(&record.id, &record.text));
        if self.collapsing.is_some() || self.messenger.records_documents() {
            return match record.build() {
                Ok(doc) if self.collapsing.is_some() => self.publish_in(doc, unit),
                Ok(doc) => self.publish_checked(doc, unit, hash),
                Err(e) => self.publish_failed_in(&e.id, &e.reason, unit),
            };
        }
        if self.stopping.load(Ordering::Relaxed) {
            return Err(PublishError::Stopped(record.id));
        }
        self.wait_while_paused(&record.id)?;
        self.num_received.fetch_add(1, Ordering::Relaxed);
        if let Some(tracker) = self.changes.get() {
            match hash {
                Some(h) if tracker.check(&record.id, h, unit) => {
                    return self.account_unprocessed(&record.id, EventType::Drop, UNCHANGED_MSG);
                }
                Some(_) => {}
                None => tracker.published(&record.id, unit),
            }
        }
        record.run_id = Some(self.run_id.clone());
        let id = record.id.clone();
        self.track_and_send(id, ToProcess::Record(record))
    }

    /// Accounts for a record the connector could not turn into a document (a malformed CSV
    /// row, a bad JSON line): tracks `id` as published and sends a FAIL event carrying `reason`,
    /// so the run summary counts it as failed and test mode lists it with its reason. It never
    /// reaches a worker, so nothing else sees it.
    pub fn publish_failed(&self, id: &str, reason: &str) -> Result<(), PublishError> {
        self.publish_failed_in(id, reason, None)
    }

    /// As `publish_failed`, for a record of `unit` (which is then read again next run).
    pub fn publish_failed_in(
        &self,
        id: &str,
        reason: &str,
        unit: Option<UnitRef>,
    ) -> Result<(), PublishError> {
        if self.stopping.load(Ordering::Relaxed) {
            return Err(PublishError::Stopped(id.to_string()));
        }
        self.wait_while_paused(id)?;
        self.num_received.fetch_add(1, Ordering::Relaxed);
        if let Some(tracker) = self.changes.get() {
            tracker.failed_record(id, unit);
        }
        self.account_unprocessed(id, EventType::Fail, reason)?;
        if let Some(sink) = self.failed_record_sink.read().as_ref() {
            sink(id, reason);
        }
        Ok(())
    }

    /// Tracks `id` and ends it at once with an event of `kind` (a FAIL for a record that is
    /// not a document, a DROP for an unchanged one): it never reaches a worker.
    fn account_unprocessed(
        &self,
        id: &str,
        kind: EventType,
        message: &str,
    ) -> Result<(), PublishError> {
        self.wait_below_max(id)?;
        self.ledger.lock().track(id);
        self.start_document_span(id);
        let event = Event::new(id, self.run_id.clone(), kind).with_message(message);
        if let Err(source) = self.messenger.send_event(event) {
            self.ledger.lock().rollback(id);
            self.traced.lock().remove(id);
            return Err(PublishError::Send {
                id: id.to_string(),
                source,
            });
        }
        self.count_published(1);
        Ok(())
    }

    /// Starts `skipUnchanged` for this connector's run (the runner, before the connector
    /// starts).
    pub fn skip_unchanged(&self, tracker: Arc<ChangeTracker>) {
        let _ = self.changes.set(tracker);
    }

    /// The connector's run against the change store, when `skipUnchanged` is on: a connector
    /// that reads units asks it which are unchanged.
    pub fn changes(&self) -> Option<&Arc<ChangeTracker>> {
        self.changes.get()
    }

    fn record_mode(&self) -> Option<&Arc<ChangeTracker>> {
        self.changes.get().filter(|t| t.mode() == SkipMode::Record)
    }

    /// Counts the `docs` documents of a unit `skipUnchanged` found unchanged without reading
    /// it: published and unchanged, with no events.
    pub fn count_unread_unchanged(&self, docs: u64) {
        self.ledger.lock().count_unread_unchanged(docs);
        if let Some(m) = &self.metrics {
            m.unread_unchanged(docs);
        }
    }

    /// Publishes the delete marker of a document that vanished from the source (from `unit`,
    /// whose token then waits for it): it is not checked against the store, and its entry is
    /// removed once the deletion ended well.
    pub fn publish_deletion(
        &self,
        doc: Document,
        unit: Option<UnitRef>,
    ) -> Result<(), PublishError> {
        if self.stopping.load(Ordering::Relaxed) {
            return Err(PublishError::Stopped(doc.id().to_string()));
        }
        self.wait_while_paused(doc.id())?;
        self.num_received.fetch_add(1, Ordering::Relaxed);
        self.send_for_processing(doc, unit, Check::Deletion)
    }

    /// Where records accounted for by `publish_failed` are also written (the run's dead-letter
    /// file), since they never reach a worker.
    pub fn on_failed_record(&self, sink: FailedRecordSink) {
        *self.failed_record_sink.write() = Some(sink);
    }

    /// Sends a document held back by collapsing, and the documents held back for a block.
    /// Called after the connector's `execute`.
    pub fn flush(&self) -> Result<(), PublishError> {
        if let Some(previous) = &self.collapsing {
            if let Some((doc, unit)) = previous.lock().take() {
                self.send_for_processing(doc, unit, Check::Content(None))?;
            }
        }
        self.send_held()
    }

    fn send_for_processing(
        &self,
        mut doc: Document,
        unit: Option<UnitRef>,
        check: Check,
    ) -> Result<(), PublishError> {
        if let Some(tracker) = self.changes.get() {
            match (check, tracker.mode()) {
                (Check::Deletion, _) => tracker.deleting(doc.id(), unit),
                (Check::Content(hash), SkipMode::Record) => {
                    // Before the run id is stamped: the hash is of the document as read.
                    let hash = hash.unwrap_or_else(|| crate::unchanged::document_hash(&doc));
                    if tracker.check(doc.id(), hash, unit) {
                        return self.account_unprocessed(doc.id(), EventType::Drop, UNCHANGED_MSG);
                    }
                }
                (Check::Content(_), SkipMode::Output) => tracker.published(doc.id(), unit),
            }
        }
        // A fresh document (checked in publish) has no run id, so this cannot fail.
        let _ = doc.initialize_run_id(&self.run_id);
        let id = doc.id().to_string();
        self.track_and_send(id, ToProcess::Doc(doc))
    }

    /// Waits below `maxPendingDocs`, tracks `id`, sends; a failed send rolls the tracking back.
    /// With a messenger that takes blocks, the document is held back instead (see `hold`).
    fn track_and_send(&self, id: String, item: ToProcess) -> Result<(), PublishError> {
        self.wait_below_max(&id)?;
        if self.block > 1 {
            return self.hold(item);
        }
        // Track first: a fast worker's terminal event must find the id already pending.
        self.ledger.lock().track(&id);
        self.start_document_span(&id);
        if let Err(source) = self.messenger.send_for_processing(item) {
            self.untrack([id.as_str()]);
            return Err(PublishError::Send { id, source });
        }
        self.count_published(1);
        Ok(())
    }

    /// Holds a document back to hand the workers a block: sent once the block is full, or at
    /// once while no worker has anything to do (so a trickle is never delayed), and by the
    /// thread that applies events when the workers run dry (`send_held_if_idle`), at the
    /// connector's end (`flush`), and before a wait for `maxPendingDocs` or a pause.
    fn hold(&self, item: ToProcess) -> Result<(), PublishError> {
        let mut out = self.outbox.lock();
        out.push(item);
        self.held.store(out.len(), Ordering::Relaxed);
        if out.len() >= self.block || self.messenger.workers_idle() {
            return self.send_block(&mut out);
        }
        Ok(())
    }

    /// Sends the documents held back, if any.
    fn send_held(&self) -> Result<(), PublishError> {
        if self.held.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        self.send_block(&mut self.outbox.lock())
    }

    /// Called by the thread that applies events between polls: documents held back while the
    /// workers were busy are sent once the workers have run dry. Never waits: a held outbox
    /// (the connector is sending) or a full queue leaves them to the connector's thread.
    fn send_held_if_idle(&self) {
        if self.held.load(Ordering::Relaxed) == 0 || !self.messenger.workers_idle() {
            return;
        }
        let Some(mut out) = self.outbox.try_lock() else {
            return;
        };
        if out.is_empty() {
            return;
        }
        let items = std::mem::take(&mut *out);
        let n = items.len();
        self.track_block(&items);
        match self.messenger.try_send_block(items) {
            Ok(()) => {
                self.held.store(0, Ordering::Relaxed);
                self.count_published(n);
            }
            Err(back) => {
                self.untrack(back.iter().map(ToProcess::id));
                *out = back;
            }
        }
    }

    /// Tracks the block and hands it over; the ids of what could not be sent are rolled back.
    fn send_block(&self, out: &mut Vec<ToProcess>) -> Result<(), PublishError> {
        if out.is_empty() {
            return Ok(());
        }
        let items = std::mem::take(out);
        self.held.store(0, Ordering::Relaxed);
        let n = items.len();
        // Track first: a fast worker's terminal event must find the ids already pending.
        self.track_block(&items);
        match self.messenger.send_block(items) {
            Ok(()) => {
                self.count_published(n);
                Ok(())
            }
            Err((source, unsent)) => {
                self.count_published(n - unsent.len());
                self.untrack(unsent.iter().map(String::as_str));
                let id = unsent.into_iter().next().unwrap_or_default();
                Err(PublishError::Send { id, source })
            }
        }
    }

    fn track_block(&self, items: &[ToProcess]) {
        {
            let mut ledger = self.ledger.lock();
            for item in items {
                ledger.track(item.id());
            }
        }
        if self.trace.is_some() {
            for item in items {
                self.start_document_span(item.id());
            }
        }
    }

    /// Rolls back the tracking of documents that were not sent.
    fn untrack<'a>(&self, ids: impl IntoIterator<Item = &'a str> + Clone) {
        {
            let mut ledger = self.ledger.lock();
            for id in ids.clone() {
                ledger.rollback(id);
            }
        }
        if self.trace.is_some() {
            let mut traced = self.traced.lock();
            for id in ids {
                traced.remove(id);
            }
        }
    }

    /// Counted once the send succeeded, as the ledger keeps only documents actually sent (a
    /// fast worker's terminal event may be counted first: in flight dips below zero for a
    /// moment).
    fn count_published(&self, n: usize) {
        if let Some(m) = &self.metrics {
            m.published(n as u64);
        }
    }

    /// Notes when a traced document entered the run (published, or created by a stage).
    fn start_document_span(&self, id: &str) {
        if self
            .trace
            .is_some_and(|run| crate::trace::in_run(&run, id).is_some())
        {
            self.traced.lock().insert(id.to_string(), SystemTime::now());
        }
    }

    /// The `document` spans of the traced documents these events ended (and the start of
    /// the traced children they created).
    fn trace_events(&self, events: &[Event], ignored: &[usize]) {
        let Some(run) = self.trace else { return };
        for (i, e) in events.iter().enumerate() {
            if ignored.contains(&i) {
                continue;
            }
            if e.kind == EventType::Create {
                self.start_document_span(&e.doc_id);
                continue;
            }
            // Sampled documents only (a hash) reach the map (a lock and a lookup).
            if crate::trace::in_run(&run, &e.doc_id).is_none() {
                continue;
            }
            let Some(started) = self.traced.lock().remove(&e.doc_id) else {
                continue;
            };
            let span = crate::trace::SpanData::new(
                "document",
                run.trace_id,
                crate::trace::document_span_id(&run.trace_id, &e.doc_id),
                run.span_id,
                started,
            )
            .attr("lucille.run_id", &*self.run_id)
            .attr("lucille.doc_id", e.doc_id.clone())
            .attr("lucille.outcome", e.kind.to_string());
            let error = (e.kind == EventType::Fail).then(|| e.message.clone().unwrap_or_default());
            crate::trace::emit(span.failed(error));
        }
    }

    fn wait_below_max(&self, id: &str) -> Result<(), PublishError> {
        let Some(max) = self.max_pending else {
            return Ok(());
        };
        let held = self.held.load(Ordering::Relaxed);
        if self.ledger.lock().pending() + held < max {
            return Ok(());
        }
        // What is held back must be sent for anything to end.
        self.send_held()?;
        let mut ledger = self.ledger.lock();
        while ledger.pending() >= max {
            if self.stopping.load(Ordering::Relaxed) {
                return Err(PublishError::Stopped(id.to_string()));
            }
            self.below_max.wait_for(&mut ledger, RECHECK);
        }
        Ok(())
    }

    fn wait_while_paused(&self, id: &str) -> Result<(), PublishError> {
        if !self.paused.load(Ordering::Acquire) {
            return Ok(());
        }
        // Not held back for the length of a pause.
        self.send_held()?;
        let mut guard = self.pause_lock.lock();
        while self.paused.load(Ordering::Acquire) {
            if self.stopping.load(Ordering::Relaxed) {
                return Err(PublishError::Stopped(id.to_string()));
            }
            self.resumed.wait_for(&mut guard, RECHECK);
        }
        Ok(())
    }

    /// Makes `publish` block until `resume`.
    pub fn pause(&self) {
        let _guard = self.pause_lock.lock();
        self.paused.store(true, Ordering::Release);
    }

    pub fn resume(&self) {
        let _guard = self.pause_lock.lock();
        self.paused.store(false, Ordering::Release);
        self.resumed.notify_all();
    }

    /// Applies one event to the ledger (normally done by `wait_for_completion`).
    pub fn handle_event(&self, event: &Event) {
        self.handle_events(std::slice::from_ref(event));
    }

    fn handle_events(&self, events: &[Event]) {
        // Replayed duplicates (Kafka) change nothing and are not told to the listener.
        let mut ignored: Vec<usize> = Vec::new();
        {
            let mut ledger = self.ledger.lock();
            let before = self.metrics.as_ref().map(|_| ledger.counts());
            for (i, e) in events.iter().enumerate() {
                if !ledger.handle(e) {
                    ignored.push(i);
                }
            }
            if let (Some(m), Some(before)) = (&self.metrics, before) {
                m.applied(&before, &ledger.counts());
            }
            if let Some(max) = self.max_pending {
                if ledger.pending() < max {
                    self.below_max.notify_all();
                }
            }
        }
        self.trace_events(events, &ignored);
        if let Some(tracker) = self.changes.get() {
            tracker.on_events(events, &ignored);
        }
        // After the ledger: a listener that checkpoints an acknowledgement may then rely on
        // the document no longer being pending.
        if let Some(listener) = self.terminal_listener.read().as_ref() {
            for (_, e) in events
                .iter()
                .enumerate()
                .filter(|(i, e)| e.kind.is_terminal() && !ignored.contains(i))
            {
                listener(&e.doc_id);
            }
        }
        if let Some(listener) = self.fail_listener.read().as_ref() {
            for (_, e) in events
                .iter()
                .enumerate()
                .filter(|(i, e)| e.kind == EventType::Fail && !ignored.contains(i))
            {
                listener(&e.doc_id, e.message.as_deref().unwrap_or_default());
            }
        }
    }

    /// Registers the one listener told of every terminal event (FINISH, FAIL, DROP) by doc id,
    /// children included: how a resumable connector learns which of its documents are done.
    /// Replaces an earlier listener.
    pub fn on_terminal(&self, listener: TerminalListener) {
        *self.terminal_listener.write() = Some(listener);
    }

    /// Registers the one listener told of every FAIL the ledger counts (children and records
    /// that never became documents included), with its reason: how a service keeps a run's
    /// failures. Replayed duplicates are not told. Replaces an earlier listener.
    pub fn on_fail(&self, listener: FailListener) {
        *self.fail_listener.write() = Some(listener);
    }

    /// Blocks until the run of this connector is complete: the connector thread has finished,
    /// nothing is pending, and the last poll found no event in transit. `timeout` is
    /// `runner.connectorTimeout` (`None` or zero: no limit). `on_tick` runs between polls (for
    /// progress lines and watchdogs); an `Err` from it ends the wait as a failure.
    pub fn wait_for_completion<E: std::fmt::Display>(
        &self,
        connector: &dyn ConnectorStatus,
        timeout: Option<Duration>,
        mut on_tick: impl FnMut(&Publisher) -> Result<(), E>,
    ) -> PublisherResult {
        let start = Instant::now();
        let mut batch = Vec::with_capacity(1024);
        loop {
            // What is queued, in one pass over the ledger lock.
            self.messenger.poll_events(4096, EVENT_POLL, &mut batch);
            let got_event = !batch.is_empty();
            if got_event {
                self.handle_events(&batch);
                batch.clear();
            }
            self.send_held_if_idle();
            if let Err(reason) = on_tick(self) {
                return PublisherResult {
                    ok: false,
                    message: Some(reason.to_string()),
                };
            }
            if connector.is_finished() && !got_event && !self.has_pending() {
                let ledger = self.ledger.lock();
                let duplicates = ledger.duplicates();
                if let (n @ 1.., Some(id)) = ledger.shared_ids() {
                    tracing::warn!(
                        "{n} child document(s) had the id of a document still in flight (their \
                         parent or a sibling), first \"{id}\": each is counted, but a search index \
                         keeps one document per id, so there one replaces the other; give \
                         children ids of their own (e.g. the parent's id with a suffix)"
                    );
                }
                drop(ledger);
                if duplicates > 0 {
                    tracing::info!(
                        "{duplicates} replayed event(s) (a worker or indexer restarted before \
                         committing its offsets) were counted once"
                    );
                }
                return PublisherResult {
                    ok: true,
                    message: None,
                };
            }
            if let Some(limit) = timeout.filter(|t| !t.is_zero()) {
                if start.elapsed() > limit {
                    return PublisherResult {
                        ok: false,
                        message: Some("Connector timeout.".into()),
                    };
                }
            }
        }
    }

    /// Whether a document is in flight, or held back to be sent.
    pub fn has_pending(&self) -> bool {
        self.held.load(Ordering::Relaxed) > 0 || self.ledger.lock().has_pending()
    }

    /// Documents in flight (sent and not yet ended) and held back to be sent.
    pub fn pending(&self) -> usize {
        self.ledger.lock().pending() + self.held.load(Ordering::Relaxed)
    }

    /// Up to `n` ids still in flight (smallest first), for a log line.
    pub fn pending_sample(&self, n: usize) -> Vec<String> {
        self.ledger.lock().pending_sample(n)
    }

    /// Where the source messages of `ids` are, as the messenger knows them (Kafka:
    /// `topic[partition]@offset`), one entry per id.
    pub fn source_positions(&self, ids: &[String]) -> Vec<Option<String>> {
        self.messenger.source_positions(ids)
    }

    pub fn counts(&self) -> Counts {
        self.ledger.lock().counts()
    }

    /// Calls to `publish` (before collapsing).
    pub fn num_received(&self) -> u64 {
        self.num_received.load(Ordering::Relaxed)
    }

    /// Documents sent for processing (after collapsing).
    pub fn num_published(&self) -> u64 {
        self.counts().published
    }
}

#[cfg(test)]
mod tests;
mod unchanged;
