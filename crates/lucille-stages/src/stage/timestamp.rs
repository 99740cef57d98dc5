//! Timestamp: writes the current time to a field.
//!
//! Keys: `destField`. The value is an ISO-8601 UTC instant such as
//! `2024-05-01T12:30:45.123456Z`, as Java's `ISO_INSTANT` prints it: fractional seconds only
//! when non-zero, in groups of 3, 6 or 9 digits, and a `Z` suffix. The field is overwritten.

use chrono::{SecondsFormat, Utc};

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Timestamp",
    spec: TimestampOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes the current time, as an ISO-8601 UTC instant, to a field.
#[derive(Options)]
#[options(base = Spec::stage())]
struct TimestampOptions {
    /// The field written (overwritten).
    dest_field: String,
}

struct Timestamp {
    dest: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = TimestampOptions::from_config(config)?;
    check_writable(config, "destField", &o.dest_field)?;
    Ok(Box::new(Timestamp { dest: o.dest_field }))
}

fn now_iso() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

impl Stage for Timestamp {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        doc.set_field(&self.dest, now_iso())?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use chrono::{DateTime, Utc};
    use serde_json::json;

    #[test]
    fn writes_current_utc_instant() {
        let mut s = build_stage(json!({"class": "Timestamp", "destField": "timestamp"}));
        let before = Utc::now();
        let out = process(&mut s, json!({"id": "d", "timestamp": "old"}));
        let after = Utc::now();
        let text = out.get_str("timestamp").unwrap().to_string();
        assert!(text.ends_with('Z'), "{text}");
        assert_eq!(&text[10..11], "T", "{text}");
        let parsed: DateTime<Utc> = DateTime::parse_from_rfc3339(&text).unwrap().into();
        // The stamp is truncated to the printed precision, never rounded up.
        assert!(parsed <= after, "{text}");
        assert!(
            before - parsed < chrono::Duration::milliseconds(1),
            "{text}"
        );
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "Timestamp"})).contains("destField"));
        assert!(build_err(json!({"class": "Timestamp", "destField": "id"})).contains("reserved"));
        assert!(build_err(json!({"class": "Timestamp", "destField": ""})).contains("empty"));
    }
}
