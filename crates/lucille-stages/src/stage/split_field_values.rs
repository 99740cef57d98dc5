//! SplitFieldValues: splits each value of a field on a delimiter into separate values.
//!
//! Keys: `inputField`, `outputField` (may be the same field: it is then replaced by the
//! pieces), `delimiter` (literal text, not empty), `trimWhitespace` (trim each piece; default
//! true, where Lucille requires the key).
//!
//! Every value is read as text (numbers and booleans as their JSON text; nulls are skipped; an
//! object fails the document). The output is always a list; when it is a different field that
//! already exists, the pieces are appended to it, as Lucille does. Differences from Lucille:
//! the delimiter is matched literally (Lucille hands it to Java's regex split, so `|` or `.`
//! do not do what they say), and empty pieces (after trimming) are dropped rather than kept,
//! so `"a,,b"` gives `["a", "b"]`. If no piece is left and the output is the input field, the
//! field is removed.

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "SplitFieldValues",
    spec: SplitFieldValuesOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Splits each value of a field on a delimiter into separate values.
#[derive(Options)]
#[options(base = Spec::stage())]
struct SplitFieldValuesOptions {
    /// The field read.
    input_field: String,
    /// The field the pieces go to (may be the input field, which is then replaced).
    output_field: String,
    /// The text split on, matched literally (not empty).
    delimiter: String,
    /// Trim whitespace from each piece.
    #[option(default = true)]
    trim_whitespace: bool,
}

struct SplitFieldValues {
    input: String,
    output: String,
    delimiter: String,
    trim: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = SplitFieldValuesOptions::from_config(config)?;
    let mut errors = Vec::new();
    if o.input_field.is_empty() {
        errors.push(config.error("inputField", "field names must not be empty"));
    }
    if let Err(e) = check_writable(config, "outputField", &o.output_field) {
        errors.push(e);
    }
    if o.delimiter.is_empty() {
        errors.push(config.error("delimiter", "must not be empty"));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(SplitFieldValues {
        input: o.input_field,
        output: o.output_field,
        delimiter: o.delimiter,
        trim: o.trim_whitespace,
    }))
}

impl Stage for SplitFieldValues {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.has(&self.input) {
            return Ok(None);
        }
        let values = doc.get_string_list(&self.input)?;
        let mut pieces = Vec::new();
        for value in &values {
            for piece in value.split(self.delimiter.as_str()) {
                let piece = if self.trim { piece.trim() } else { piece };
                if !piece.is_empty() {
                    pieces.push(piece.to_string());
                }
            }
        }
        if self.input == self.output {
            doc.remove_field(&self.output)?;
        }
        for piece in pieces {
            doc.add_to_field(&self.output, piece)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(output: &str, delimiter: &str, trim: Option<bool>) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "SplitFieldValues", "inputField": "data", "outputField": output, "delimiter": delimiter});
        if let Some(t) = trim {
            cfg["trimWhitespace"] = json!(t);
        }
        build_stage(cfg)
    }

    #[test]
    fn splits_in_place_and_trims() {
        let mut s = stage("data", ",", Some(true));
        let out = process(&mut s, json!({"id": "d", "data": "this,that, the ,other"}));
        assert_eq!(
            out.get("data"),
            Some(&json!(["this", "that", "the", "other"]))
        );
        let out = process(
            &mut s,
            json!({"id": "d", "data": ["this,that", "value2", "value3, value4", 5, null]}),
        );
        assert_eq!(
            out.get("data"),
            Some(&json!(["this", "that", "value2", "value3", "value4", "5"]))
        );
    }

    #[test]
    fn trim_off_and_default_on() {
        let mut s = stage("out", ",", Some(false));
        let out = process(&mut s, json!({"id": "d", "data": "a, b ,c"}));
        assert_eq!(out.get("out"), Some(&json!(["a", " b ", "c"])));
        assert_eq!(out.get("data"), Some(&json!("a, b ,c")));
        let mut s = stage("out", ",", None);
        let out = process(&mut s, json!({"id": "d", "data": "a, b ,c"}));
        assert_eq!(out.get("out"), Some(&json!(["a", "b", "c"])));
    }

    #[test]
    fn literal_delimiter_drops_empty_pieces_and_appends_to_output() {
        let mut s = stage("out", "|", None);
        let out = process(
            &mut s,
            json!({"id": "d", "data": "a||b| |c|", "out": "old"}),
        );
        assert_eq!(out.get("out"), Some(&json!(["old", "a", "b", "c"])));
        let mut s = stage("data", " :: ", None);
        let out = process(&mut s, json!({"id": "d", "data": "x :: y"}));
        assert_eq!(out.get("data"), Some(&json!(["x", "y"])));
        let mut s = stage("data", ",", None);
        let out = process(&mut s, json!({"id": "d", "data": " , "}));
        assert!(!out.has("data"));
    }

    #[test]
    fn missing_field_and_bad_values() {
        let mut s = stage("out", ",", None);
        let out = process(&mut s, json!({"id": "d"}));
        assert!(!out.has("out"));
        let err = process_err(&mut s, json!({"id": "d", "data": {"a": "b"}}));
        assert!(err.contains("\"data\""), "{err}");
    }

    #[test]
    fn bad_configs() {
        let base = json!({"class": "SplitFieldValues", "inputField": "a", "outputField": "b", "delimiter": ","});
        for key in ["inputField", "outputField", "delimiter"] {
            let mut cfg = base.clone();
            cfg.as_object_mut().map(|m| m.remove(key));
            assert!(build_err(cfg).contains(key), "{key}");
        }
        let mut cfg = base.clone();
        cfg["delimiter"] = json!("");
        assert!(build_err(cfg).contains("delimiter"));
        let mut cfg = base.clone();
        cfg["outputField"] = json!("id");
        assert!(build_err(cfg).contains("reserved"));
        let mut cfg = base;
        cfg["trimWhitespace"] = json!("perhaps");
        assert!(build_err(cfg).contains("trimWhitespace"));
    }
}
