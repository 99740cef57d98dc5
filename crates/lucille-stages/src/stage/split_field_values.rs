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
use crate::config::{ComponentConfig, ConfigErrors, Kind, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "SplitFieldValues",
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    Spec::stage()
        .required("inputField", Kind::String)
        .required("outputField", Kind::String)
        .required("delimiter", Kind::String)
        .optional("trimWhitespace", Kind::Bool)
}

struct SplitFieldValues {
    input: String,
    output: String,
    delimiter: String,
    trim: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let input = config.require_string("inputField")?;
    if input.is_empty() {
        return Err(config
            .error("inputField", "field names must not be empty")
            .into());
    }
    let output = config.require_string("outputField")?;
    check_writable(config, "outputField", &output)?;
    let delimiter = config.require_string("delimiter")?;
    if delimiter.is_empty() {
        return Err(config.error("delimiter", "must not be empty").into());
    }
    Ok(Box::new(SplitFieldValues {
        input,
        output,
        delimiter,
        trim: config.bool_or("trimWhitespace", true)?,
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
