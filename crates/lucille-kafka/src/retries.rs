//! `worker.maxRetries` across worker restarts, without ZooKeeper. Lucille counts the starts
//! of each source message in ZooKeeper; here the count lives in the compacted topic
//! `{pipeline}_retries` (one partition), keyed by the message
//! (`{consumerGroupId}/{sourceTopic}/{partition}/{offset}/{runId}/{docId}`), its value the
//! message's [`RetryState`] as text.
//!
//! - Before a worker processes a message it knows every state written before it got the
//!   message's partition (it reads the topic up to a barrier it wrote itself, once per
//!   assignment), then writes the next count and waits until the broker has it: a worker that
//!   dies while processing is counted.
//! - A message started `maxRetries + 1` times (the first attempt and `maxRetries` retries, the
//!   count local mode uses) that comes back once more is not processed again: it is FAILed
//!   (`{pipeline}_fail`, FAIL event, the dead-letter file).
//! - Before the source document goes to the indexer, `sent` is written and waited for; from
//!   then on the message is never FAILed by the count (it may have been indexed), only
//!   processed again: a document is never both indexed and FAILed by the count.
//! - Once the message's offset is committed (not merely done: a replay before the commit
//!   must still see the state), its key gets a tombstone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::admin::client_config;
use super::config::KafkaSettings;
use super::producer::KafkaProducer;
use super::KafkaError;

/// How long a write or a catch-up may take before the count is given up for this message.
const WAIT: Duration = Duration::from_secs(30);

/// What the retries topic says of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryState {
    /// Started this many times, none of them got as far as sending the source document on.
    Started(u32),
    /// An attempt finished processing and sent (or was sending) the source document on.
    Sent,
}

impl RetryState {
    pub fn encode(self) -> String {
        match self {
            RetryState::Started(n) => n.to_string(),
            RetryState::Sent => "sent".to_string(),
        }
    }

    /// `None` for a tombstone or a value this version does not write.
    pub fn decode(payload: Option<&[u8]>) -> Option<Self> {
        let text = std::str::from_utf8(payload?).ok()?;
        if text == "sent" {
            return Some(RetryState::Sent);
        }
        text.parse().ok().map(RetryState::Started)
    }
}

/// What to do with a message taken from the source topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Process it, after writing this state (when there is one to write).
    Process(Option<RetryState>),
    /// It was started this many times already, each attempt ending its worker: FAIL it.
    Exhausted(u32),
}

/// The decision for a message whose state is `state`, under `worker.maxRetries`.
pub fn admit(state: Option<RetryState>, max_retries: u32) -> Admission {
    match state {
        None => Admission::Process(Some(RetryState::Started(1))),
        Some(RetryState::Sent) => Admission::Process(None),
        Some(RetryState::Started(n)) if n > max_retries => Admission::Exhausted(n),
        Some(RetryState::Started(n)) => {
            Admission::Process(Some(RetryState::Started(n.saturating_add(1))))
        }
    }
}

/// The key of a source message in the retries topic.
pub fn key(
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    run_id: &str,
    doc_id: &str,
) -> String {
    format!("{group}/{topic}/{partition}/{offset}/{run_id}/{doc_id}")
}

/// The states read from the topic (and written by this process).
#[derive(Debug, Default)]
pub struct States {
    states: HashMap<String, RetryState>,
}

impl States {
    /// One record of the topic (`None`: a tombstone).
    pub fn apply(&mut self, key: &str, payload: Option<&[u8]>) {
        match RetryState::decode(payload) {
            Some(s) => {
                self.states.insert(key.to_string(), s);
            }
            None => {
                self.states.remove(key);
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<RetryState> {
        self.states.get(key).copied()
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

/// Keys of messages done (their outputs delivered), waiting for their offset to be committed.
#[derive(Debug, Default)]
pub struct Pending {
    done: Vec<(i32, i64, String)>,
}

impl Pending {
    pub fn push(&mut self, partition: i32, offset: i64, key: String) {
        self.done.push((partition, offset, key));
    }

    /// The keys whose message is below a committed offset (`(partition, next to read)`).
    pub fn release(&mut self, committed: &[(i32, i64)]) -> Vec<String> {
        let mut out = Vec::new();
        self.done.retain_mut(|(p, o, key)| {
            let passed = committed.iter().any(|&(cp, co)| cp == *p && *o < co);
            if passed {
                out.push(std::mem::take(key));
            }
            !passed
        });
        out
    }

    pub fn len(&self) -> usize {
        self.done.len()
    }

    pub fn is_empty(&self) -> bool {
        self.done.is_empty()
    }
}

pub struct RetryCounter {
    topic: String,
    group: String,
    source: String,
    max_retries: u32,
    /// Its own producer, with no linger: every write but the tombstones is waited for.
    producer: Arc<KafkaProducer>,
    reader: Mutex<Reader>,
    pending: Mutex<Pending>,
    /// Tombstones sent (logged at the end).
    deleted: AtomicU64,
}

struct Reader {
    consumer: BaseConsumer,
    states: States,
    /// The next offset to read.
    position: i64,
    /// The consumer generation the reader last caught up for.
    generation: Option<u64>,
}

impl RetryCounter {
    /// Creates `{pipeline}_retries` when absent and starts reading it from the beginning.
    pub fn new(
        settings: &KafkaSettings,
        pipeline: &str,
        source_topic: &str,
        max_retries: u32,
    ) -> Result<Self, KafkaError> {
        let topic = format!("{pipeline}_retries");
        super::admin::ensure_compacted_topic(settings, &topic)?;
        let producer = KafkaProducer::for_waited_writes(settings)?;
        let mut props = settings.consumer_properties(
            &format!("lucille-retries-{pipeline}"),
            &format!("{}-retries", settings.consumer_group_id),
        )?;
        props.insert("enable.auto.commit".into(), "false".into());
        let consumer: BaseConsumer = client_config(&props)
            .create()
            .map_err(KafkaError::client("cannot create the retry reader"))?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Beginning)
            .map_err(KafkaError::PartitionList)?;
        consumer
            .assign(&tpl)
            .map_err(KafkaError::client(format!("cannot read {topic:?}")))?;
        Ok(RetryCounter {
            topic,
            group: settings.consumer_group_id.clone(),
            source: source_topic.to_string(),
            max_retries,
            producer,
            reader: Mutex::new(Reader {
                consumer,
                states: States::default(),
                position: 0,
                generation: None,
            }),
            pending: Mutex::new(Pending::default()),
            deleted: AtomicU64::new(0),
        })
    }

    pub fn key(&self, partition: i32, offset: i64, run_id: &str, doc_id: &str) -> String {
        key(&self.group, &self.source, partition, offset, run_id, doc_id)
    }

    /// A message was taken (`generation`: the source consumer's, read after it was taken):
    /// decides, and writes the new count durably before returning `Process`.
    pub fn start(&self, key: &str, generation: u64) -> Result<Admission, KafkaError> {
        let admission = {
            let mut reader = self.reader.lock();
            self.catch_up(&mut reader, generation)?;
            admit(reader.states.get(key), self.max_retries)
        };
        if let Admission::Process(Some(state)) = admission {
            self.write(key, state)?;
        }
        Ok(admission)
    }

    /// The source document of `key` is about to be sent on (to the indexer): `sent` is
    /// written durably first, unless it is already.
    pub fn mark_sent(&self, key: &str) -> Result<(), KafkaError> {
        if self.reader.lock().states.get(key) == Some(RetryState::Sent) {
            return Ok(());
        }
        self.write(key, RetryState::Sent)
    }

    /// The message `key` at `(partition, offset)` is done: its key is deleted once its offset
    /// is committed.
    pub fn done(&self, partition: i32, offset: i64, key: String) {
        self.pending.lock().push(partition, offset, key);
    }

    /// Offsets were committed: tombstones for the keys of the messages below them. Runs on a
    /// consumer thread; only queues the tombstones.
    pub fn committed(&self, offsets: &[(i32, i64)]) {
        let keys = self.pending.lock().release(offsets);
        self.deleted.fetch_add(keys.len() as u64, Ordering::Relaxed);
        for key in keys {
            let ticket = super::producer::Ticket::new(None);
            if let Err(e) = self
                .producer
                .send_to_partition(&self.topic, 0, &key, None, &ticket)
            {
                tracing::warn!("deleting the attempt count of {key}: {e}");
            }
            ticket.seal();
        }
    }

    /// Waits until the tombstones are delivered (at the end of a worker process, after the
    /// last commit).
    pub fn close(&self) {
        self.producer.flush(WAIT);
        tracing::info!(
            "worker.maxRetries: {} message key(s) deleted from {}, {} left for a later commit",
            self.deleted.load(Ordering::Relaxed),
            self.topic,
            self.pending.lock().len()
        );
    }

    /// Writes a state and waits for it; the reader is not locked meanwhile, so worker
    /// threads wait in parallel (each writes the keys of its own messages only).
    fn write(&self, key: &str, state: RetryState) -> Result<(), KafkaError> {
        let value = state.encode();
        self.producer
            .send_and_wait(&self.topic, 0, key, Some(value.as_bytes()), WAIT)?;
        self.reader.lock().states.apply(key, Some(value.as_bytes()));
        Ok(())
    }

    /// After a partition assignment (a new `generation`): reads the topic up to a barrier
    /// written now, so every state written before the assignment (by a worker that died, or
    /// gave the partition up) is known. Otherwise reads what has arrived, without waiting.
    fn catch_up(&self, reader: &mut Reader, generation: u64) -> Result<(), KafkaError> {
        let Reader {
            consumer,
            states,
            position,
            generation: seen,
        } = reader;
        if *seen == Some(generation) {
            while let Some(msg) = consumer.poll(Duration::ZERO) {
                match msg {
                    Ok(m) => Self::read(states, position, &m),
                    Err(e) => tracing::debug!("reading {}: {e}", self.topic),
                }
            }
            return Ok(());
        }
        // A tombstone of a key of its own: nothing to compact away, and the end of the log
        // (a position, unlike the high watermark, that a message is certain to be read at).
        let barrier = format!("~barrier/{}", uuid::Uuid::new_v4());
        let end = self
            .producer
            .send_and_wait(&self.topic, 0, &barrier, None, WAIT)?;
        let deadline = Instant::now() + WAIT;
        while *position <= end {
            if Instant::now() > deadline {
                return Err(KafkaError::ReadIncomplete {
                    topic: self.topic.clone(),
                    offset: end,
                });
            }
            match consumer.poll(Duration::from_millis(200)) {
                Some(Ok(m)) => Self::read(states, position, &m),
                Some(Err(e)) => tracing::debug!("reading {}: {e}", self.topic),
                None => {}
            }
        }
        *seen = Some(generation);
        Ok(())
    }

    fn read(states: &mut States, position: &mut i64, msg: &rdkafka::message::BorrowedMessage<'_>) {
        *position = (*position).max(msg.offset() + 1);
        if let Some(key) = msg.key() {
            let key = String::from_utf8_lossy(key);
            states.apply(&key, msg.payload());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_as_text() {
        for s in [
            RetryState::Started(1),
            RetryState::Started(42),
            RetryState::Sent,
        ] {
            assert_eq!(RetryState::decode(Some(s.encode().as_bytes())), Some(s));
        }
        assert_eq!(RetryState::decode(None), None, "a tombstone");
        assert_eq!(RetryState::decode(Some(b"what")), None);
        assert_eq!(RetryState::decode(Some(b"-1")), None);
    }

    #[test]
    fn a_message_is_started_max_retries_plus_one_times_then_failed() {
        let max = 2;
        let mut state = None;
        let mut starts = 0;
        loop {
            match admit(state, max) {
                Admission::Process(Some(next)) => {
                    starts += 1;
                    state = Some(next); // ... and the worker dies processing it
                }
                Admission::Process(None) => panic!("nothing was sent"),
                Admission::Exhausted(n) => {
                    assert_eq!(n, starts);
                    break;
                }
            }
        }
        assert_eq!(starts, 3, "the first attempt and 2 retries");
        assert_eq!(
            admit(None, 0),
            Admission::Process(Some(RetryState::Started(1)))
        );
        assert_eq!(
            admit(Some(RetryState::Started(1)), 0),
            Admission::Exhausted(1)
        );
    }

    #[test]
    fn a_message_sent_on_is_never_failed_by_the_count() {
        assert_eq!(admit(Some(RetryState::Sent), 0), Admission::Process(None));
        assert_eq!(admit(Some(RetryState::Sent), 5), Admission::Process(None));
    }

    #[test]
    fn keys_name_the_group_topic_message_run_and_document() {
        assert_eq!(
            key("g", "p_source", 3, 17, "r1", "doc/1"),
            "g/p_source/3/17/r1/doc/1"
        );
        assert_ne!(
            key("g", "t", 1, 23, "r", "d"),
            key("g", "t", 12, 3, "r", "d")
        );
    }

    #[test]
    fn states_follow_the_topic_tombstones_delete() {
        let mut s = States::default();
        s.apply("a", Some(b"1"));
        s.apply("a", Some(b"2"));
        s.apply("b", Some(b"sent"));
        assert_eq!(s.get("a"), Some(RetryState::Started(2)));
        assert_eq!(s.get("b"), Some(RetryState::Sent));
        s.apply("a", None);
        s.apply("~barrier/x", None);
        assert_eq!(s.get("a"), None);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn keys_are_released_only_below_the_committed_offset_of_their_partition() {
        let mut p = Pending::default();
        p.push(0, 5, "k05".into());
        p.push(0, 6, "k06".into());
        p.push(1, 5, "k15".into());
        assert!(
            p.release(&[(0, 5)]).is_empty(),
            "offset 5 is not committed yet"
        );
        assert_eq!(p.release(&[(0, 6), (2, 100)]), vec!["k05".to_string()]);
        assert_eq!(
            p.release(&[(1, 9), (0, 7)]),
            vec!["k06".to_string(), "k15".to_string()]
        );
        assert!(p.is_empty());
    }
}
