//! ApplyRegex: extracts the matches of a regular expression from source fields into
//! destination fields.
//!
//! Keys: `source` and `dest` (lists of field names, or a single name; either as many
//! destinations as sources, or one destination that receives every source), `regex` (required),
//! `updateMode` (overwrite, append, skip; default overwrite), and the flags `ignoreCase`,
//! `multiline`, `dotall` (also accepted as `dotAll`) and `literal` (the pattern is matched as
//! plain text), all default false.
//!
//! Every match in every value of a source is written to its destination. When the pattern has
//! capturing groups the first group is written, otherwise the whole match, as in Lucille.
//! `captureGroup` (not in Lucille) picks another group by number (0 is the whole match); a
//! match in which that group did not take part is left out. A missing source is skipped, and a
//! source without matches leaves its destination alone.
//!
//! Differences from Lucille: patterns use Rust's `regex` syntax, which is Java's without
//! look-around and back-references (such a pattern is a config error at validation, naming the
//! key); `ignoreCase` is Unicode-aware; and `$` without `multiline` matches only at the very end
//! of the text (Java also matches before a final line break).

use regex::{Regex, RegexBuilder};

use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyRegex",
    spec: ApplyRegexOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Extracts the matches of a regular expression from source fields into destination fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ApplyRegexOptions {
    /// The fields searched.
    source: Strings,
    /// The fields the matches go to: one per source, or one for every source.
    dest: Strings,
    /// The pattern (Rust `regex` syntax: Java's without look-around or back-references).
    regex: String,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
    /// The group written (0: the whole match; default the first group if the pattern has
    /// one, else the whole match).
    capture_group: Option<i64>,
    /// Lucille's pattern flags.
    #[option(flatten)]
    flags: RegexFlags,
}

/// Lucille's four pattern flags (ApplyRegex and ReplacePatterns), all default false.
#[derive(Debug, Clone, Copy, Default, Options)]
pub(crate) struct RegexFlags {
    /// Letters match in either case (Unicode-aware).
    #[option(default)]
    pub ignore_case: bool,
    /// `^` and `$` also match at line breaks, not only at the text's ends.
    #[option(default)]
    pub multiline: bool,
    /// `.` also matches a line break.
    #[option(default, alias = "dotAll")]
    pub dotall: bool,
    /// The pattern is matched as plain text, not as a regular expression.
    #[option(default)]
    pub literal: bool,
}

impl RegexFlags {
    /// Compiles a pattern with these flags; the error names `key`.
    pub(crate) fn compile(
        &self,
        config: &ComponentConfig,
        key: &str,
        pattern: &str,
    ) -> Result<Regex, ConfigError> {
        let source = if self.literal {
            regex::escape(pattern)
        } else {
            pattern.to_string()
        };
        RegexBuilder::new(&source)
            .case_insensitive(self.ignore_case)
            .multi_line(self.multiline)
            .dot_matches_new_line(self.dotall)
            .build()
            .map_err(|e| config.error(key, format!("invalid regex {pattern:?}: {e}")))
    }
}

/// Lucille's `source` / `dest` lists, as read: both non-empty, and either one destination or as
/// many destinations as sources. Returns the (source, destination) pairs in order.
pub(crate) fn source_dest_pairs(
    config: &ComponentConfig,
    sources: &[String],
    dests: &[String],
) -> Result<Vec<(String, String)>, ConfigError> {
    if sources.is_empty() {
        return Err(config.error("source", "needs at least one field"));
    }
    if dests.is_empty() {
        return Err(config.error("dest", "needs at least one field"));
    }
    if dests.len() != 1 && dests.len() != sources.len() {
        return Err(config.error(
            "dest",
            format!(
                "needs one field or as many fields as \"source\" ({} vs {})",
                dests.len(),
                sources.len()
            ),
        ));
    }
    Ok(sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let d = if dests.len() == 1 {
                &dests[0]
            } else {
                &dests[i]
            };
            (s.clone(), d.clone())
        })
        .collect())
}

struct ApplyRegex {
    pairs: Vec<(String, String)>,
    regex: Regex,
    group: usize,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ApplyRegexOptions::from_config(config)?;
    let mut errors = Vec::new();
    let pairs = source_dest_pairs(config, &o.source, &o.dest)
        .map_err(|e| errors.push(e))
        .ok();
    let regex = o
        .flags
        .compile(config, "regex", &o.regex)
        .map_err(|e| errors.push(e))
        .ok();
    let (Some(pairs), Some(regex)) = (pairs, regex) else {
        return Err(errors.into());
    };
    let groups = regex.captures_len() - 1;
    let group = match o.capture_group {
        None => usize::from(groups > 0),
        Some(g) => match usize::try_from(g) {
            Ok(g) if g <= groups => g,
            _ => {
                return Err(config
                    .error(
                        "captureGroup",
                        format!(
                            "must be between 0 and {groups} (the pattern's group count), found {g}"
                        ),
                    )
                    .into())
            }
        },
    };
    Ok(Box::new(ApplyRegex {
        pairs,
        regex,
        group,
        mode: o.update_mode,
    }))
}

impl Stage for ApplyRegex {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let mut found = Vec::new();
            for value in doc.get_string_list(source)? {
                for caps in self.regex.captures_iter(&value) {
                    if let Some(m) = caps.get(self.group) {
                        found.push(m.as_str().to_string());
                    }
                }
            }
            doc.update(dest, self.mode, found)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(extra: serde_json::Value) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "ApplyRegex", "source": ["input"], "dest": ["output"]});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        build_stage(cfg)
    }

    #[test]
    fn extracts_every_match_per_source_pair() {
        let mut s = build_stage(
            json!({"class": "ApplyRegex", "source": ["input1", "input2", "input3"],
            "dest": ["output1", "output2", "output3"], "regex": "\\d+"}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "abc 12 de 345", "input2": ["7", "x8"], "input3": "none"}),
        );
        assert_eq!(out.get("output1"), Some(&json!(["12", "345"])));
        assert_eq!(out.get("output2"), Some(&json!(["7", "8"])));
        assert!(!out.has("output3"), "no match leaves the destination alone");
    }

    #[test]
    fn one_destination_for_many_sources_and_numbers_are_text() {
        let mut s = build_stage(
            json!({"class": "ApplyRegex", "source": ["a", "b"], "dest": "out", "regex": "\\d",
                   "updateMode": "append"}),
        );
        let out = process(&mut s, json!({"id": "d", "a": "1x", "b": 23}));
        assert_eq!(out.get("out"), Some(&json!(["1", "2", "3"])));
    }

    #[test]
    fn first_capturing_group_or_chosen_group() {
        let mut s = stage(json!({"regex": "(\\w+)~(\\d+)"}));
        let out = process(&mut s, json!({"id": "d", "input": "foo~12 bar~34"}));
        assert_eq!(out.get("output"), Some(&json!(["foo", "bar"])));
        let mut s = stage(json!({"regex": "(\\w+)~(\\d+)", "captureGroup": 2}));
        let out = process(&mut s, json!({"id": "d", "input": "foo~12 bar~34"}));
        assert_eq!(out.get("output"), Some(&json!(["12", "34"])));
        let mut s = stage(json!({"regex": "(\\w+)~(\\d+)", "captureGroup": 0}));
        let out = process(&mut s, json!({"id": "d", "input": "foo~12"}));
        assert_eq!(out.get("output"), Some(&json!("foo~12")));
        let mut s = stage(json!({"regex": "a(b)?", "captureGroup": 1}));
        let out = process(&mut s, json!({"id": "d", "input": "a ab"}));
        assert_eq!(
            out.get("output"),
            Some(&json!("b")),
            "non-participating group skipped"
        );
    }

    #[test]
    fn flags() {
        let mut s = stage(json!({"regex": "abcdef", "ignoreCase": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "input": "xABCdefx"})).get("output"),
            Some(&json!("ABCdef"))
        );
        let mut s = stage(json!({"regex": "abcdef"}));
        assert!(!process(&mut s, json!({"id": "d", "input": "ABCDEF"})).has("output"));

        let text = "first\nline\nLINE";
        let mut s = stage(json!({"regex": "^line$", "multiline": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "input": text})).get("output"),
            Some(&json!("line"))
        );
        let mut s = stage(json!({"regex": "^line$", "multiline": true, "ignoreCase": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "input": text})).get("output"),
            Some(&json!(["line", "LINE"]))
        );
        let mut s = stage(json!({"regex": "^line$"}));
        assert!(!process(&mut s, json!({"id": "d", "input": text})).has("output"));

        let mut s = stage(json!({"regex": "a.c", "dotall": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "input": "a\nc"})).get("output"),
            Some(&json!("a\nc"))
        );
        let mut s = stage(json!({"regex": "a.c", "dotAll": true}));
        assert!(process(&mut s, json!({"id": "d", "input": "a\nc"})).has("output"));
        let mut s = stage(json!({"regex": "a.c"}));
        assert!(!process(&mut s, json!({"id": "d", "input": "a\nc"})).has("output"));

        let mut s = stage(json!({"regex": "a.c", "literal": true}));
        let out = process(&mut s, json!({"id": "d", "input": "abc a.c"}));
        assert_eq!(out.get("output"), Some(&json!("a.c")));
        let mut s = stage(
            json!({"regex": "^li.e$", "literal": true, "ignoreCase": true, "multiline": true, "dotall": true}),
        );
        let out = process(&mut s, json!({"id": "d", "input": "line ^LI.E$"}));
        assert_eq!(out.get("output"), Some(&json!("^LI.E$")));
    }

    #[test]
    fn update_modes() {
        let mut s = stage(json!({"regex": "\\d", "updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "input": "1", "output": "old"}));
        assert_eq!(out.get("output"), Some(&json!("old")));
        let mut s = stage(json!({"regex": "\\d"}));
        let out = process(&mut s, json!({"id": "d", "input": "1", "output": "old"}));
        assert_eq!(out.get("output"), Some(&json!("1")));
    }

    #[test]
    fn missing_source_and_bad_values() {
        let mut s = stage(json!({"regex": "\\d"}));
        let out = process(&mut s, json!({"id": "d", "other": "1"}));
        assert!(!out.has("output"));
        let err = process_err(&mut s, json!({"id": "d", "input": {"a": 1}}));
        assert!(err.contains("input"), "{err}");
    }

    #[test]
    fn bad_configs() {
        let base = json!({"class": "ApplyRegex", "source": ["a"], "dest": ["b"]});
        assert!(build_err(base.clone()).contains("regex"));
        let mut c = base.clone();
        c["regex"] = json!("(a");
        assert!(build_err(c).contains("regex"));
        let mut c = base.clone();
        c["regex"] = json!("(?<=a)b");
        assert!(build_err(c).contains("invalid regex"));
        let mut c = base.clone();
        c["regex"] = json!("(a)");
        c["captureGroup"] = json!(2);
        assert!(build_err(c).contains("captureGroup"));
        assert!(build_err(
            json!({"class": "ApplyRegex", "source": ["a", "b", "c"], "dest": ["x", "y"], "regex": "a"})
        )
        .contains("dest"));
        assert!(build_err(
            json!({"class": "ApplyRegex", "source": [], "dest": ["x"], "regex": "a"})
        )
        .contains("source"));
        assert!(build_err(
            json!({"class": "ApplyRegex", "source": ["a"], "dest": ["x"], "regex": "a", "ignoreCase": "maybe"})
        )
        .contains("ignoreCase"));
        let err =
            build_err(json!({"class": "ApplyRegex", "source": [], "dest": ["x"], "regex": "(a"}));
        assert!(
            err.contains("source") && err.contains("invalid regex"),
            "every problem at once: {err}"
        );
    }

    #[test]
    fn the_flags_are_declared_keys() {
        use crate::config::Options;
        let spec = super::ApplyRegexOptions::spec();
        let names: Vec<&str> = spec.properties().iter().map(|p| p.name).collect();
        assert!(
            names.ends_with(&["ignoreCase", "multiline", "dotall", "literal"]),
            "{names:?}"
        );
        assert!(spec.properties().iter().all(|p| !p.description.is_empty()));
    }
}
