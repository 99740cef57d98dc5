//! The publisher's messenger (the runner's side of a distributed or external run): documents
//! to `{pipeline}_source`, keyed by id; events read back from the run's own event topic
//! (`{pipeline}_event_{runId}`, one partition, read from its start by partition assignment:
//! only this run's publisher reads it, so no consumer group is involved).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::admin::client_config;
use super::config::KafkaSettings;
use super::producer::{DocHeaders, KafkaProducer, Ticket};
use super::topics::Topics;
use super::Fast;
use super::{event_json, events_from_json, KafkaError};
use lucille_core::event::Origin;
use lucille_core::event::{Event, EventType};
use lucille_core::messaging::{Events, MessagingError, PublisherSide};
use lucille_core::record::ToProcess;

pub struct KafkaPublisherMessenger {
    producer: Arc<KafkaProducer>,
    events: BaseConsumer,
    topics: Topics,
    event_topic: String,
    run_id: Arc<str>,
    positions: Arc<Mutex<Positions>>,
    /// Events read and not yet returned (a message holds a batch of them).
    backlog: Mutex<VecDeque<Event>>,
    /// The one ticket of every source message: tells `positions` where each landed.
    sent: Arc<Ticket>,
}

/// Where each published document's source message landed (partition, offset), kept from its
/// send until its terminal event is read: what the stall warning names. An entry is made at
/// the send (`None`) and filled by the delivery report, which the producer's thread serves
/// and which may come after the document's terminal event: a terminal event that finds no
/// filled entry of its own takes an unfilled one, so the late report finds nothing to fill.
/// A replayed terminal event finds nothing and changes nothing, so the map holds the
/// documents in flight only.
#[derive(Default)]
struct Positions {
    by_id: HashMap<String, Vec<Option<(i32, i64)>>, Fast>,
}

impl Positions {
    fn sent(&mut self, id: &str) {
        self.by_id.entry(id.to_string()).or_default().push(None);
    }

    /// The delivery report of a send of `id`: `None` when it was not delivered.
    fn delivered(&mut self, id: &str, at: Option<(i32, i64)>) {
        let Some(slots) = self.by_id.get_mut(id) else {
            return;
        };
        if let Some(i) = slots.iter().position(Option::is_none) {
            match at {
                Some(_) => slots[i] = at,
                None => {
                    slots.swap_remove(i);
                }
            }
        }
        if slots.is_empty() {
            self.by_id.remove(id);
        }
    }

    /// A terminal event of a source document (origin ordinal 0: its own source message).
    fn settled(&mut self, id: &str, partition: i32, offset: i64) {
        let Some(slots) = self.by_id.get_mut(id) else {
            return;
        };
        let mine = slots
            .iter()
            .position(|s| *s == Some((partition, offset)))
            .or_else(|| slots.iter().position(Option::is_none));
        if let Some(i) = mine {
            slots.swap_remove(i);
        }
        if slots.is_empty() {
            self.by_id.remove(id);
        }
    }
}

impl KafkaPublisherMessenger {
    pub fn new(
        settings: &KafkaSettings,
        producer: Arc<KafkaProducer>,
        topics: Topics,
        run_id: Arc<str>,
    ) -> Result<Self, KafkaError> {
        let event_topic = topics.event(&run_id);
        let mut props = settings.consumer_properties(
            &format!("lucille-publisher-{run_id}"),
            &format!("{}-publisher-{run_id}", settings.consumer_group_id),
        )?;
        props.insert("enable.auto.commit".into(), "false".into());
        let events: BaseConsumer = client_config(&props)
            .create()
            .map_err(KafkaError::client("cannot create the event consumer"))?;
        // From offset 0, not `Offset::Beginning`: the run's event topic is new, and resolving
        // "beginning" took librdkafka a round of ~500 ms (measured with a plain client), which
        // every run's first events waited. An offset no longer there (a shared `eventTopic`
        // past its retention) resets to the earliest, as the consumer's properties say.
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&event_topic, 0, Offset::Offset(0))
            .map_err(KafkaError::PartitionList)?;
        events
            .assign(&tpl)
            .map_err(KafkaError::client(format!("cannot read {event_topic:?}")))?;
        let positions: Arc<Mutex<Positions>> = Arc::default();
        let observed = positions.clone();
        Ok(KafkaPublisherMessenger {
            producer,
            events,
            topics,
            event_topic,
            run_id,
            sent: Ticket::observed(Box::new(move |key, at| {
                if let Ok(id) = std::str::from_utf8(key) {
                    observed.lock().delivered(id, at);
                }
            })),
            positions,
            backlog: Mutex::new(VecDeque::new()),
        })
    }

    fn note_settled(&self, e: &Event) {
        if let (
            true,
            Some(Origin {
                partition,
                offset,
                ordinal: 0,
            }),
        ) = (e.kind != EventType::Create, e.origin)
        {
            self.positions.lock().settled(&e.doc_id, partition, offset);
        }
    }

    pub fn event_topic(&self) -> &str {
        &self.event_topic
    }

    pub fn close(&self) {
        self.producer.flush(Duration::from_secs(30));
    }
}

impl Events for KafkaPublisherMessenger {
    fn send_event(&self, event: Event) -> Result<(), MessagingError> {
        let ticket = Ticket::new(None);
        let r = self.producer.send(
            &self.event_topic,
            &event.doc_id,
            event_json(&event).as_bytes(),
            &ticket,
        );
        ticket.seal();
        r.map_err(MessagingError::from)
    }
}

impl PublisherSide for KafkaPublisherMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        let doc = match item {
            ToProcess::Doc(d) => d,
            // `records_documents` makes the Publisher build records first; built here too.
            ToProcess::Record(r) => r.build().map_err(|e| {
                MessagingError::Kafka(format!("record {} cannot be built: {}", e.id, e.reason))
            })?,
            // Made by a worker messenger from a message it read; never published.
            ToProcess::Exhausted { doc, .. } => {
                return Err(MessagingError::Kafka(format!(
                    "document {} was FAILed by worker.maxRetries and cannot be published",
                    doc.id()
                )))
            }
            ToProcess::Unreadable { id, .. } => {
                return Err(MessagingError::Kafka(format!(
                    "message {id} is not a document and cannot be published"
                )))
            }
        };
        self.positions.lock().sent(doc.id());
        let headers = DocHeaders {
            run: doc.run_id(),
            origin: None,
            traceparent: lucille_core::trace::traceparent(doc.run_id(), doc.id()),
        };
        self.producer
            .send_from(
                &self.topics.source,
                doc.id(),
                doc.to_json().as_bytes(),
                &self.sent,
                headers,
            )
            .map_err(MessagingError::from)
    }

    fn records_documents(&self) -> bool {
        true
    }

    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        if let Some(e) = self.backlog.lock().pop_front() {
            return Some(e);
        }
        loop {
            let msg = match self.events.poll(timeout)? {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!("polling {}: {e}", self.event_topic);
                    return None;
                }
            };
            let Some(payload) = msg.payload() else {
                tracing::error!("skipping an empty event on {}", self.event_topic);
                continue;
            };
            let mut backlog = self.backlog.lock();
            for e in events_from_json(payload, &self.run_id) {
                match e {
                    Ok(e) => {
                        self.note_settled(&e);
                        backlog.push_back(e);
                    }
                    Err(e) => {
                        tracing::error!("skipping a bad event on {}: {e}", self.event_topic)
                    }
                }
            }
            if let Some(e) = backlog.pop_front() {
                return Some(e);
            }
        }
    }

    fn try_poll_event(&self) -> Option<Event> {
        self.poll_event(Duration::ZERO)
    }

    fn source_positions(&self, ids: &[String]) -> Vec<Option<String>> {
        let positions = self.positions.lock();
        ids.iter()
            .map(|id| {
                let at: Vec<String> = positions
                    .by_id
                    .get(id)?
                    .iter()
                    .flatten()
                    .map(|(p, o)| format!("{}[{p}]@{o}", self.topics.source))
                    .collect();
                (!at.is_empty()).then(|| at.join(", "))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Positions;

    #[test]
    fn positions_are_kept_until_the_terminal_event_whichever_comes_first() {
        let mut p = Positions::default();
        p.sent("a");
        p.sent("a"); // published twice
        p.delivered("a", Some((0, 5)));
        p.delivered("a", Some((1, 9)));
        p.settled("a", 0, 5);
        assert_eq!(p.by_id.get("a"), Some(&vec![Some((1, 9))]));
        // A terminal event read before its delivery report: the report fills nothing.
        p.sent("b");
        p.settled("b", 2, 3);
        p.delivered("b", Some((2, 3)));
        assert!(!p.by_id.contains_key("b"));
        // A replayed terminal event changes nothing.
        p.settled("a", 0, 5);
        assert_eq!(p.by_id.get("a"), Some(&vec![Some((1, 9))]));
        p.settled("a", 1, 9);
        // A send that was not delivered leaves nothing behind.
        p.sent("c");
        p.delivered("c", None);
        assert!(p.by_id.is_empty());
    }
}
