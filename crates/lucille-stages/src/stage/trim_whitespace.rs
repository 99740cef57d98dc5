//! TrimWhitespace: removes leading and trailing whitespace from every value of some fields.
//!
//! Keys: `fields` (a list, or a single name). Missing fields are skipped.
//!
//! Only strings are trimmed; numbers, booleans and nulls are kept as they are (Lucille rewrites
//! every value as a string), and a field's shape is kept (a one-element list stays a list). An
//! object value fails the document. Whitespace is Unicode whitespace (so a no-break space is
//! trimmed too), where Java's `trim` removes only ASCII control characters and spaces.

use super::field_util::{check_fields, map_text_field};
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "TrimWhitespace",
    spec: TrimWhitespaceOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Removes leading and trailing whitespace from every value of some fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct TrimWhitespaceOptions {
    /// The fields trimmed.
    fields: Strings,
}

struct TrimWhitespace {
    fields: Vec<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = TrimWhitespaceOptions::from_config(config)?;
    check_fields(config, "fields", &o.fields, true)?;
    Ok(Box::new(TrimWhitespace {
        fields: o.fields.into(),
    }))
}

impl Stage for TrimWhitespace {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for field in &self.fields {
            if let Some(value) = map_text_field(doc, field, |s| s.trim().to_string())? {
                doc.set_field(field, value)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    #[test]
    fn trims_strings_keeping_shape_and_other_values() {
        let mut s =
            build_stage(json!({"class": "TrimWhitespace", "fields": ["a", "b", "c", "missing"]}));
        let out = process(
            &mut s,
            json!({"id": "d", "a": "  x y \t\n", "b": [" one", 2, null, "\u{a0}two\u{3000}"], "c": [" z "], "e": " keep "}),
        );
        assert_eq!(
            out.to_json(),
            r#"{"id":"d","a":"x y","b":["one",2,null,"two"],"c":["z"],"e":" keep "}"#
        );
        let mut s = build_stage(json!({"class": "TrimWhitespace", "fields": "a"}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "a": " x "})).get("a"),
            Some(&json!("x"))
        );
    }

    #[test]
    fn object_value_fails() {
        let mut s = build_stage(json!({"class": "TrimWhitespace", "fields": ["a"]}));
        let err = process_err(&mut s, json!({"id": "d", "a": {"k": " v "}}));
        assert!(err.contains("\"a\"") && err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "TrimWhitespace"})).contains("fields"));
        assert!(
            build_err(json!({"class": "TrimWhitespace", "fields": []})).contains("at least one")
        );
        assert!(
            build_err(json!({"class": "TrimWhitespace", "fields": ["id"]})).contains("reserved")
        );
    }
}
