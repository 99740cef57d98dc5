//! One producer per process, asynchronous: a send queues the message and returns; librdkafka's
//! delivery report, on the producer's own thread, settles the message's [`Ticket`]. A ticket
//! counts the messages of one unit of work (a worker's block and everything it produced, an
//! indexer's batch of terminal events) and runs its action once all were delivered and the
//! ticket was sealed: that is when a consumed offset may be stored.
//!
//! A message the broker did not take is sent again, not given up: librdkafka retries what it
//! knows to be passing (a lost connection, a leader moving) until `message.timeout.ms`, but
//! reports a broker's generic UNKNOWN_SERVER_ERROR (what tansu answers while it shuts down, and
//! what Apache Kafka answers on an unexpected error) and a timeout (a broker down longer than
//! `message.timeout.ms`) as final. Such a message waits [`RESEND_BACKOFF`] (doubling, at most
//! [`RESEND_BACKOFF_MAX`]) and is sent again, its ticket held: the unit of work stays undone,
//! its offsets unstored, until the broker takes it. Only an error that no later attempt can get
//! past (the message is too large, the topic is not allowed; [`final_error`]) fails the ticket.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::ClientContext;

use super::admin::client_config;
use super::config::KafkaSettings;
use super::KafkaError;
use lucille_core::event::Origin;

type Action = Box<dyn FnOnce(bool) + Send>;

/// Told of each message of an observed ticket as its delivery is settled: its key, and where it
/// landed (`None`: refused for good).
pub type Observer = Box<dyn Fn(&[u8], Option<(i32, i64)>) + Send + Sync>;

/// Messages of one unit of work. Starts with one hold (released by [`Ticket::seal`]).
pub struct Ticket {
    count: AtomicUsize,
    failed: AtomicBool,
    action: Mutex<Option<Action>>,
    /// The partition and offset of the message delivered last (what
    /// [`KafkaProducer::send_and_wait`] returns, and [`Ticket::delivered_at`]).
    partition: AtomicI32,
    offset: AtomicI64,
    observer: Option<Observer>,
}

impl Ticket {
    pub fn new(action: Option<Action>) -> Arc<Self> {
        Arc::new(Ticket {
            count: AtomicUsize::new(1),
            failed: AtomicBool::new(false),
            action: Mutex::new(action),
            partition: AtomicI32::new(-1),
            offset: AtomicI64::new(-1),
            observer: None,
        })
    }

    /// A ticket for a stream of messages that are not one unit of work (the publisher's source
    /// messages): never sealed, it only tells `observer` where each message landed, so a
    /// message costs no ticket and no action of its own.
    pub fn observed(observer: Observer) -> Arc<Self> {
        Arc::new(Ticket {
            count: AtomicUsize::new(1),
            failed: AtomicBool::new(false),
            action: Mutex::new(None),
            partition: AtomicI32::new(-1),
            offset: AtomicI64::new(-1),
            observer: Some(observer),
        })
    }

    /// Where the message delivered last landed: (partition, offset).
    pub fn delivered_at(&self) -> Option<(i32, i64)> {
        let (p, o) = (
            self.partition.load(Ordering::Acquire),
            self.offset.load(Ordering::Acquire),
        );
        (p >= 0 && o >= 0).then_some((p, o))
    }

    pub(crate) fn hold(&self) {
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn release(&self, ok: bool) {
        if !ok {
            self.failed.store(true, Ordering::Release);
        }
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(a) = self.action.lock().take() {
                a(!self.failed.load(Ordering::Acquire));
            }
        }
    }

    /// Sets the action (on a ticket not sealed yet).
    pub fn set_action(&self, action: Action) {
        *self.action.lock() = Some(action);
    }

    /// No more messages will be added: the action runs once the sent ones are delivered
    /// (now, if they are). Its argument is whether every one was delivered.
    pub fn seal(&self) {
        self.release(true);
    }
}

/// How long an undelivered message waits before it is sent again, at first; the wait doubles
/// with each failure of the same message, up to [`RESEND_BACKOFF_MAX`].
pub const RESEND_BACKOFF: Duration = Duration::from_millis(500);
pub const RESEND_BACKOFF_MAX: Duration = Duration::from_secs(10);

/// A message the broker did not take, to be sent again with its ticket.
struct Undelivered {
    topic: String,
    partition: i32,
    key: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
    headers: Option<OwnedHeaders>,
    ticket: Arc<Ticket>,
    /// Failures of this message so far.
    failures: u32,
    due: Instant,
}

/// Whether a delivery error is final: no later attempt of the same message can succeed (it is
/// too large or malformed for the broker, the topic is not allowed or not valid), or the
/// message was purged because the producer is closing. Every other error is worth another
/// attempt once the broker is back.
pub fn final_error(e: &RdError) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::MessageSizeTooLarge
                | C::InvalidMessageSize
                | C::InvalidMessage
                | C::MessageBatchTooLarge
                | C::InvalidRecord
                | C::InvalidTopic
                | C::InvalidRequiredAcks
                | C::TopicAuthorizationFailed
                | C::ClusterAuthorizationFailed
                | C::UnsupportedForMessageFormat
                | C::InvalidArgument
                | C::PurgeQueue
                | C::PurgeInflight
                | C::Fatal
        )
    )
}

pub struct DeliveryContext {
    /// Undelivered messages to the re-sending thread (which ends with the producer).
    resend: mpsc::Sender<Undelivered>,
    /// Re-sent messages, for the log (one line every few seconds, not one per message).
    resent: AtomicU64,
    logged: Mutex<Option<Instant>>,
}

impl DeliveryContext {
    fn undelivered(
        &self,
        e: &RdError,
        msg: &rdkafka::message::BorrowedMessage<'_>,
        ticket: Arc<Ticket>,
    ) {
        use rdkafka::message::Message as _;
        let key = || {
            msg.key()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .unwrap_or_default()
        };
        if final_error(e) {
            tracing::error!(
                key = key().as_str(),
                "a Kafka message to {} was refused: {e}; it is not sent again",
                msg.topic()
            );
            if let Some(o) = &ticket.observer {
                o(msg.key().unwrap_or_default(), None);
            }
            ticket.release(false);
            return;
        }
        let u = Undelivered {
            topic: msg.topic().to_string(),
            partition: msg.partition(),
            key: msg.key().map(<[u8]>::to_vec),
            payload: msg.payload().map(<[u8]>::to_vec),
            headers: msg.headers().map(|h| h.detach()),
            ticket,
            failures: 1,
            due: Instant::now() + RESEND_BACKOFF,
        };
        self.queue(u, e);
    }

    /// Hands a message to the re-sending thread (its ticket fails when the producer closes).
    fn queue(&self, u: Undelivered, e: &dyn std::fmt::Display) {
        let n = self.resent.fetch_add(1, Ordering::Relaxed) + 1;
        {
            let mut logged = self.logged.lock();
            if logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                *logged = Some(Instant::now());
                tracing::warn!(
                    "a Kafka message to {} was not delivered ({e}); sending it again once the \
                     broker takes it ({n} message(s) re-sent so far)",
                    u.topic
                );
            }
        }
        if let Err(mpsc::SendError(u)) = self.resend.send(u) {
            u.ticket.release(false);
        }
    }
}

impl ClientContext for DeliveryContext {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        super::log_librdkafka(level, fac, message);
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        tracing::error!("librdkafka: {error}: {reason}");
    }
}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = Arc<Ticket>;

    fn delivery(&self, result: &DeliveryResult<'_>, ticket: Arc<Ticket>) {
        match result {
            Ok(msg) => {
                use rdkafka::message::Message as _;
                ticket.partition.store(msg.partition(), Ordering::Release);
                ticket.offset.store(msg.offset(), Ordering::Release);
                if let Some(o) = &ticket.observer {
                    o(
                        msg.key().unwrap_or_default(),
                        Some((msg.partition(), msg.offset())),
                    );
                }
                ticket.release(true)
            }
            Err((e, msg)) => self.undelivered(e, msg, ticket),
        }
    }
}

pub struct KafkaProducer {
    inner: ThreadedProducer<DeliveryContext>,
}

/// The headers of a document's message (source and dest topics): its run (so a message whose
/// payload cannot be read is still FAILed in its run), its origin when known (dest), and its
/// W3C `traceparent` when its run is traced (`lucille_core::trace::traceparent`).
#[derive(Debug, Default)]
pub struct DocHeaders<'a> {
    pub run: Option<&'a str>,
    pub origin: Option<Origin>,
    pub traceparent: Option<String>,
}

impl DocHeaders<'_> {
    fn owned(&self) -> Option<OwnedHeaders> {
        if self.run.is_none() && self.origin.is_none() && self.traceparent.is_none() {
            return None;
        }
        let mut headers = OwnedHeaders::new();
        if let Some(r) = self.run {
            headers = headers.insert(Header {
                key: super::RUN_HEADER,
                value: Some(r),
            });
        }
        if let Some(o) = self.origin {
            let value = o.to_string();
            headers = headers.insert(Header {
                key: super::ORIGIN_HEADER,
                value: Some(value.as_str()),
            });
        }
        if let Some(t) = &self.traceparent {
            headers = headers.insert(Header {
                key: super::TRACEPARENT_HEADER,
                value: Some(t.as_str()),
            });
        }
        Some(headers)
    }
}

/// The re-sending thread: sends each undelivered message again once it is due, until the
/// producer is gone (then its ticket fails).
fn resend_loop(rx: mpsc::Receiver<Undelivered>, producer: std::sync::Weak<KafkaProducer>) {
    while let Ok(mut u) = rx.recv() {
        let wait = u.due.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let Some(p) = producer.upgrade() else {
            u.ticket.release(false);
            continue;
        };
        let mut record: BaseRecord<'_, [u8], [u8], Arc<Ticket>> =
            BaseRecord::with_opaque_to(&u.topic, u.ticket.clone());
        if u.partition >= 0 {
            record = record.partition(u.partition);
        }
        if let Some(k) = &u.key {
            record = record.key(k.as_slice());
        }
        if let Some(v) = &u.payload {
            record = record.payload(v.as_slice());
        }
        if let Some(h) = u.headers.take() {
            record = record.headers(h);
        }
        let sent = loop {
            match p.inner.send(record) {
                Ok(()) => break Ok(()),
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, back)) => {
                    // Keep the headers for the next attempt.
                    u.headers = back.headers;
                    break Err(e);
                }
            }
        };
        if let Err(e) = sent {
            if final_error(&e) {
                tracing::error!("a Kafka message to {} cannot be sent again: {e}", u.topic);
                u.ticket.release(false);
                continue;
            }
            u.failures += 1;
            let backoff = RESEND_BACKOFF
                .saturating_mul(1 << u.failures.min(5))
                .min(RESEND_BACKOFF_MAX);
            u.due = Instant::now() + backoff;
            p.inner.context().queue(u, &e);
        }
    }
}

impl KafkaProducer {
    pub fn new(settings: &KafkaSettings) -> Result<Arc<Self>, KafkaError> {
        let mut props = settings.producer_properties()?;
        // Small batches soon: a worker's offsets wait for its deliveries.
        props
            .entry("linger.ms".into())
            .or_insert_with(|| "5".into());
        Self::build(&props)
    }

    /// A producer for writes that are each waited for ([`KafkaProducer::send_and_wait`]):
    /// `linger.ms` 0 whatever the `producer` block says (batching them only adds latency).
    pub fn for_waited_writes(settings: &KafkaSettings) -> Result<Arc<Self>, KafkaError> {
        let mut props = settings.producer_properties()?;
        props.insert("linger.ms".into(), "0".into());
        Self::build(&props)
    }

    fn build(props: &std::collections::BTreeMap<String, String>) -> Result<Arc<Self>, KafkaError> {
        let (tx, rx) = mpsc::channel();
        let context = DeliveryContext {
            resend: tx,
            resent: AtomicU64::new(0),
            logged: Mutex::new(None),
        };
        let inner = client_config(props)
            .create_with_context(context)
            .map_err(KafkaError::client("cannot create the producer"))?;
        let producer = Arc::new(KafkaProducer { inner });
        let weak = Arc::downgrade(&producer);
        std::thread::Builder::new()
            .name("kafka-resend".into())
            .spawn(move || resend_loop(rx, weak))
            .map_err(|e| KafkaError::Thread {
                what: "the Kafka re-sending thread",
                source: e,
            })?;
        Ok(producer)
    }

    /// Messages sent again after a failed delivery, since the producer was made.
    pub fn resent(&self) -> u64 {
        self.inner.context().resent.load(Ordering::Relaxed)
    }

    /// Queues a message; waits (without blocking on the broker) while librdkafka's queue is
    /// full. An error settles the ticket's hold as failed.
    pub fn send(
        &self,
        topic: &str,
        key: &str,
        payload: &[u8],
        ticket: &Arc<Ticket>,
    ) -> Result<(), KafkaError> {
        self.send_from(topic, key, payload, ticket, DocHeaders::default())
    }

    /// [`KafkaProducer::send`] of a document, with its [`DocHeaders`].
    pub fn send_from(
        &self,
        topic: &str,
        key: &str,
        payload: &[u8],
        ticket: &Arc<Ticket>,
        headers: DocHeaders<'_>,
    ) -> Result<(), KafkaError> {
        ticket.hold();
        let mut record = BaseRecord::with_opaque_to(topic, ticket.clone())
            .key(key)
            .payload(payload);
        if let Some(h) = headers.owned() {
            record = record.headers(h);
        }
        loop {
            match self.inner.send(record) {
                Ok(()) => return Ok(()),
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => {
                    ticket.release(false);
                    return Err(KafkaError::Client {
                        action: format!("cannot send to {topic}"),
                        source: e,
                    });
                }
            }
        }
    }

    /// Sends one message to one partition (`None`: a tombstone) and waits until the broker
    /// acknowledged it, at most `timeout`; returns its offset.
    pub fn send_and_wait(
        &self,
        topic: &str,
        partition: i32,
        key: &str,
        payload: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<i64, KafkaError> {
        let (tx, rx) = mpsc::channel();
        let ticket = Ticket::new(Some(Box::new(move |ok: bool| {
            let _ = tx.send(ok);
        })));
        self.send_to_partition(topic, partition, key, payload, &ticket)?;
        ticket.seal();
        match rx.recv_timeout(timeout) {
            Ok(true) => Ok(ticket.offset.load(Ordering::Acquire)),
            Ok(false) => Err(KafkaError::NotDelivered {
                key: key.to_string(),
                topic: topic.to_string(),
            }),
            Err(_) => Err(KafkaError::NotAcknowledged {
                key: key.to_string(),
                topic: topic.to_string(),
                timeout,
            }),
        }
    }

    /// Queues a message for one partition of a topic (the retries topic is read from one
    /// partition, however many it was created with); `None`: a tombstone, a key with no
    /// payload, for a compacted topic.
    pub fn send_to_partition(
        &self,
        topic: &str,
        partition: i32,
        key: &str,
        payload: Option<&[u8]>,
        ticket: &Arc<Ticket>,
    ) -> Result<(), KafkaError> {
        ticket.hold();
        let mut record: BaseRecord<'_, str, [u8], Arc<Ticket>> =
            BaseRecord::with_opaque_to(topic, ticket.clone())
                .key(key)
                .partition(partition);
        if let Some(p) = payload {
            record = record.payload(p);
        }
        loop {
            match self.inner.send(record) {
                Ok(()) => return Ok(()),
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => {
                    ticket.release(false);
                    return Err(KafkaError::Client {
                        action: format!("cannot send to {topic}"),
                        source: e,
                    });
                }
            }
        }
    }

    /// Events to their runs' event topics, one message per run (split past
    /// [`super::EVENT_MESSAGE_BYTES`]), each held by `ticket`; every message is tried and the
    /// first error returned.
    pub fn send_events(
        &self,
        topics: &super::Topics,
        events: Vec<lucille_core::event::Event>,
        ticket: &Arc<Ticket>,
    ) -> Result<(), KafkaError> {
        let mut result = Ok(());
        for (run, events) in super::by_run(events) {
            let topic = topics.event(&run);
            for message in super::event_messages(&events) {
                let r = self.send(&topic, &run, message.as_bytes(), ticket);
                if let (Err(e), true) = (r, result.is_ok()) {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// Waits until every queued message was delivered (or `timeout`).
    pub fn flush(&self, timeout: Duration) {
        if let Err(e) = self.inner.flush(timeout) {
            tracing::error!("flushing the Kafka producer: {e}");
        }
    }

    pub fn in_flight(&self) -> i32 {
        self.inner.in_flight_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_no_later_attempt_can_get_past_are_final() {
        let production = |c| RdError::MessageProduction(c);
        for passing in [
            RDKafkaErrorCode::Unknown,
            RDKafkaErrorCode::MessageTimedOut,
            RDKafkaErrorCode::UnknownTopicOrPartition,
            RDKafkaErrorCode::NotLeaderForPartition,
            RDKafkaErrorCode::BrokerTransportFailure,
            RDKafkaErrorCode::AllBrokersDown,
            RDKafkaErrorCode::RequestTimedOut,
        ] {
            assert!(
                !final_error(&production(passing)),
                "{passing:?} is worth another attempt"
            );
        }
        for refused in [
            RDKafkaErrorCode::MessageSizeTooLarge,
            RDKafkaErrorCode::InvalidRecord,
            RDKafkaErrorCode::TopicAuthorizationFailed,
            RDKafkaErrorCode::PurgeQueue,
        ] {
            assert!(final_error(&production(refused)), "{refused:?} is final");
        }
    }

    #[test]
    fn a_ticket_acts_once_every_message_is_settled_and_reports_a_failure() {
        let (tx, rx) = mpsc::channel();
        let t = Ticket::new(Some(Box::new(move |ok| tx.send(ok).unwrap())));
        t.hold();
        t.hold();
        t.release(true);
        t.seal();
        assert!(rx.try_recv().is_err(), "one message still out");
        t.release(false);
        assert_eq!(rx.try_recv(), Ok(false));
    }

    #[test]
    fn an_observed_ticket_tells_each_delivery_and_never_acts() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let t = Ticket::observed(Box::new(move |key, at| {
            s2.lock()
                .push((String::from_utf8_lossy(key).into_owned(), at))
        }));
        t.hold();
        if let Some(o) = &t.observer {
            o(b"a", Some((1, 7)));
        }
        t.release(true);
        assert_eq!(*seen.lock(), vec![("a".to_string(), Some((1, 7)))]);
        assert!(t.action.lock().is_none());
    }
}
