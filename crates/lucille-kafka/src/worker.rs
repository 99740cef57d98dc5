//! The worker's messenger: documents from `{pipeline}_source`, processed documents to
//! `{pipeline}_dest`, events to the document's run's event topic, FAILed documents to
//! `{pipeline}_fail`. A worker thread takes a block of messages at once
//! ([`WorkerSide::poll_block`]); a source offset is stored only after the document, and
//! everything it produced (children, events, the processed document), was delivered: each
//! worker thread gathers what it sends for the block in one [`Ticket`], sealed when the worker
//! says it is done with it ([`WorkerSide::done_processing`]), and holds the block's events
//! back until then, to send them as one message per run.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use parking_lot::Mutex;

use super::consumer::{GroupConsumer, Payload, Taken};
use super::event_json;
use super::producer::{DocHeaders, KafkaProducer, Ticket};
use super::retries::{Admission, RetryCounter};
use super::topics::Topics;
use super::Fast;
use lucille_core::event::Origin;
use lucille_core::event::{Event, EventType};
use lucille_core::messaging::{Events, MessagingError, WorkerSide};
use lucille_core::op::ToIndex;
use lucille_core::record::ToProcess;

#[derive(Default)]
struct ThreadWork {
    taken: Vec<(i32, i64)>,
    ids: Vec<String>,
    ticket: Option<Arc<Ticket>>,
    /// The run of the document taken last: where an event with no run of its own goes.
    run_id: Option<Arc<str>>,
    /// The documents taken, by id, with their origin; `true` once answered for (sent to the
    /// indexer, or FAILed / DROPped here).
    sources: Vec<(String, Origin, bool)>,
    /// Children emitted since the first document was taken: CREATEs per id.
    children: HashMap<String, u32, Fast>,
    /// Under `worker.maxRetries`: the messages taken and their keys in the retries topic.
    retry_keys: Vec<(i32, i64, String)>,
    /// Events held back until the block is done (or [`WorkerSide::flush`]).
    events: Vec<Event>,
}

impl ThreadWork {
    /// The origin of an event (or a document sent on) for `id`: a child's is the first source
    /// message of this unit of work and the how-many-th CREATE of the id it is (`create`
    /// counts a new one); a document taken's is its own message. The same processing of the
    /// same messages, replayed, gives the same origins.
    fn origin(&mut self, id: &str, create: bool) -> Option<Origin> {
        let (_, base, _) = self.sources.first()?;
        let base = *base;
        if create {
            let n = self.children.entry(id.to_string()).or_insert(0);
            *n += 1;
            return Some(Origin {
                ordinal: *n,
                ..base
            });
        }
        if let Some(n) = self.children.get(id) {
            return Some(Origin {
                ordinal: *n,
                ..base
            });
        }
        let (_, origin, answered) = self
            .sources
            .iter_mut()
            .find(|(doc, _, answered)| doc == id && !answered)?;
        *answered = true;
        Some(*origin)
    }
}

pub struct KafkaWorkerMessenger {
    consumer: Arc<GroupConsumer>,
    producer: Arc<KafkaProducer>,
    topics: Topics,
    events: bool,
    threads: Mutex<HashMap<ThreadId, ThreadWork>>,
    /// The runs of every document taken and not yet done, one entry per copy (the supervisor
    /// FAILs a timed-out document from its own thread, with the pool's run).
    runs: Mutex<HashMap<String, Vec<Arc<str>>, Fast>>,
    /// `worker.maxRetries` across restarts (worker processes).
    retries: Option<Arc<RetryCounter>>,
}

impl KafkaWorkerMessenger {
    pub fn new(
        consumer: Arc<GroupConsumer>,
        producer: Arc<KafkaProducer>,
        topics: Topics,
        events: bool,
    ) -> Self {
        KafkaWorkerMessenger {
            consumer,
            producer,
            topics,
            events,
            threads: Mutex::new(HashMap::new()),
            runs: Mutex::new(HashMap::default()),
            retries: None,
        }
    }

    /// Counts the starts of each message across restarts (`worker.maxRetries` in a worker
    /// process): its keys are deleted as the source offsets are committed.
    pub fn with_retries(mut self, retries: RetryCounter) -> Self {
        let retries = Arc::new(retries);
        let r = retries.clone();
        self.consumer
            .on_commit(Box::new(move |committed| r.committed(committed)));
        self.retries = Some(retries);
        self
    }

    /// Under `worker.maxRetries`: counts this start of a taken message; returns its key in
    /// the retries topic (deleted once its offset is committed) and, for one started too
    /// often, the FAIL reason and the number of starts. A count that cannot be read or
    /// written is logged and the message processed uncounted (no key), as Lucille does when
    /// ZooKeeper cannot be reached.
    fn admit(&self, taken: &Taken) -> (Option<String>, Option<(String, u32)>) {
        let (Some(retries), Payload::Doc(doc)) = (&self.retries, &taken.payload) else {
            return (None, None);
        };
        let key = retries.key(
            taken.partition,
            taken.offset,
            doc.run_id().unwrap_or_default(),
            doc.id(),
        );
        match retries.start(&key, self.consumer.generation()) {
            Ok(Admission::Process(_)) => (Some(key), None),
            Ok(Admission::Exhausted(n)) => {
                let reason = format!(
                    "started {n} times (worker.maxRetries: the first attempt and {} \
                     retries), each attempt ending its worker",
                    n.saturating_sub(1)
                );
                (Some(key), Some((reason, n)))
            }
            Err(e) => {
                tracing::error!(
                    doc_id = doc.id(),
                    "worker.maxRetries: {e}; processing the document without counting it"
                );
                (None, None)
            }
        }
    }

    /// The origin of a document this worker thread sends on to the indexer. Under
    /// `worker.maxRetries`, a source document's `sent` state is written first: a count that
    /// cannot say the document may be indexed must not FAIL it later, so it is not sent.
    pub(crate) fn origin_for_indexing(&self, id: &str) -> Result<Option<Origin>, MessagingError> {
        let (origin, key) = {
            let mut threads = self.threads.lock();
            let Some(w) = threads.get_mut(&std::thread::current().id()) else {
                return Ok(None);
            };
            let origin = w.origin(id, false);
            let key = origin.filter(|o| o.ordinal == 0).and_then(|o| {
                w.retry_keys
                    .iter()
                    .find(|(p, off, _)| *p == o.partition && *off == o.offset)
                    .map(|(_, _, k)| k.clone())
            });
            (origin, key)
        };
        if let (Some(r), Some(k)) = (&self.retries, key) {
            r.mark_sent(&k).map_err(|e| {
                MessagingError::Kafka(format!(
                    "worker.maxRetries: the sent state of the document was not written: {e}"
                ))
            })?;
        }
        Ok(origin)
    }

    /// Whether this thread polls the source topic (a worker thread).
    pub fn owns_current_thread(&self) -> bool {
        self.threads
            .lock()
            .contains_key(&std::thread::current().id())
    }

    /// The ticket of this thread's current documents (an untracked one off a worker thread).
    pub(crate) fn ticket(&self) -> Arc<Ticket> {
        let mut threads = self.threads.lock();
        match threads.get_mut(&std::thread::current().id()) {
            Some(w) => w.ticket.get_or_insert_with(|| Ticket::new(None)).clone(),
            None => Ticket::new(None),
        }
    }

    /// The origin of an event or a document for `id` sent from this worker thread (`None`
    /// off a worker thread: the supervisor).
    pub(crate) fn origin(&self, id: &str, create: bool) -> Option<Origin> {
        self.threads
            .lock()
            .get_mut(&std::thread::current().id())
            .and_then(|w| w.origin(id, create))
    }

    fn send(&self, topic: &str, key: &str, payload: &[u8]) -> Result<(), MessagingError> {
        self.send_from(topic, key, payload, DocHeaders::default())
    }

    fn send_from(
        &self,
        topic: &str,
        key: &str,
        payload: &[u8],
        headers: DocHeaders<'_>,
    ) -> Result<(), MessagingError> {
        let ticket = self.ticket();
        let r = self
            .producer
            .send_from(topic, key, payload, &ticket, headers);
        if !self.owns_current_thread() {
            ticket.seal();
        }
        r.map_err(MessagingError::from)
    }

    /// The run an event goes to when not its own: the worker pool names the document's run
    /// (children inherit it), so that one is kept unless no copy of the document in flight
    /// belongs to it (the supervisor's timeout FAIL carries the pool's run); an event with no
    /// run (a document that came without one) goes to the run of its thread's last document.
    fn run_of(&self, event: &Event) -> Option<Arc<str>> {
        if let Some(copies) = self.runs.lock().get(&event.doc_id) {
            if !event.run_id.is_empty() && copies.contains(&event.run_id) {
                return None;
            }
            if let Some(first) = copies.first() {
                return Some(first.clone());
            }
        }
        if !event.run_id.is_empty() {
            return None;
        }
        self.threads
            .lock()
            .get(&std::thread::current().id())
            .and_then(|w| w.run_id.clone())
    }

    pub fn close(&self) {
        self.producer.flush(Duration::from_secs(30));
        self.consumer.close();
        if let Some(r) = &self.retries {
            r.close();
        }
    }

    pub fn in_flight(&self) -> usize {
        self.consumer.in_flight()
    }
}

impl Events for KafkaWorkerMessenger {
    fn send_event(&self, mut event: Event) -> Result<(), MessagingError> {
        if !self.events {
            return Ok(());
        }
        if let Some(r) = self.run_of(&event) {
            event.run_id = r;
        }
        // The origin now: a child's ordinal counts the CREATEs made so far.
        if event.origin.is_none() {
            event.origin = self.origin(&event.doc_id, event.kind == EventType::Create);
        }
        // A worker thread's events wait for its block to be done; another thread's (the
        // supervisor's timeout FAIL) go at once.
        {
            let mut threads = self.threads.lock();
            if let Some(w) = threads.get_mut(&std::thread::current().id()) {
                w.events.push(event);
                return Ok(());
            }
        }
        let topic = self.topics.event(&event.run_id);
        self.send(&topic, &event.doc_id, event_json(&event).as_bytes())
    }
}

impl KafkaWorkerMessenger {
    /// Sends this worker thread's held-back events: one message per run, on the thread's
    /// ticket (the block's offsets wait for them too).
    fn send_held_events(&self) -> Result<(), MessagingError> {
        let (events, ticket) = {
            let mut threads = self.threads.lock();
            let Some(w) = threads.get_mut(&std::thread::current().id()) else {
                return Ok(());
            };
            if w.events.is_empty() {
                return Ok(());
            }
            let events = std::mem::take(&mut w.events);
            let ticket = w.ticket.get_or_insert_with(|| Ticket::new(None)).clone();
            (events, ticket)
        };
        self.producer
            .send_events(&self.topics, events, &ticket)
            .map_err(MessagingError::from)
    }

    /// Takes one message read from the source topic for this thread's block.
    fn take(&self, me: ThreadId, taken: Taken) -> ToProcess {
        let (key, exhausted) = self.admit(&taken);
        let (id, run): (String, Option<Arc<str>>) = match &taken.payload {
            Payload::Doc(doc) => (doc.id().to_string(), doc.run_id().map(Arc::from)),
            Payload::Unreadable(u) => (u.id.clone(), u.run_id.clone()),
        };
        if let Some(r) = &run {
            self.runs
                .lock()
                .entry(id.clone())
                .or_default()
                .push(r.clone());
        }
        let mut threads = self.threads.lock();
        let w = threads.entry(me).or_default();
        w.taken.push((taken.partition, taken.offset));
        if let Some(k) = key {
            w.retry_keys.push((taken.partition, taken.offset, k));
        }
        let origin = Origin {
            partition: taken.partition,
            offset: taken.offset,
            ordinal: 0,
        };
        w.sources.push((id.clone(), origin, false));
        if run.is_some() {
            w.ids.push(id);
            w.run_id = run;
        }
        // A document started too often is FAILed by the pool, in this unit of work: its
        // offset is done once the FAIL was delivered. So is a message that is not a document.
        match (taken.payload, exhausted) {
            (Payload::Doc(doc), Some((reason, attempts))) => ToProcess::Exhausted {
                doc,
                reason,
                attempts,
            },
            (Payload::Doc(doc), None) => ToProcess::Doc(doc),
            (Payload::Unreadable(u), _) => ToProcess::Unreadable {
                id: u.id,
                run_id: u.run_id,
                reason: u.reason,
                text: u.text,
            },
        }
    }
}

impl WorkerSide for KafkaWorkerMessenger {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<ToProcess> {
        let mut one = Vec::with_capacity(1);
        self.poll_block(1, timeout, &mut one);
        one.pop()
    }

    fn poll_block(&self, max: usize, timeout: Duration, into: &mut Vec<ToProcess>) {
        // Under `worker.maxRetries` a message's start is counted when it is taken: one at a
        // time, so a document that kills its worker counts a start for itself only, not for
        // the rest of a block it was taken with.
        let max = if self.retries.is_some() { 1 } else { max };
        let me = std::thread::current().id();
        self.threads.lock().entry(me).or_default();
        let Some(first) = self.consumer.poll(timeout) else {
            return;
        };
        into.push(self.take(me, first));
        while into.len() < max {
            match self.consumer.poll(Duration::ZERO) {
                Some(taken) => into.push(self.take(me, taken)),
                None => break,
            }
        }
    }

    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        match item {
            ToIndex::Doc(doc) => {
                let origin = self.origin_for_indexing(doc.id())?;
                let headers = DocHeaders {
                    run: doc.run_id(),
                    origin,
                    traceparent: lucille_core::trace::traceparent(doc.run_id(), doc.id()),
                };
                self.send_from(
                    &self.topics.dest,
                    doc.id(),
                    doc.to_json().as_bytes(),
                    headers,
                )
            }
            // A Kafka run ships whole documents (its publisher `records_documents`), so its
            // workers are started without a preparer and never make operations.
            ToIndex::Op(op) => Err(MessagingError::Kafka(format!(
                "a Kafka worker ships documents, not prepared index operations (document {})",
                op.doc_id
            ))),
        }
    }

    fn send_failed(&self, doc_id: &str, line: &serde_json::Value) {
        if let Err(e) = self.send(&self.topics.fail, doc_id, line.to_string().as_bytes()) {
            tracing::error!(doc_id, "could not send to {}: {e}", self.topics.fail);
        }
    }

    fn flush(&self) {
        if let Err(e) = self.send_held_events() {
            tracing::error!("could not send events: {e}");
        }
    }

    fn done_processing(&self) {
        self.flush();
        let me = std::thread::current().id();
        let work = {
            let mut threads = self.threads.lock();
            match threads.get_mut(&me) {
                Some(w) => {
                    w.sources.clear();
                    w.children.clear();
                    (
                        std::mem::take(&mut w.taken),
                        w.ticket.take(),
                        std::mem::take(&mut w.ids),
                        std::mem::take(&mut w.retry_keys),
                    )
                }
                None => return,
            }
        };
        let (taken, ticket, ids, retry_keys) = work;
        {
            let mut runs = self.runs.lock();
            for id in &ids {
                if let Some(copies) = runs.get_mut(id) {
                    if !copies.is_empty() {
                        copies.remove(0);
                    }
                    if copies.is_empty() {
                        runs.remove(id);
                    }
                }
            }
        }
        if taken.is_empty() {
            if let Some(t) = ticket {
                t.seal();
            }
            return;
        }
        let consumer = self.consumer.clone();
        let retries = self.retries.clone();
        let done = move |delivered: bool| {
            if !delivered {
                return;
            }
            consumer.done_all(taken);
            if let Some(r) = retries {
                for (p, o, k) in retry_keys {
                    r.done(p, o, k);
                }
            }
        };
        match ticket {
            Some(t) => {
                // The ticket was made before the action was known: attach it, then seal.
                t.set_action(Box::new(done));
                t.seal();
            }
            None => done(true),
        }
    }
}
