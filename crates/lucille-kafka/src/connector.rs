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
use lucille_core::config::{as_i64, ComponentConfig, ConfigError, ConfigErrors, Kind, Spec};
use lucille_core::connector::{
    connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError,
};
use lucille_core::document::{Document, DocumentError};

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "KafkaConnector",
    aliases: &[],
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    connector_spec()
        .required("kafka", Kind::Object)
        .optional("idField", Kind::String)
        .optional("offsets", Kind::Object)
        .optional("maxMessages", Kind::Integer)
        .optional("messageTimeout", Kind::Integer)
        .optional("continueOnTimeout", Kind::Bool)
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
    let Some(Value::Object(block)) = config.get("kafka") else {
        return Err(config.error("kafka", "must be an object").into());
    };
    let mut block = block.clone();
    let kafka_path = config.key_path("kafka");
    // The connector's own keys inside `kafka`; the rest is the run's kafka block's.
    let mut required = |key: &str| match block
        .remove(key)
        .as_ref()
        .and_then(lucille_core::config::as_string)
    {
        Some(v) => Ok(v),
        None => Err(ConfigError::new(
            format!("{kafka_path}.{key}"),
            format!("missing required key \"{key}\""),
        )),
    };
    let topic = required("topic")?;
    let client_id = required("clientId")?;
    for key in ["consumerGroupId", "maxPollIntervalSecs"] {
        if !block.contains_key(key) {
            return Err(ConfigError::new(
                format!("{kafka_path}.{key}"),
                format!("missing required key \"{key}\""),
            )
            .into());
        }
    }
    let kconf = ComponentConfig::new(block, kafka_path.clone()).with_paths(config.paths().clone());
    let settings =
        KafkaSettings::from_config(&kconf).map_err(|e| ConfigError::joined(&kafka_path, e))?;
    let mut offsets = BTreeMap::new();
    if let Some(m) = config.object("offsets")? {
        for (k, v) in m {
            let (Ok(p), Some(o)) = (k.parse::<i32>(), as_i64(v)) else {
                return Err(config
                    .error(
                        "offsets",
                        format!("{k:?}: expected partition number = offset (integers)"),
                    )
                    .into());
            };
            offsets.insert(p, o);
        }
    }
    let max_messages = match config.i64("maxMessages")? {
        Some(n) if n < 1 => return Err(config.error("maxMessages", "must be at least 1").into()),
        v => v.map(|n| n as u64),
    };
    let message_timeout = match config.i64("messageTimeout")? {
        Some(n) if n < 1 => {
            return Err(config.error("messageTimeout", "must be at least 1").into())
        }
        v => Duration::from_millis(v.unwrap_or(100) as u64),
    };
    Ok(Box::new(KafkaConnector {
        common: common.clone(),
        settings,
        topic,
        client_id,
        id_field: config.string("idField")?,
        offsets,
        max_messages,
        message_timeout,
        continue_on_timeout: config.bool_or("continueOnTimeout", true)?,
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
