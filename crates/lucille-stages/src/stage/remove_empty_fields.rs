//! RemoveEmptyFields: removes every field that holds nothing.
//!
//! No keys. A field is empty if it is null, the empty string, an empty list, or a list whose
//! values are all null or empty strings. Whitespace-only text, numbers, booleans and objects
//! (even `{}`) are values and are kept. Reserved fields are never touched.
//!
//! Lucille judges a field by its first value only, so `["", "x"]` is removed there and kept
//! here; a list is only removed when nothing in it is a value.

use serde_json::Value;

use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "RemoveEmptyFields",
    spec: RemoveEmptyFieldsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Removes every field that holds nothing: null, "", an empty list, or a list of only those.
#[derive(Options)]
#[options(base = Spec::stage())]
struct RemoveEmptyFieldsOptions {}

struct RemoveEmptyFields;

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    RemoveEmptyFieldsOptions::from_config(config)?;
    Ok(Box::new(RemoveEmptyFields))
}

fn is_empty_scalar(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Array(items) => items.iter().all(is_empty_scalar),
        other => is_empty_scalar(other),
    }
}

impl Stage for RemoveEmptyFields {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let empty: Vec<String> = doc
            .fields()
            .filter(|(_, v)| is_empty(v))
            .map(|(k, _)| k.to_string())
            .collect();
        for field in empty {
            doc.remove_field(&field)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn removes_only_empty_fields() {
        let mut s = build_stage(json!({"class": "RemoveEmptyFields"}));
        let out = process(
            &mut s,
            json!({"id": "d", "foo": "bar", "bar": "", "n": null, "l": [], "le": ["", null],
                   "mixed": ["", "x"], "ws": " ", "zero": 0, "f": false, "o": {}, "lo": [{}]}),
        );
        assert_eq!(
            out.to_json(),
            r#"{"id":"d","foo":"bar","mixed":["","x"],"ws":" ","zero":0,"f":false,"o":{},"lo":[{}]}"#
        );
        let out = process(&mut s, json!({"id": "d", "run_id": "r"}));
        assert_eq!(out.to_json(), r#"{"id":"d","run_id":"r"}"#);
    }

    #[test]
    fn takes_no_keys() {
        assert!(
            build_err(json!({"class": "RemoveEmptyFields", "fields": ["a"]}))
                .contains("unknown key")
        );
    }
}
