//! Topic names, as Lucille's KafkaUtils: `{pipeline}_source` (publisher → workers, or
//! `kafka.sourceTopic`), `{pipeline}_dest` (workers → indexer), `{pipeline}_fail` (dead letter),
//! `{pipeline}_event_{runId}` (events → the run's publisher, one partition, or
//! `kafka.eventTopic`).

use super::config::KafkaSettings;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    pub pipeline: String,
    pub source: String,
    pub dest: String,
    pub fail: String,
    event_override: Option<String>,
}

impl Topics {
    pub fn new(pipeline: &str, settings: &KafkaSettings) -> Self {
        Topics {
            pipeline: pipeline.to_string(),
            source: settings
                .source_topic
                .clone()
                .unwrap_or_else(|| format!("{pipeline}_source")),
            dest: format!("{pipeline}_dest"),
            fail: format!("{pipeline}_fail"),
            event_override: settings.event_topic.clone(),
        }
    }

    pub fn event(&self, run_id: &str) -> String {
        self.event_override
            .clone()
            .unwrap_or_else(|| format!("{}_event_{run_id}", self.pipeline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lucille_names_and_overrides() {
        let mut s = KafkaSettings::new("h:1");
        let t = Topics::new("p1", &s);
        assert_eq!(
            (t.source.as_str(), t.dest.as_str(), t.fail.as_str()),
            ("p1_source", "p1_dest", "p1_fail")
        );
        assert_eq!(t.event("r9"), "p1_event_r9");
        s.source_topic = Some("in".into());
        s.event_topic = Some("ev".into());
        let t = Topics::new("p1", &s);
        assert_eq!((t.source.as_str(), t.event("r9").as_str()), ("in", "ev"));
    }
}
