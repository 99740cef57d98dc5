//! How documents and events move between the Publisher, workers and the indexer. Local mode
//! uses bounded in-memory queues (`publisher.queueCapacity` bounds the source and destination
//! queues, so a fast connector blocks instead of filling memory); test mode records every
//! document and event on top of that; distributed mode (Kafka, [`kafka`]) plugs in behind the
//! same traits. One trait per role ([`PublisherSide`], [`WorkerSide`], [`IndexerSide`], each
//! with [`Events`]); a messenger implements the roles it has, and a [`Topology`] says which
//! roles a process plays.

pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

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
    fn poll_event(&self, timeout: Duration) -> Option<Event>;
    fn try_poll_event(&self) -> Option<Event>;
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

/// In-memory queues for a local run.
pub struct LocalMessenger {
    source: (Sender<ToProcess>, Receiver<ToProcess>),
    destination: (Sender<ToIndex>, Receiver<ToIndex>),
    events: (Sender<Event>, Receiver<Event>),
}

impl LocalMessenger {
    pub fn new(queue_capacity: usize) -> Self {
        let capacity = queue_capacity.max(1);
        LocalMessenger {
            source: bounded(capacity),
            destination: bounded(capacity),
            // Events are small and drained by the main thread; a roomy bound keeps a stalled
            // main thread from growing memory without ever blocking a healthy run.
            events: bounded(capacity.saturating_mul(4).max(1024)),
        }
    }
}

// Hand-offs: threads that wait on a queue sleep in short, growing naps instead of blocking in
// the channel. A thread blocked in crossbeam spins and yields before it parks, and every send
// or receive on the other side then wakes it: with one side faster than the other (always, in
// a pipeline), that was a spin, a yield or a futex wake-up per document on each queue: ~20% of
// a run's CPU under perf (crossbeam send / recv, sched_yield, task switches), taken from the
// threads doing the work on a machine with few cores. A full queue is resumed only once it
// has drained to half (hysteresis), so the producer wakes once per half-queue, not per slot.
const NAP_MIN: Duration = Duration::from_micros(50);
const NAP_MAX: Duration = Duration::from_millis(2);

fn nap(current: &mut Duration, limit: Option<Duration>) {
    let d = limit.map_or(*current, |l| (*current).min(l));
    std::thread::sleep(d);
    *current = (*current * 2).min(NAP_MAX);
}

fn recv<T>(rx: &Receiver<T>, timeout: Duration) -> Option<T> {
    // A timeout and a closed queue both mean "nothing to take now". The clock is read only
    // once the queue is found empty: a busy queue hands items over without a clock read.
    let take = || match rx.try_recv() {
        Ok(item) => Ok(Some(item)),
        Err(crossbeam_channel::TryRecvError::Disconnected) => Ok(None),
        Err(crossbeam_channel::TryRecvError::Empty) => Err(()),
    };
    if let Ok(got) = take() {
        return got;
    }
    if timeout.is_zero() {
        return None;
    }
    let deadline = std::time::Instant::now() + timeout;
    let mut wait = NAP_MIN;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        nap(&mut wait, Some(left));
        if let Ok(got) = take() {
            return got;
        }
    }
}

/// Sends, waiting while the queue is full until it has drained to half its capacity.
fn send<T>(tx: &Sender<T>, mut item: T, name: &'static str) -> Result<(), MessagingError> {
    let mut wait = NAP_MIN;
    loop {
        match tx.try_send(item) {
            Ok(()) => return Ok(()),
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => {
                return Err(MessagingError::Closed(name))
            }
            Err(crossbeam_channel::TrySendError::Full(back)) => item = back,
        }
        let low = tx.capacity().unwrap_or(0) / 2;
        while tx.len() > low {
            nap(&mut wait, None);
        }
    }
}

impl LocalMessenger {
    /// Documents waiting in the source and destination queues.
    pub fn queued(&self) -> (usize, usize) {
        (self.source.1.len(), self.destination.1.len())
    }
}

impl Events for LocalMessenger {
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        send(&self.events.0, event, "event")
    }
    fn queue_depths(&self) -> Option<QueueDepths> {
        Some(QueueDepths {
            source: self.source.1.len(),
            destination: self.destination.1.len(),
            events: self.events.1.len(),
        })
    }
}

impl PublisherSide for LocalMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        send(&self.source.0, item, "source")
    }
    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        recv(&self.events.1, timeout)
    }
    fn try_poll_event(&self) -> Option<Event> {
        self.events.1.try_recv().ok()
    }
}

impl WorkerSide for LocalMessenger {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        recv(&self.source.1, timeout)
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        send(&self.destination.0, item, "destination")
    }
}

impl IndexerSide for LocalMessenger {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        recv(&self.destination.1, timeout)
    }
    fn waiting_to_index(&self) -> usize {
        self.destination.1.len()
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

impl Events for TestMessenger {
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.history.lock().events.push(event.clone());
        self.inner.send_event(event)
    }
    fn queue_depths(&self) -> Option<QueueDepths> {
        self.inner.queue_depths()
    }
}

impl PublisherSide for TestMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        if let ToProcess::Doc(doc) = &item {
            self.history.lock().sent_for_processing.push(doc.clone());
        }
        self.inner.send_for_processing(item)
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
}

impl WorkerSide for TestMessenger {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        self.inner.poll_doc_to_process(timeout)
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        if let Some(doc) = item.document() {
            self.history.lock().sent_for_indexing.push(doc.clone());
        }
        self.inner.send_for_indexing(item)
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
            m.source
                .0
                .try_send(Document::new("c").unwrap().into())
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
