//! Contains: tags a document when any of the given fields contains any of the given terms.
//!
//! Keys: `contains` (the terms, a string or a list), `fields` (the fields searched, a string or
//! a list), `output` (the field to tag), `value` (the tag written, overwriting `output`),
//! `ignoreCase` (default true).
//!
//! Terms are found inside text as whole words (no letter right before or after, as
//! ExtractEntities' `onlyWholeWords`), all terms in one Aho-Corasick pass; the first hit
//! tags the document. A document with no hit, or without the fields, is left alone.
//!
//! Lucille ignores an empty term; here an empty string in `contains` is a config error.

use super::extract_entities::{Boundaries, TermMatcher};
use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Contains",
    spec: ContainsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Tags a document when any of the given fields contains any of the given terms as a whole
/// word.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ContainsOptions {
    /// The terms looked for (not empty).
    contains: Strings,
    /// The fields searched.
    fields: Strings,
    /// The field tagged.
    output: String,
    /// The tag written to `output` (overwriting it).
    value: String,
    /// Match terms in either case.
    #[option(default = true)]
    ignore_case: bool,
}

struct Contains {
    matcher: TermMatcher,
    fields: Vec<String>,
    output: String,
    value: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ContainsOptions::from_config(config)?;
    let mut errors = Vec::new();
    if o.contains.is_empty() {
        errors.push(config.error("contains", "needs at least one term"));
    } else if o.contains.iter().any(String::is_empty) {
        errors.push(config.error("contains", "terms must not be empty"));
    }
    if o.fields.is_empty() {
        errors.push(config.error("fields", "needs at least one field"));
    }
    if let Err(e) = check_writable(config, "output", &o.output) {
        errors.push(e);
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let matcher = TermMatcher::new(
        o.contains.iter().map(|t| (t.clone(), t.clone())),
        o.ignore_case,
        Boundaries {
            whole_words: true,
            whitespace: false,
        },
    )
    .map_err(|e| config.error("contains", format!("cannot build the matcher: {e}")))?;
    Ok(Box::new(Contains {
        matcher,
        fields: o.fields.into(),
        output: o.output,
        value: o.value,
    }))
}

impl Stage for Contains {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for field in &self.fields {
            if !doc.has(field) {
                continue;
            }
            if doc
                .get_string_list(field)?
                .iter()
                .any(|v| self.matcher.contains_match(v))
            {
                doc.set_field(&self.output, self.value.as_str())?;
                return Ok(None);
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
    fn tags_on_the_first_whole_word_hit() {
        let mut s = build_stage(json!({"class": "Contains", "contains": ["foo", "bar baz"],
            "fields": ["a", "b"], "output": "tag", "value": "yes"}));
        let out = process(
            &mut s,
            json!({"id": "d", "a": "nothing", "b": ["x", "so FOO!"]}),
        );
        assert_eq!(out.get("tag"), Some(&json!("yes")));
        let out = process(&mut s, json!({"id": "d", "a": "food", "tag": "old"}));
        assert_eq!(
            out.get("tag"),
            Some(&json!("old")),
            "partial words do not count"
        );
        let out = process(
            &mut s,
            json!({"id": "d", "b": "Bar baz", "tag": ["x", "y"]}),
        );
        assert_eq!(out.get("tag"), Some(&json!("yes")), "overwrites");
        let out = process(&mut s, json!({"id": "d"}));
        assert!(!out.has("tag"));
    }

    #[test]
    fn case_sensitive_and_single_strings() {
        let mut s = build_stage(
            json!({"class": "Contains", "contains": "Foo", "fields": "a",
            "output": "tag", "value": "yes", "ignoreCase": false}),
        );
        assert!(!process(&mut s, json!({"id": "d", "a": "foo"})).has("tag"));
        assert!(process(&mut s, json!({"id": "d", "a": "a Foo"})).has("tag"));
        assert!(
            process(&mut s, json!({"id": "d", "a": [1, "Foo"]})).has("tag"),
            "numbers are read as text"
        );
    }

    #[test]
    fn bad_configs_and_values() {
        let base = json!({"class": "Contains", "contains": ["x"], "fields": ["a"],
            "output": "tag", "value": "v"});
        for (key, value, expect) in [
            ("contains", json!([]), "contains"),
            ("contains", json!(["x", ""]), "contains"),
            ("fields", json!([]), "fields"),
            ("output", json!("id"), "output"),
            ("ignoreCase", json!("perhaps"), "ignoreCase"),
        ] {
            let mut c = base.clone();
            c[key] = value;
            let err = build_err(c);
            assert!(err.contains(expect), "{key}: {err}");
        }
        let mut c = base.clone();
        c.as_object_mut().unwrap().remove("value");
        assert!(build_err(c).contains("value"));
        let mut s = build_stage(base);
        let err = process_err(&mut s, json!({"id": "d", "a": {"o": 1}}));
        assert!(err.contains("\"a\""), "{err}");
    }
}
