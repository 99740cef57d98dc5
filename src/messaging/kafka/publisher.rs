//! The publisher's messenger (the runner's side of a distributed or external run): documents
//! to `{pipeline}_source`, keyed by id; events read back from the run's own event topic
//! (`{pipeline}_event_{runId}`, one partition, read from its start by partition assignment:
//! only this run's publisher reads it, so no consumer group is involved).

use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::admin::client_config;
use super::config::KafkaSettings;
use super::producer::{KafkaProducer, Ticket};
use super::topics::Topics;
use super::{event_from_json, event_json, wrong_role, KafkaError};
use crate::accounting::Event;
use crate::connector::record::ToProcess;
use crate::indexer::ToIndex;
use crate::messaging::{MessagingError, Messenger};

pub struct KafkaPublisherMessenger {
    producer: Arc<KafkaProducer>,
    events: BaseConsumer,
    topics: Topics,
    event_topic: String,
    run_id: Arc<str>,
}

impl KafkaPublisherMessenger {
    pub fn new(
        settings: &KafkaSettings,
        producer: Arc<KafkaProducer>,
        topics: Topics,
        run_id: Arc<str>,
    ) -> Result<Self, KafkaError> {
        let event_topic = topics.event(&run_id);
        let mut props = settings
            .consumer_properties(
                &format!("lucille-publisher-{run_id}"),
                &format!("{}-publisher-{run_id}", settings.consumer_group_id),
            )
            .map_err(KafkaError::Config)?;
        props.insert("enable.auto.commit".into(), "false".into());
        let events: BaseConsumer = client_config(&props)
            .create()
            .map_err(|e| KafkaError::Client(format!("cannot create the event consumer: {e}")))?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&event_topic, 0, Offset::Beginning)
            .map_err(|e| KafkaError::Client(e.to_string()))?;
        events
            .assign(&tpl)
            .map_err(|e| KafkaError::Client(format!("cannot read {event_topic:?}: {e}")))?;
        Ok(KafkaPublisherMessenger {
            producer,
            events,
            topics,
            event_topic,
            run_id,
        })
    }

    pub fn event_topic(&self) -> &str {
        &self.event_topic
    }

    pub fn close(&self) {
        self.producer.flush(Duration::from_secs(30));
    }
}

impl Messenger for KafkaPublisherMessenger {
    fn send_for_processing(&self, item: ToProcess) -> Result<(), MessagingError> {
        let doc = match item {
            ToProcess::Doc(d) => d,
            // `records_documents` makes the Publisher build records first; built here too.
            ToProcess::Record(r) => r.build().map_err(|e| {
                MessagingError::Kafka(format!("record {} cannot be built: {}", e.id, e.reason))
            })?,
            ToProcess::Exhausted { doc, .. } => {
                return Err(super::wrong_role(
                    "a publisher",
                    "publish a document FAILed by worker.maxRetries",
                    doc.id(),
                ))
            }
        };
        let ticket = Ticket::new(None);
        let r = self.producer.send(
            &self.topics.source,
            doc.id(),
            doc.to_json().as_bytes(),
            &ticket,
        );
        ticket.seal();
        r.map_err(MessagingError::from)
    }

    fn poll_doc_to_process(&self, _timeout: Duration) -> Option<ToProcess> {
        None
    }

    fn records_documents(&self) -> bool {
        true
    }

    fn send_for_indexing(&self, item: ToIndex) -> Result<(), MessagingError> {
        Err(wrong_role("the publisher", "send for indexing", item.id()))
    }

    fn poll_doc_to_index(&self, _timeout: Duration) -> Option<ToIndex> {
        None
    }

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

    fn poll_event(&self, timeout: Duration) -> Option<Event> {
        loop {
            let msg = match self.events.poll(timeout)? {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!("polling {}: {e}", self.event_topic);
                    return None;
                }
            };
            match msg.payload().map(|p| event_from_json(p, &self.run_id)) {
                Some(Ok(e)) => return Some(e),
                Some(Err(e)) => {
                    tracing::error!("skipping a bad event on {}: {e}", self.event_topic)
                }
                None => tracing::error!("skipping an empty event on {}", self.event_topic),
            }
        }
    }

    fn try_poll_event(&self) -> Option<Event> {
        self.poll_event(Duration::ZERO)
    }

    fn queued(&self) -> (usize, usize) {
        (0, 0)
    }
}
