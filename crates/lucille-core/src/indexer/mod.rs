//! The indexer: one thread per run takes processed documents from the destination
//! queue, batches them by `indexer.batchSize` / `indexer.batchTimeout`, turns each into an
//! upsert or a delete (id and index overrides, whitelist / blacklist, deletion markers), hands
//! the batch to a backend, and sends FINISH or FAIL for every document by the backend's
//! per-document result.
//!
//! Backends implement [`Backend`]; each lives in its own file.

mod backend;
pub mod grouped;

pub mod nop;
pub mod prepare;
mod settings;
pub mod version_type;
pub mod watchdog;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::accounting::EventType;
use crate::event::Event;
use crate::messaging::IndexerSide;
pub use crate::op::{take_encoded, Children, EncodeError, Encoded, IndexOp, PreparedOp, ToIndex};
pub use backend::*;
pub use prepare::{Encoder, Preparer};
pub use settings::*;

pub const DEFAULT_BATCH_SIZE: usize = 100;
pub const DEFAULT_BATCH_TIMEOUT_MS: u64 = 100;

/// The most accepted documents held for a commit before the indexer asks for one.
const HELD_MAX: usize = 100_000;
/// With documents held and nothing arriving, the indexer commits at most this often (the
/// run waits for their terminal events, so an idle indexer must not keep them).
const IDLE_COMMIT_EVERY: Duration = Duration::from_millis(200);

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
        Self::start_with(settings, backend, messenger, run_id, bypass, None)
    }

    /// As `start`; with `changes` (`skipUnchanged: "output"`), a document whose operation is
    /// what the backend already has is not sent: it ends with an unchanged DROP.
    pub fn start_with(
        settings: IndexerSettings,
        backend: Box<dyn Backend>,
        messenger: Arc<dyn IndexerSide>,
        run_id: Arc<str>,
        bypass: bool,
        changes: Option<Arc<crate::unchanged::ChangeTracker>>,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(IndexerStats::default());
        let (s2, st2) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("lucille-indexer".into())
            .spawn(crate::thread_scope::in_current_span(move || {
                crate::thread_scope::run(move || {
                    let encoder = backend.encoder();
                    let metrics = crate::metrics::global().indexer(&settings.kind);
                    let mut loop_ = IndexerLoop {
                        metrics,
                        rate: RateLine::new(settings.log_rate),
                        settings,
                        backend,
                        encoder,
                        messenger,
                        run_id,
                        bypass,
                        stats: st2,
                        held: Vec::new(),
                        outbox: Vec::new(),
                        changes,
                        commits_seen: 0,
                        last_commit: Instant::now(),
                    };
                    loop_.run(&s2)
                })
            }))?;
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

use crate::unchanged::UNCHANGED;

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
    /// The terminal events of the batch (or commit) being settled: sent together once it is
    /// (`Events::send_events`: one message per run over Kafka, not one per document).
    outbox: Vec<Event>,
    /// `skipUnchanged: "output"`: the connector's change store.
    changes: Option<Arc<crate::unchanged::ChangeTracker>>,
    commits_seen: u64,
    last_commit: Instant,
    metrics: crate::metrics::IndexerMetrics,
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

/// This indexer's run's trace and a batch's traced documents (see `IndexerLoop::traced`).
type TracedBatch = (
    Option<crate::trace::RunTrace>,
    Vec<(String, crate::trace::DocTrace)>,
);

/// One document of a batch: its id, and its operation unless it already failed to encode.
struct Pending {
    doc_id: String,
    op: Result<(IndexOp, Option<Encoded>), EncodeError>,
    /// `skipUnchanged: "output"`: the hash of what the op sends.
    hash: Option<crate::unchanged::Hash>,
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
            // One at a time: an item the indexer took is in its batch, never held apart (a
            // wedged backend call then holds only its batch; whatever still waits in the queue
            // is FAILed by the runner).
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
                // A batch waiting for its timeout is flushed at its deadline, not at the end
                // of a poll that overran it (up to `poll` late per batch).
                let wait = if batch.is_empty() {
                    poll
                } else {
                    (last_flush + self.settings.batch_timeout)
                        .saturating_duration_since(Instant::now())
                        .min(poll)
                };
                if !wait.is_zero() {
                    item = self.messenger.poll_doc_to_index(wait);
                }
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
            self.send_outbox();
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
                    self.count_indexed();
                    self.event(&doc_id, EventType::Finish, None);
                }
                Some(e) => {
                    self.count_failed();
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
        self.send_outbox();
    }

    fn count_indexed(&self) {
        self.stats.indexed.fetch_add(1, Ordering::Relaxed);
        self.metrics.succeeded.inc();
    }

    fn count_failed(&self) {
        self.stats.failed.fetch_add(1, Ordering::Relaxed);
        self.metrics.failed.inc();
    }

    fn event(&mut self, doc_id: &str, kind: EventType, message: Option<String>) {
        let mut e = Event::new(doc_id, self.run_id.clone(), kind);
        e.message = message;
        self.outbox.push(e);
    }

    /// Sends the events gathered since the last call; a closed event queue is logged (the
    /// run is already ending), as `messaging::send_event` does.
    fn send_outbox(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.outbox);
        let n = events.len();
        if let Err(err) = self.messenger.send_events(events) {
            tracing::error!("could not send the terminal events of {n} document(s): {err}");
        }
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
                    hash: p.output_hash,
                },
                ToIndex::Doc(doc) => {
                    let doc_id = doc.id().to_string();
                    let mut op = self.settings.op_into(doc);
                    // Before encoding, which may move the fields out of the op.
                    let hash = self.changes.as_ref().and_then(|_| op.content_hash());
                    let encoded = prepare::encode(self.encoder.as_deref(), &mut op);
                    Pending {
                        doc_id,
                        op: encoded.map(|e| (op, e)),
                        hash,
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
        self.send_outbox();
        self.rate.after_batch(&self.stats);
    }

    fn send_batch(&mut self, batch: &mut Vec<ToIndex>) {
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.metrics.batches.inc();
        if self.bypass || !self.settings.send_enabled {
            for item in batch.drain(..) {
                let unchanged = match (&self.changes, item.document()) {
                    (Some(c), Some(doc)) => self
                        .settings
                        .op_for(doc)
                        .content_hash()
                        .is_some_and(|h| c.check_output(item.id(), h)),
                    _ => false,
                };
                if unchanged {
                    self.event(item.id(), EventType::Drop, Some(UNCHANGED.into()));
                } else {
                    self.count_indexed();
                    self.event(item.id(), EventType::Finish, None);
                }
            }
            return;
        }
        let traced = crate::trace::enabled().then(|| self.traced(batch));
        let pending = self.pending(batch);
        // Documents whose encoding failed FAIL here and never reach the backend.
        let mut ops = Vec::with_capacity(pending.len());
        let mut encoded = Vec::with_capacity(pending.len());
        let mut ids = Vec::with_capacity(pending.len());
        for p in pending {
            match p.op {
                Ok(_)
                    if self
                        .changes
                        .as_ref()
                        .is_some_and(|c| p.hash.is_some_and(|h| c.check_output(&p.doc_id, h))) =>
                {
                    self.event(&p.doc_id, EventType::Drop, Some(UNCHANGED.into()));
                }
                Ok((op, e)) => {
                    ops.push(op);
                    encoded.push(e);
                    ids.push(p.doc_id);
                }
                Err(reason) => {
                    self.count_failed();
                    tracing::warn!(doc_id = p.doc_id, "cannot index document: {reason}");
                    self.event(&p.doc_id, EventType::Fail, Some(reason.to_string()));
                }
            }
        }
        if ops.is_empty() {
            return;
        }
        let policy = self.backend.child_documents();
        let batch = ids.iter().map(String::as_str).zip(&ops);
        if let Some(warning) = dropped_children(&self.settings.kind, &policy, batch) {
            tracing::warn!("{warning}");
        }
        let sent_at = SystemTime::now();
        let results = self.send(&ops, encoded);
        drop(ops);
        if let Some((run, traced)) = &traced {
            self.trace_batch(sent_at, run.as_ref(), &ids, &results, traced);
        }
        let deferred = self.backend.commits().is_some();
        match results {
            Ok(results) => {
                for (doc_id, result) in ids.into_iter().zip(results) {
                    match result {
                        None if deferred => self.held.push(doc_id),
                        None => {
                            self.count_indexed();
                            self.event(&doc_id, EventType::Finish, None);
                        }
                        Some(reason) => {
                            self.count_failed();
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
                    self.count_failed();
                    self.event(doc_id, EventType::Fail, Some(e.message.clone()));
                }
                // A backend that holds documents until a commit failed its send: what it
                // held is not durable either (a commit inside the send failed, or the backend
                // was reset), so those documents FAIL too instead of waiting for the next
                // commit, which would not contain them.
                if deferred {
                    self.settle_held(Some(&e));
                }
            }
        }
    }

    /// This indexer's run's trace (looked up once per batch), and the batch's traced
    /// documents: each one's id and place in its run's trace. A document that came whole names
    /// its run; an op prepared on a worker belongs to this indexer's run.
    fn traced(&self, batch: &[ToIndex]) -> TracedBatch {
        let own = crate::trace::run_trace(&self.run_id);
        let docs = batch
            .iter()
            .filter_map(|item| {
                let t = match item {
                    ToIndex::Doc(doc) if doc.run_id() != Some(&*self.run_id) => {
                        crate::trace::document(doc.run_id(), item.id())
                    }
                    _ => crate::trace::in_run(own.as_ref()?, item.id()),
                };
                t.map(|t| (item.id().to_string(), t))
            })
            .collect();
        (own, docs)
    }

    /// The batch's `index_batch` span (under the run's span when this process runs the run)
    /// and an `index` span under each traced document's span, failed with its reason.
    fn trace_batch(
        &self,
        sent_at: SystemTime,
        run: Option<&crate::trace::RunTrace>,
        ids: &[String],
        results: &Result<Vec<Option<String>>, BackendError>,
        traced: &[(String, crate::trace::DocTrace)],
    ) {
        use crate::trace::{random_span_id, random_trace_id, SpanData};
        let batch_error = results.as_ref().err().map(|e| e.message.clone());
        let span = SpanData::new(
            "index_batch",
            run.map_or_else(random_trace_id, |r| r.trace_id),
            random_span_id(),
            run.and_then(|r| r.span_id),
            sent_at,
        )
        .attr("lucille.indexer", self.settings.kind.clone())
        .attr("lucille.documents", ids.len().to_string());
        let end = span.end;
        crate::trace::emit(span.failed(batch_error.clone()));
        for (doc_id, t) in traced {
            let error = match results {
                Err(_) => batch_error.clone(),
                Ok(r) => match ids.iter().position(|id| id == doc_id) {
                    Some(i) => r.get(i).cloned().flatten(),
                    // Not sent: its operation could not be encoded (FAILed above).
                    None => Some("not indexed: its operation could not be encoded".into()),
                },
            };
            let mut span = SpanData::new(
                "index",
                t.trace_id,
                random_span_id(),
                Some(t.span_id),
                sent_at,
            )
            .attr("lucille.doc_id", doc_id.clone())
            .attr("lucille.indexer", self.settings.kind.clone());
            span.end = end;
            crate::trace::emit(span.failed(error));
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
        let started = Instant::now();
        // A backend without an encoder gets no encodings; send_encoded then is send.
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            backend.send_encoded(ops, encoded)
        }));
        self.stats.sending.store(false, Ordering::Relaxed);
        self.metrics
            .batch_duration
            .observe(started.elapsed().as_secs_f64());
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

#[cfg(any(test, feature = "testing"))]
pub mod test_backends;
#[cfg(test)]
mod tests;
