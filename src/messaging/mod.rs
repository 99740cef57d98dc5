//! How documents and events move between the Publisher, workers and the indexer. Local mode
//! uses bounded in-memory queues (`publisher.queueCapacity` bounds the source and destination
//! queues, so a fast connector blocks instead of filling memory); test mode records every
//! document and event on top of that; distributed mode (Kafka) plugs in behind the same trait.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

use crate::accounting::Event;
use crate::connector::record::ToProcess;
use crate::document::Document;
use crate::indexer::ToIndex;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessagingError {
    #[error("the {0} queue is closed")]
    Closed(&'static str),
}

/// The three channels of a run, as Lucille's messengers.
pub trait Messenger: Send + Sync {
    /// A published document, or a record a worker builds into one.
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError>;
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess>;
    /// Whether this messenger keeps whole documents as they are published (test mode's
    /// history): then records are built before they are sent.
    fn records_documents(&self) -> bool {
        false
    }
    /// A processed document, or the index operation a worker prepared from it.
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError>;
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex>;
    fn send_event(&self, event: Event) -> Result<(), MessagingError>;
    fn poll_event(&self, timeout: Duration) -> Option<Event>;
    fn try_poll_event(&self) -> Option<Event>;
    /// Documents waiting in the source and destination queues.
    fn queued(&self) -> (usize, usize);
}

pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;

/// Sends a lifecycle event for a document; a closed event queue is logged (the run is
/// already ending), not raised, since the worker or indexer has nothing else to do with it.
pub fn send_event(
    messenger: &dyn Messenger,
    doc_id: &str,
    run_id: &Arc<str>,
    kind: crate::accounting::EventType,
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

fn recv<T>(rx: &Receiver<T>, timeout: Duration) -> Option<T> {
    // A timeout and a closed queue both mean "nothing to take now".
    rx.recv_timeout(timeout).ok()
}

impl Messenger for LocalMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        self.source
            .0
            .send(item)
            .map_err(|_| MessagingError::Closed("source"))
    }
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        recv(&self.source.1, timeout)
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        self.destination
            .0
            .send(item)
            .map_err(|_| MessagingError::Closed("destination"))
    }
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        recv(&self.destination.1, timeout)
    }
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.events
            .0
            .send(event)
            .map_err(|_| MessagingError::Closed("event"))
    }
    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        recv(&self.events.1, timeout)
    }
    fn try_poll_event(&self) -> Option<Event> {
        self.events.1.try_recv().ok()
    }
    fn queued(&self) -> (usize, usize) {
        (self.source.1.len(), self.destination.1.len())
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

impl Messenger for TestMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        if let ToProcess::Doc(doc) = &item {
            self.history.lock().sent_for_processing.push(doc.clone());
        }
        self.inner.send_for_processing(item)
    }
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        self.inner.poll_doc_to_process(timeout)
    }
    fn records_documents(&self) -> bool {
        true
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        if let Some(doc) = item.document() {
            self.history.lock().sent_for_indexing.push(doc.clone());
        }
        self.inner.send_for_indexing(item)
    }
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        self.inner.poll_doc_to_index(timeout)
    }
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.history.lock().events.push(event.clone());
        self.inner.send_event(event)
    }
    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        self.inner.poll_event(timeout)
    }
    fn try_poll_event(&self) -> Option<Event> {
        self.inner.try_poll_event()
    }
    fn queued(&self) -> (usize, usize) {
        self.inner.queued()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::EventType;

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
