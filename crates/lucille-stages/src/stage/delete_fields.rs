//! DeleteFields: removes fields.
//!
//! Keys: `fields` (the names to remove; a list, or a single name). Missing fields are ignored.
//! Reserved fields (`id`, `run_id`, ...) cannot be removed: naming one is a config error.

use super::field_util::check_fields;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "DeleteFields",
    spec: DeleteFieldsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Removes fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct DeleteFieldsOptions {
    /// The fields removed (missing ones are ignored; reserved ones cannot be named).
    fields: Strings,
}

struct DeleteFields {
    fields: Vec<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = DeleteFieldsOptions::from_config(config)?;
    check_fields(config, "fields", &o.fields, true)?;
    Ok(Box::new(DeleteFields {
        fields: o.fields.into(),
    }))
}

impl Stage for DeleteFields {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for field in &self.fields {
            doc.remove_field(field)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn deletes_listed_fields() {
        let mut s = build_stage(json!({"class": "DeleteFields", "fields": ["a", "c", "missing"]}));
        let out = process(&mut s, json!({"id": "d", "a": 1, "b": [2], "c": null}));
        assert_eq!(out.to_json(), r#"{"id":"d","b":[2]}"#);
        let mut s = build_stage(json!({"class": "DeleteFields", "fields": "b"}));
        let out = process(&mut s, json!({"id": "d", "a": 1, "b": [2]}));
        assert_eq!(out.to_json(), r#"{"id":"d","a":1}"#);
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "DeleteFields"})).contains("fields"));
        assert!(build_err(json!({"class": "DeleteFields", "fields": []})).contains("at least one"));
        let err = build_err(json!({"class": "DeleteFields", "fields": ["a", "id"]}));
        assert!(err.contains("fields") && err.contains("reserved"), "{err}");
        assert!(build_err(json!({"class": "DeleteFields", "fields": [""]})).contains("empty"));
        assert!(build_err(json!({"class": "DeleteFields", "fields": {"a": 1}})).contains("fields"));
    }
}
