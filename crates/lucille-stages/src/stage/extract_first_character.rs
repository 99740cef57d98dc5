//! ExtractFirstCharacter: writes the first character of a field's value, or a replacement
//! when that character is not a letter.
//!
//! Keys: `fieldMapping { source: dest }`, `replacement` (written when the first character is
//! not a letter; default `"nonalpha"`; `"SKIP"` writes nothing then). The destination is
//! overwritten.
//!
//! The first value is read as text (numbers and booleans as their JSON text, so `42` gives the
//! replacement); a missing, null, empty or whitespace-only value is skipped, and an object
//! fails the document. The first character is taken as is (leading whitespace is not skipped,
//! as in Lucille). "Letter" is Unicode alphabetic, so `é` or `中` is kept; digits are not
//! letters (Lucille's documentation says "alphanumeric" but its code tests for letters).
//! A character is a Unicode scalar value, where Java takes one UTF-16 unit.

use super::field_util::check_mapping;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ExtractFirstCharacter",
    spec: ExtractFirstCharacterOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes the first character of a field's value, or a replacement when it is not a letter.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ExtractFirstCharacterOptions {
    /// Each source field to the field its first character is written to (overwritten).
    field_mapping: Vec<(String, String)>,
    /// Written when the first character is not a letter; `SKIP` writes nothing then.
    #[option(default = "nonalpha")]
    replacement: String,
}

struct ExtractFirstCharacter {
    pairs: Vec<(String, String)>,
    /// `None` for `SKIP`.
    replacement: Option<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ExtractFirstCharacterOptions::from_config(config)?;
    check_mapping(config, "fieldMapping", &o.field_mapping, false)?;
    Ok(Box::new(ExtractFirstCharacter {
        pairs: o.field_mapping,
        replacement: (o.replacement != "SKIP").then_some(o.replacement),
    }))
}

impl Stage for ExtractFirstCharacter {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            let Some(value) = doc.get_string(source)? else {
                continue;
            };
            if value.trim().is_empty() {
                continue;
            }
            let Some(first) = value.chars().next() else {
                continue;
            };
            if first.is_alphabetic() {
                doc.set_field(dest, first.to_string())?;
            } else if let Some(r) = &self.replacement {
                doc.set_field(dest, r.as_str())?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(replacement: Option<&str>) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "ExtractFirstCharacter", "fieldMapping": {"in1": "out1", "in2": "out2", "in3": "out3"}});
        if let Some(r) = replacement {
            cfg["replacement"] = json!(r);
        }
        build_stage(cfg)
    }

    #[test]
    fn extracts_letters_or_default_replacement() {
        let mut s = stage(None);
        let out = process(&mut s, json!({"id": "d", "in1": "this is an input"}));
        assert_eq!(out.get("out1"), Some(&json!("t")));
        assert!(!out.has("out2"));
        let out = process(
            &mut s,
            json!({"id": "d", "in1": "1234567", "in2": ["Hello", "x"], "in3": "   "}),
        );
        assert_eq!(out.get("out1"), Some(&json!("nonalpha")));
        assert_eq!(out.get("out2"), Some(&json!("H")));
        assert!(!out.has("out3"));
        let out = process(
            &mut s,
            json!({"id": "d", "in1": "élan", "in2": "😀 hi", "in3": 42, "out1": "old"}),
        );
        assert_eq!(out.get("out1"), Some(&json!("é")));
        assert_eq!(out.get("out2"), Some(&json!("nonalpha")));
        assert_eq!(out.get("out3"), Some(&json!("nonalpha")));
        let out = process(
            &mut s,
            json!({"id": "d", "in1": null, "in2": [], "in3": ""}),
        );
        assert_eq!(out.to_json(), r#"{"id":"d","in1":null,"in2":[],"in3":""}"#);
    }

    #[test]
    fn custom_and_skip_replacement() {
        let mut s = stage(Some("not a letter"));
        let out = process(&mut s, json!({"id": "d", "in1": "12345", "in2": "valid"}));
        assert_eq!(out.get("out1"), Some(&json!("not a letter")));
        assert_eq!(out.get("out2"), Some(&json!("v")));
        let mut s = stage(Some("SKIP"));
        let out = process(
            &mut s,
            json!({"id": "d", "in1": "testing", "in2": "500 bottles"}),
        );
        assert_eq!(out.get("out1"), Some(&json!("t")));
        assert!(!out.has("out2"));
    }

    #[test]
    fn object_value_fails() {
        let err = process_err(&mut stage(None), json!({"id": "d", "in1": {"a": "b"}}));
        assert!(err.contains("\"in1\"") && err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "ExtractFirstCharacter"})).contains("fieldMapping"));
        assert!(
            build_err(json!({"class": "ExtractFirstCharacter", "fieldMapping": {}}))
                .contains("at least one")
        );
        assert!(
            build_err(json!({"class": "ExtractFirstCharacter", "fieldMapping": {"a": "id"}}))
                .contains("reserved")
        );
        assert!(build_err(
            json!({"class": "ExtractFirstCharacter", "fieldMapping": {"a": "b"}, "replacement": ["x"]})
        )
        .contains("replacement"));
    }
}
