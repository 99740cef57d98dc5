//! TruncateField: cuts text values down to at most `maxSize` characters.
//!
//! Keys: `source`, `maxSize` (a non-negative integer), `destination` (optional; the source is
//! changed in place without it; an existing destination is overwritten).
//!
//! Characters are Unicode scalar values, so a character is never split (Java counts UTF-16
//! units and can cut a surrogate pair). Every value of a multi-valued field is truncated and
//! the field's shape is kept (Lucille reads only the first value and writes a single one).
//! Numbers, booleans and nulls are copied unchanged rather than turned into truncated text; an
//! object value fails the document. A missing source is skipped.

use super::field_util::{check_writable, map_text_field};
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "TruncateField",
    spec: TruncateFieldOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Cuts a field's text to at most `maxSize` characters, in place or into another field.
#[derive(Options)]
#[options(base = Spec::stage())]
struct TruncateFieldOptions {
    /// The field whose text is truncated.
    source: String,
    /// The most characters kept.
    max_size: usize,
    /// The field the truncated text goes to (default: the source field, in place).
    destination: Option<String>,
}

struct TruncateField {
    source: String,
    max: usize,
    destination: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = TruncateFieldOptions::from_config(config)?;
    // Written in place unless a destination is given: whichever is written must be writable.
    let destination = match o.destination {
        Some(d) => {
            check_writable(config, "destination", &d)?;
            d
        }
        None => {
            check_writable(config, "source", &o.source)?;
            o.source.clone()
        }
    };
    Ok(Box::new(TruncateField {
        source: o.source,
        max: o.max_size,
        destination,
    }))
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => s[..cut].to_string(),
        None => s.to_string(),
    }
}

impl Stage for TruncateField {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if let Some(value) = map_text_field(doc, &self.source, |s| truncate(s, self.max))? {
            doc.set_field(&self.destination, value)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    #[test]
    fn truncates_in_place_or_to_destination() {
        let mut s = build_stage(json!({"class": "TruncateField", "source": "s", "maxSize": 5}));
        let out = process(&mut s, json!({"id": "d", "s": "hello world"}));
        assert_eq!(out.get("s"), Some(&json!("hello")));
        let out = process(
            &mut s,
            json!({"id": "d", "s": ["short", "héllö wörld", "😀😀😀😀😀😀", 123456, null]}),
        );
        assert_eq!(
            out.get("s"),
            Some(&json!(["short", "héllö", "😀😀😀😀😀", 123456, null]))
        );
        let out = process(&mut s, json!({"id": "d"}));
        assert!(!out.has("s"));

        let mut s = build_stage(
            json!({"class": "TruncateField", "source": "s", "maxSize": "3", "destination": "t"}),
        );
        let out = process(&mut s, json!({"id": "d", "s": "abcdef", "t": "old"}));
        assert_eq!(out.get("s"), Some(&json!("abcdef")));
        assert_eq!(out.get("t"), Some(&json!("abc")));

        let mut s = build_stage(json!({"class": "TruncateField", "source": "s", "maxSize": 0}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "s": "abc"})).get("s"),
            Some(&json!(""))
        );
    }

    #[test]
    fn object_value_fails() {
        let mut s = build_stage(json!({"class": "TruncateField", "source": "s", "maxSize": 2}));
        let err = process_err(&mut s, json!({"id": "d", "s": {"a": "long text"}}));
        assert!(err.contains("\"s\"") && err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "TruncateField", "source": "s"})).contains("maxSize"));
        assert!(build_err(json!({"class": "TruncateField", "maxSize": 1})).contains("source"));
        let err = build_err(json!({"class": "TruncateField", "source": "s", "maxSize": -1}));
        assert!(
            err.contains("maxSize") && err.contains("non-negative"),
            "{err}"
        );
        assert!(
            build_err(json!({"class": "TruncateField", "source": "s", "maxSize": "lots"}))
                .contains("maxSize")
        );
        assert!(build_err(
            json!({"class": "TruncateField", "source": "s", "maxSize": 1, "destination": "id"})
        )
        .contains("reserved"));
        assert!(
            build_err(json!({"class": "TruncateField", "source": "id", "maxSize": 1}))
                .contains("reserved")
        );
    }
}
