//! Concatenate: fills a format string's `{field}` placeholders with field values and writes
//! the result to one field.
//!
//! Keys: `dest` (the field written), `formatString` (e.g. `"{city}, {state}"`), `defaultInputs
//! { field: text }` (used when a field is absent; optional), `updateMode` (overwrite, append,
//! skip; default overwrite).
//!
//! Each placeholder takes the field's first value as text (numbers and booleans as their JSON
//! text). A placeholder whose field is absent (or null, or an empty list) and has no default is
//! left in place, braces included, as Lucille does. A field holding an object fails the
//! document. `{}` and an unclosed `{` are literal text. Substituted values are not scanned
//! for placeholders again (Lucille's substitutor would expand a value that itself contains
//! `{other}`), and there is no escape syntax.

use std::collections::HashMap;

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Concatenate",
    spec: ConcatenateOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Fills a format string's `{field}` placeholders with field values and writes the result to
/// one field.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ConcatenateOptions {
    /// The field written.
    dest: String,
    /// The text with `{field}` placeholders, e.g. `"{city}, {state}"`; each takes the field's
    /// first value.
    format_string: String,
    /// Text for a placeholder whose field is absent (`{ field: text }`); without one, the
    /// placeholder is left in place.
    default_inputs: Option<Vec<(String, String)>>,
    /// How `dest` is written when it already has values.
    #[option(default)]
    update_mode: UpdateMode,
}

#[derive(Debug, PartialEq)]
enum Part {
    Text(String),
    Field(String),
}

/// Splits a format string into literal text and `{name}` placeholders.
fn parse_format(format: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = format;
    while let Some(open) = rest.find('{') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(['{', '}']) {
            Some(end) if end > 0 && after[end..].starts_with('}') => {
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                parts.push(Part::Field(after[..end].to_string()));
                rest = &after[end + 1..];
            }
            _ => {
                text.push('{');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    parts
}

struct Concatenate {
    dest: String,
    parts: Vec<Part>,
    defaults: HashMap<String, String>,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ConcatenateOptions::from_config(config)?;
    check_writable(config, "dest", &o.dest)?;
    let mode = o.update_mode;
    Ok(Box::new(Concatenate {
        dest: o.dest,
        parts: parse_format(&o.format_string),
        defaults: o.default_inputs.unwrap_or_default().into_iter().collect(),
        mode,
    }))
}

impl Stage for Concatenate {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Field(name) => match doc.get_string(name)? {
                    Some(v) => out.push_str(&v),
                    None => match self.defaults.get(name) {
                        Some(d) => out.push_str(d),
                        None => {
                            out.push('{');
                            out.push_str(name);
                            out.push('}');
                        }
                    },
                },
            }
        }
        doc.update(&self.dest, self.mode, [out])?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_format, Part};
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(extra: serde_json::Value) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "Concatenate", "dest": "dest", "formatString": "{city}, {state}, {country}"});
        if let (Some(c), Some(e)) = (cfg.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        build_stage(cfg)
    }

    #[test]
    fn fills_placeholders_with_first_values() {
        let mut s = stage(json!({}));
        let out = process(&mut s, json!({"id": "d", "country": "US"}));
        assert_eq!(out.get("dest"), Some(&json!("{city}, {state}, US")));
        let out = process(
            &mut s,
            json!({"id": "d", "country": ["US", "China"], "city": "San Francisco", "state": 5}),
        );
        assert_eq!(out.get("dest"), Some(&json!("San Francisco, 5, US")));
        let out = process(&mut s, json!({"id": "d", "city": null, "state": []}));
        assert_eq!(out.get("dest"), Some(&json!("{city}, {state}, {country}")));
    }

    #[test]
    fn defaults_and_update_mode() {
        let mut s = stage(json!({"defaultInputs": {"country": "U.S.", "state": "MA"}}));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.get("dest"), Some(&json!("{city}, MA, U.S.")));
        let out = process(
            &mut s,
            json!({"id": "d", "country": "Canada", "city": "Toronto"}),
        );
        assert_eq!(out.get("dest"), Some(&json!("Toronto, MA, Canada")));

        let mut s = stage(json!({"updateMode": "append"}));
        let out = process(
            &mut s,
            json!({"id": "d", "dest": "old", "city": "a", "state": "b", "country": "c"}),
        );
        assert_eq!(out.get("dest"), Some(&json!(["old", "a, b, c"])));
        let mut s = stage(json!({"updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "dest": "old"}));
        assert_eq!(out.get("dest"), Some(&json!("old")));
    }

    #[test]
    fn format_parsing_edge_cases() {
        assert_eq!(
            parse_format("{} {a} {{b} c{"),
            vec![
                Part::Text("{} ".into()),
                Part::Field("a".into()),
                Part::Text(" {".into()),
                Part::Field("b".into()),
                Part::Text(" c{".into()),
            ]
        );
        assert_eq!(
            parse_format("no fields"),
            vec![Part::Text("no fields".into())]
        );
        assert_eq!(
            parse_format("é{ü}"),
            vec![Part::Text("é".into()), Part::Field("ü".into())]
        );
    }

    #[test]
    fn object_value_fails() {
        let mut s = stage(json!({}));
        let err = process_err(&mut s, json!({"id": "d", "city": {"name": "x"}}));
        assert!(err.contains("\"city\"") && err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "Concatenate", "dest": "d"})).contains("formatString"));
        assert!(build_err(json!({"class": "Concatenate", "formatString": "x"})).contains("dest"));
        assert!(
            build_err(json!({"class": "Concatenate", "dest": "id", "formatString": "x"}))
                .contains("reserved")
        );
        assert!(build_err(
            json!({"class": "Concatenate", "dest": "d", "formatString": "x", "defaultInputs": ["a"]})
        )
        .contains("defaultInputs"));
        assert!(build_err(
            json!({"class": "Concatenate", "dest": "d", "formatString": "x", "updateMode": "no"})
        )
        .contains("updateMode"));
    }
}
