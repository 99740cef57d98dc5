//! DeleteFields: removes fields.
//!
//! Keys: `fields` (the names to remove; a list, or a single name). Missing fields are ignored.
//! Reserved fields (`id`, `run_id`, ...) cannot be removed: naming one is a config error.

use super::field_util::field_list;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Kind, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "DeleteFields",
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    Spec::stage().required("fields", Kind::StringOrList)
}

struct DeleteFields {
    fields: Vec<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    Ok(Box::new(DeleteFields {
        fields: field_list(config, "fields", true)?,
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
