//! Length: writes the number of values a field holds.
//!
//! Keys: `fieldMapping { source: dest }`. The count is 0 for a missing field, the list's
//! length for a multi-valued one and 1 otherwise (a null counts as one value, as in Lucille).
//! It is written as an integer, overwriting `dest`. It counts values, not characters: for text
//! length, see TruncateField or a script stage.

use super::field_util::check_mapping;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Length",
    spec: LengthOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes the number of values a field holds (0 when missing).
#[derive(Options)]
#[options(base = Spec::stage())]
struct LengthOptions {
    /// Each source field to the field its count is written to (overwritten).
    field_mapping: Vec<(String, String)>,
}

struct Length {
    pairs: Vec<(String, String)>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = LengthOptions::from_config(config)?;
    check_mapping(config, "fieldMapping", &o.field_mapping, false)?;
    Ok(Box::new(Length {
        pairs: o.field_mapping,
    }))
}

impl Stage for Length {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            let n = doc.len_of(source);
            doc.set_field(dest, n)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn counts_values() {
        let mut s = build_stage(json!({"class": "Length", "fieldMapping": {
            "empty": "empty_length", "customers": "customers_length", "singleton": "singleton_length",
            "list": "list_length", "nothing": "nothing_length", "id": "id_length"}}));
        let out = process(
            &mut s,
            json!({"id": "d", "singleton": "one value", "customers": ["Ace", "Home Depot", "Lowes"], "list": [], "nothing": null, "empty_length": "old"}),
        );
        assert_eq!(out.get("empty_length"), Some(&json!(0)));
        assert_eq!(out.get("customers_length"), Some(&json!(3)));
        assert_eq!(out.get("singleton_length"), Some(&json!(1)));
        assert_eq!(out.get("list_length"), Some(&json!(0)));
        assert_eq!(out.get("nothing_length"), Some(&json!(1)));
        assert_eq!(out.get("id_length"), Some(&json!(1)));
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "Length"})).contains("fieldMapping"));
        assert!(build_err(json!({"class": "Length", "fieldMapping": {}})).contains("at least one"));
        assert!(
            build_err(json!({"class": "Length", "fieldMapping": {"a": "id"}})).contains("reserved")
        );
        assert!(
            build_err(json!({"class": "Length", "fieldMapping": ["a"]})).contains("fieldMapping")
        );
    }
}
