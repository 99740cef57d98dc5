//! ExtractEntities: finds dictionary terms inside the text of the source fields (Aho-Corasick,
//! every term in one pass) and writes the payloads of the terms found to the destination fields.
//!
//! Keys: `source` and `dest` (a field or a list; one destination for every source, or one per
//! source), `dictionaries` (one or more files, resolved against the config file's folder),
//! `usePayloads` (default true; false writes the terms themselves), `entityField` (with
//! payloads, also write the terms found here), `updateMode` (overwrite, append, skip; default
//! overwrite), `ignoreCase` (default false), `onlyWholeWords` (default true: a match may not
//! have a letter right before or after it; digits and punctuation are fine),
//! `onlyWhitespaceSeparated` (default false: a match must have whitespace or the text's edge on
//! both sides), `stopOnHit` (default false: only the first match of each value),
//! `ignoreOverlaps` (default false: overlapping matches are all reported; true keeps the longest,
//! then the earliest, of each overlapping group).
//!
//! Dictionary lines are `term[,payload]` as for DictionaryLookup (a term without a payload is
//! its own payload; further columns are ignored). A term listed twice, in one file or across
//! files, keeps its first payload. Matches of a value are reported in the order they end in the
//! text (by start with `ignoreOverlaps`), for each value of each source in turn. A source with
//! no match leaves its destination alone.
//!
//! Where we differ from Lucille: dictionary problems (unreadable file, invalid UTF-8 or CSV) are
//! config errors naming `dictionaries`, the file and the line (Lucille skips undecodable lines).
//! Terms are reported as written in the dictionary even with `ignoreCase`. Case folding is
//! per character with Unicode lower-casing, and "letter" means Unicode Alphabetic, as in
//! Lucille's trie (which works on UTF-16 units; we work on characters). No cloud storage.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use aho_corasick::AhoCorasick;

use super::dictionary_lookup::{read_dictionary, shared_by_files, writable_pairs};
use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ExtractEntities",
    spec: ExtractEntitiesOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Finds dictionary terms inside the text of the source fields and writes the payloads of the
/// terms found to the destination fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ExtractEntitiesOptions {
    /// The keys both entity stages have.
    #[option(flatten)]
    common: EntityOptions,
    /// Match terms in either case.
    #[option(default)]
    ignore_case: bool,
    /// A match may not have a letter right before or after it.
    #[option(default = true)]
    only_whole_words: bool,
    /// A match must have whitespace or the text's edge on both sides.
    #[option(default)]
    only_whitespace_separated: bool,
    /// Only the first match of each value.
    #[option(default)]
    stop_on_hit: bool,
    /// Of overlapping matches keep the longest, then the earliest.
    #[option(default)]
    ignore_overlaps: bool,
}

/// The keys ExtractEntities and ExtractEntitiesFST share.
#[derive(Options)]
pub(crate) struct EntityOptions {
    /// The fields searched.
    pub source: Strings,
    /// The fields written: one per source, or one for every source.
    pub dest: Strings,
    /// The dictionary files (`term[,payload]` per line), resolved against the config file's
    /// folder.
    pub dictionaries: Strings,
    /// Write the payloads of the terms found; false writes the terms themselves.
    #[option(default = true)]
    pub use_payloads: bool,
    /// With payloads, also write the terms found to this field.
    pub entity_field: Option<String>,
    /// How a destination that already has values is written.
    #[option(default)]
    pub update_mode: UpdateMode,
}

/// One term of a [`TermMatcher`].
pub(crate) struct Term {
    /// As written in the dictionary or config.
    pub text: String,
    pub payload: String,
    /// Length in characters of the (folded) pattern, for `ignoreOverlaps`.
    chars: usize,
}

/// How a match must be delimited in the text.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Boundaries {
    /// No Unicode letter directly before or after.
    pub whole_words: bool,
    /// Whitespace (or the text's edge) directly before and after.
    pub whitespace: bool,
}

impl Boundaries {
    /// Whether the match `text[start..end]` (byte offsets at character boundaries) is delimited
    /// as required. Shared with ExtractEntitiesFST.
    pub(crate) fn allow(&self, text: &str, start: usize, end: usize) -> bool {
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if self.whole_words
            && (before.is_some_and(char::is_alphabetic) || after.is_some_and(char::is_alphabetic))
        {
            return false;
        }
        if self.whitespace
            && (before.is_some_and(|c| !c.is_whitespace())
                || after.is_some_and(|c| !c.is_whitespace()))
        {
            return false;
        }
        true
    }
}

impl EntityOptions {
    /// The checks across the keys both entity stages share: the (source, dest) pairs, at
    /// least one dictionary, a writable entity field. Every problem at once.
    pub(crate) fn pairs(
        &self,
        config: &ComponentConfig,
    ) -> Result<Vec<(String, String)>, ConfigErrors> {
        let mut errors = Vec::new();
        let pairs = writable_pairs(config, &self.source, &self.dest).unwrap_or_else(|e| {
            errors.push(e);
            Vec::new()
        });
        if self.dictionaries.is_empty() {
            errors.push(config.error("dictionaries", "needs at least one dictionary file"));
        }
        if let Some(Err(e)) = self
            .entity_field
            .as_deref()
            .map(|f| check_writable(config, "entityField", f))
        {
            errors.push(e);
        }
        if errors.is_empty() {
            Ok(pairs)
        } else {
            Err(errors.into())
        }
    }
}

/// A set of terms found inside text in one pass, with Lucille's trie options.
pub(crate) struct TermMatcher {
    automaton: AhoCorasick,
    terms: Vec<Term>,
    ignore_case: bool,
    boundaries: Boundaries,
}

/// A match: byte range in the (folded) text and the term's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hit {
    start: usize,
    end: usize,
    term: usize,
}

pub(crate) fn fold(text: &str) -> String {
    text.chars().flat_map(char::to_lowercase).collect()
}

impl TermMatcher {
    /// Builds from (term, payload) pairs; empty terms are ignored and a repeated term keeps
    /// its first payload. The error is the automaton builder's message.
    pub fn new(
        entries: impl IntoIterator<Item = (String, String)>,
        ignore_case: bool,
        boundaries: Boundaries,
    ) -> Result<Self, aho_corasick::BuildError> {
        let mut seen = HashSet::new();
        let mut patterns = Vec::new();
        let mut terms = Vec::new();
        for (text, payload) in entries {
            if text.is_empty() {
                continue;
            }
            let pattern = if ignore_case {
                fold(&text)
            } else {
                text.clone()
            };
            if !seen.insert(pattern.clone()) {
                continue;
            }
            terms.push(Term {
                chars: pattern.chars().count(),
                text,
                payload,
            });
            patterns.push(pattern);
        }
        drop(seen);
        let automaton = AhoCorasick::new(&patterns)?;
        Ok(TermMatcher {
            automaton,
            terms,
            ignore_case,
            boundaries,
        })
    }

    #[cfg(test)]
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    fn haystack<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.ignore_case {
            Cow::Owned(fold(text))
        } else {
            Cow::Borrowed(text)
        }
    }

    fn delimited(&self, text: &str, start: usize, end: usize) -> bool {
        self.boundaries.allow(text, start, end)
    }

    /// Every delimited match, in the order the matches end (all overlapping matches).
    fn hits<'a>(&'a self, text: &'a str) -> impl Iterator<Item = Hit> + 'a {
        self.automaton
            .find_overlapping_iter(text)
            .map(|m| Hit {
                start: m.start(),
                end: m.end(),
                term: m.pattern().as_usize(),
            })
            .filter(move |h| self.delimited(text, h.start, h.end))
    }

    /// The terms found in `text`.
    pub fn find(&self, text: &str, stop_on_hit: bool, ignore_overlaps: bool) -> Vec<&Term> {
        let hay = self.haystack(text);
        let mut hits: Vec<Hit> = if stop_on_hit {
            self.hits(&hay).take(1).collect()
        } else {
            self.hits(&hay).collect()
        };
        if ignore_overlaps && hits.len() > 1 {
            hits = self.longest_first(hits);
        }
        hits.into_iter().map(|h| &self.terms[h.term]).collect()
    }

    /// Whether any term occurs in `text`.
    pub fn contains_match(&self, text: &str) -> bool {
        let hay = self.haystack(text);
        let found = self.hits(&hay).next().is_some();
        found
    }

    /// Keeps, of each group of overlapping hits, the longest (then the earliest), sorted by start.
    fn longest_first(&self, mut hits: Vec<Hit>) -> Vec<Hit> {
        hits.sort_by(|a, b| {
            self.terms[b.term]
                .chars
                .cmp(&self.terms[a.term].chars)
                .then(a.start.cmp(&b.start))
        });
        // Accepted hits by start; they never overlap, so ends are ordered too.
        let mut kept: BTreeMap<usize, Hit> = BTreeMap::new();
        for h in hits {
            let overlaps = kept
                .range(..h.end)
                .next_back()
                .is_some_and(|(_, k)| k.end > h.start);
            if !overlaps {
                kept.insert(h.start, h);
            }
        }
        kept.into_values().collect()
    }
}

struct ExtractEntities {
    pairs: Vec<(String, String)>,
    matcher: Arc<TermMatcher>,
    use_payloads: bool,
    entity_field: Option<String>,
    mode: UpdateMode,
    stop_on_hit: bool,
    ignore_overlaps: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ExtractEntitiesOptions::from_config(config)?;
    let pairs = o.common.pairs(config)?;
    let ignore_case = o.ignore_case;
    let boundaries = Boundaries {
        whole_words: o.only_whole_words,
        whitespace: o.only_whitespace_separated,
    };
    let key = format!("ExtractEntities|{ignore_case}|{boundaries:?}");
    let matcher = shared_by_files(config, &key, &o.common.dictionaries, || {
        let mut entries = Vec::new();
        for path in o.common.dictionaries.iter() {
            read_dictionary(config, "dictionaries", path, |_, term, payloads| {
                let payload = payloads.into_iter().next().unwrap_or_else(|| term.clone());
                entries.push((term, payload));
                Ok(())
            })?;
        }
        TermMatcher::new(entries, ignore_case, boundaries)
            .map_err(|e| config.error("dictionaries", format!("cannot build the matcher: {e}")))
    })?;
    Ok(Box::new(ExtractEntities {
        pairs,
        matcher,
        use_payloads: o.common.use_payloads,
        entity_field: o.common.entity_field,
        mode: o.common.update_mode,
        stop_on_hit: o.stop_on_hit,
        ignore_overlaps: o.ignore_overlaps,
    }))
}

impl Stage for ExtractEntities {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let mut found = Vec::new();
            let mut terms = Vec::new();
            for value in doc.get_string_list(source)? {
                for term in self
                    .matcher
                    .find(&value, self.stop_on_hit, self.ignore_overlaps)
                {
                    found.push(if self.use_payloads {
                        term.payload.clone()
                    } else {
                        term.text.clone()
                    });
                    terms.push(term.text.clone());
                }
            }
            if found.is_empty() {
                continue;
            }
            doc.update(dest, self.mode, found)?;
            if let (Some(entity), true) = (&self.entity_field, self.use_payloads) {
                doc.update(entity, self.mode, terms)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{Boundaries, TermMatcher};
    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::{json, Value};

    /// Runs `text` through ExtractEntities with a dictionary made of `dict` and extra keys.
    fn extract(dict: &str, extra: Value, text: &str) -> Option<Value> {
        let path = temp_file("d.dict", dict.as_bytes());
        let mut config = json!({"class": "ExtractEntities", "source": "in", "dest": "out",
            "dictionaries": [path.to_str().unwrap()]});
        if let (Value::Object(c), Value::Object(e)) = (&mut config, extra) {
            c.extend(e);
        }
        let mut s = build_stage(config);
        process(&mut s, json!({"id": "d", "in": text}))
            .get("out")
            .cloned()
    }

    #[test]
    fn word_boundaries_follow_lucille() {
        let na = "United States,North America\nCanada,North America\n";
        assert_eq!(
            extract(na, json!({}), "United States is large"),
            Some(json!("North America"))
        );
        assert_eq!(
            extract(na, json!({}), "I live in Canada"),
            Some(json!("North America"))
        );
        assert_eq!(
            extract(na, json!({}), "in the (United States)."),
            Some(json!("North America"))
        );
        assert_eq!(extract(na, json!({}), "United State."), None);
        assert_eq!(extract("Vexa,Brand", json!({}), "Vexatronics"), None);
        assert_eq!(extract("kilo,Unit", json!({}), "akilo"), None);
        assert_eq!(
            extract("kilo,Unit", json!({}), "5kilo"),
            Some(json!("Unit"))
        );
        assert_eq!(
            extract("Z5,Code", json!({}), "Model Z57"),
            Some(json!("Code"))
        );
        assert_eq!(
            extract("0731,B", json!({}), "code 90731."),
            Some(json!("B"))
        );
        for (text, term) in [
            ("alpha's release", "alpha"),
            ("lorem-ipsum", "ipsum"),
            ("alpha/beta", "alpha"),
            ("one_two", "one"),
            ("world🙂", "world"),
            ("東京。", "東京"),
            ("we use C++ daily", "C++"),
            ("meet O'Malley today", "O'Malley"),
            ("We visited München.", "München"),
        ] {
            assert_eq!(
                extract(&format!("{term},Hit"), json!({}), text),
                Some(json!("Hit")),
                "{text}"
            );
        }
        assert_eq!(extract("man,Hit", json!({}), "human anatomy"), None);
        assert_eq!(
            extract("man,Hit", json!({"onlyWholeWords": false}), "human anatomy"),
            Some(json!("Hit"))
        );
        assert_eq!(extract("new town,Hit", json!({}), "new-town"), None);
        assert_eq!(extract("new town,Hit", json!({}), "new, town"), None);
        assert_eq!(
            extract(
                "city,HitCity\ntown,HitTown",
                json!({}),
                "city,town. Hello. town!"
            ),
            Some(json!(["HitCity", "HitTown", "HitTown"]))
        );
        assert_eq!(
            extract(
                "alpha & bet,ALPHA&BET\n& beta,&BETA",
                json!({}),
                "alpha & beta"
            ),
            Some(json!("&BETA"))
        );
    }

    #[test]
    fn whitespace_separated() {
        let opts = json!({"onlyWhitespaceSeparated": true});
        assert_eq!(extract("ipsum,Hit", opts.clone(), "lorem-ipsum"), None);
        assert_eq!(
            extract("ipsum,Hit", opts.clone(), "lorem ipsum\tdolor"),
            Some(json!("Hit"))
        );
        assert_eq!(extract("kilo,Hit", opts, "5kilo"), None);
    }

    #[test]
    fn case_overlaps_and_stop_on_hit() {
        assert_eq!(extract("Blue Sky,Hit", json!({}), "blue sky"), None);
        assert_eq!(
            extract("Blue Sky,Hit", json!({"ignoreCase": true}), "BLUE sky"),
            Some(json!("Hit"))
        );
        assert_eq!(
            extract("München", json!({"ignoreCase": true}), "MÜNCHEN!"),
            Some(json!("München")),
            "the term as written is its own payload"
        );
        let ladder = "a,X1\na a,X2\na a a,X3";
        let mut all: Vec<String> = match extract(ladder, json!({}), "a a a!") {
            Some(Value::Array(v)) => v.iter().map(|x| x.as_str().unwrap().to_string()).collect(),
            other => panic!("{other:?}"),
        };
        all.sort();
        assert_eq!(all, ["X1", "X1", "X1", "X2", "X2", "X3"]);
        assert_eq!(
            extract(ladder, json!({"ignoreOverlaps": true}), "a a a!"),
            Some(json!("X3"))
        );
        assert_eq!(
            extract("new,T1\nnew town,T2", json!({}), "new town center"),
            Some(json!(["T1", "T2"]))
        );
        assert_eq!(
            extract(
                "new,T1\nnew town,T2\ncenter,T3",
                json!({"ignoreOverlaps": true}),
                "new town center"
            ),
            Some(json!(["T2", "T3"]))
        );
        assert_eq!(
            extract(
                "alpha,A\nbeta,B\ngamma,C",
                json!({"stopOnHit": true}),
                "alpha beta gamma"
            ),
            Some(json!("A"))
        );
        assert_eq!(
            extract("kilo,K\nmeter,M", json!({"stopOnHit": true}), "akilo meter"),
            Some(json!("M")),
            "the first hit that passes the boundary check"
        );
    }

    #[test]
    fn payload_options_and_dictionary_format() {
        let path = temp_file(
            "e.dict",
            b"delta,DeltaPayload\nalpha,One\nalpha,Two\n  apple  ,Fruit\nomega\nsigma,\n",
        );
        let p = path.to_str().unwrap();
        let mut s = build_stage(
            json!({"class": "ExtractEntities", "source": "in", "dest": "out",
            "dictionaries": p, "entityField": "entity"}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "in": "delta alpha apple pie omega sigma"}),
        );
        assert_eq!(
            out.get("out"),
            Some(&json!(["DeltaPayload", "One", "Fruit", "omega", ""]))
        );
        assert_eq!(
            out.get("entity"),
            Some(&json!(["delta", "alpha", "apple", "omega", "sigma"]))
        );
        let mut s = build_stage(
            json!({"class": "ExtractEntities", "source": "in", "dest": "out",
            "dictionaries": p, "usePayloads": false, "entityField": "entity"}),
        );
        let out = process(&mut s, json!({"id": "d", "in": "alpha delta"}));
        assert_eq!(out.get("out"), Some(&json!(["alpha", "delta"])));
        assert!(!out.has("entity"), "entityField needs payloads");
        let out = process(
            &mut s,
            json!({"id": "d", "in": "nothing here", "out": "kept"}),
        );
        assert_eq!(out.get("out"), Some(&json!("kept")));
    }

    #[test]
    fn several_dictionaries_and_sources() {
        let a = temp_file("a.dict", b"alpha,One\nbeta,B\n");
        let b = temp_file("b.dict", b"alpha,Two\ngamma,C\n");
        let dicts = json!([a.to_str().unwrap(), b.to_str().unwrap()]);
        let mut s = build_stage(
            json!({"class": "ExtractEntities", "source": ["s1", "s2", "s3"],
            "dest": "out", "dictionaries": dicts, "updateMode": "append"}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "s1": "alpha", "s2": ["beta", "x"], "s3": "gamma"}),
        );
        assert_eq!(out.get("out"), Some(&json!(["One", "B", "C"])));
        let mut s = build_stage(json!({"class": "ExtractEntities", "source": ["s1", "s2"],
            "dest": ["o1", "o2"], "dictionaries": dicts}));
        let out = process(&mut s, json!({"id": "d", "s1": "alpha", "s2": "beta"}));
        assert_eq!(out.get("o1"), Some(&json!("One")));
        assert_eq!(out.get("o2"), Some(&json!("B")));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.field_count(), 0);
    }

    #[test]
    fn bad_configs_and_values() {
        let ok = temp_file("ok.dict", b"x\n");
        let ok = ok.to_str().unwrap();
        let err = build_err(
            json!({"class": "ExtractEntities", "source": "a", "dest": "b",
            "dictionaries": [ok, "tests/data/dictionaries/missing.dict"]}),
        );
        assert!(
            err.contains("dictionaries") && err.contains("missing.dict"),
            "{err}"
        );
        assert!(
            build_err(json!({"class": "ExtractEntities", "source": "a", "dest": "b"}))
                .contains("dictionaries")
        );
        assert!(build_err(
            json!({"class": "ExtractEntities", "source": "a", "dest": "b", "dictionaries": []})
        )
        .contains("at least one"));
        assert!(build_err(
            json!({"class": "ExtractEntities", "source": ["a", "b", "c"],
            "dest": ["x", "y"], "dictionaries": ok})
        )
        .contains("dest"));
        assert!(build_err(
            json!({"class": "ExtractEntities", "source": "a", "dest": "b",
            "dictionaries": ok, "entityField": "___children"})
        )
        .contains("entityField"));
        assert!(build_err(
            json!({"class": "ExtractEntities", "source": "a", "dest": "b",
            "dictionaries": ok, "stopOnHit": "sometimes"})
        )
        .contains("stopOnHit"));
        let bad = temp_file("bad.dict", b"ok\nalp\xe9ha,One\n");
        let err = build_err(
            json!({"class": "ExtractEntities", "source": "a", "dest": "b",
            "dictionaries": bad.to_str().unwrap()}),
        );
        assert!(
            err.contains("dictionaries") && err.contains("line 2") && err.contains("UTF-8"),
            "{err}"
        );
    }

    #[test]
    fn object_values_fail_the_document() {
        let ok = temp_file("v.dict", b"x\n");
        let mut s = build_stage(
            json!({"class": "ExtractEntities", "source": "a", "dest": "b",
            "dictionaries": ok.to_str().unwrap()}),
        );
        let err = process_err(&mut s, json!({"id": "d", "a": [{"k": 1}]}));
        assert!(err.contains("\"a\""), "{err}");
    }

    #[test]
    fn matcher_ignores_empty_and_duplicate_terms() {
        let m = TermMatcher::new(
            [
                ("".to_string(), "e".to_string()),
                ("Go".to_string(), "1".to_string()),
                ("go".to_string(), "2".to_string()),
            ],
            true,
            Boundaries {
                whole_words: true,
                whitespace: false,
            },
        )
        .unwrap();
        assert_eq!(m.term_count(), 1);
        let found = m.find("let's GO", false, false);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].payload, "1");
        assert!(m.contains_match("go!"));
        assert!(!m.contains_match("gopher"));
    }
}
