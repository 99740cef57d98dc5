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
