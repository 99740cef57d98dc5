//! SetStaticValues: writes fixed values to fields.
//!
//! Keys: `staticValues { field: value }` (any JSON value; a list writes several values),
//! `updateMode` (overwrite, append, skip; default overwrite), `skipDocument` (also mark the
//! document skipped, so it bypasses the remaining stages but is still indexed).

use serde_json::{Map, Value};

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "SetStaticValues",
    spec: SetStaticValuesOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes fixed values to fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct SetStaticValuesOptions {
    /// `{ field: value }`: any JSON value; a list writes several values.
    static_values: Map<String, Value>,
    /// How a field that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
    /// Also mark the document skipped, so it bypasses the remaining stages but is still
    /// indexed.
    #[option(default)]
    skip_document: bool,
}

struct SetStaticValues {
    values: Vec<(String, Vec<Value>)>,
    mode: UpdateMode,
    skip_document: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = SetStaticValuesOptions::from_config(config)?;
    let mut values = Vec::new();
    let mut errors = Vec::new();
    for (field, value) in o.static_values {
        if let Err(e) = check_writable(config, "staticValues", &field) {
            errors.push(e);
            continue;
        }
        let vs = match value {
            Value::Array(items) => items,
            v => vec![v],
        };
        values.push((field, vs));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(SetStaticValues {
        values,
        mode: o.update_mode,
        skip_document: o.skip_document,
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
