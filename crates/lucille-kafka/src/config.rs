//! The `kafka { }` block (Lucille's keys, read from KafkaUtils): where the broker is, the
//! consumer group, poll and request limits, topic overrides, and client properties passed
//! through to librdkafka (`consumer {}`, `producer {}`, `admin {}`, or Lucille's
//! `consumerPropertyFile` / `producerPropertyFile` / `adminPropertyFile`), so SASL and TLS
//! need no code.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use lucille_core::config::{as_string, ComponentConfig, ConfigError, Kind, Spec};

/// Lucille's default `kafka.maxPollIntervalSecs` (KafkaUtils / the reference config).
pub const DEFAULT_MAX_POLL_INTERVAL_SECS: u64 = 600;
/// Lucille's default `kafka.maxRequestSize`.
pub const DEFAULT_MAX_REQUEST_SIZE: u64 = 250_000_000;
/// librdkafka's ceiling for `message.max.bytes`.
const LIBRDKAFKA_MAX_MESSAGE_BYTES: u64 = 1_000_000_000;
/// `fetch.wait.max.ms` of every consumer unless `kafka.consumer { }` sets it (librdkafka's
/// default is 500). Measured on tansu (bench/distributed/README.md): 500 ms put about a second
/// on every run; 50 ms cost the broker 3% of a core in idle fetches, 100 ms half that.
pub const DEFAULT_FETCH_WAIT_MS: u64 = 100;
pub const DEFAULT_CONSUMER_GROUP_ID: &str = "lucille_workers";
/// `kafka.connectTimeoutSecs`: how long a run or a worker / indexer process waits at start for
/// the broker to answer before it stops with an error naming it.
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_TOPIC_PARTITIONS: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSettings {
    pub bootstrap_servers: String,
    pub consumer_group_id: String,
    pub max_poll_interval_secs: u64,
    pub max_request_size: u64,
    /// `kafka.connectTimeoutSecs`: the wait for the broker at start; `None` (0): for ever.
    pub connect_timeout: Option<std::time::Duration>,
    /// `kafka.events: false`: workers and indexers send no events (nothing waits for them).
    pub events: bool,
    pub security_protocol: Option<String>,
    pub source_topic: Option<String>,
    pub event_topic: Option<String>,
    pub metadata_max_age_ms: Option<u64>,
    /// Partitions of `{pipeline}_source`, `_dest` and `_fail` when this process creates them
    /// (`kafka.topicPartitions`); the event topic always has one, so events stay ordered.
    pub topic_partitions: usize,
    pub replication_factor: i32,
    pub consumer: BTreeMap<String, String>,
    pub producer: BTreeMap<String, String>,
    pub admin: BTreeMap<String, String>,
    pub consumer_property_file: Option<PathBuf>,
    pub producer_property_file: Option<PathBuf>,
    pub admin_property_file: Option<PathBuf>,
}

pub fn kafka_spec() -> Spec {
    Spec::new()
        .required("bootstrapServers", Kind::String)
        .optional("consumerGroupId", Kind::String)
        .optional("maxPollIntervalSecs", Kind::Integer)
        .optional("maxRequestSize", Kind::Integer)
        .optional("connectTimeoutSecs", Kind::Integer)
        .optional("events", Kind::Bool)
        .optional("securityProtocol", Kind::String)
        .optional("sourceTopic", Kind::String)
        .optional("eventTopic", Kind::String)
        .optional("metadataMaxAgeMs", Kind::Integer)
        .optional("topicPartitions", Kind::Integer)
        .optional("replicationFactor", Kind::Integer)
        .optional("consumer", Kind::Object)
        .optional("producer", Kind::Object)
        .optional("admin", Kind::Object)
        .optional("consumerPropertyFile", Kind::String)
        .optional("producerPropertyFile", Kind::String)
        .optional("adminPropertyFile", Kind::String)
        .optional("documentSerializer", Kind::String)
        .optional("documentDeserializer", Kind::String)
}

/// `documentSerializer` / `documentDeserializer` may name only Lucille's own classes, its
/// defaults, which write documents as their JSON as Lucille-rs does; another Java class cannot
/// be loaded here.
const LUCILLE_SERDE: [(&str, &str, &str); 2] = [
    (
        "documentSerializer",
        "com.kmwllc.lucille.message.KafkaDocumentSerializer",
        "documents travel as their JSON; a Java serializer class cannot be loaded here",
    ),
    (
        "documentDeserializer",
        "com.kmwllc.lucille.message.KafkaDocumentDeserializer",
        "documents travel as their JSON; a Java deserializer class cannot be loaded here",
    ),
];

/// A topic name as Kafka accepts it (Lucille checks the pipeline name the same way).
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn client_properties(
    block: &ComponentConfig,
    key: &str,
    errors: &mut Vec<ConfigError>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(Value::Object(m)) = block.get(key) else {
        return out;
    };
    for (k, v) in m {
        // HOCON reads `sasl.mechanism = PLAIN` as a nested object; flatten it back.
        flatten(k, v, &mut out, &block.key_path(key), errors);
    }
    out
}

fn flatten(
    prefix: &str,
    v: &Value,
    out: &mut BTreeMap<String, String>,
    path: &str,
    errors: &mut Vec<ConfigError>,
) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{prefix}.{k}"), v, out, path, errors);
            }
        }
        other => match as_string(other) {
            Some(s) => {
                out.insert(prefix.to_string(), s);
            }
            None => errors.push(ConfigError::new(
                format!("{path}.{prefix}"),
                "a client property must be a string, number or boolean",
            )),
        },
    }
}

impl KafkaSettings {
    /// Reads and validates the `kafka` block, reporting every problem.
    pub fn from_config(block: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let mut errors = kafka_spec().validate(block.map(), block.path());
        let take_string = |key: &str, errors: &mut Vec<ConfigError>| match block.string(key) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        for (key, default, message) in LUCILLE_SERDE {
            if let Some(class) = take_string(key, &mut errors).filter(|c| c != default) {
                errors.push(block.error(key, format!("{class:?}: {message} (only {default})")));
            }
        }
        let bootstrap_servers = take_string("bootstrapServers", &mut errors).unwrap_or_default();
        let consumer_group_id = take_string("consumerGroupId", &mut errors)
            .unwrap_or_else(|| DEFAULT_CONSUMER_GROUP_ID.to_string());
        let security_protocol = take_string("securityProtocol", &mut errors);
        let source_topic = take_string("sourceTopic", &mut errors);
        let event_topic = take_string("eventTopic", &mut errors);
        for (key, name) in [("sourceTopic", &source_topic), ("eventTopic", &event_topic)] {
            if let Some(n) = name.as_deref().filter(|n| !valid_topic_name(n)) {
                errors.push(block.error(
                    key,
                    format!(
                        "{n:?} is not a valid topic name (1-249 characters: letters, digits, \
                         '.', '_' and '-')"
                    ),
                ));
            }
        }
        let positive = |key: &str, default: u64, errors: &mut Vec<ConfigError>| match block.i64(key)
        {
            Ok(None) => default,
            Ok(Some(n)) if n >= 1 => n as u64,
            Ok(Some(_)) => {
                errors.push(block.error(key, "must be at least 1"));
                default
            }
            Err(e) => {
                errors.push(e);
                default
            }
        };
        let max_poll_interval_secs = positive(
            "maxPollIntervalSecs",
            DEFAULT_MAX_POLL_INTERVAL_SECS,
            &mut errors,
        );
        let max_request_size = positive("maxRequestSize", DEFAULT_MAX_REQUEST_SIZE, &mut errors);
        if max_request_size > LIBRDKAFKA_MAX_MESSAGE_BYTES {
            errors.push(block.error(
                "maxRequestSize",
                format!("must be at most {LIBRDKAFKA_MAX_MESSAGE_BYTES} (librdkafka's limit)"),
            ));
        }
        let connect_timeout = match block.i64("connectTimeoutSecs") {
            Ok(None) => Some(std::time::Duration::from_secs(DEFAULT_CONNECT_TIMEOUT_SECS)),
            Ok(Some(0)) => None,
            Ok(Some(n)) if n > 0 => Some(std::time::Duration::from_secs(n as u64)),
            Ok(Some(_)) => {
                errors.push(block.error(
                    "connectTimeoutSecs",
                    "must be at least 0 (0: wait for the broker for ever)",
                ));
                None
            }
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let metadata_max_age_ms = block
            .has("metadataMaxAgeMs")
            .then(|| positive("metadataMaxAgeMs", 30_000, &mut errors));
        let topic_partitions = positive(
            "topicPartitions",
            DEFAULT_TOPIC_PARTITIONS as u64,
            &mut errors,
        ) as usize;
        let replication_factor = positive("replicationFactor", 1, &mut errors);
        let events = block.bool_or("events", true).unwrap_or(true);
        let consumer = client_properties(block, "consumer", &mut errors);
        let producer = client_properties(block, "producer", &mut errors);
        let admin = client_properties(block, "admin", &mut errors);
        let file = |key: &str, errors: &mut Vec<ConfigError>| {
            let p = take_string(key, errors)?;
            let path = block.resolve_path(&p);
            if let Err(e) = read_properties(&path) {
                errors.push(block.error(key, e.to_string()));
            }
            Some(path)
        };
        let consumer_property_file = file("consumerPropertyFile", &mut errors);
        let producer_property_file = file("producerPropertyFile", &mut errors);
        let admin_property_file = file("adminPropertyFile", &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(KafkaSettings {
            bootstrap_servers,
            consumer_group_id,
            max_poll_interval_secs,
            max_request_size,
            connect_timeout,
            events,
            security_protocol,
            source_topic,
            event_topic,
            metadata_max_age_ms,
            topic_partitions,
            replication_factor: i32::try_from(replication_factor).unwrap_or(i32::MAX),
            consumer,
            producer,
            admin,
            consumer_property_file,
            producer_property_file,
            admin_property_file,
        })
    }

    /// Settings with defaults for `bootstrap_servers` (tests and the KafkaConnector).
    pub fn new(bootstrap_servers: impl Into<String>) -> Self {
        KafkaSettings {
            bootstrap_servers: bootstrap_servers.into(),
            consumer_group_id: DEFAULT_CONSUMER_GROUP_ID.to_string(),
            max_poll_interval_secs: DEFAULT_MAX_POLL_INTERVAL_SECS,
            max_request_size: DEFAULT_MAX_REQUEST_SIZE,
            connect_timeout: Some(std::time::Duration::from_secs(DEFAULT_CONNECT_TIMEOUT_SECS)),
            events: true,
            security_protocol: None,
            source_topic: None,
            event_topic: None,
            metadata_max_age_ms: None,
            topic_partitions: DEFAULT_TOPIC_PARTITIONS,
            replication_factor: 1,
            consumer: BTreeMap::new(),
            producer: BTreeMap::new(),
            admin: BTreeMap::new(),
            consumer_property_file: None,
            producer_property_file: None,
            admin_property_file: None,
        }
    }

    fn common(&self) -> BTreeMap<String, String> {
        let mut p = BTreeMap::new();
        p.insert("bootstrap.servers".into(), self.bootstrap_servers.clone());
        if let Some(s) = &self.security_protocol {
            p.insert("security.protocol".into(), s.clone());
        }
        p
    }

    /// A consumer's properties: Lucille's (earliest, no auto commit of unprocessed messages,
    /// max poll interval, metadata age, a fetch wait of [`DEFAULT_FETCH_WAIT_MS`]), then `kafka.consumer { }`; a property file replaces
    /// them all (as in Lucille) but for the client id.
    pub fn consumer_properties(
        &self,
        client_id: &str,
        group_id: &str,
    ) -> Result<BTreeMap<String, String>, PropertyFileError> {
        let mut p = match &self.consumer_property_file {
            Some(f) => read_properties(f)?,
            None => {
                let mut p = self.common();
                p.insert("group.id".into(), group_id.to_string());
                p.insert("auto.offset.reset".into(), "earliest".into());
                p.insert(
                    "max.poll.interval.ms".into(),
                    (self.max_poll_interval_secs * 1000).to_string(),
                );
                p.insert(
                    "metadata.max.age.ms".into(),
                    self.metadata_max_age_ms.unwrap_or(30_000).to_string(),
                );
                // How long the broker may hold a fetch that finds no new message. Kafka
                // answers as soon as a message arrives, so this only sets how often an idle
                // consumer asks; an unpatched tansu 0.6.0 holds every such fetch for the whole
                // wait, which with librdkafka's 500 ms put up to half a second on each hop of a
                // document (source, dest, events). The suite's tansu is patched to answer as
                // Kafka does (scripts/services/tansu-0.6.0-storage-prompt-fetch.patch).
                p.insert(
                    "fetch.wait.max.ms".into(),
                    DEFAULT_FETCH_WAIT_MS.to_string(),
                );
                p.extend(self.consumer.clone());
                p
            }
        };
        p.insert("client.id".into(), client_id.to_string());
        Ok(p)
    }

    pub fn producer_properties(&self) -> Result<BTreeMap<String, String>, PropertyFileError> {
        match &self.producer_property_file {
            Some(f) => read_properties(f),
            None => {
                let mut p = self.common();
                p.insert(
                    "message.max.bytes".into(),
                    self.max_request_size.to_string(),
                );
                p.extend(self.producer.clone());
                Ok(p)
            }
        }
    }

    pub fn admin_properties(&self) -> Result<BTreeMap<String, String>, PropertyFileError> {
        match &self.admin_property_file {
            Some(f) => read_properties(f),
            None => {
                let mut p = self.common();
                p.extend(self.admin.clone());
                Ok(p)
            }
        }
    }
}

/// Why a Kafka client property file (`consumerPropertyFile`, ...) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PropertyFileError {
    #[error("cannot read the property file {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{} line {line}: expected key=value, got {text:?}", path.display())]
    Line {
        path: std::path::PathBuf,
        line: usize,
        text: String,
    },
}

/// A Java properties file: `key=value` or `key: value` lines, `#` / `!` comments.
pub fn read_properties(
    path: &std::path::Path,
) -> Result<BTreeMap<String, String>, PropertyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PropertyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some(at) = line.find(['=', ':']) else {
            return Err(PropertyFileError::Line {
                path: path.to_path_buf(),
                line: i + 1,
                text: line.to_string(),
            });
        };
        out.insert(
            line[..at].trim().to_string(),
            line[at + 1..].trim().to_string(),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block(v: Value) -> ComponentConfig {
        let Value::Object(m) = v else { panic!() };
        ComponentConfig::new(m, "kafka")
    }

    #[test]
    fn the_consumer_block_overrides_the_fetch_wait() {
        let s = KafkaSettings::from_config(&block(json!({
            "bootstrapServers": "h:9092", "consumer": {"fetch.wait.max.ms": "500"},
        })))
        .unwrap();
        assert_eq!(
            s.consumer_properties("c", "g").unwrap()["fetch.wait.max.ms"],
            "500"
        );
    }

    #[test]
    fn reads_lucille_keys_and_passes_client_properties_through() {
        let s = KafkaSettings::from_config(&block(json!({
            "bootstrapServers": "h:9092", "consumerGroupId": "g", "maxPollIntervalSecs": 60,
            "securityProtocol": "SASL_SSL", "topicPartitions": 3,
            "consumer": {"session": {"timeout": {"ms": 6000}}},
            "producer": {"linger.ms": "5"},
        })))
        .unwrap();
        assert_eq!(s.topic_partitions, 3);
        let c = s.consumer_properties("cid", "g").unwrap();
        assert_eq!(c["bootstrap.servers"], "h:9092");
        assert_eq!(c["group.id"], "g");
        assert_eq!(c["max.poll.interval.ms"], "60000");
        assert_eq!(c["security.protocol"], "SASL_SSL");
        assert_eq!(c["session.timeout.ms"], "6000");
        assert_eq!(c["client.id"], "cid");
        assert_eq!(c["fetch.wait.max.ms"], "100");
        let p = s.producer_properties().unwrap();
        assert_eq!(p["linger.ms"], "5");
        assert_eq!(p["message.max.bytes"], "250000000");
    }

    #[test]
    fn every_mistake_is_reported_with_its_key() {
        let e = KafkaSettings::from_config(&block(json!({
            "consumerGroupId": 3, "maxPollIntervalSecs": 0, "sourceTopic": "a b",
            "documentSerializer": "x.Y", "bogus": 1,
        })))
        .unwrap_err();
        let text: Vec<String> = e.iter().map(ToString::to_string).collect();
        let all = text.join("\n");
        for needle in [
            "kafka.bootstrapServers",
            "kafka.maxPollIntervalSecs",
            "kafka.sourceTopic",
            "kafka.documentSerializer",
            "kafka.bogus",
        ] {
            assert!(all.contains(needle), "{needle} missing in {all}");
        }
    }

    #[test]
    fn the_wait_for_the_broker_at_start_is_bounded_unless_zero() {
        let get = |v: Value| KafkaSettings::from_config(&block(v)).map(|s| s.connect_timeout);
        assert_eq!(
            get(json!({"bootstrapServers": "h:1"})).unwrap(),
            Some(std::time::Duration::from_secs(DEFAULT_CONNECT_TIMEOUT_SECS))
        );
        assert_eq!(
            get(json!({"bootstrapServers": "h:1", "connectTimeoutSecs": 5})).unwrap(),
            Some(std::time::Duration::from_secs(5))
        );
        assert_eq!(
            get(json!({"bootstrapServers": "h:1", "connectTimeoutSecs": 0})).unwrap(),
            None
        );
        let e = get(json!({"bootstrapServers": "h:1", "connectTimeoutSecs": -2})).unwrap_err();
        assert!(
            e[0].to_string().contains("kafka.connectTimeoutSecs"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn lucilles_own_json_serializers_are_accepted() {
        let s = KafkaSettings::from_config(&block(json!({
            "bootstrapServers": "h:9092",
            "documentSerializer": "com.kmwllc.lucille.message.KafkaDocumentSerializer",
            "documentDeserializer": "com.kmwllc.lucille.message.KafkaDocumentDeserializer",
        })));
        assert!(s.is_ok());
        let e = KafkaSettings::from_config(&block(json!({
            "bootstrapServers": "h:9092", "documentDeserializer": "com.acme.Avro",
        })))
        .unwrap_err();
        assert!(e[0].to_string().contains(
            "kafka.documentDeserializer: \"com.acme.Avro\": documents travel as their JSON"
        ));
    }

    #[test]
    fn a_property_file_replaces_the_generated_properties() {
        let dir = std::env::temp_dir().join(format!("lucille-kprops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("consumer.properties");
        std::fs::write(&f, "# c\nbootstrap.servers=x:1\nsasl.mechanism: PLAIN\n").unwrap();
        let s = KafkaSettings::from_config(&block(json!({
            "bootstrapServers": "h:9092",
            "consumerPropertyFile": f.to_string_lossy(),
        })))
        .unwrap();
        let c = s.consumer_properties("id", "g").unwrap();
        assert_eq!(c["bootstrap.servers"], "x:1");
        assert_eq!(c["sasl.mechanism"], "PLAIN");
        assert!(!c.contains_key("group.id"));
        let bad = KafkaSettings::from_config(&block(json!({
            "bootstrapServers": "h", "adminPropertyFile": dir.join("missing").to_string_lossy(),
        })));
        assert!(bad.unwrap_err()[0]
            .to_string()
            .contains("adminPropertyFile"));
    }
}
