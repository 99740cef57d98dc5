//! Base64Decode: decodes base64 text from one field into bytes in another.
//!
//! Keys: `inputField` and `outputField` (both required); `asText` (not in Lucille, default
//! false): write the decoded bytes as UTF-8 text instead of as bytes.
//!
//! Documents store bytes as standard, padded base64 text (as Lucille's JSON form of `byte[]`),
//! so by default the output is the canonical base64 of the decoded bytes, readable with
//! `Document::get_bytes`; the stage then validates and normalises the encoding. With `asText`
//! the output is the decoded text itself.
//!
//! Input may use the standard or the URL-safe alphabet, with or without padding, and may
//! contain whitespace or line breaks (MIME style). Every value of a multi-valued input is
//! decoded (the output keeps the input's shape). A missing or null input is skipped.
//!
//! Differences from Lucille: Lucille's decoder silently drops characters that are not base64;
//! here such input, a non-text value, or (with `asText`) bytes that are not UTF-8, fail the
//! document with a message naming the field. Lucille decodes only the first value.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::Value;

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Base64Decode",
    spec: Base64DecodeOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Decodes base64 text from one field into bytes (or text) in another.
#[derive(Options)]
#[options(base = Spec::stage())]
struct Base64DecodeOptions {
    /// The field holding base64 text (standard or URL-safe, padded or not).
    input_field: String,
    /// The field the decoded bytes are written to (as canonical base64 text).
    output_field: String,
    /// Write the decoded bytes as UTF-8 text instead of as bytes (not in Lucille).
    #[option(default)]
    as_text: bool,
}

struct Base64Decode {
    input: String,
    output: String,
    as_text: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = Base64DecodeOptions::from_config(config)?;
    Ok(Box::new(Base64Decode {
        input: o.input_field,
        output: o.output_field,
        as_text: o.as_text,
    }))
}

fn lenient(alphabet: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

/// Decodes standard or URL-safe base64, padded or not, ignoring whitespace.
pub(crate) fn decode_lenient(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    match lenient(&alphabet::STANDARD).decode(&compact) {
        Ok(bytes) => Ok(bytes),
        Err(first) => lenient(&alphabet::URL_SAFE)
            .decode(&compact)
            .map_err(|_| first),
    }
}

impl Base64Decode {
    fn decode_one(&self, doc: &Document, value: &Value) -> Result<Value, StageFailure> {
        let Value::String(text) = value else {
            return Err(StageFailure::msg(format!(
                "field {:?} of document {:?} must hold base64 text, found {value}",
                self.input,
                doc.id()
            )));
        };
        let bytes = decode_lenient(text).map_err(|e| {
            StageFailure::msg(format!(
                "field {:?} of document {:?} is not valid base64: {e}",
                self.input,
                doc.id()
            ))
        })?;
        if self.as_text {
            String::from_utf8(bytes).map(Value::String).map_err(|_| {
                StageFailure::msg(format!(
                    "field {:?} of document {:?} decodes to bytes that are not UTF-8 text",
                    self.input,
                    doc.id()
                ))
            })
        } else {
            Ok(Value::String(STANDARD.encode(bytes)))
        }
    }
}

impl Stage for Base64Decode {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let decoded = match doc.get(&self.input) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(items)) => Value::Array(
                items
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(|v| self.decode_one(doc, v))
                    .collect::<Result<_, _>>()?,
            ),
            Some(v) => self.decode_one(doc, v)?,
        };
        doc.set_field(&self.output, decoded)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(as_text: bool) -> Box<dyn crate::stage::Stage> {
        build_stage(json!({"class": "Base64Decode", "inputField": "input",
            "outputField": "bytes", "asText": as_text}))
    }

    #[test]
    fn decodes_to_bytes() {
        let mut s = stage(false);
        let out = process(&mut s, json!({"id": "d", "input": "SGVsbG8gd29ybGQu"}));
        assert_eq!(
            out.get_bytes("bytes").unwrap().unwrap(),
            b"Hello world.".to_vec()
        );
        // Unpadded, URL-safe and wrapped input is normalised to standard padded base64.
        let out = process(&mut s, json!({"id": "d", "input": "SGVsbG8\n-_8"}));
        assert_eq!(out.get("bytes"), Some(&json!("SGVsbG8+/w==")));
        assert_eq!(
            out.get_bytes("bytes").unwrap().unwrap(),
            vec![b'H', b'e', b'l', b'l', b'o', b'>', 0xff]
        );
    }

    #[test]
    fn as_text_and_multiple_values() {
        let mut s = stage(true);
        let out = process(
            &mut s,
            json!({"id": "d", "input": ["SGVsbG8gd29ybGQu", "w6k="]}),
        );
        assert_eq!(out.get("bytes"), Some(&json!(["Hello world.", "é"])));
        let err = process_err(&mut s, json!({"id": "d", "input": "//8="}));
        assert!(err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn missing_and_bad_values() {
        let mut s = stage(false);
        let out = process(&mut s, json!({"id": "d", "other": "x"}));
        assert!(!out.has("bytes"));
        let out = process(&mut s, json!({"id": "d", "input": null}));
        assert!(!out.has("bytes"));
        let err = process_err(&mut s, json!({"id": "d", "input": "not base64!"}));
        assert!(
            err.contains("not valid base64") && err.contains("input"),
            "{err}"
        );
        let err = process_err(&mut s, json!({"id": "d", "input": 12}));
        assert!(err.contains("base64 text"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "Base64Decode", "inputField": "a"})).contains("outputField")
        );
        assert!(
            build_err(json!({"class": "Base64Decode", "outputField": "a"})).contains("inputField")
        );
        assert!(build_err(
            json!({"class": "Base64Decode", "inputField": "a", "outputField": "b", "asText": "x"})
        )
        .contains("asText"));
    }
}
