//! One producer per process, asynchronous: a send queues the message and returns; librdkafka's
//! delivery report, on the producer's own thread, settles the message's [`Ticket`]. A ticket
//! counts the messages of one unit of work (a worker's document and everything it produced, an
//! indexer's terminal event) and runs its action once all were delivered and the ticket was
//! sealed: that is when a consumed offset may be stored.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

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

/// Messages of one unit of work. Starts with one hold (released by [`Ticket::seal`]).
pub struct Ticket {
    count: AtomicUsize,
    failed: AtomicBool,
    action: Mutex<Option<Action>>,
    /// The partition and offset of the message delivered last (what
    /// [`KafkaProducer::send_and_wait`] returns, and [`Ticket::delivered_at`]).
    partition: AtomicI32,
    offset: AtomicI64,
}

impl Ticket {
    pub fn new(action: Option<Action>) -> Arc<Self> {
        Arc::new(Ticket {
            count: AtomicUsize::new(1),
            failed: AtomicBool::new(false),
            action: Mutex::new(action),
            partition: AtomicI32::new(-1),
            offset: AtomicI64::new(-1),
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

pub struct DeliveryContext;

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
                ticket.release(true)
            }
            Err((e, msg)) => {
                use rdkafka::message::Message as _;
                let key = msg
                    .key()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .unwrap_or_default();
                tracing::error!(
                    doc_id = key.as_str(),
                    "a Kafka message to {} was not delivered: {e}; its source offset is not \
                     committed, so it is replayed",
                    msg.topic()
                );
                ticket.release(false);
            }
        }
    }
}

pub struct KafkaProducer {
    inner: ThreadedProducer<DeliveryContext>,
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
        let inner = client_config(props)
            .create_with_context(DeliveryContext)
            .map_err(KafkaError::client("cannot create the producer"))?;
        Ok(Arc::new(KafkaProducer { inner }))
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
        self.send_from(topic, key, payload, ticket, None, None)
    }

    /// [`KafkaProducer::send`] of a document: its origin in a header when known, and its
    /// W3C `traceparent` when its run is traced (`lucille_core::trace::traceparent`).
    pub fn send_from(
        &self,
        topic: &str,
        key: &str,
        payload: &[u8],
        ticket: &Arc<Ticket>,
        origin: Option<Origin>,
        traceparent: Option<String>,
    ) -> Result<(), KafkaError> {
        ticket.hold();
        let mut record = BaseRecord::with_opaque_to(topic, ticket.clone())
            .key(key)
            .payload(payload);
        if origin.is_some() || traceparent.is_some() {
            let mut headers = OwnedHeaders::new();
            if let Some(o) = origin {
                let value = o.to_string();
                headers = headers.insert(Header {
                    key: super::ORIGIN_HEADER,
                    value: Some(value.as_str()),
                });
            }
            if let Some(t) = &traceparent {
                headers = headers.insert(Header {
                    key: super::TRACEPARENT_HEADER,
                    value: Some(t.as_str()),
                });
            }
            record = record.headers(headers);
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
