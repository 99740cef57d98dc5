//! DropValues: removes listed values from fields.
//!
//! Keys: `source` (the fields; a list, or a single name), `values` (the exact values to
//! remove). A value matches when its text equals one of `values` exactly (numbers and booleans
//! by their JSON text; a value that merely contains a listed one is kept). Nulls and objects
//! never match. A field left with no values is removed; a missing field is skipped.
//!
//! Unlike Lucille, the remaining values keep their JSON types and the field keeps its shape (a
//! single value that survives stays single); Lucille rewrites them as a list of strings.

use std::collections::HashSet;

use serde_json::Value;

use super::field_util::check_fields;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "DropValues",
    spec: DropValuesOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Removes listed values from fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct DropValuesOptions {
    /// The fields values are removed from (a field left with none is removed).
    source: Strings,
    /// The exact values removed (numbers and booleans match by their JSON text).
    values: Strings,
}

struct DropValues {
    fields: Vec<String>,
    values: HashSet<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = DropValuesOptions::from_config(config)?;
    check_fields(config, "source", &o.source, true)?;
    Ok(Box::new(DropValues {
        fields: o.source.into(),
        values: o.values.0.into_iter().collect(),
    }))
}

impl DropValues {
    fn matches(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => self.values.contains(s),
            Value::Number(n) => self.values.contains(&n.to_string()),
            Value::Bool(b) => self.values.contains(if *b { "true" } else { "false" }),
            _ => false,
        }
    }
}

impl Stage for DropValues {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for field in &self.fields {
            match doc.get(field) {
                None => {}
                Some(Value::Array(items)) => {
                    if !items.iter().any(|v| self.matches(v)) {
                        continue;
                    }
                    let kept: Vec<Value> =
                        items.iter().filter(|v| !self.matches(v)).cloned().collect();
                    if kept.is_empty() {
                        doc.remove_field(field)?;
                    } else {
                        doc.set_field(field, Value::Array(kept))?;
                    }
                }
                Some(v) if self.matches(v) => {
                    doc.remove_field(field)?;
                }
                Some(_) => {}
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn drops_exact_matches_only() {
        let mut s = build_stage(
            json!({"class": "DropValues", "source": ["a", "b", "c", "missing"], "values": ["bad", "3", "true"]}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "a": ["good", "bad", "badly", 3, 3.5, true, null, {"x": "bad"}], "b": "bad", "c": ["bad", 3], "e": "bad"}),
        );
        assert_eq!(
            out.to_json(),
            r#"{"id":"d","a":["good","badly",3.5,null,{"x":"bad"}],"e":"bad"}"#
        );
        let out = process(&mut s, json!({"id": "d", "b": "fine", "c": ["x"]}));
        assert_eq!(out.to_json(), r#"{"id":"d","b":"fine","c":["x"]}"#);
        let mut s = build_stage(json!({"class": "DropValues", "source": "a", "values": "x"}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "a": ["x", "y"]})).get("a"),
            Some(&json!(["y"]))
        );
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "DropValues", "values": ["x"]})).contains("source"));
        assert!(build_err(json!({"class": "DropValues", "source": ["a"]})).contains("values"));
        assert!(
            build_err(json!({"class": "DropValues", "source": [], "values": ["x"]}))
                .contains("at least one")
        );
        assert!(
            build_err(json!({"class": "DropValues", "source": ["id"], "values": ["x"]}))
                .contains("reserved")
        );
        assert!(
            build_err(json!({"class": "DropValues", "source": ["a"], "values": {"x": 1}}))
                .contains("values")
        );
    }
}
