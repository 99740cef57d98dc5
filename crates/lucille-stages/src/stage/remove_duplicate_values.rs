//! RemoveDuplicateValues: removes repeated values from multi-valued fields.
//!
//! Keys: `fieldMapping { source: target }` (the deduplicated values go to `target`, which may
//! be the source itself). The first occurrence of each value is kept, in order; values are
//! compared as JSON, so `1` and `"1"` are different values. A missing source is skipped.
//!
//! When the target is another field it is replaced (Lucille appends to an existing target),
//! and a single-valued source is copied to it unchanged (Lucille then writes nothing), so the
//! target always ends up holding the source's distinct values.

use super::field_util::check_mapping;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "RemoveDuplicateValues",
    spec: RemoveDuplicateValuesOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Removes repeated values from multi-valued fields, keeping the first of each.
#[derive(Options)]
#[options(base = Spec::stage())]
struct RemoveDuplicateValuesOptions {
    /// `{ source: target }`: the source's distinct values go to the target (replaced), which
    /// may be the source itself.
    field_mapping: Vec<(String, String)>,
}

struct RemoveDuplicateValues {
    pairs: Vec<(String, String)>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = RemoveDuplicateValuesOptions::from_config(config)?;
    check_mapping(config, "fieldMapping", &o.field_mapping, false)?;
    Ok(Box::new(RemoveDuplicateValues {
        pairs: o.field_mapping,
    }))
}

impl Stage for RemoveDuplicateValues {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, target) in &self.pairs {
            doc.remove_duplicate_values(source, Some(target))?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn dedups_in_place_and_to_targets() {
        let mut s = build_stage(
            json!({"class": "RemoveDuplicateValues", "fieldMapping": {"f1": "f1", "f2": "fish", "f3": "friends"}}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "f1": ["a", "b", "a", 1, "1", 1, {"k": 1}, {"k": 1}], "f2": ["x", "x"], "f3": "single", "fish": "old"}),
        );
        assert_eq!(out.get("f1"), Some(&json!(["a", "b", 1, "1", {"k": 1}])));
        assert_eq!(out.get("f2"), Some(&json!(["x", "x"])));
        assert_eq!(out.get("fish"), Some(&json!(["x"])));
        assert_eq!(out.get("friends"), Some(&json!("single")));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.to_json(), r#"{"id":"d"}"#);
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "RemoveDuplicateValues"})).contains("fieldMapping"));
        assert!(
            build_err(json!({"class": "RemoveDuplicateValues", "fieldMapping": {}}))
                .contains("at least one")
        );
        assert!(
            build_err(json!({"class": "RemoveDuplicateValues", "fieldMapping": {"a": "id"}}))
                .contains("reserved")
        );
    }
}
