//! RemoveDiacritics: strips accents and other combining marks from text (`"Crème Brûlée"` →
//! `"Creme Brulee"`).
//!
//! Keys: `source`, `destination` (optional; the source is changed in place without it; an
//! existing destination is overwritten). A missing source is skipped.
//!
//! Text is decomposed with Unicode NFKD and every mark (general category M) is removed, as
//! Lucille does, so compatibility forms are also simplified (`ﬁ` → `fi`, `²` → `2`). The
//! result is then recomposed (NFC), so scripts that NFKD merely splits without adding marks,
//! such as Hangul syllables, come out as they went in; Lucille leaves them decomposed. Every
//! value of a multi-valued field is processed and the field's shape is kept (Lucille reads only
//! the first value). Numbers, booleans and nulls are copied unchanged; an object value fails
//! the document.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use super::field_util::{destination_or, map_text_field};
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "RemoveDiacritics",
    spec: RemoveDiacriticsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Strips accents and other combining marks from text (`"Crème Brûlée"` → `"Creme Brulee"`).
#[derive(Options)]
#[options(base = Spec::stage())]
struct RemoveDiacriticsOptions {
    /// The field whose text is changed.
    source: String,
    /// The field the result goes to (default: the source field, in place; overwritten).
    destination: Option<String>,
}

struct RemoveDiacritics {
    source: String,
    destination: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = RemoveDiacriticsOptions::from_config(config)?;
    let destination = destination_or(config, o.destination, &o.source)?;
    Ok(Box::new(RemoveDiacritics {
        source: o.source,
        destination,
    }))
}

fn remove_diacritics(s: &str) -> String {
    s.nfkd().filter(|c| !is_combining_mark(*c)).nfc().collect()
}

impl Stage for RemoveDiacritics {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if let Some(value) = map_text_field(doc, &self.source, remove_diacritics)? {
            doc.set_field(&self.destination, value)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::remove_diacritics;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    #[test]
    fn strips_marks() {
        assert_eq!(
            remove_diacritics("Crème Brûlée à la façon"),
            "Creme Brulee a la facon"
        );
        assert_eq!(remove_diacritics("ÀÉÎÕÜ ñ ç ø"), "AEIOU n c ø");
        assert_eq!(remove_diacritics("ﬁ x² Ａ"), "fi x2 A");
        assert_eq!(remove_diacritics("e\u{301}\u{302}"), "e");
        assert_eq!(remove_diacritics("한국어"), "한국어");
        assert_eq!(remove_diacritics("Ελληνικά"), "Ελληνικα");
        assert_eq!(remove_diacritics(""), "");
    }

    #[test]
    fn in_place_or_to_destination() {
        let mut s = build_stage(
            json!({"class": "RemoveDiacritics", "source": "foo", "destination": "bar"}),
        );
        let out = process(&mut s, json!({"id": "d", "foo": "café", "bar": "old"}));
        assert_eq!(out.get("foo"), Some(&json!("café")));
        assert_eq!(out.get("bar"), Some(&json!("cafe")));
        let out = process(&mut s, json!({"id": "d"}));
        assert!(!out.has("bar"));

        let mut s = build_stage(json!({"class": "RemoveDiacritics", "source": "foo"}));
        let out = process(&mut s, json!({"id": "d", "foo": ["naïve", 1, null, "Zoë"]}));
        assert_eq!(out.get("foo"), Some(&json!(["naive", 1, null, "Zoe"])));
    }

    #[test]
    fn object_value_fails() {
        let mut s = build_stage(json!({"class": "RemoveDiacritics", "source": "foo"}));
        let err = process_err(&mut s, json!({"id": "d", "foo": {"a": "é"}}));
        assert!(err.contains("\"foo\"") && err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "RemoveDiacritics"})).contains("source"));
        assert!(
            build_err(json!({"class": "RemoveDiacritics", "source": "id"})).contains("reserved")
        );
        assert!(build_err(
            json!({"class": "RemoveDiacritics", "source": "a", "destination": "run_id"})
        )
        .contains("reserved"));
        assert!(
            build_err(json!({"class": "RemoveDiacritics", "source": ["a"]})).contains("source")
        );
    }
}
