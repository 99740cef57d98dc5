//! NormalizeText: changes the letter case of text: lowercase, uppercase, title case or
//! sentence case.
//!
//! Keys: `source` (fields read), `dest` (fields written: as many as `source` for a one-to-one
//! mapping, or one that receives every source), `mode` (`lowercase`, `uppercase`,
//! `title_case`, `sentence_case`; any case), `updateMode` (overwrite, append, skip; default
//! overwrite). A missing source is skipped.
//!
//! Case mapping is Unicode's (`ß` uppercases to `SS`). Title case lowercases everything and
//! then capitalises the first character after each whitespace, as Lucille's `capitalizeFully`.
//! Sentence case lowercases everything and capitalises the first letter or digit of the text
//! and the first one after `.`, `?` or `!` followed by whitespace; Lucille requires exactly one
//! space and an ASCII word character there, capitalises the very first character even when it
//! is a space, and fails on empty text. Like Lucille the original capitalisation is not
//! preserved (acronyms are lowercased too).
//!
//! Only strings are changed: numbers, booleans and nulls are written unchanged (Lucille turns
//! them into strings) and an object value fails the document.

use super::apply_regex::source_dest_pairs;
use super::field_util::{check_fields, map_text_values};
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{
    ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options, Spec, Strings,
};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "NormalizeText",
    spec: NormalizeTextOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

const MODES: &[&str] = &["lowercase", "uppercase", "title_case", "sentence_case"];

/// Changes the letter case of text: lowercase, uppercase, title case or sentence case.
#[derive(Options)]
#[options(base = Spec::stage())]
struct NormalizeTextOptions {
    /// The fields read.
    source: Strings,
    /// The fields written: one per source, or one for every source.
    dest: Strings,
    /// The case: lowercase, uppercase, title_case or sentence_case (any case).
    mode: Mode,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
}

#[derive(Clone, Copy)]
enum Mode {
    Lower,
    Upper,
    Title,
    Sentence,
}

impl OptionValue for Mode {
    fn kind() -> Kind {
        Kind::OneOf(MODES)
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(text) = config.string(key)? else {
            return Ok(None);
        };
        match text.to_ascii_lowercase().as_str() {
            "lowercase" => Ok(Some(Mode::Lower)),
            "uppercase" => Ok(Some(Mode::Upper)),
            "title_case" => Ok(Some(Mode::Title)),
            "sentence_case" => Ok(Some(Mode::Sentence)),
            other => Err(config.error(
                key,
                format!("must be one of {}, found {other:?}", MODES.join(", ")),
            )),
        }
    }
}

struct NormalizeText {
    pairs: Vec<(String, String)>,
    mode: Mode,
    update: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = NormalizeTextOptions::from_config(config)?;
    let checks = [
        check_fields(config, "source", &o.source, false),
        check_fields(config, "dest", &o.dest, true),
    ];
    let errors: Vec<ConfigError> = checks.into_iter().filter_map(Result::err).collect();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(NormalizeText {
        pairs: source_dest_pairs(config, &o.source, &o.dest)?,
        mode: o.mode,
        update: o.update_mode,
    }))
}

fn title_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word_start = true;
    for c in s.to_lowercase().chars() {
        if c.is_whitespace() {
            word_start = true;
            out.push(c);
        } else if word_start {
            word_start = false;
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn sentence_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = true;
    let mut after_end = false;
    for c in s.to_lowercase().chars() {
        if c.is_alphanumeric() {
            if capitalize {
                out.extend(c.to_uppercase());
            } else {
                out.push(c);
            }
            capitalize = false;
            after_end = false;
        } else {
            if matches!(c, '.' | '?' | '!') {
                after_end = true;
            } else if c.is_whitespace() && after_end {
                capitalize = true;
            }
            out.push(c);
        }
    }
    out
}

impl Mode {
    fn apply(self, s: &str) -> String {
        match self {
            Mode::Lower => s.to_lowercase(),
            Mode::Upper => s.to_uppercase(),
            Mode::Title => title_case(s),
            Mode::Sentence => sentence_case(s),
        }
    }
}

impl Stage for NormalizeText {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let values = map_text_values(doc, source, |s| self.mode.apply(s))?;
            doc.update(dest, self.update, values)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{sentence_case, title_case};
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(mode: &str) -> Box<dyn crate::stage::Stage> {
        build_stage(
            json!({"class": "NormalizeText", "source": ["in1", "in2"], "dest": ["out1", "out2"], "mode": mode}),
        )
    }

    #[test]
    fn each_mode() {
        let doc = json!({"id": "d", "in1": "ALL tHiS Is MiXed. and this! ok", "in2": ["straße éCOLE", 5, null]});
        let out = process(&mut stage("lowercase"), doc.clone());
        assert_eq!(
            out.get("out1"),
            Some(&json!("all this is mixed. and this! ok"))
        );
        assert_eq!(out.get("out2"), Some(&json!(["straße école", 5, null])));
        let out = process(&mut stage("UPPERCASE"), doc.clone());
        assert_eq!(
            out.get("out1"),
            Some(&json!("ALL THIS IS MIXED. AND THIS! OK"))
        );
        assert_eq!(out.get("out2"), Some(&json!(["STRASSE ÉCOLE", 5, null])));
        let out = process(&mut stage("title_case"), doc.clone());
        assert_eq!(
            out.get("out1"),
            Some(&json!("All This Is Mixed. And This! Ok"))
        );
        let out = process(&mut stage("sentence_case"), doc);
        assert_eq!(
            out.get("out1"),
            Some(&json!("All this is mixed. And this! Ok"))
        );
        assert_eq!(out.get("out2"), Some(&json!(["Straße école", 5, null])));
    }

    #[test]
    fn case_helpers() {
        assert_eq!(
            title_case("this will be in title case"),
            "This Will Be In Title Case"
        );
        assert_eq!(title_case("  two\tWORDS\n"), "  Two\tWords\n");
        assert_eq!(title_case(""), "");
        assert_eq!(
            sentence_case("this is a sentence. and this! this too? test"),
            "This is a sentence. And this! This too? Test"
        );
        assert_eq!(
            sentence_case("  \"quoted.\"  next. 3.5 apples"),
            "  \"Quoted.\"  Next. 3.5 apples"
        );
        assert_eq!(sentence_case("e.g. this"), "E.g. This");
        assert_eq!(sentence_case(""), "");
        assert_eq!(sentence_case("...!"), "...!");
    }

    #[test]
    fn one_dest_for_all_sources_and_update_modes() {
        let mut s = build_stage(
            json!({"class": "NormalizeText", "source": ["a", "b", "missing"], "dest": "out", "mode": "lowercase", "updateMode": "append"}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "a": "A", "b": ["B", "C"], "out": "x"}),
        );
        assert_eq!(out.get("out"), Some(&json!(["x", "a", "b", "c"])));
        let mut s = build_stage(
            json!({"class": "NormalizeText", "source": "a", "dest": "a", "mode": "uppercase"}),
        );
        assert_eq!(
            process(&mut s, json!({"id": "d", "a": "q"})).get("a"),
            Some(&json!("Q"))
        );
        let mut s = build_stage(
            json!({"class": "NormalizeText", "source": "a", "dest": "b", "mode": "uppercase", "updateMode": "skip"}),
        );
        assert_eq!(
            process(&mut s, json!({"id": "d", "a": "q", "b": "keep"})).get("b"),
            Some(&json!("keep"))
        );
        assert!(!process(&mut s, json!({"id": "d"})).has("b"));
    }

    #[test]
    fn object_value_fails() {
        let err = process_err(
            &mut stage("lowercase"),
            json!({"id": "d", "in1": {"a": "B"}}),
        );
        assert!(err.contains("\"in1\"") && err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        let ok =
            json!({"class": "NormalizeText", "source": ["a"], "dest": ["b"], "mode": "lowercase"});
        for key in ["source", "dest", "mode"] {
            let mut cfg = ok.clone();
            cfg.as_object_mut().map(|m| m.remove(key));
            assert!(build_err(cfg).contains(key), "{key}");
        }
        let mut cfg = ok.clone();
        cfg["mode"] = json!("camel_case");
        assert!(build_err(cfg).contains("mode"));
        let mut cfg = ok.clone();
        cfg["source"] = json!(["a", "b", "c"]);
        cfg["dest"] = json!(["x", "y"]);
        assert!(build_err(cfg).contains("as many"));
        let mut cfg = ok.clone();
        cfg["dest"] = json!(["id"]);
        assert!(build_err(cfg).contains("reserved"));
        let mut cfg = ok;
        cfg["updateMode"] = json!("merge");
        assert!(build_err(cfg).contains("updateMode"));
    }
}
