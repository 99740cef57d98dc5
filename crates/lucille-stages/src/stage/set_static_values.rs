//! SetStaticValues: writes fixed values to fields.
//!
//! Keys: `staticValues { field: value }` (any JSON value; a list writes several values),
//! `updateMode` (overwrite, append, skip; default overwrite), `skipDocument` (also mark the
//! document skipped, so it bypasses the remaining stages but is still indexed).

use serde_json::Value;

use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Kind, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "SetStaticValues",
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    Spec::stage()
        .required("staticValues", Kind::Object)
        .optional("updateMode", Kind::OneOf(&["overwrite", "append", "skip"]))
        .optional("skipDocument", Kind::Bool)
}

struct SetStaticValues {
    values: Vec<(String, Vec<Value>)>,
    mode: UpdateMode,
    skip_document: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let map = config
        .object("staticValues")?
        .ok_or_else(|| config.error("staticValues", "missing required key \"staticValues\""))?;
    let mut values = Vec::new();
    for (field, value) in map {
        if crate::document::is_reserved(field) || field.is_empty() {
            return Err(config
                .error(
                    "staticValues",
                    format!("{field:?} cannot be written: it is reserved or empty"),
                )
                .into());
        }
        let vs = match value {
            Value::Array(items) => items.clone(),
            v => vec![v.clone()],
        };
        values.push((field.clone(), vs));
    }
    Ok(Box::new(SetStaticValues {
        values,
        mode: config.update_mode("updateMode")?,
        skip_document: config.bool_or("skipDocument", false)?,
    }))
}

impl Stage for SetStaticValues {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (field, values) in &self.values {
            doc.update(field, self.mode, values.iter().cloned())?;
        }
        if self.skip_document {
            doc.set_skipped(true);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn sets_values_with_modes_and_skip() {
        let mut s = build_stage(
            json!({"class": "SetStaticValues", "staticValues": {"a": 1, "b": ["x", "y"], "c": {"k": true}}}),
        );
        let out = process(&mut s, json!({"id": "d", "a": 0}));
        assert_eq!(
            out.to_json(),
            r#"{"id":"d","a":1,"b":["x","y"],"c":{"k":true}}"#
        );
        let mut s = build_stage(
            json!({"class": "SetStaticValues", "staticValues": {"a": 1}, "updateMode": "skip", "skipDocument": true}),
        );
        let out = process(&mut s, json!({"id": "d", "a": 0}));
        assert_eq!(out.get("a"), Some(&json!(0)));
        assert!(out.is_skipped());
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "SetStaticValues"})).contains("staticValues"));
        assert!(
            build_err(json!({"class": "SetStaticValues", "staticValues": {"id": 1}}))
                .contains("reserved")
        );
        assert!(
            build_err(json!({"class": "SetStaticValues", "staticValues": 3}))
                .contains("must be an object")
        );
    }
}
