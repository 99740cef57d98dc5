//! ExtractEntitiesFST: Lucille's finite-state-transducer twin of ExtractEntities. The
//! dictionary's terms are compiled into an FST (the `fst` crate) mapping each term to its
//! payload, and the text is walked from every character position.
//!
//! Keys (Lucille's): `source`, `dest` (one destination, or one per source), `dictionaries`,
//! `usePayloads` (default true), `entityField` (with payloads, also write the terms found),
//! `updateMode` (default overwrite), `ignoreCase` (default false), `onlyWholeWords` (default
//! true: no letter right before or after a match), `ignoreOverlaps` (default false),
//! `stopOnHit` (default false), `dictsSorted` (default false: the terms are sorted here; true
//! skips that and requires the dictionaries' terms to be in order already).
//!
//! Dictionaries, boundaries and case folding are ExtractEntities' (`extract_entities`,
//! `dictionary_lookup`): lines `term[,payload]`, trimmed, a repeated term keeps its first
//! payload, problems are config errors naming the file and line. What follows Lucille's FST
//! stage rather than ExtractEntities: a term is reported as the dictionary's key (lower-cased
//! with `ignoreCase`, which is also the payload of a term without one); matches come in the
//! order of their start, then shortest first; `ignoreOverlaps` keeps the longest match starting
//! at a position and goes on after it; `stopOnHit` stops after the first position that gave
//! matches (and, for a multi-valued source, after the first value that did).
//!
//! `dictsSorted` orders terms by their UTF-8 bytes (code-point order), where Lucille's sort is
//! by UTF-16 units; the two differ only for characters above U+FFFF against U+E000..U+FFFF.
//! Lucille's `s3` / `gcp` / `azure` blocks are config errors (local dictionaries only).

use std::sync::Arc;

use fst::raw::Output;

use super::dictionary_lookup::{read_dictionary, shared_by_files};
use super::extract_entities::{fold, Boundaries, EntityOptions};
use super::CLOUD_STORAGE;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ExtractEntitiesFST",
    spec: ExtractEntitiesFstOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Lucille's finite-state-transducer twin of ExtractEntities: finds dictionary terms inside
/// the text of the source fields and writes their payloads to the destination fields.
#[derive(Options)]
#[options(base = Spec::stage(), extend = cloud_storage)]
struct ExtractEntitiesFstOptions {
    /// The keys both entity stages have.
    #[option(flatten)]
    common: EntityOptions,
    /// Match terms in either case (terms are then reported lower-cased).
    #[option(default)]
    ignore_case: bool,
    /// A match may not have a letter right before or after it.
    #[option(default = true)]
    only_whole_words: bool,
    /// Keep the longest match starting at a position and go on after it.
    #[option(default)]
    ignore_overlaps: bool,
    /// Stop after the first position that gave matches.
    #[option(default)]
    stop_on_hit: bool,
    /// The dictionaries' terms are already in byte order (not sorted here; an unsorted term is
    /// a config error).
    #[option(default)]
    dicts_sorted: bool,
}

/// Lucille's cloud-storage blocks, rejected: dictionaries are local files here.
fn cloud_storage(spec: Spec) -> Spec {
    spec.unsupported("s3", CLOUD_STORAGE)
        .unsupported("gcp", CLOUD_STORAGE)
        .unsupported("azure", CLOUD_STORAGE)
}

/// The compiled dictionary: term bytes → index into `entries` (sorted as the FST).
pub(crate) struct FstDictionary {
    map: fst::Map<Vec<u8>>,
    /// (key, payload) by FST value.
    entries: Vec<(String, String)>,
}

/// Why the dictionaries did not make a transducer.
#[derive(Debug, thiserror::Error)]
pub enum FstError {
    #[error("dictsSorted is true but the terms are not sorted: {key:?} comes after {previous:?}")]
    Unsorted { key: String, previous: String },
    #[error(transparent)]
    Fst(fst::Error),
}

impl FstDictionary {
    /// Builds from (key, payload) pairs, already normalised and without repeated keys. With
    /// `sorted`, the pairs must be in byte order; the error names the first pair that is not.
    pub fn new(mut entries: Vec<(String, String)>, sorted: bool) -> Result<Self, FstError> {
        if !sorted {
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        }
        let mut builder = fst::MapBuilder::memory();
        for (i, (key, _)) in entries.iter().enumerate() {
            builder
                .insert(key.as_bytes(), i as u64)
                .map_err(|e| match e {
                    fst::Error::Fst(fst::raw::Error::OutOfOrder { .. }) => FstError::Unsorted {
                        key: key.clone(),
                        previous: entries[i.saturating_sub(1)].0.clone(),
                    },
                    other => FstError::Fst(other),
                })?;
        }
        let map = builder.into_map();
        Ok(FstDictionary { map, entries })
    }

    /// Every match starting at byte `start` of `text` that `boundaries` accept, shortest first:
    /// (end, entry index).
    fn matches_at(&self, text: &str, start: usize, boundaries: Boundaries) -> Vec<(usize, usize)> {
        let fst = self.map.as_fst();
        let bytes = text.as_bytes();
        let mut node = fst.root();
        let mut out = Output::zero();
        let mut hits = Vec::new();
        for (pos, &b) in bytes.iter().enumerate().skip(start) {
            let Some(i) = node.find_input(b) else { break };
            let t = node.transition(i);
            out = out.cat(t.out);
            node = fst.node(t.addr);
            let end = pos + 1;
            if node.is_final() && text.is_char_boundary(end) && boundaries.allow(text, start, end) {
                let index = out.cat(node.final_output()).value() as usize;
                if index < self.entries.len() {
                    hits.push((end, index));
                }
            }
        }
        hits
    }
}

struct ExtractEntitiesFst {
    pairs: Vec<(String, String)>,
    dictionary: Arc<FstDictionary>,
    use_payloads: bool,
    entity_field: Option<String>,
    mode: UpdateMode,
    ignore_case: bool,
    boundaries: Boundaries,
    stop_on_hit: bool,
    ignore_overlaps: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ExtractEntitiesFstOptions::from_config(config)?;
    let pairs = o.common.pairs(config)?;
    let (ignore_case, sorted) = (o.ignore_case, o.dicts_sorted);
    let key = format!("ExtractEntitiesFST|{ignore_case}|{sorted}");
    let dictionary = shared_by_files(config, &key, &o.common.dictionaries, || {
        let mut seen = std::collections::HashSet::new();
        let mut entries = Vec::new();
        for path in o.common.dictionaries.iter() {
            read_dictionary(config, "dictionaries", path, |_, term, payloads| {
                let key = if ignore_case { fold(&term) } else { term };
                if seen.insert(key.clone()) {
                    let payload = payloads.into_iter().next().unwrap_or_else(|| key.clone());
                    entries.push((key, payload));
                }
                Ok(())
            })?;
        }
        FstDictionary::new(entries, sorted).map_err(|e| config.error("dictionaries", e.to_string()))
    })?;
    Ok(Box::new(ExtractEntitiesFst {
        pairs,
        dictionary,
        use_payloads: o.common.use_payloads,
        entity_field: o.common.entity_field,
        mode: o.common.update_mode,
        ignore_case,
        boundaries: Boundaries {
            whole_words: o.only_whole_words,
            whitespace: false,
        },
        stop_on_hit: o.stop_on_hit,
        ignore_overlaps: o.ignore_overlaps,
    }))
}

impl ExtractEntitiesFst {
    /// Appends the entries found in `raw` to `found` (indexes into the dictionary).
    fn find(&self, raw: &str, found: &mut Vec<usize>) {
        let folded;
        let text = if self.ignore_case {
            folded = fold(raw);
            folded.as_str()
        } else {
            raw
        };
        let mut start = 0;
        while start < text.len() {
            let hits = self.dictionary.matches_at(text, start, self.boundaries);
            let next_char = start + text[start..].chars().next().map_or(1, char::len_utf8);
            if self.ignore_overlaps {
                match hits.last() {
                    Some(&(end, index)) => {
                        found.push(index);
                        start = end.max(next_char);
                    }
                    None => start = next_char,
                }
            } else {
                found.extend(hits.iter().map(|&(_, index)| index));
                start = next_char;
            }
            if self.stop_on_hit && !found.is_empty() {
                break;
            }
        }
    }
}

impl Stage for ExtractEntitiesFst {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let mut found = Vec::new();
            for value in doc.get_string_list(source)? {
                if value.is_empty() {
                    continue;
                }
                self.find(&value, &mut found);
                if self.stop_on_hit && !found.is_empty() {
                    break;
                }
            }
            if found.is_empty() {
                continue;
            }
            let entries = &self.dictionary.entries;
            let outputs: Vec<String> = found
                .iter()
                .map(|&i| {
                    let (key, payload) = &entries[i];
                    if self.use_payloads { payload } else { key }.clone()
                })
                .collect();
            doc.update(dest, self.mode, outputs)?;
            if let (Some(entity), true) = (&self.entity_field, self.use_payloads) {
                let terms: Vec<String> = found.iter().map(|&i| entries[i].0.clone()).collect();
                doc.update(entity, self.mode, terms)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::{json, Value};

    /// Runs `text` through ExtractEntitiesFST with a dictionary made of `dict` and extra keys.
    fn extract(dict: &str, extra: Value, text: Value) -> Option<Value> {
        let path = temp_file("d.dict", dict.as_bytes());
        let mut config = json!({"class": "com.kmwllc.lucille.stage.ExtractEntitiesFST",
            "source": ["input1"], "dest": ["output"], "dictionaries": [path.to_str().unwrap()]});
        if let (Value::Object(c), Value::Object(e)) = (&mut config, extra) {
            c.extend(e);
        }
        let mut s = build_stage(config);
        process(&mut s, json!({"id": "d", "input1": text}))
            .get("output")
            .cloned()
    }

    /// Lucille's ExtractEntitiesTest cases, which its ExtractEntitiesFSTTest runs too.
    #[test]
    fn lucille_cases() {
        let none = json!({});
        let cases: Vec<(&str, Value, &str, Option<Value>)> = vec![
            (
                "United States,North America",
                none.clone(),
                "United States is large",
                Some(json!("North America")),
            ),
            (
                "Canada,North America",
                none.clone(),
                "I live in Canada",
                Some(json!("North America")),
            ),
            (
                "United States,North America",
                none.clone(),
                "I live in the (United States).",
                Some(json!("North America")),
            ),
            ("Vexa,Brand", none.clone(), "Vexatronics", None),
            (
                "Z5,Code",
                none.clone(),
                "Model Z57 is discontinued",
                Some(json!("Code")),
            ),
            (
                "0731,Batch",
                none.clone(),
                "The code is 90731 today.",
                Some(json!("Batch")),
            ),
            (
                "0731,Batch",
                none.clone(),
                "Use 0731.",
                Some(json!("Batch")),
            ),
            ("kilo,Unit", none.clone(), "akilo", None),
            ("kilo,Unit", none.clone(), "5kilo", Some(json!("Unit"))),
            (
                "alpha,TAG",
                none.clone(),
                "alpha's release is tomorrow",
                Some(json!("TAG")),
            ),
            (
                "ipsum,Hit",
                none.clone(),
                "lorem-ipsum text",
                Some(json!("Hit")),
            ),
            (
                "alpha,Hit",
                none.clone(),
                "alpha/beta gamma",
                Some(json!("Hit")),
            ),
            ("one,Hit", none.clone(), "one_two three", Some(json!("Hit"))),
            (
                "city,HitCity\ntown,HitTown",
                none.clone(),
                "city,town",
                Some(json!(["HitCity", "HitTown"])),
            ),
            (
                "city,HitCity\ntown,HitTown",
                none.clone(),
                "Hello. town!",
                Some(json!("HitTown")),
            ),
            ("world,HIT", none.clone(), "world🙂", Some(json!("HIT"))),
            ("東京,Hit", none.clone(), "東京。", Some(json!("Hit"))),
            ("Blue Sky,Hit", none.clone(), "blue sky over town", None),
            (
                "Blue Sky,Hit",
                json!({"ignoreCase": true}),
                "blue sky over town",
                Some(json!("Hit")),
            ),
            ("new town,Hit", none.clone(), "new-town", None),
            ("new town,Hit", none.clone(), "new, town", None),
            (
                "new town,Hit",
                none.clone(),
                "we moved to new town recently",
                Some(json!("Hit")),
            ),
            (
                "new,T1\nnew town,T2",
                none.clone(),
                "new town center",
                Some(json!(["T1", "T2"])),
            ),
            (
                "new,T1\nnew town,T2",
                json!({"ignoreOverlaps": true}),
                "new town center",
                Some(json!("T2")),
            ),
            (
                "alpha,Alpha\nbeta,Beta\ngamma,Gamma",
                json!({"stopOnHit": true}),
                "alpha beta gamma",
                Some(json!("Alpha")),
            ),
            (
                "alpha,PA\nbeta,PB",
                json!({"usePayloads": false}),
                "alpha beta",
                Some(json!(["alpha", "beta"])),
            ),
            (
                "  apple  ,Fruit",
                none.clone(),
                "apple pie",
                Some(json!("Fruit")),
            ),
            (
                "alpha,One\nalpha,Two",
                none.clone(),
                "alpha",
                Some(json!("One")),
            ),
            (
                "München,City",
                none.clone(),
                "We visited München last year.",
                Some(json!("City")),
            ),
            (
                "C++,Hit",
                none.clone(),
                "we use C++ daily",
                Some(json!("Hit")),
            ),
            (
                "O'Malley,Hit",
                none.clone(),
                "meet O'Malley today",
                Some(json!("Hit")),
            ),
            ("man,Hit", none.clone(), "human anatomy", None),
            (
                "man,Hit",
                json!({"onlyWholeWords": false}),
                "human anatomy",
                Some(json!("Hit")),
            ),
            ("United States,Hit", none.clone(), "United State.", None),
            (
                "a,X1\na a,X2\na a a,X3",
                none.clone(),
                "a a a!",
                Some(json!(["X1", "X2", "X3", "X1", "X2", "X1"])),
            ),
            (
                "a,X1\na a,X2\na a a,X3",
                json!({"ignoreOverlaps": true}),
                "a a a!",
                Some(json!("X3")),
            ),
            (
                "alpha & bet,ALPHA&BET\n& beta,&BETA",
                none.clone(),
                "alpha & beta",
                Some(json!("&BETA")),
            ),
            ("omega", none.clone(), "omega", Some(json!("omega"))),
            ("omega,", none.clone(), "omega", Some(json!(""))),
        ];
        for (dict, extra, text, expected) in cases {
            assert_eq!(
                extract(dict, extra.clone(), json!(text)),
                expected,
                "{dict:?} {extra} {text:?}"
            );
        }
    }

    #[test]
    fn fst_specifics() {
        // With ignoreCase the term is reported lower-cased, and is its own payload.
        assert_eq!(
            extract("München", json!({"ignoreCase": true}), json!("MÜNCHEN!")),
            Some(json!("münchen"))
        );
        // ignoreOverlaps goes on after the longest match at a position.
        assert_eq!(
            extract(
                "new,T1\nnew town,T2\ntown center,T3\ncenter,T4",
                json!({"ignoreOverlaps": true}),
                json!("new town center")
            ),
            Some(json!(["T2", "T4"]))
        );
        // stopOnHit: every match at the first position that had one; the first value only.
        assert_eq!(
            extract(
                "new,T1\nnew town,T2\ncenter,T3",
                json!({"stopOnHit": true}),
                json!(["no match", "new town center", "center"])
            ),
            Some(json!(["T1", "T2"]))
        );
        assert_eq!(
            extract("alpha,A", json!({}), json!(["alpha", "", "x alpha"])),
            Some(json!(["A", "A"]))
        );
    }

    #[test]
    fn entity_field_sources_and_modes() {
        let a = temp_file("a.dict", b"alpha,A\nbeta,B\n");
        let b = temp_file("b.dict", b"alpha,Two\ngamma,C\ndelta,DeltaPayload\n");
        let dicts = json!([a.to_str().unwrap(), b.to_str().unwrap()]);
        let mut s = build_stage(
            json!({"class": "ExtractEntitiesFST", "source": ["s1", "s2", "s3"],
            "dest": ["output"], "dictionaries": dicts, "updateMode": "append",
            "entityField": "entity"}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "s1": "alpha", "s2": "beta", "s3": "gamma delta"}),
        );
        assert_eq!(
            out.get("output"),
            Some(&json!(["A", "B", "C", "DeltaPayload"]))
        );
        assert_eq!(
            out.get("entity"),
            Some(&json!(["alpha", "beta", "gamma", "delta"]))
        );
        let mut s = build_stage(
            json!({"class": "ExtractEntitiesFST", "source": ["s1", "s2"],
            "dest": ["o1", "o2"], "dictionaries": dicts}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "s1": "alpha", "s2": "beta", "o1": "x"}),
        );
        assert_eq!(out.get("o1"), Some(&json!("A")));
        assert_eq!(out.get("o2"), Some(&json!("B")));
        let out = process(&mut s, json!({"id": "d", "s1": "nothing", "o1": "kept"}));
        assert_eq!(out.get("o1"), Some(&json!("kept")));
    }

    #[test]
    fn sorted_dictionaries_and_bad_configs() {
        let sorted = temp_file("s.dict", b"alpha,A\nbeta,B\ngamma,G\n");
        let unsorted = temp_file("u.dict", b"beta,B\nalpha,A\n");
        let mut s = build_stage(json!({"class": "ExtractEntitiesFST", "source": "t",
            "dest": "o", "dictionaries": sorted.to_str().unwrap(), "dictsSorted": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "t": "gamma beta"})).get("o"),
            Some(&json!(["G", "B"]))
        );
        let err = build_err(
            json!({"class": "ExtractEntitiesFST", "source": "t", "dest": "o",
            "dictionaries": unsorted.to_str().unwrap(), "dictsSorted": true}),
        );
        assert!(
            err.contains("dictsSorted") && err.contains("\"alpha\""),
            "{err}"
        );
        let mut s = build_stage(json!({"class": "ExtractEntitiesFST", "source": "t",
            "dest": "o", "dictionaries": unsorted.to_str().unwrap()}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "t": "alpha beta"})).get("o"),
            Some(&json!(["A", "B"]))
        );
        let ok = sorted.to_str().unwrap();
        let err = build_err(
            json!({"class": "ExtractEntitiesFST", "source": "t", "dest": "o",
            "dictionaries": [ok, "tests/data/dictionaries/missing.dict"]}),
        );
        assert!(
            err.contains("dictionaries") && err.contains("missing.dict"),
            "{err}"
        );
        let bad = temp_file("bad.dict", b"ok\nalp\xe9ha,One\n");
        let err = build_err(
            json!({"class": "ExtractEntitiesFST", "source": "t", "dest": "o",
            "dictionaries": bad.to_str().unwrap()}),
        );
        assert!(err.contains("line 2") && err.contains("UTF-8"), "{err}");
        for (key, value) in [
            ("onlyWhitespaceSeparated", json!(true)),
            ("dictsSorted", json!("sometimes")),
            ("entityField", json!("id")),
            ("s3", json!({"region": "x"})),
        ] {
            let mut c = json!({"class": "ExtractEntitiesFST", "source": "t", "dest": "o",
                "dictionaries": ok});
            c[key] = value;
            assert!(build_err(c).contains(key), "{key}");
        }
        assert!(build_err(
            json!({"class": "ExtractEntitiesFST", "source": ["a", "b", "c"],
            "dest": ["x", "y"], "dictionaries": ok})
        )
        .contains("dest"));
    }
}
