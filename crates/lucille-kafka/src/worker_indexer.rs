//! `lucille worker-indexer`: a worker paired with its own indexer (Lucille's WorkerIndexer).
//! Documents come from `{pipeline}_source`; processed documents go to the indexer thread of
//! this process through a local queue (no dest topic); events go to the run's event topic. A
//! source offset is stored only after every document it produced was indexed and its terminal
//! event delivered: each document handed to the indexer holds its worker's [`Ticket`] until
//! the indexer's FINISH / FAIL for it was delivered.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;

use super::producer::{KafkaProducer, Ticket};
use super::topics::Topics;
use super::worker::KafkaWorkerMessenger;
use super::Fast;
use lucille_core::event::Event;
use lucille_core::event::Origin;
use lucille_core::messaging::{Events, IndexerSide, LocalMessenger, MessagingError, WorkerSide};
use lucille_core::op::ToIndex;
use lucille_core::record::ToProcess;

/// A document handed to the indexer: its worker's ticket, its run and its origin.
type Held = (Arc<Ticket>, Option<Arc<str>>, Option<Origin>);

pub struct KafkaWorkerIndexerMessenger {
    worker: KafkaWorkerMessenger,
    local: LocalMessenger,
    producer: Arc<KafkaProducer>,
    topics: Topics,
    events: bool,
    held: Mutex<HashMap<String, VecDeque<Held>, Fast>>,
    indexer_thread: Mutex<Option<ThreadId>>,
}

impl KafkaWorkerIndexerMessenger {
    pub fn new(
        worker: KafkaWorkerMessenger,
        producer: Arc<KafkaProducer>,
        topics: Topics,
        events: bool,
        queue_capacity: usize,
    ) -> Self {
        KafkaWorkerIndexerMessenger {
            worker,
            local: LocalMessenger::new(queue_capacity),
            producer,
            topics,
            events,
            held: Mutex::new(HashMap::default()),
            indexer_thread: Mutex::new(None),
        }
    }

    pub fn close(&self) {
        self.worker.close();
    }

    fn on_indexer_thread(&self) -> bool {
        *self.indexer_thread.lock() == Some(std::thread::current().id())
    }
}

impl Events for KafkaWorkerIndexerMessenger {
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.send_events(vec![event])
    }

    /// The indexer thread's terminal events of a batch: one message per run; each document's
    /// hold on its worker's ticket ends once the message with its event was delivered.
    fn send_events(&self, events: Vec<Event>) -> Result<(), MessagingError> {
        if !self.on_indexer_thread() {
            let mut result = Ok(());
            for e in events {
                if let (Err(err), true) = (self.worker.send_event(e), result.is_ok()) {
                    result = Err(err);
                }
            }
            return result;
        }
        let mut holds: Vec<Arc<Ticket>> = Vec::with_capacity(events.len());
        let mut ready = Vec::with_capacity(events.len());
        let mut unheld = Vec::new();
        {
            let mut all = self.held.lock();
            for mut event in events {
                let h = all.get_mut(&event.doc_id).and_then(VecDeque::pop_front);
                if all.get(&event.doc_id).is_some_and(VecDeque::is_empty) {
                    all.remove(&event.doc_id);
                }
                match h {
                    Some((ticket, run, origin)) => {
                        if let Some(r) = run {
                            event.run_id = r;
                        }
                        event.origin = event.origin.or(origin);
                        holds.push(ticket);
                        ready.push(event);
                    }
                    None => unheld.push(event),
                }
            }
        }
        let mut result = Ok(());
        for e in unheld {
            if let (Err(err), true) = (self.worker.send_event(e), result.is_ok()) {
                result = Err(err);
            }
        }
        if !self.events {
            for t in holds {
                t.release(true);
            }
            return result;
        }
        let batch = Ticket::new(Some(Box::new(move |delivered: bool| {
            for t in holds {
                t.release(delivered);
            }
        })));
        if let (Err(err), true) = (
            self.producer.send_events(&self.topics, ready, &batch),
            result.is_ok(),
        ) {
            result = Err(MessagingError::from(err));
        }
        batch.seal();
        result
    }
}

impl WorkerSide for KafkaWorkerIndexerMessenger {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        self.worker.poll_doc_to_process(timeout)
    }

    fn poll_block(&self, max: usize, timeout: Duration, into: &mut Vec<ToProcess>) {
        self.worker.poll_block(max, timeout, into)
    }

    fn flush(&self) {
        self.worker.flush();
    }

    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        let id = item.id().to_string();
        let origin = self.worker.origin_for_indexing(&id)?;
        let ticket = self.worker.ticket();
        let run = item.document().and_then(|d| d.run_id()).map(Arc::from);
        ticket.hold();
        self.held
            .lock()
            .entry(id.clone())
            .or_default()
            .push_back((ticket.clone(), run, origin));
        let r = self.local.send_for_indexing(item);
        if r.is_err() {
            let mut held = self.held.lock();
            if let Some(q) = held.get_mut(&id) {
                q.pop_back();
            }
            ticket.release(false);
        }
        r
    }

    fn send_failed(&self, doc_id: &str, line: &serde_json::Value) {
        self.worker.send_failed(doc_id, line);
    }

    fn done_processing(&self) {
        self.worker.done_processing();
    }
}

impl IndexerSide for KafkaWorkerIndexerMessenger {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        *self.indexer_thread.lock() = Some(std::thread::current().id());
        self.local.poll_doc_to_index(timeout)
    }

    fn waiting_to_index(&self) -> usize {
        self.local.queued().1
    }
}
