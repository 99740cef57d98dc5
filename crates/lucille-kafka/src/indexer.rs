//! The indexer's messenger: processed documents from `{pipeline}_dest`; FINISH / FAIL events
//! to the document's run's event topic. The indexer sends a document's terminal event only
//! after the backend acknowledged its batch, and the dest offset is stored only once that
//! event was delivered: a crash before replays the document, which the backend upserts by id.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;

use super::consumer::GroupConsumer;
use super::event_json;
use super::producer::{KafkaProducer, Ticket};
use super::topics::Topics;
use lucille_core::event::Event;
use lucille_core::event::Origin;
use lucille_core::messaging::{Events, IndexerSide, MessagingError};
use lucille_core::op::ToIndex;

struct Pending {
    partition: i32,
    offset: i64,
    run_id: Option<Arc<str>>,
    origin: Option<Origin>,
}

pub struct KafkaIndexerMessenger {
    consumer: Arc<GroupConsumer>,
    producer: Arc<KafkaProducer>,
    topics: Topics,
    events: bool,
    /// Documents taken and not yet answered for, by id (an id may be taken twice: a replay).
    pending: Mutex<HashMap<String, VecDeque<Pending>>>,
    thread: Mutex<Option<ThreadId>>,
}

impl KafkaIndexerMessenger {
    pub fn new(
        consumer: Arc<GroupConsumer>,
        producer: Arc<KafkaProducer>,
        topics: Topics,
        events: bool,
    ) -> Self {
        KafkaIndexerMessenger {
            consumer,
            producer,
            topics,
            events,
            pending: Mutex::new(HashMap::new()),
            thread: Mutex::new(None),
        }
    }

    /// Whether this is the thread that polls the dest topic (the indexer thread).
    pub fn owns_current_thread(&self) -> bool {
        *self.thread.lock() == Some(std::thread::current().id())
    }

    pub fn close(&self) {
        self.producer.flush(Duration::from_secs(30));
        self.consumer.close();
    }
}

impl Events for KafkaIndexerMessenger {
    fn send_event(&self, mut event: Event) -> Result<(), MessagingError> {
        let pending = {
            let mut all = self.pending.lock();
            let p = all.get_mut(&event.doc_id).and_then(VecDeque::pop_front);
            if all.get(&event.doc_id).is_some_and(VecDeque::is_empty) {
                all.remove(&event.doc_id);
            }
            p
        };
        let consumer = self.consumer.clone();
        let done: Option<(i32, i64)> = pending.as_ref().map(|p| (p.partition, p.offset));
        if let Some(p) = pending {
            if let Some(r) = p.run_id {
                event.run_id = r;
            }
            event.origin = event.origin.or(p.origin);
        }
        if !self.events {
            if let Some((p, o)) = done {
                consumer.done(p, o);
            }
            return Ok(());
        }
        let ticket = Ticket::new(done.map(|(p, o)| {
            Box::new(move |delivered: bool| {
                if delivered {
                    consumer.done(p, o);
                }
            }) as Box<dyn FnOnce(bool) + Send>
        }));
        let topic = self.topics.event(&event.run_id);
        let r = self.producer.send(
            &topic,
            &event.doc_id,
            event_json(&event).as_bytes(),
            &ticket,
        );
        ticket.seal();
        r.map_err(MessagingError::from)
    }
}

impl IndexerSide for KafkaIndexerMessenger {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        *self.thread.lock() = Some(std::thread::current().id());
        let taken = self.consumer.poll(timeout)?;
        self.pending
            .lock()
            .entry(taken.doc.id().to_string())
            .or_default()
            .push_back(Pending {
                partition: taken.partition,
                offset: taken.offset,
                run_id: taken.doc.run_id().map(Arc::from),
                origin: taken.origin,
            });
        Some(ToIndex::Doc(taken.doc))
    }

    fn waiting_to_index(&self) -> usize {
        self.consumer.in_flight()
    }
}
