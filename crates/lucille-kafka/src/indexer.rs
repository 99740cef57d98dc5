//! The indexer's messenger: processed documents from `{pipeline}_dest`; FINISH / FAIL events
//! to the document's run's event topic. The indexer sends a document's terminal event only
//! after the backend acknowledged its batch, and the dest offset is stored only once that
//! event was delivered: a crash before replays the document, which the backend upserts by id.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;

use super::consumer::{GroupConsumer, Payload, Unreadable};
use super::producer::{KafkaProducer, Ticket};
use super::topics::Topics;
use super::Fast;
use lucille_core::event::Origin;
use lucille_core::event::{Event, EventType};
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
    pending: Mutex<HashMap<String, VecDeque<Pending>, Fast>>,
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
            pending: Mutex::new(HashMap::default()),
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
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        self.send_events(vec![event])
    }

    /// A batch's terminal events: one message per run (split only past
    /// [`super::EVENT_MESSAGE_BYTES`]); the batch's dest offsets are stored once every one of
    /// those messages was delivered.
    fn send_events(&self, events: Vec<Event>) -> Result<(), MessagingError> {
        let mut done: Vec<(i32, i64)> = Vec::with_capacity(events.len());
        let mut ready = Vec::with_capacity(events.len());
        {
            let mut all = self.pending.lock();
            for mut event in events {
                let p = all.get_mut(&event.doc_id).and_then(VecDeque::pop_front);
                if all.get(&event.doc_id).is_some_and(VecDeque::is_empty) {
                    all.remove(&event.doc_id);
                }
                if let Some(p) = p {
                    done.push((p.partition, p.offset));
                    if let Some(r) = p.run_id {
                        event.run_id = r;
                    }
                    event.origin = event.origin.or(p.origin);
                }
                ready.push(event);
            }
        }
        let consumer = self.consumer.clone();
        if !self.events {
            consumer.done_all(done);
            return Ok(());
        }
        let ticket = Ticket::new((!done.is_empty()).then(|| {
            Box::new(move |delivered: bool| {
                if delivered {
                    consumer.done_all(done);
                }
            }) as Box<dyn FnOnce(bool) + Send>
        }));
        let result = self.producer.send_events(&self.topics, ready, &ticket);
        ticket.seal();
        result.map_err(MessagingError::from)
    }
}

impl KafkaIndexerMessenger {
    /// A dest message that is not a document: its dead-letter line to `{pipeline}_fail` and,
    /// when it names its run, a FAIL event there; its offset is done once both were delivered.
    fn fail_unreadable(&self, partition: i32, offset: i64, origin: Option<Origin>, u: Unreadable) {
        let consumer = self.consumer.clone();
        let ticket = Ticket::new(Some(Box::new(move |delivered: bool| {
            if delivered {
                consumer.done(partition, offset);
            }
        })));
        let line = serde_json::json!({
            "id": u.id, "run_id": u.run_id.as_deref(), "pipeline": self.topics.pipeline,
            "error": u.reason, "attempts": 0, "document": null, "text": u.text,
        });
        if let Err(e) = self.producer.send(
            &self.topics.fail,
            &u.id,
            line.to_string().as_bytes(),
            &ticket,
        ) {
            tracing::error!(
                doc_id = u.id.as_str(),
                "could not send to {}: {e}",
                self.topics.fail
            );
        }
        if let (true, Some(run)) = (self.events, u.run_id) {
            let mut e = Event::new(u.id.clone(), run.clone(), EventType::Fail);
            e.message = Some(u.reason);
            e.origin = origin;
            let topic = self.topics.event(&run);
            if let Err(err) =
                self.producer
                    .send(&topic, &run, super::events_json([&e]).as_bytes(), &ticket)
            {
                tracing::error!(
                    doc_id = u.id.as_str(),
                    "could not send its FAIL event: {err}"
                );
            }
        }
        ticket.seal();
    }
}

impl IndexerSide for KafkaIndexerMessenger {
    fn poll_doc_to_index(&self, timeout: Duration) -> Option<ToIndex> {
        *self.thread.lock() = Some(std::thread::current().id());
        loop {
            let taken = self.consumer.poll(timeout)?;
            match taken.payload {
                Payload::Doc(doc) => {
                    self.pending
                        .lock()
                        .entry(doc.id().to_string())
                        .or_default()
                        .push_back(Pending {
                            partition: taken.partition,
                            offset: taken.offset,
                            run_id: doc.run_id().map(Arc::from),
                            origin: taken.origin,
                        });
                    return Some(ToIndex::Doc(doc));
                }
                Payload::Unreadable(u) => {
                    self.fail_unreadable(taken.partition, taken.offset, taken.origin, u)
                }
            }
        }
    }

    fn waiting_to_index(&self) -> usize {
        self.consumer.in_flight()
    }
}
