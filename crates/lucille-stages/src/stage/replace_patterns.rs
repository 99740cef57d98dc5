//! ReplacePatterns: replaces every match of one or more regular expressions in source fields
//! and writes the result to destination fields.
//!
//! Keys: `source` and `dest` (as in ApplyRegex: one destination, or one per source), `regex`
//! (one pattern or a list, applied in order, each to the previous one's output),
//! `replacement` (text), `replacementField` (a field whose first value, when present on the
//! document, is used instead of `replacement`), `updateMode` (default overwrite), and the flags
//! `ignoreCase`, `multiline`, `dotall` (or `dotAll`) and `literal`. One of `replacement` or
//! `replacementField` is required; a document with neither a `replacementField` value nor a
//! configured `replacement` is left unchanged, as in Lucille.
//!
//! The replacement uses Java's syntax, as Lucille: `$1` (or `$12` when the pattern has twelve
//! groups) and `${name}` insert a group, `\` makes the next character literal (`\$`). A group the
//! pattern does not have is a config error for `replacement` and fails the document for a
//! `replacementField` value. Every value of a source is replaced (numbers as their text); a
//! missing source is skipped.
//!
//! Differences from Lucille: patterns use Rust's `regex` syntax (no look-around or
//! back-references; such a pattern is a config error), and `ignoreCase` is Unicode-aware.

use std::borrow::Cow;

use regex::{Captures, NoExpand, Regex};

use super::apply_regex::{source_dest_pairs, RegexFlags};
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ReplacePatterns",
    spec: ReplacePatternsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Replaces every match of one or more regular expressions in source fields and writes the
/// result to destination fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ReplacePatternsOptions {
    /// The fields read.
    source: Strings,
    /// The fields written: one per source, or one for every source.
    dest: Strings,
    /// The patterns, applied in order, each to the previous one's output (Rust `regex`
    /// syntax: Java's without look-around or back-references).
    regex: Strings,
    /// The replacement text, in Java's syntax (`$1`, `${name}`, `\$`); one of
    /// `replacement` and `replacementField` is required.
    replacement: Option<String>,
    /// A field whose first value, when the document has it, is used instead of
    /// `replacement`.
    replacement_field: Option<String>,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
    /// Lucille's pattern flags.
    #[option(flatten)]
    flags: RegexFlags,
}

/// A piece of a parsed Java replacement string.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Group(usize),
    Named(String),
}

/// What is wrong with a replacement string (the message follows `replacement "..."`);
/// `pattern` is the pattern's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ReplacementError {
    #[error("ends with a lone '\\'")]
    LoneBackslash,
    #[error("has an unterminated or invalid ${{name}}")]
    UnterminatedName,
    #[error("has an invalid group name {0:?}")]
    InvalidName(String),
    #[error("refers to group {name:?}, which the pattern {pattern:?} does not have")]
    NoSuchName { name: String, pattern: String },
    #[error("refers to group {number}, but the pattern {pattern:?} has {groups}")]
    NoSuchGroup {
        number: usize,
        pattern: String,
        groups: usize,
    },
    #[error("has a '$' not followed by a group number or {{name}} (write \\$ for a dollar sign)")]
    LoneDollar,
}

/// Parses a Java `Matcher.replaceAll` replacement against one pattern's groups.
fn parse_replacement(template: &str, regex: &Regex) -> Result<Vec<Part>, ReplacementError> {
    let groups = regex.captures_len() - 1;
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => text.push(next),
                None => return Err(ReplacementError::LoneBackslash),
            },
            '$' => {
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                match chars.peek().copied() {
                    Some('{') => {
                        chars.next();
                        let mut name = String::new();
                        loop {
                            match chars.next() {
                                Some('}') => break,
                                Some(ch) if ch.is_ascii_alphanumeric() => name.push(ch),
                                _ => return Err(ReplacementError::UnterminatedName),
                            }
                        }
                        if name.is_empty() || name.starts_with(|ch: char| ch.is_ascii_digit()) {
                            return Err(ReplacementError::InvalidName(name));
                        }
                        if !regex.capture_names().flatten().any(|n| n == name) {
                            return Err(ReplacementError::NoSuchName {
                                name,
                                pattern: regex.as_str().to_string(),
                            });
                        }
                        parts.push(Part::Named(name));
                    }
                    Some(d) if d.is_ascii_digit() => {
                        chars.next();
                        let mut number = d.to_digit(10).map_or(0, |v| v as usize);
                        // Java takes further digits while the number stays a valid group.
                        while let Some(next) = chars.peek().and_then(|ch| ch.to_digit(10)) {
                            let longer = number * 10 + next as usize;
                            if longer > groups {
                                break;
                            }
                            number = longer;
                            chars.next();
                        }
                        if number > groups {
                            return Err(ReplacementError::NoSuchGroup {
                                number,
                                pattern: regex.as_str().to_string(),
                                groups,
                            });
                        }
                        parts.push(Part::Group(number));
                    }
                    _ => return Err(ReplacementError::LoneDollar),
                }
            }
            other => text.push(other),
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}

/// The replacement's text when it refers to no group (then nothing needs expanding).
fn literal(parts: &[Part]) -> Option<&str> {
    match parts {
        [] => Some(""),
        [Part::Text(t)] => Some(t),
        _ => None,
    }
}

fn expand(parts: &[Part], caps: &Captures<'_>, out: &mut String) {
    for part in parts {
        match part {
            Part::Text(t) => out.push_str(t),
            Part::Group(i) => out.push_str(caps.get(*i).map_or("", |m| m.as_str())),
            Part::Named(n) => out.push_str(caps.name(n).map_or("", |m| m.as_str())),
        }
    }
}

struct ReplacePatterns {
    pairs: Vec<(String, String)>,
    regexes: Vec<Regex>,
    /// The configured replacement, parsed for each pattern.
    replacement: Option<Vec<Vec<Part>>>,
    replacement_field: Option<String>,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ReplacePatternsOptions::from_config(config)?;
    let mut errors = Vec::new();
    let pairs = source_dest_pairs(config, &o.source, &o.dest).unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    if o.regex.is_empty() {
        errors.push(config.error("regex", "needs at least one pattern"));
    }
    let flags = o.flags;
    let mut regexes = Vec::new();
    for p in o.regex.iter() {
        match flags.compile(config, "regex", p) {
            Ok(re) => regexes.push(re),
            Err(e) => errors.push(e),
        }
    }
    let replacement = match &o.replacement {
        None if o.replacement_field.is_none() => {
            errors.push(config.error(
                "replacement",
                "give \"replacement\" or \"replacementField\" (or both)",
            ));
            None
        }
        None => None,
        // Parsed against each pattern's groups, once they all compile.
        Some(r) if regexes.len() == o.regex.len() => {
            let mut parsed = Vec::with_capacity(regexes.len());
            for re in &regexes {
                match parse_replacement(r, re) {
                    Ok(parts) => parsed.push(parts),
                    Err(e) => {
                        errors.push(config.error("replacement", format!("replacement {r:?} {e}")));
                        break;
                    }
                }
            }
            Some(parsed)
        }
        Some(_) => None,
    };
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(ReplacePatterns {
        pairs,
        regexes,
        replacement,
        replacement_field: o.replacement_field,
        mode: o.update_mode,
    }))
}

impl Stage for ReplacePatterns {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let from_field = match &self.replacement_field {
            Some(f) => doc.get_string(f)?.map(|r| (f, r)),
            None => None,
        };
        let per_doc;
        let parts: &[Vec<Part>] = match (&from_field, &self.replacement) {
            (Some((field, r)), _) => {
                per_doc = self
                    .regexes
                    .iter()
                    .map(|re| {
                        parse_replacement(r, re).map_err(|e| {
                            StageFailure::msg(format!(
                                "replacement {r:?} from field {field:?} of document {:?} {e}",
                                doc.id()
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                &per_doc
            }
            (None, Some(configured)) => configured,
            (None, None) => return Ok(None),
        };
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let mut outputs = Vec::new();
            for mut value in doc.get_string_list(source)? {
                for (re, parts) in self.regexes.iter().zip(parts) {
                    let replaced = match literal(parts) {
                        // No group references: plain matching, no capture groups resolved.
                        Some(text) => re.replace_all(&value, NoExpand(text)),
                        None => re.replace_all(&value, |caps: &Captures<'_>| {
                            let mut s = String::new();
                            expand(parts, caps, &mut s);
                            s
                        }),
                    };
                    if let Cow::Owned(replaced) = replaced {
                        value = replaced;
                    }
                }
                outputs.push(value);
            }
            doc.update(dest, self.mode, outputs)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn three(extra: serde_json::Value) -> Box<dyn Stage> {
        let mut cfg = json!({"class": "ReplacePatterns", "source": ["input1", "input2", "input3"],
            "dest": ["output1", "output2", "output3"], "regex": ["false", "remove"],
            "replacement": "REPLACED"});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        build_stage(cfg)
    }

    #[test]
    fn replaces_each_pattern_in_each_value() {
        let mut s = three(json!({}));
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "this is false", "input2": ["remove false", "keep"],
                   "input3": "FALSE stays"}),
        );
        assert_eq!(out.get("output1"), Some(&json!("this is REPLACED")));
        assert_eq!(
            out.get("output2"),
            Some(&json!(["REPLACED REPLACED", "keep"]))
        );
        assert_eq!(out.get("output3"), Some(&json!("FALSE stays")));
        assert_eq!(
            out.get("input1"),
            Some(&json!("this is false")),
            "source kept"
        );

        let mut s = three(json!({"ignoreCase": true}));
        let out = process(&mut s, json!({"id": "d", "input3": "FALSE ReMoVe"}));
        assert_eq!(out.get("output3"), Some(&json!("REPLACED REPLACED")));
    }

    #[test]
    fn literal_and_other_flags() {
        let mut s = three(json!({"regex": ["f.alse\\", "remove"], "literal": true,
            "ignoreCase": true, "multiline": true, "dotall": true}));
        let out = process(&mut s, json!({"id": "d", "input1": "F.ALSE\\ fxalse\\"}));
        assert_eq!(out.get("output1"), Some(&json!("REPLACED fxalse\\")));
        let mut s = three(json!({"regex": "^x$", "multiline": true}));
        let out = process(&mut s, json!({"id": "d", "input1": "x\ny\nx"}));
        assert_eq!(out.get("output1"), Some(&json!("REPLACED\ny\nREPLACED")));
        let mut s = three(json!({"regex": "a.b", "dotall": true}));
        let out = process(&mut s, json!({"id": "d", "input1": "a\nb"}));
        assert_eq!(out.get("output1"), Some(&json!("REPLACED")));
    }

    #[test]
    fn java_replacement_syntax() {
        let re = Regex::new("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)").unwrap();
        assert_eq!(
            parse_replacement("$12$13", &re).unwrap(),
            vec![Part::Group(12), Part::Group(1), Part::Text("3".into())]
        );
        let re = Regex::new("(?<word>\\w+)-(\\d)").unwrap();
        let mut s = build_stage(
            json!({"class": "ReplacePatterns", "source": "a", "dest": "b",
            "regex": "(?<word>\\w+)-(\\d)", "replacement": "${word}=$2 \\$1"}),
        );
        let out = process(&mut s, json!({"id": "d", "a": "x-1 y-2"}));
        assert_eq!(out.get("b"), Some(&json!("x=1 $1 y=2 $1")));
        let message = |r: &str| parse_replacement(r, &re).unwrap_err().to_string();
        assert_eq!(
            message("$3"),
            "refers to group 3, but the pattern \"(?<word>\\\\w+)-(\\\\d)\" has 2"
        );
        assert_eq!(
            message("${nope}"),
            "refers to group \"nope\", which the pattern \"(?<word>\\\\w+)-(\\\\d)\" does not have"
        );
        assert_eq!(
            message("cost $"),
            "has a '$' not followed by a group number or {name} (write \\$ for a dollar sign)"
        );
        assert_eq!(message("trailing \\"), "ends with a lone '\\'");
        assert_eq!(message("${a"), "has an unterminated or invalid ${name}");
        assert_eq!(message("${1a}"), "has an invalid group name \"1a\"");
    }

    #[test]
    fn replacement_field_with_and_without_fallback() {
        let cfg = json!({"class": "ReplacePatterns", "source": ["input1"], "dest": ["output1"],
            "regex": ["false"], "replacement": "REPLACED", "replacementField": "replacement_string"});
        let mut s = build_stage(cfg);
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "false", "replacement_string": "FROM_DOC"}),
        );
        assert_eq!(out.get("output1"), Some(&json!("FROM_DOC")));
        let out = process(&mut s, json!({"id": "d", "input1": "false"}));
        assert_eq!(out.get("output1"), Some(&json!("REPLACED")));

        let mut s = build_stage(
            json!({"class": "ReplacePatterns", "source": ["input1"], "dest": ["output1"],
            "regex": ["false"], "replacementField": "replacement_string"}),
        );
        let out = process(&mut s, json!({"id": "d", "input1": "false"}));
        assert!(
            !out.has("output1"),
            "no replacement for this document: unchanged"
        );
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "false", "replacement_string": "X"}),
        );
        assert_eq!(out.get("output1"), Some(&json!("X")));
        let err = process_err(
            &mut s,
            json!({"id": "d", "input1": "false", "replacement_string": "$1"}),
        );
        assert!(
            err.contains("replacement_string") && err.contains("group 1"),
            "{err}"
        );
    }

    #[test]
    fn update_mode_missing_source_and_bad_values() {
        let mut s = three(json!({"updateMode": "append"}));
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "false", "output1": "old"}),
        );
        assert_eq!(out.get("output1"), Some(&json!(["old", "REPLACED"])));
        let out = process(&mut s, json!({"id": "d", "other": "false"}));
        assert!(!out.has("output1"));
        let err = process_err(&mut s, json!({"id": "d", "input1": [{"x": 1}]}));
        assert!(err.contains("input1"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(
            json!({"class": "ReplacePatterns", "source": ["a"], "dest": ["b"], "regex": ["x"]})
        )
        .contains("replacementField"));
        assert!(build_err(
            json!({"class": "ReplacePatterns", "source": ["a"], "dest": ["b"],
            "regex": ["(x"], "replacement": "y"})
        )
        .contains("regex"));
        assert!(build_err(
            json!({"class": "ReplacePatterns", "source": ["a"], "dest": ["b"],
            "regex": [], "replacement": "y"})
        )
        .contains("regex"));
        assert!(build_err(
            json!({"class": "ReplacePatterns", "source": ["a"], "dest": ["b"],
            "regex": ["(x)"], "replacement": "$2"})
        )
        .contains("replacement"));
        assert!(
            build_err(json!({"class": "ReplacePatterns", "source": ["a", "b"],
            "dest": ["b", "c", "d"], "regex": ["x"], "replacement": "y"}))
            .contains("dest")
        );
    }
}
