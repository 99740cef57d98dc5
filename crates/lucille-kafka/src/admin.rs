//! Topic administration: creates the run's topics when absent (source, dest and fail with
//! `kafka.topicPartitions`, the event topic with one partition so events stay in order), and
//! reads a topic's partition count (a source topic with fewer partitions than worker threads
//! leaves threads idle: warned about).

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::types::RDKafkaErrorCode;

use super::config::KafkaSettings;
use super::KafkaError;

const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to its end on this thread (the admin calls are the only futures here; the
/// admin client's own thread completes them).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park_timeout(Duration::from_millis(100)),
        }
    }
}

pub fn client_config(props: &std::collections::BTreeMap<String, String>) -> ClientConfig {
    let mut c = ClientConfig::new();
    for (k, v) in props {
        c.set(k, v);
    }
    c
}

/// Creates each `(topic, partitions)` that does not exist yet; one that exists is left as it
/// is. Returns the topics this call created.
pub fn ensure_topics(
    settings: &KafkaSettings,
    topics: &[(&str, i32)],
) -> Result<Vec<String>, KafkaError> {
    let props = settings.admin_properties()?;
    let admin: AdminClient<DefaultClientContext> = client_config(&props)
        .create()
        .map_err(KafkaError::client("cannot create the admin client"))?;
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|(name, partitions)| {
            NewTopic::new(
                name,
                *partitions,
                TopicReplication::Fixed(settings.replication_factor),
            )
        })
        .collect();
    let opts = AdminOptions::new().operation_timeout(Some(ADMIN_TIMEOUT));
    let results = block_on(admin.create_topics(new.iter(), &opts))
        .map_err(KafkaError::client("creating topics"))?;
    let mut created = Vec::new();
    for r in results {
        match r {
            Ok(name) => created.push(name),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => return Err(KafkaError::CreateTopic { topic: name, code }),
        }
    }
    if !created.is_empty() {
        tracing::info!("created Kafka topics {created:?}");
    }
    dispose(admin);
    Ok(created)
}

/// Creates `topic` when absent: one partition, `cleanup.policy=compact` (a broker that
/// refuses the setting gets the topic without it: only its size depends on compaction).
pub fn ensure_compacted_topic(settings: &KafkaSettings, topic: &str) -> Result<(), KafkaError> {
    let props = settings.admin_properties()?;
    let admin: AdminClient<DefaultClientContext> = client_config(&props)
        .create()
        .map_err(KafkaError::client("cannot create the admin client"))?;
    let opts = AdminOptions::new().operation_timeout(Some(ADMIN_TIMEOUT));
    let compacted = NewTopic::new(
        topic,
        1,
        TopicReplication::Fixed(settings.replication_factor),
    )
    .set("cleanup.policy", "compact");
    let results = block_on(admin.create_topics([&compacted], &opts))
        .map_err(KafkaError::client(format!("creating topic {topic:?}")))?;
    match results.into_iter().next() {
        Some(Ok(_)) => tracing::info!("created Kafka topic {topic:?} (compacted)"),
        Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) | None => {}
        Some(Err((_, code))) => {
            tracing::warn!("creating {topic:?} compacted: {code}; creating it without compaction");
            ensure_topics(settings, &[(topic, 1)])?;
        }
    }
    dispose(admin);
    Ok(())
}

/// The number of partitions of `topic` (0 when the broker does not know it).
pub fn partition_count(settings: &KafkaSettings, topic: &str) -> Result<usize, KafkaError> {
    let props = settings.producer_properties()?;
    let producer: rdkafka::producer::BaseProducer = client_config(&props)
        .create()
        .map_err(KafkaError::client("cannot create a client"))?;
    let md = producer
        .client()
        .fetch_metadata(Some(topic), ADMIN_TIMEOUT)
        .map_err(KafkaError::client(format!("reading metadata of {topic:?}")))?;
    let n = md
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .map_or(0, |t| t.partitions().len());
    dispose(producer);
    Ok(n)
}

/// Remembers the last error librdkafka reported (why a broker cannot be reached).
#[derive(Default)]
struct LastError(parking_lot::Mutex<Option<String>>);

impl rdkafka::ClientContext for LastError {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        use rdkafka::config::RDKafkaLogLevel as L;
        if matches!(
            level,
            L::Emerg | L::Alert | L::Critical | L::Error | L::Warning
        ) {
            *self.0.lock() = Some(message.to_string());
        }
        tracing::debug!("librdkafka {fac}: {message}");
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        *self.0.lock() = Some(format!("{error}: {reason}"));
    }
}

impl rdkafka::producer::ProducerContext for LastError {
    type DeliveryOpaque = ();

    fn delivery(&self, _: &rdkafka::producer::DeliveryResult<'_>, _: ()) {}
}

/// Waits until the broker answers (a metadata request), at most `timeout` (`None`: for ever),
/// calling `waiting` with why it does not yet, each time that changes (a process's `/ready`
/// reason). A run or a worker process calls it before anything else, so a broker that is not
/// there is named in one clear error instead of an admin call's time-out.
pub fn wait_for_broker(
    settings: &KafkaSettings,
    timeout: Option<Duration>,
    mut waiting: impl FnMut(&str),
) -> Result<(), KafkaError> {
    let props = settings.producer_properties()?;
    let client: rdkafka::producer::BaseProducer<LastError> = client_config(&props)
        .create_with_context(LastError::default())
        .map_err(KafkaError::client("cannot create a client"))?;
    let started = std::time::Instant::now();
    let mut told: Option<String> = None;
    loop {
        let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
        let attempt = left.map_or(Duration::from_secs(2), |l| {
            l.clamp(Duration::from_millis(100), Duration::from_secs(2))
        });
        let answer = client.client().fetch_metadata(None, attempt);
        // Serves the error callback, which says why (a refused connection, a name that does
        // not resolve).
        client.poll(Duration::ZERO);
        let err = match answer {
            Ok(_) => {
                dispose(client);
                return Ok(());
            }
            Err(e) => e,
        };
        let reason = client
            .context()
            .0
            .lock()
            .clone()
            .unwrap_or_else(|| err.to_string());
        if told.as_deref() != Some(reason.as_str()) {
            waiting(&reason);
            told = Some(reason.clone());
        }
        if let Some(t) = timeout {
            if started.elapsed() >= t {
                dispose(client);
                return Err(KafkaError::Unreachable {
                    servers: settings.bootstrap_servers.clone(),
                    secs: t.as_secs(),
                    reason,
                });
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Drops a short-lived client on a thread of its own: librdkafka's destroy waits for the
/// client's threads to notice, about 100 ms, which a run would otherwise spend before its
/// first document (measured: the connector started 108 ms after the topics were created).
fn dispose<T: Send + 'static>(client: T) {
    // When no thread can be started the closure, and the client with it, is dropped here.
    let _ = std::thread::Builder::new()
        .name("kafka-client-drop".into())
        .spawn(move || drop(client));
}

/// Warns when a topic has fewer partitions than the worker threads that read it: Kafka gives
/// each partition to one consumer of a group (one consumer per worker process here, its
/// threads sharing it), so once the group has more workers than partitions some get none and
/// stay idle.
pub fn warn_if_fewer_partitions(settings: &KafkaSettings, topic: &str, threads: usize) {
    match partition_count(settings, topic) {
        Ok(n) if n < threads => tracing::warn!(
            "the source topic {topic:?} has {n} partition(s) for {threads} worker thread(s): \
             Kafka gives each partition to one consumer of the group, so workers beyond {n} \
             stay idle; create it with more partitions (kafka.topicPartitions, used when this \
             process creates the topic) or add partitions"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!("{e}"),
    }
}

use rdkafka::producer::Producer as _;
