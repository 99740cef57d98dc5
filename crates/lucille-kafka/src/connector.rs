//! KafkaConnector (Lucille's): reads JSON objects from a topic and publishes each as a
//! document. Keys as Lucille's: `kafka { bootstrapServers, topic, consumerGroupId, clientId,
//! maxPollIntervalSecs }` (all required, with `securityProtocol`, `consumer {}` and the
//! property files of the run's `kafka` block also accepted), `idField` (the id: that field's
//! value, else the message's `id`, else `{topic}-{partition}-{offset}`), `offsets`
//! (`{ partition: offset }` to start from instead of the committed offsets, else the
//! earliest), `maxMessages`, `messageTimeout` (ms per poll, default 100) and
//! `continueOnTimeout` (default true: keep polling an empty topic until the run stops or
//! `maxMessages` were read). A message's `run_id` is dropped: the document joins this run.
//! Offsets are committed as the consumer reads (auto-commit), as in Lucille.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::Offset;
use serde_json::Value;

use crate::admin::client_config;
use crate::KafkaSettings;
use lucille_core::accounting::Publisher;
use lucille_core::config::{
    as_i64, ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options, Spec,
};
use lucille_core::connector::{
    connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError,
};
use lucille_core::document::{Document, DocumentError};

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "KafkaConnector",
    aliases: &[],
    spec: KafkaConnectorOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Reads JSON objects from a Kafka topic and publishes each as a document.
#[derive(Options)]
#[options(base = connector_spec())]
struct KafkaConnectorOptions {
    /// The topic and the consumer: topic, clientId, and the run's kafka keys
    /// (bootstrapServers, consumerGroupId and maxPollIntervalSecs required here;
    /// securityProtocol, consumer { }, the property files).
    kafka: KafkaBlock,
    /// The field of a message whose value is the document's id (else the message's id, else
    /// topic-partition-offset).
    id_field: Option<String>,
    /// { partition: offset } to start from instead of the committed offsets (else the
    /// earliest).
    offsets: Option<Offsets>,
    /// Messages read before the connector ends (default: until the run stops).
    #[option(min = 1)]
    max_messages: Option<i64>,
    /// Milliseconds each poll waits for a message.
    #[option(default = 100, min = 1)]
    message_timeout: i64,
    /// true: an empty poll is retried until the run stops or maxMessages were read; false: it
    /// ends the connector.
    #[option(default = true)]
    continue_on_timeout: bool,
}

/// The connector's own keys in its `kafka` block; the other keys are the run's kafka block's
/// ([`KafkaSettings`]).
#[derive(Options)]
#[options(base = Spec::new().open())]
struct OwnKafkaKeys {
    /// The topic read.
    topic: String,
    /// The consumer's client id.
    client_id: String,
}

/// The `kafka` block: the connector's keys and the kafka settings of the rest, each read once;
/// its problems as one error (a block is one option).
struct KafkaBlock {
    settings: KafkaSettings,
    topic: String,
    client_id: String,
}

impl OptionValue for KafkaBlock {
    fn kind() -> Kind {
        Kind::Object
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(map) = config.object(key)? else {
            return Ok(None);
        };
        let path = config.key_path(key);
        let block =
            ComponentConfig::new(map.clone(), path.clone()).with_paths(config.paths().clone());
        let mut errors = Vec::new();
        let own = OwnKafkaKeys::from_config(&block)
            .map_err(|e| errors.extend(e))
            .ok();
        // Optional in the run's kafka block, required of the connector (as Lucille's).
        for required in ["consumerGroupId", "maxPollIntervalSecs"] {
            if !map.contains_key(required) {
                errors.push(block.error(required, format!("missing required key {required:?}")));
            }
        }
        let mut rest = map.clone();
        rest.shift_remove("topic");
        rest.shift_remove("clientId");
        let rest = ComponentConfig::new(rest, path.clone()).with_paths(config.paths().clone());
        let settings = KafkaSettings::from_config(&rest)
            .map_err(|e| errors.extend(e))
            .ok();
        match (own, settings) {
            (Some(own), Some(settings)) if errors.is_empty() => Ok(Some(KafkaBlock {
                settings,
                topic: own.topic,
                client_id: own.client_id,
            })),
            _ => Err(ConfigError::joined(&path, errors)),
        }
    }
}

/// `offsets`: partition numbers to offsets.
struct Offsets(BTreeMap<i32, i64>);

impl OptionValue for Offsets {
    fn kind() -> Kind {
        Kind::Object
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(m) = config.object(key)? else {
            return Ok(None);
        };
        let mut offsets = BTreeMap::new();
        for (k, v) in m {
            let (Ok(p), Some(o)) = (k.parse::<i32>(), as_i64(v)) else {
                return Err(config.error(
                    key,
                    format!("{k:?}: expected partition number = offset (integers)"),
                ));
            };
            offsets.insert(p, o);
        }
        Ok(Some(Offsets(offsets)))
    }
}

struct KafkaConnector {
    common: Common,
    settings: KafkaSettings,
    topic: String,
    client_id: String,
    id_field: Option<String>,
    offsets: BTreeMap<i32, i64>,
    max_messages: Option<u64>,
    message_timeout: Duration,
    continue_on_timeout: bool,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = KafkaConnectorOptions::from_config(config)?;
    Ok(Box::new(KafkaConnector {
        common: common.clone(),
        settings: o.kafka.settings,
        topic: o.kafka.topic,
        client_id: o.kafka.client_id,
        id_field: o.id_field,
        offsets: o.offsets.map(|o| o.0).unwrap_or_default(),
        // At least 1: checked by their `min`.
        max_messages: o.max_messages.map(i64::unsigned_abs),
        message_timeout: Duration::from_millis(o.message_timeout.unsigned_abs()),
        continue_on_timeout: o.continue_on_timeout,
    }))
}

/// Why a message of the topic is not a document (it is published as failed).
#[derive(Debug, thiserror::Error)]
enum BadMessage {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("the message is not a JSON object")]
    NotAnObject,
    #[error("{0}")]
    Document(#[from] DocumentError),
}

impl KafkaConnector {
    fn document(
        &self,
        payload: &[u8],
        partition: i32,
        offset: i64,
    ) -> Result<Document, BadMessage> {
        let v: Value = serde_json::from_slice(payload)?;
        let Value::Object(mut m) = v else {
            return Err(BadMessage::NotAnObject);
        };
        let raw = self
            .id_field
            .as_deref()
            .and_then(|f| m.get(f))
            .or_else(|| m.get("id"))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| format!("{}-{partition}-{offset}", self.topic));
        m.insert("id".into(), Value::String(self.common.doc_id(&raw)));
        // A document from another run (a `{pipeline}_fail` line, a replayed topic) joins this
        // one: the reserved run id it carried is dropped.
        m.remove("run_id");
        Ok(Document::from_json(&Value::Object(m).to_string())?)
    }
}

impl Connector for KafkaConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let mut props = self
            .settings
            .consumer_properties(&self.client_id, &self.settings.consumer_group_id)
            .map_err(|e| ConnectorError::new(e.to_string()))?;
        props.insert("enable.auto.commit".into(), "true".into());
        let consumer: BaseConsumer = client_config(&props)
            .create()
            .map_err(|e| ConnectorError::new(format!("cannot create the consumer: {e}")))?;
        consumer.subscribe(&[&self.topic]).map_err(|e| {
            ConnectorError::new(format!("cannot subscribe to {:?}: {e}", self.topic))
        })?;
        let mut seeks_pending = !self.offsets.is_empty();
        let mut count = 0u64;
        while !publisher.is_stopping() && self.max_messages.is_none_or(|m| count < m) {
            let polled = consumer.poll(self.message_timeout);
            if seeks_pending {
                let assigned = consumer
                    .assignment()
                    .map(|a| a.elements().len())
                    .unwrap_or(0);
                if assigned > 0 {
                    for (p, o) in &self.offsets {
                        tracing::info!("KafkaConnector: seeking {}[{p}] to offset {o}", self.topic);
                        if let Err(e) = consumer.seek(
                            &self.topic,
                            *p,
                            Offset::Offset(*o),
                            Duration::from_secs(10),
                        ) {
                            return Err(ConnectorError::new(format!(
                                "cannot seek {}[{p}] to {o}: {e}",
                                self.topic
                            )));
                        }
                    }
                    seeks_pending = false;
                    // A message read before the seek, from a partition it moved, comes again.
                    if let Some(Ok(m)) = &polled {
                        if self.offsets.contains_key(&m.partition()) {
                            continue;
                        }
                    }
                }
            }
            let msg = match polled {
                None if self.continue_on_timeout => continue,
                None => break,
                Some(Err(e)) => {
                    return Err(ConnectorError::new(format!("reading {}: {e}", self.topic)))
                }
                Some(Ok(m)) => m,
            };
            count += 1;
            let (partition, offset) = (msg.partition(), msg.offset());
            match self.document(msg.payload().unwrap_or_default(), partition, offset) {
                Ok(doc) => publisher.publish(doc)?,
                Err(reason) => publisher.publish_failed(
                    &format!("{}-{partition}-{offset}", self.topic),
                    &format!("{}[{partition}]@{offset}: {reason}", self.topic),
                )?,
            }
        }
        if let Err(e) = consumer.commit_consumer_state(rdkafka::consumer::CommitMode::Sync) {
            tracing::debug!("KafkaConnector: final commit: {e}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn options(v: Value) -> Result<KafkaConnectorOptions, ConfigErrors> {
        let Value::Object(m) = v else {
            panic!("not an object")
        };
        KafkaConnectorOptions::from_config(&ComponentConfig::new(m, "connectors[0]"))
            .map_err(ConfigErrors)
    }

    #[test]
    fn the_block_and_the_connector_keys_are_checked_together() {
        let e = options(
            json!({"name": "k", "class": "KafkaConnector", "maxMessages": 0,
            "offsets": {"x": 1},
            "kafka": {"bootstrapServers": "h:1", "consumerGroupId": "g"}}),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        for part in [
            "connectors[0].kafka.topic: missing required key",
            "connectors[0].kafka.clientId: missing required key",
            "connectors[0].kafka.maxPollIntervalSecs: missing required key",
            "connectors[0].maxMessages: must be at least 1",
            "connectors[0].offsets: \"x\": expected partition number",
        ] {
            assert!(e.contains(part), "{part} missing in:\n{e}");
        }
        let o = options(
            json!({"name": "k", "class": "KafkaConnector", "offsets": {"0": 5},
            "kafka": {"bootstrapServers": "h:1", "consumerGroupId": "g", "topic": "t",
                      "clientId": "c", "maxPollIntervalSecs": 5}}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (o.kafka.topic.as_str(), o.kafka.client_id.as_str()),
            ("t", "c")
        );
        assert_eq!(o.kafka.settings.consumer_group_id, "g");
        assert_eq!(o.offsets.map(|o| o.0), Some(BTreeMap::from([(0, 5)])));
        assert_eq!((o.message_timeout, o.continue_on_timeout), (100, true));
    }
}
