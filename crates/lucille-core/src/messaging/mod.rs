//! How documents and events move between the Publisher, workers and the indexer. Local mode
//! uses bounded in-memory queues (`publisher.queueCapacity` bounds the source and destination
//! queues, so a fast connector blocks instead of filling memory); test mode records every
//! document and event on top of that; distributed mode (Kafka, [`kafka`]) plugs in behind the
//! same traits. One trait per role ([`PublisherSide`], [`WorkerSide`], [`IndexerSide`], each
//! with [`Events`]); a messenger implements the roles it has, and a [`Topology`] says which
//! roles a process plays.

mod queue;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use queue::BlockQueue;

use crate::document::Document;
use crate::event::Event;
use crate::op::ToIndex;
use crate::record::ToProcess;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessagingError {
    #[error("the {0} queue is closed")]
    Closed(&'static str),
    #[error("{0}")]
    Kafka(String),
}

/// What waits in a process's queues (`lucille_queue_depth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepths {
    /// Documents waiting for a worker.
    pub source: usize,
    /// Documents waiting for the indexer.
    pub destination: usize,
    /// Events waiting for the publisher.
    pub events: usize,
}

/// Lifecycle events, sent by every role: the publisher (a record FAILed before it became a
/// document), the workers and the indexer.
pub trait Events: Send + Sync {
    fn send_event(&self, event: Event) -> Result<(), MessagingError>;
    /// Several events at once, in order (an indexer's terminal events for one batch): a
    /// messenger that ships events through a broker sends them as one message per run
    /// instead of one per event. By default, one by one; every event is tried, and the first
    /// error is returned.
    fn send_events(&self, events: Vec<Event>) -> Result<(), MessagingError> {
        let mut first = Ok(());
        for e in events {
            if let Err(err) = self.send_event(e) {
                if first.is_ok() {
                    first = Err(err);
                }
            }
        }
        first
    }
    /// What waits in this process's queues (`lucille_queue_depth`), for messengers that
    /// hold queues.
    fn queue_depths(&self) -> Option<QueueDepths> {
        None
    }
}

/// The publisher's side of a run: documents out to the workers, their events back.
pub trait PublisherSide: Events {
    /// A published document, or a record a worker builds into one.
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError>;
    /// Whether this messenger keeps or ships whole documents as they are published (test
    /// mode's history, Kafka): then records are built before they are sent.
    fn records_documents(&self) -> bool {
        false
    }
    /// How many documents the publisher may hold back to hand over at once
    /// ([`PublisherSide::send_block`]); 1 (the default): each is sent as it is published.
    fn block_size(&self) -> usize {
        1
    }
    /// Documents handed over together, in order. `Err` gives, with the error, the ids of
    /// those not sent (the publisher rolls their tracking back). By default, one by one.
    fn send_block(&self, items: Vec<ToProcess>) -> Result<(), (MessagingError, Vec<String>)> {
        let mut items = items.into_iter();
        while let Some(item) = items.next() {
            let id = item.id().to_string();
            if let Err(e) = self.send_for_processing(item) {
                let unsent = std::iter::once(id)
                    .chain(items.map(|i| i.id().to_string()))
                    .collect();
                return Err((e, unsent));
            }
        }
        Ok(())
    }
    /// As `send_block`, only if that needs no wait (a full queue gives the block back): for
    /// the thread that applies events, which must never wait for the workers.
    fn try_send_block(&self, items: Vec<ToProcess>) -> Result<(), Vec<ToProcess>> {
        Err(items)
    }
    /// Whether nothing waits for a worker: a document the publisher holds back would then
    /// keep the workers idle, so it is handed over at once.
    fn workers_idle(&self) -> bool {
        true
    }
    fn poll_event(&self, timeout: Duration) -> Option<Event>;
    fn try_poll_event(&self) -> Option<Event>;
    /// Up to `max` events into `into`: waits up to `timeout` for the first, then takes what
    /// is already there.
    fn poll_events(&self, max: usize, timeout: Duration, into: &mut Vec<Event>) {
        let Some(first) = self.poll_event(timeout) else {
            return;
        };
        into.push(first);
        while into.len() < max {
            match self.try_poll_event() {
                Some(e) => into.push(e),
                None => break,
            }
        }
    }
    /// Where the source message of each published document in `ids` is, when this messenger
    /// knows (Kafka: `topic[partition]@offset`): named in the stall warning, so an operator
    /// can look at what a stalled run waits for.
    fn source_positions(&self, ids: &[String]) -> Vec<Option<String>> {
        vec![None; ids.len()]
    }
}

/// A worker's side: documents in, processed documents (or their prepared index operations)
/// out to the indexer.
pub trait WorkerSide: Events {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess>;
    /// A block of up to `max` items into `into`: waits up to `timeout` for the first, then
    /// takes only what is already there. A worker thread takes a block, processes it and
    /// calls [`WorkerSide::done_processing`] once, so what a messenger does per unit of work
    /// (Kafka: a delivery ticket, the offsets to store, the events gathered into one message)
    /// is done per block, not per document.
    fn poll_block(&self, max: usize, timeout: Duration, into: &mut Vec<ToProcess>) {
        let Some(first) = self.poll_doc_to_process(timeout) else {
            return;
        };
        into.push(first);
        while into.len() < max {
            match self.poll_doc_to_process(Duration::ZERO) {
                Some(item) => into.push(item),
                None => break,
            }
        }
    }
    /// A processed document, or the index operation a worker prepared from it.
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError>;
    /// Whether a worker gathers a block's events and outputs and hands them over together
    /// ([`WorkerSide::send_outputs`]) instead of one by one. Only a messenger whose sends
    /// cannot fail says so (a worker FAILs a document whose send failed; a block's sends are
    /// not told apart).
    fn batches_outputs(&self) -> bool {
        false
    }
    /// A block's events and outputs, events first (a child's CREATE must reach the publisher
    /// before its FINISH can); both are left empty, their room kept for the next block. By
    /// default, one by one, errors logged.
    fn send_outputs(&self, events: &mut Vec<Event>, ops: &mut Vec<ToIndex>) {
        if let Err(e) = self.send_events(std::mem::take(events)) {
            tracing::error!("could not send a block's events: {e}");
        }
        for op in ops.drain(..) {
            let id = op.id().to_string();
            if let Err(e) = self.send_for_indexing(op) {
                tracing::error!(doc_id = id, "could not send for indexing: {e}");
            }
        }
    }
    /// A FAILed document's dead-letter line (`{pipeline}_fail` on Kafka; locally the
    /// dead-letter file is written by the worker pool).
    fn send_failed(&self, _doc_id: &str, _line: &serde_json::Value) {}
    /// Called by a worker thread once everything it took since its last call (a document or
    /// a batch, with every child, event and output sent): a messenger that acknowledges its
    /// source (Kafka's offsets) may now do so.
    fn done_processing(&self) {}
    /// Sends now what this worker thread held back so far (events a messenger gathers until
    /// [`WorkerSide::done_processing`]): called after each child's events while a watchdog
    /// (`worker.maxProcessingSecs`) may abandon the thread in the stage code that follows, so
    /// a child's CREATE never stays behind its indexed document.
    fn flush(&self) {}
}

/// The indexer's side: processed documents in.
pub trait IndexerSide: Events {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex>;
    /// Documents waiting for the indexer (the watchdog's measure of a stuck indexer).
    fn waiting_to_index(&self) -> usize;
}

/// The roles one process plays in a run, wired by the runner for its mode: local and test
/// mode play all three on one set of queues; `--mode external` plays all three over Kafka;
/// `--mode distributed` only publishes (workers and indexers are other processes).
#[derive(Clone)]
pub struct Topology {
    pub publisher: Arc<dyn PublisherSide>,
    pub worker: Option<Arc<dyn WorkerSide>>,
    pub indexer: Option<Arc<dyn IndexerSide>>,
}

impl Topology {
    /// Every role on the same messenger (local queues).
    pub fn local<M: PublisherSide + WorkerSide + IndexerSide + 'static>(m: Arc<M>) -> Self {
        Topology {
            publisher: m.clone(),
            worker: Some(m.clone()),
            indexer: Some(m),
        }
    }
}

pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;

/// Sends a lifecycle event for a document; a closed event queue is logged (the run is
/// already ending), not raised, since the worker or indexer has nothing else to do with it.
pub fn send_event(
    messenger: &dyn Events,
    doc_id: &str,
    run_id: &Arc<str>,
    kind: crate::event::EventType,
    message: Option<String>,
) {
    let mut e = Event::new(doc_id, run_id.clone(), kind);
    e.message = message;
    if let Err(err) = messenger.send_event(e) {
        tracing::error!(doc_id, "could not send {kind} event: {err}");
    }
}

/// In-memory queues for a local run. Items cross them in blocks (see [`queue`]): the
/// publisher hands over a connector's documents in blocks ([`PublisherSide::block_size`]), a
/// worker its block's outputs ([`WorkerSide::send_outputs`]), the indexer a batch's events.
pub struct LocalMessenger {
    source: BlockQueue<ToProcess>,
    destination: BlockQueue<ToIndex>,
    events: BlockQueue<Event>,
}

/// The most documents the publisher hands the workers at once.
pub const BLOCK_MAX: usize = 256;

impl LocalMessenger {
    pub fn new(queue_capacity: usize) -> Self {
        Self::with_event_wake(queue_capacity, EVENT_WAKE)
    }

    /// As `new`, waking the thread that applies events once `event_wake` of them are queued
    /// (the runner lowers it under `publisher.maxPendingDocs`, whose waits end only as events
    /// are applied).
    pub fn with_event_wake(queue_capacity: usize, event_wake: usize) -> Self {
        let capacity = queue_capacity.max(1);
        LocalMessenger {
            // A worker is woken by any block: workers are what runs in parallel.
            source: BlockQueue::new(capacity, 1),
            // The indexer is woken by a good part of a batch, or by a worker about to wait.
            destination: BlockQueue::new(capacity, (capacity / 4).clamp(1, DESTINATION_WAKE)),
            // Events are small and drained by the main thread; a roomy bound keeps a stalled
            // main thread from growing memory without ever blocking a healthy run.
            events: BlockQueue::new(capacity.saturating_mul(4).max(1024), event_wake),
        }
    }

    /// A worker about to wait for work (nothing queued, a timeout given): what it handed over
    /// goes to its consumers now.
    fn ring_before_waiting(&self, timeout: Duration) {
        if self.source.len() == 0 && !timeout.is_zero() {
            self.destination.ring();
            self.events.ring();
        }
    }

    /// Documents waiting in the source and destination queues.
    pub fn queued(&self) -> (usize, usize) {
        (self.source.len(), self.destination.len())
    }
}

/// The queued operations that wake a waiting indexer (unless a worker rings first).
const DESTINATION_WAKE: usize = 1024;
/// The queued events that wake the thread applying them (unless the indexer rings first).
pub const EVENT_WAKE: usize = 1024;

impl Events for LocalMessenger {
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.events.push([event]);
        Ok(())
    }
    fn send_events(&self, events: Vec<Event>) -> Result<(), MessagingError> {
        self.events.push(events);
        Ok(())
    }
    fn queue_depths(&self) -> Option<QueueDepths> {
        Some(QueueDepths {
            source: self.source.len(),
            destination: self.destination.len(),
            events: self.events.len(),
        })
    }
}

impl PublisherSide for LocalMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        self.source.push([item]);
        Ok(())
    }
    fn block_size(&self) -> usize {
        BLOCK_MAX.min(self.source.capacity() / 2).max(1)
    }
    fn send_block(&self, items: Vec<ToProcess>) -> Result<(), (MessagingError, Vec<String>)> {
        self.source.push(items);
        Ok(())
    }
    fn try_send_block(&self, items: Vec<ToProcess>) -> Result<(), Vec<ToProcess>> {
        self.source.try_push(items)
    }
    fn workers_idle(&self) -> bool {
        self.source.len() == 0
    }
    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        self.events.pop_one(timeout)
    }
    fn try_poll_event(&self) -> Option<Event> {
        self.poll_event(Duration::ZERO)
    }
    fn poll_events(&self, max: usize, timeout: Duration, into: &mut Vec<Event>) {
        self.events.pop(max, timeout, into);
    }
}

impl WorkerSide for LocalMessenger {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        self.ring_before_waiting(timeout);
        self.source.pop_one(timeout)
    }
    fn poll_block(&self, max: usize, timeout: Duration, into: &mut Vec<ToProcess>) {
        self.ring_before_waiting(timeout);
        self.source.pop(max, timeout, into);
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        self.destination.push([item]);
        Ok(())
    }
    fn batches_outputs(&self) -> bool {
        true
    }
    fn send_outputs(&self, events: &mut Vec<Event>, ops: &mut Vec<ToIndex>) {
        // Events first: a child's CREATE reaches the publisher before the indexer can send
        // its FINISH.
        self.events.push(events.drain(..));
        self.destination.push(ops.drain(..));
    }
}

impl IndexerSide for LocalMessenger {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        if self.destination.len() == 0 && !timeout.is_zero() {
            // About to wait: the events of what was indexed go to the publisher now.
            self.events.ring();
        }
        self.destination.pop_one(timeout)
    }
    fn waiting_to_index(&self) -> usize {
        self.destination.len()
    }
}

/// What a test-mode run saw, per connector.
#[derive(Debug, Default, Clone)]
pub struct History {
    pub sent_for_processing: Vec<Document>,
    pub sent_for_indexing: Vec<Document>,
    pub events: Vec<Event>,
}

/// Local queues that also record every document and event (test mode).
pub struct TestMessenger {
    inner: LocalMessenger,
    history: Arc<Mutex<History>>,
}

impl TestMessenger {
    pub fn new(queue_capacity: usize) -> Self {
        TestMessenger {
            inner: LocalMessenger::new(queue_capacity),
            history: Arc::new(Mutex::new(History::default())),
        }
    }

    pub fn history(&self) -> History {
        self.history.lock().clone()
    }
}

impl TestMessenger {
    fn record_processing(&self, items: &[ToProcess]) {
        self.history
            .lock()
            .sent_for_processing
            .extend(documents_of(items));
    }
}

/// Copies of the documents among `items` (records are not documents yet).
fn documents_of(items: &[ToProcess]) -> impl Iterator<Item = Document> + '_ {
    items.iter().filter_map(|i| match i {
        ToProcess::Doc(d) => Some(d.clone()),
        _ => None,
    })
}

impl Events for TestMessenger {
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.history.lock().events.push(event.clone());
        self.inner.send_event(event)
    }
    fn send_events(&self, events: Vec<Event>) -> Result<(), MessagingError> {
        self.history.lock().events.extend(events.iter().cloned());
        self.inner.send_events(events)
    }
    fn queue_depths(&self) -> Option<QueueDepths> {
        self.inner.queue_depths()
    }
}

impl PublisherSide for TestMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        self.record_processing(std::slice::from_ref(&item));
        self.inner.send_for_processing(item)
    }
    fn block_size(&self) -> usize {
        self.inner.block_size()
    }
    fn send_block(&self, items: Vec<ToProcess>) -> Result<(), (MessagingError, Vec<String>)> {
        self.record_processing(&items);
        self.inner.send_block(items)
    }
    fn try_send_block(&self, items: Vec<ToProcess>) -> Result<(), Vec<ToProcess>> {
        // Recorded in the order sent: the history lock is held across the try.
        let mut h = self.history.lock();
        let docs: Vec<Document> = documents_of(&items).collect();
        self.inner.try_send_block(items)?;
        h.sent_for_processing.extend(docs);
        Ok(())
    }
    fn workers_idle(&self) -> bool {
        self.inner.workers_idle()
    }
    fn records_documents(&self) -> bool {
        true
    }
    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        self.inner.poll_event(timeout)
    }
    fn try_poll_event(&self) -> Option<Event> {
        self.inner.try_poll_event()
    }
    fn poll_events(&self, max: usize, timeout: Duration, into: &mut Vec<Event>) {
        self.inner.poll_events(max, timeout, into)
    }
}

impl WorkerSide for TestMessenger {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        self.inner.poll_doc_to_process(timeout)
    }
    fn poll_block(&self, max: usize, timeout: Duration, into: &mut Vec<ToProcess>) {
        self.inner.poll_block(max, timeout, into)
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        if let Some(doc) = item.document() {
            self.history.lock().sent_for_indexing.push(doc.clone());
        }
        self.inner.send_for_indexing(item)
    }
    fn batches_outputs(&self) -> bool {
        true
    }
    fn send_outputs(&self, events: &mut Vec<Event>, ops: &mut Vec<ToIndex>) {
        {
            let mut h = self.history.lock();
            h.events.extend(events.iter().cloned());
            h.sent_for_indexing
                .extend(ops.iter().filter_map(|op| op.document().cloned()));
        }
        self.inner.send_outputs(events, ops)
    }
}

impl IndexerSide for TestMessenger {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        self.inner.poll_doc_to_index(timeout)
    }
    fn waiting_to_index(&self) -> usize {
        self.inner.waiting_to_index()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventType;

    #[test]
    fn queues_are_bounded_and_fifo() {
        let m = LocalMessenger::new(2);
        m.send_for_processing(Document::new("a").unwrap().into())
            .unwrap();
        m.send_for_processing(Document::new("b").unwrap().into())
            .unwrap();
        assert_eq!(m.queued(), (2, 0));
        assert!(
            m.try_send_block(vec![Document::new("c").unwrap().into()])
                .is_err(),
            "full at capacity"
        );
        assert_eq!(
            m.poll_doc_to_process(Duration::from_millis(1))
                .unwrap()
                .id(),
            "a"
        );
        assert_eq!(
            m.poll_doc_to_process(Duration::from_millis(1))
                .unwrap()
                .id(),
            "b"
        );
        assert!(m.poll_doc_to_process(Duration::from_millis(1)).is_none());
    }

    #[test]
    fn a_full_queue_takes_a_sender_back_only_once_drained_to_half() {
        let m = Arc::new(LocalMessenger::new(4));
        for id in ["a", "b", "c", "d"] {
            m.send_for_processing(Document::new(id).unwrap().into())
                .unwrap();
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        let m2 = m.clone();
        let sender = std::thread::spawn(move || {
            m2.send_for_processing(Document::new("e").unwrap().into())
                .unwrap();
            tx.send(()).unwrap();
        });
        let take = || m.poll_doc_to_process(Duration::from_millis(100)).unwrap();
        // The sender finds the queue full and waits.
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(take().id(), "a");
        // Three left, above half of four: the sender still waits.
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(m.queued(), (3, 0));
        assert_eq!(take().id(), "b");
        rx.recv_timeout(Duration::from_secs(5))
            .expect("resumed at half");
        sender.join().unwrap();
        let rest: Vec<String> = (0..3).map(|_| take().id().to_string()).collect();
        assert_eq!(rest, ["c", "d", "e"], "FIFO kept");
    }

    #[test]
    fn test_messenger_records_everything() {
        let m = TestMessenger::new(10);
        m.send_for_processing(Document::new("a").unwrap().into())
            .unwrap();
        m.send_for_indexing(Document::new("a").unwrap().into())
            .unwrap();
        m.send_event(Event::new("a", Arc::from("r"), EventType::Finish))
            .unwrap();
        let h = m.history();
        assert_eq!(
            (
                h.sent_for_processing.len(),
                h.sent_for_indexing.len(),
                h.events.len()
            ),
            (1, 1, 1)
        );
        assert_eq!(m.try_poll_event().unwrap().kind, EventType::Finish);
    }
}
