//! ParseFloats: parses a JSON array of numbers held as text (`"[1.5, 2, 3]"`) into a
//! multi-valued field of numbers.
//!
//! Keys: `field` (required: the field holding the text), `dest` (optional: where to write the
//! numbers; default `field` itself, which is then replaced).
//!
//! The destination is replaced by the numbers, as 32-bit floats written in their shortest form
//! (Lucille's `Float`), and is always a list, even of one number. An empty array removes the
//! destination. Only the first value of `field` is read; a missing or null field is skipped.
//!
//! Difference from Lucille: text that is not a JSON array of numbers (or a non-text value)
//! fails the document with a message naming the field; Lucille logs a warning and leaves the
//! document unchanged.

use serde_json::Value;

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ParseFloats",
    spec: ParseFloatsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Parses a JSON array of numbers held as text (`"[1.5, 2, 3]"`) into a list of numbers.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ParseFloatsOptions {
    /// The field holding the array's text.
    field: String,
    /// Where the numbers go (default: the field itself, replaced).
    dest: Option<String>,
}

struct ParseFloats {
    field: String,
    dest: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ParseFloatsOptions::from_config(config)?;
    let dest = o.dest.unwrap_or_else(|| o.field.clone());
    Ok(Box::new(ParseFloats {
        field: o.field,
        dest,
    }))
}

impl Stage for ParseFloats {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let text = match doc.get_first(&self.field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(StageFailure::msg(format!(
                    "field {:?} of document {:?} must hold a JSON array of numbers as text, found {other}",
                    self.field,
                    doc.id()
                )))
            }
        };
        let bad = |why: String| {
            StageFailure::msg(format!(
                "field {:?} of document {:?} is not a JSON array of numbers ({why})",
                self.field,
                doc.id()
            ))
        };
        let numbers: Vec<f64> = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let mut floats = Vec::with_capacity(numbers.len());
        for n in numbers {
            let f = n as f32;
            if !f.is_finite() {
                return Err(bad(format!("{n} does not fit a 32-bit float")));
            }
            floats.push(f);
        }
        if floats.is_empty() {
            doc.remove_field(&self.dest)?;
        } else {
            doc.set_vector(&self.dest, &floats)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    #[test]
    fn parses_in_place_and_into_dest() {
        let mut s = build_stage(json!({"class": "ParseFloats", "field": "source"}));
        let out = process(&mut s, json!({"id": "d", "source": "[1, 2, 3]"}));
        assert_eq!(out.get("source"), Some(&json!([1.0, 2.0, 3.0])));
        let out = process(&mut s, json!({"id": "d", "source": "[1.2, 2.5, 3.1]"}));
        assert_eq!(out.get("source"), Some(&json!([1.2, 2.5, 3.1])));
        assert_eq!(
            out.get_vector("source").unwrap().unwrap(),
            vec![1.2f32, 2.5, 3.1]
        );
        let out = process(&mut s, json!({"id": "d", "source": "[7]"}));
        assert_eq!(out.get("source"), Some(&json!([7.0])), "always a list");
        let out = process(&mut s, json!({"id": "d", "source": "[]"}));
        assert!(!out.has("source"), "an empty array removes the field");

        let mut s = build_stage(json!({"class": "ParseFloats", "field": "source", "dest": "dest"}));
        let out = process(
            &mut s,
            json!({"id": "d", "source": "[1, 2, 3]", "dest": "old"}),
        );
        assert_eq!(out.get("dest"), Some(&json!([1.0, 2.0, 3.0])));
        assert_eq!(out.get("source"), Some(&json!("[1, 2, 3]")));
    }

    #[test]
    fn missing_and_bad_values() {
        let mut s = build_stage(json!({"class": "ParseFloats", "field": "source"}));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.field_count(), 0);
        for bad in ["not a float", "[1, \"a\", 3]", "{\"a\": 1}", "[1e300]"] {
            let err = process_err(&mut s, json!({"id": "d", "source": bad}));
            assert!(
                err.contains("source") && err.contains("not a JSON array"),
                "{err}"
            );
        }
        let err = process_err(&mut s, json!({"id": "d", "source": 5}));
        assert!(err.contains("as text"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "ParseFloats"})).contains("field"));
        assert!(
            build_err(json!({"class": "ParseFloats", "field": "a", "dest": [1]})).contains("dest")
        );
    }
}
