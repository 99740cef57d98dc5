//! DictionaryLookup: looks each whole value of the source fields up in a dictionary file and
//! writes what it finds (the entry's payloads, or the value itself) to the destination fields;
//! or, with `setOnly`, writes a boolean saying whether the values are in the dictionary.
//!
//! Keys: `source` and `dest` (a field or a list; one destination for every source, or one per
//! source), `dictPath` (resolved against the config file's folder), `usePayloads` (default
//! true), `ignoreCase` (default false), `updateMode` (overwrite, append, skip; default
//! overwrite), `setOnly` (default false), `useAnyMatch` and `ignoreMissingSource` (both only
//! with `setOnly`, default false).
//!
//! The dictionary is Lucille's: one entry per line, `term` or `term,payload[,payload...]`,
//! comma-separated with RFC 4180 double quotes (`"Washington, D.C.",capital`), each column
//! trimmed. A term without payloads has itself as its payload. Blank lines and lines with an
//! empty term are ignored; when a term is listed twice, the later line wins (as in Lucille).
//! With `setOnly` a line with payloads is a config error.
//!
//! Matching is on whole values (use ExtractEntities to find terms inside text). With
//! `ignoreCase` both the dictionary terms and the values are lower-cased before comparing.
//!
//! `setOnly`: for each source in turn the destination becomes true if every value of the source
//! is in the dictionary (a missing source counts as `ignoreMissingSource`), and-ed with the
//! destination's current value when several sources share one destination. With
//! `useAnyMatch` the destination becomes true as soon as any value of any source is in the
//! dictionary, and processing stops there. `setOnly` requires `updateMode` overwrite.
//!
//! Where we differ from Lucille:
//! - An unreadable dictionary, a line that is not valid UTF-8 or malformed CSV is a config
//!   error naming `dictPath`, the file and the line (Lucille skips lines with undecodable bytes
//!   with a log warning, and reports a missing file when the stage starts). A backslash is an
//!   ordinary character (opencsv treats `\"` as an escaped quote). `classpath:X` is read
//!   from the resource roots (`config::paths`); there is no cloud storage (`s3`, `gcp`, `azure`).
//! - With `usePayloads: false` the value is written as it appears in the document; Lucille
//!   writes it lower-cased when `ignoreCase` is on.
//!
//! The loaded dictionary is shared by every instance of the stage (one per worker) built from
//! the same file, flags and file version, as Lucille's DictionaryManager does.

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::apply_regex::source_dest_pairs;
use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "DictionaryLookup",
    spec: DictionaryLookupOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Looks each whole value of the source fields up in a dictionary file and writes the entry's
/// payloads (or the value itself) to the destinations; with `setOnly`, whether the values are
/// in the dictionary.
#[derive(Options)]
#[options(base = Spec::stage())]
struct DictionaryLookupOptions {
    /// The fields looked up.
    source: Strings,
    /// The fields written: one per source, or one for every source.
    dest: Strings,
    /// The dictionary file (`term[,payload...]` per line), resolved against the config file's
    /// folder; `classpath:` paths are searched in the resource roots.
    dict_path: String,
    /// Write the entry's payloads; false writes the value found.
    #[option(default = true)]
    use_payloads: bool,
    /// Compare terms and values lower-cased.
    #[option(default)]
    ignore_case: bool,
    /// Write a boolean: whether every value of the sources is in the dictionary (a dictionary
    /// without payloads; needs `updateMode` overwrite).
    #[option(default)]
    set_only: bool,
    /// With `setOnly`: true as soon as any value of any source is in the dictionary.
    #[option(default)]
    use_any_match: bool,
    /// With `setOnly`: what a missing source counts as.
    #[option(default)]
    ignore_missing_source: bool,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
}

/// Term (lower-cased when ignoring case) to its payloads (empty with `setOnly`).
type Dictionary = HashMap<String, Vec<String>>;

struct DictionaryLookup {
    pairs: Vec<(String, String)>,
    one_dest: bool,
    dict: Arc<Dictionary>,
    use_payloads: bool,
    ignore_case: bool,
    mode: UpdateMode,
    set_only: bool,
    use_any_match: bool,
    ignore_missing_source: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = DictionaryLookupOptions::from_config(config)?;
    let mut errors = Vec::new();
    let pairs = writable_pairs(config, &o.source, &o.dest).unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    let (ignore_case, set_only) = (o.ignore_case, o.set_only);
    let mode = o.update_mode;
    if set_only && mode != UpdateMode::Overwrite {
        errors.push(config.error(
            "updateMode",
            "must be overwrite (or left out) when setOnly is true",
        ));
    }
    let dict_path = &o.dict_path;
    let key = format!("DictionaryLookup|{ignore_case}|{set_only}");
    let dict = shared_by_files(config, &key, std::slice::from_ref(dict_path), || {
        let mut dict = Dictionary::new();
        read_dictionary(config, "dictPath", dict_path, |line, term, payloads| {
            let value = if set_only {
                if !payloads.is_empty() {
                    return Err(dictionary_error(
                        config,
                        "dictPath",
                        dict_path,
                        line,
                        "has payloads after the term, which setOnly does not allow",
                    ));
                }
                Vec::new()
            } else if payloads.is_empty() {
                vec![term.clone()]
            } else {
                payloads
            };
            let key = if ignore_case { lower(&term) } else { term };
            dict.insert(key, value);
            Ok(())
        })?;
        Ok(dict)
    })
    .map_err(|e| errors.push(e))
    .ok();
    let Some(dict) = dict.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    let one_dest = o.dest.len() == 1;
    Ok(Box::new(DictionaryLookup {
        pairs,
        one_dest,
        dict,
        use_payloads: o.use_payloads,
        ignore_case,
        mode,
        set_only,
        use_any_match: o.use_any_match,
        ignore_missing_source: o.ignore_missing_source,
    }))
}

impl DictionaryLookup {
    fn contains(&self, value: &str) -> bool {
        if self.ignore_case {
            self.dict.contains_key(&lower(value))
        } else {
            self.dict.contains_key(value)
        }
    }

    fn set_only(&self, doc: &mut Document) -> StageResult {
        for (i, (source, dest)) in self.pairs.iter().enumerate() {
            let previous = if i > 0 && self.one_dest {
                doc.get_bool(dest)?.unwrap_or(true)
            } else {
                true
            };
            let current = if !doc.has(source) {
                self.ignore_missing_source
            } else {
                let values = doc.get_string_list(source)?;
                if self.use_any_match {
                    if values.iter().any(|v| self.contains(v)) {
                        doc.update(dest, self.mode, [true])?;
                        return Ok(None);
                    }
                    false
                } else {
                    values.iter().all(|v| self.contains(v))
                }
            };
            doc.update(dest, self.mode, [previous && current])?;
        }
        Ok(None)
    }
}

impl Stage for DictionaryLookup {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if self.set_only {
            return self.set_only(doc);
        }
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let mut out = Vec::new();
            for value in doc.get_string_list(source)? {
                let found = if self.ignore_case {
                    self.dict.get(&lower(&value))
                } else {
                    self.dict.get(&value)
                };
                if let Some(payloads) = found {
                    if self.use_payloads {
                        out.extend(payloads.iter().cloned());
                    } else {
                        out.push(value);
                    }
                }
            }
            doc.update(dest, self.mode, out)?;
        }
        Ok(None)
    }
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// The (source, destination) pairs of `source` and `dest` as read (see
/// [`source_dest_pairs`]), every destination checked writable. Shared with ExtractEntities and
/// ExtractEntitiesFST.
pub(crate) fn writable_pairs(
    config: &ComponentConfig,
    sources: &[String],
    dests: &[String],
) -> Result<Vec<(String, String)>, ConfigError> {
    for d in dests {
        check_writable(config, "dest", d)?;
    }
    source_dest_pairs(config, sources, dests)
}

pub(crate) fn dictionary_error(
    config: &ComponentConfig,
    key: &str,
    path: &str,
    line: u64,
    message: &str,
) -> ConfigError {
    let resolved = config.resolve_path(path);
    config.error(
        key,
        format!("dictionary {:?} line {line} {message}", resolved.display()),
    )
}

/// Reads a dictionary file (resolved by `config::paths`): calls `each(line, term,
/// payloads)` for every line with a non-empty term, columns trimmed. Errors name `key`, the
/// file and the line.
pub(crate) fn read_dictionary(
    config: &ComponentConfig,
    key: &str,
    path: &str,
    mut each: impl FnMut(u64, String, Vec<String>) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    let resolved = config.resolve_path(path);
    let file = std::fs::File::open(&resolved).map_err(|e| {
        let mut message = format!("cannot read dictionary {:?}: {e}", resolved.display());
        if path.starts_with(crate::config::paths::CLASSPATH_PREFIX) {
            message.push_str(&format!(
                " (classpath: is searched in {}; set runner.resourceRoots to add folders)",
                config.paths().describe_roots()
            ));
        }
        config.error(key, message)
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(std::io::BufReader::new(file));
    let mut record = csv::ByteRecord::new();
    loop {
        let line = reader.position().line();
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let message = match e.kind() {
                    csv::ErrorKind::Io(io) => format!("could not be read: {io}"),
                    _ => format!("is not valid CSV: {e}"),
                };
                return Err(dictionary_error(config, key, path, line, &message));
            }
        }
        let line = record.position().map_or(line, |p| p.line());
        let mut columns = Vec::with_capacity(record.len());
        for field in record.iter() {
            let text = std::str::from_utf8(field)
                .map_err(|_| dictionary_error(config, key, path, line, "is not valid UTF-8"))?;
            columns.push(text.trim().to_string());
        }
        let mut columns = columns.into_iter();
        let Some(term) = columns.next() else { continue };
        let term = term.trim_start_matches('\u{feff}').to_string();
        if term.is_empty() {
            continue;
        }
        each(line, term, columns.collect())?;
    }
    Ok(())
}

type Cache = Mutex<HashMap<String, Weak<dyn Any + Send + Sync>>>;

/// Builds a value from dictionary files once and shares it among every stage instance built
/// while it is alive: `key` names the kind of value and its flags; the files' paths, sizes and
/// modification times are added, so a changed file is loaded afresh.
pub(crate) fn shared_by_files<T: Any + Send + Sync>(
    config: &ComponentConfig,
    key: &str,
    paths: &[String],
    build: impl FnOnce() -> Result<T, ConfigError>,
) -> Result<Arc<T>, ConfigError> {
    let mut full_key = format!("{}|{key}", std::any::type_name::<T>());
    for p in paths {
        let resolved = config.resolve_path(p);
        match file_stamp(&resolved) {
            Some(stamp) => full_key.push_str(&format!("|{stamp}")),
            // Unreadable: build() reports it.
            None => return build().map(Arc::new),
        }
    }
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    // Held while building, so concurrent workers load a dictionary once.
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(existing) = map.get(&full_key).and_then(Weak::upgrade) {
        if let Ok(value) = existing.downcast::<T>() {
            return Ok(value);
        }
    }
    let value = Arc::new(build()?);
    map.retain(|_, w| w.strong_count() > 0);
    let erased: Arc<dyn Any + Send + Sync> = value.clone();
    map.insert(full_key, Arc::downgrade(&erased));
    Ok(value)
}

fn file_stamp(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let canonical = std::fs::canonicalize(path).ok()?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(format!("{}:{}:{modified}", canonical.display(), meta.len()))
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    use crate::test_service::repo_path;
    use std::sync::LazyLock;

    static DICT: LazyLock<String> = LazyLock::new(|| {
        repo_path("tests/data/dictionaries/countries.txt")
            .display()
            .to_string()
    });
    static SET: LazyLock<String> = LazyLock::new(|| {
        repo_path("tests/data/dictionaries/set.txt")
            .display()
            .to_string()
    });

    #[test]
    fn looks_up_whole_values_with_payloads() {
        let mut s = build_stage(json!({"class": "DictionaryLookup",
            "source": ["in1", "in2", "in3"], "dest": ["out1", "out2", "out3"], "dictPath": &*DICT}));
        let out = process(&mut s, json!({"id": "d", "in1": "China"}));
        assert_eq!(out.get("out1"), Some(&json!("China")));
        let out = process(
            &mut s,
            json!({"id": "d", "in1": ["Canada", "United States"], "in3": "Taiwan"}),
        );
        assert_eq!(out.get("out1"), Some(&json!(["Canada", "United States"])));
        assert_eq!(out.get("out3"), Some(&json!("Taiwan")));
        let out = process(
            &mut s,
            json!({"id": "d", "in2": "United States of America"}),
        );
        assert!(!out.has("out2"), "partial values do not match");
        let out = process(&mut s, json!({"id": "d", "in1": "foo"}));
        assert_eq!(out.get("out1"), Some(&json!(["bar", "baz", "boom"])));
        let out = process(&mut s, json!({"id": "d", "in1": "USSR"}));
        assert_eq!(out.get("out1"), Some(&json!("Russia")));
        let out = process(&mut s, json!({"id": "d", "in1": "Washington, D.C."}));
        assert_eq!(out.get("out1"), Some(&json!("capital")), "quoted term");
        let out = process(&mut s, json!({"id": "d", "in1": "china"}));
        assert!(!out.has("out1"), "case-sensitive by default");
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.field_count(), 0, "missing sources are skipped");
    }

    #[test]
    fn later_duplicate_wins_and_numbers_are_read_as_text() {
        let path = temp_file("dup.csv", b"a,one\na,two\n42,answer\n");
        let mut s = build_stage(
            json!({"class": "DictionaryLookup", "source": "x", "dest": "y",
            "dictPath": path.to_str().unwrap()}),
        );
        let out = process(&mut s, json!({"id": "d", "x": ["a", 42]}));
        assert_eq!(out.get("y"), Some(&json!(["two", "answer"])));
    }

    #[test]
    fn ignore_case_and_payload_options() {
        let mut s = build_stage(
            json!({"class": "DictionaryLookup", "source": "in", "dest": "out",
            "dictPath": &*DICT, "ignoreCase": true}),
        );
        let out = process(&mut s, json!({"id": "d", "in": "china"}));
        assert_eq!(out.get("out"), Some(&json!("China")));
        let mut s = build_stage(
            json!({"class": "DictionaryLookup", "source": "in", "dest": "out",
            "dictPath": &*DICT, "ignoreCase": true, "usePayloads": false}),
        );
        let out = process(&mut s, json!({"id": "d", "in": ["uSSr", "nope"]}));
        assert_eq!(out.get("out"), Some(&json!("uSSr")));
    }

    #[test]
    fn several_sources_to_one_dest_and_update_modes() {
        let mut s = build_stage(json!({"class": "DictionaryLookup", "source": ["a", "b"],
            "dest": "out", "dictPath": &*DICT, "updateMode": "append"}));
        let out = process(
            &mut s,
            json!({"id": "d", "a": "China", "b": "Canada", "out": "x"}),
        );
        assert_eq!(out.get("out"), Some(&json!(["x", "China", "Canada"])));
        let mut s = build_stage(json!({"class": "DictionaryLookup", "source": "a",
            "dest": "out", "dictPath": &*DICT, "updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "a": "China", "out": "x"}));
        assert_eq!(out.get("out"), Some(&json!("x")));
        let mut s = build_stage(
            json!({"class": "DictionaryLookup", "source": "a", "dest": "out", "dictPath": &*DICT}),
        );
        let out = process(&mut s, json!({"id": "d", "a": "nothing", "out": "x"}));
        assert_eq!(
            out.get("out"),
            Some(&json!("x")),
            "no match leaves dest alone"
        );
    }

    #[test]
    fn set_only_all_any_and_missing() {
        let mut s = build_stage(json!({"class": "DictionaryLookup", "source": "f",
            "dest": "in_set", "dictPath": &*SET, "setOnly": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "f": "a"})).get("in_set"),
            Some(&json!(true))
        );
        assert_eq!(
            process(&mut s, json!({"id": "d", "f": "hello"})).get("in_set"),
            Some(&json!(false))
        );
        assert_eq!(
            process(&mut s, json!({"id": "d", "f": ["a", "ELSE"]})).get("in_set"),
            Some(&json!(false))
        );
        assert_eq!(
            process(&mut s, json!({"id": "d"})).get("in_set"),
            Some(&json!(false)),
            "missing source is false by default"
        );

        let mut s = build_stage(json!({"class": "DictionaryLookup", "source": ["s1", "s2"],
            "dest": "in_set", "dictPath": &*SET, "setOnly": true, "useAnyMatch": true}));
        let out = process(&mut s, json!({"id": "d", "s1": "a"}));
        assert_eq!(out.get("in_set"), Some(&json!(true)));
        let out = process(&mut s, json!({"id": "d", "s1": "zz", "s2": ["x", "b"]}));
        assert_eq!(out.get("in_set"), Some(&json!(true)));
        let out = process(&mut s, json!({"id": "d", "s1": "zz"}));
        assert_eq!(out.get("in_set"), Some(&json!(false)));

        let mut s = build_stage(json!({"class": "DictionaryLookup", "source": ["s1", "s2"],
            "dest": "in_set", "dictPath": &*SET, "setOnly": true, "ignoreMissingSource": true}));
        assert_eq!(
            process(&mut s, json!({"id": "d", "s1": "a"})).get("in_set"),
            Some(&json!(true))
        );
        assert_eq!(
            process(&mut s, json!({"id": "d", "s2": "q"})).get("in_set"),
            Some(&json!(false))
        );
        assert_eq!(
            process(&mut s, json!({"id": "d", "s1": "q"})).get("in_set"),
            Some(&json!(false)),
            "a false source stays false through later sources"
        );

        let mut s = build_stage(json!({"class": "DictionaryLookup", "source": ["s1", "s2"],
            "dest": ["o1", "o2"], "dictPath": &*SET, "setOnly": true, "ignoreCase": true}));
        let out = process(&mut s, json!({"id": "d", "s1": "A", "s2": "q"}));
        assert_eq!(out.get("o1"), Some(&json!(true)));
        assert_eq!(out.get("o2"), Some(&json!(false)));
    }

    #[test]
    fn bad_configs() {
        let base =
            json!({"class": "DictionaryLookup", "source": "a", "dest": "b", "dictPath": &*DICT});
        let with = |k: &str, v: serde_json::Value| {
            let mut c = base.clone();
            c[k] = v;
            c
        };
        let err = build_err(with("dictPath", json!("tests/data/dictionaries/nope.txt")));
        assert!(
            err.contains("dictPath") && err.contains("nope.txt"),
            "{err}"
        );
        let err = build_err(with("dictPath", json!("classpath:x.txt")));
        assert!(err.contains("classpath: is searched in"), "{err}");
        let err = build_err(with("setOnly", json!(true)));
        assert!(err.contains("dictPath") && err.contains("line 5"), "{err}");
        let mut c = with("setOnly", json!(true));
        c["dictPath"] = json!(&*SET);
        c["updateMode"] = json!("append");
        assert!(build_err(c).contains("updateMode"));
        assert!(build_err(with("dest", json!(["x", "y"]))).contains("as many"));
        assert!(build_err(with("dest", json!("id"))).contains("reserved"));
        assert!(build_err(with("source", json!([]))).contains("source"));
        assert!(build_err(with("ignoreCase", json!("maybe"))).contains("ignoreCase"));
        let missing = json!({"class": "DictionaryLookup", "source": "a", "dest": "b"});
        assert!(build_err(missing).contains("dictPath"));
        let bad_utf8 = temp_file("bad.txt", b"good\nb\xffad,x\n");
        let err = build_err(with("dictPath", json!(bad_utf8.to_str().unwrap())));
        assert!(err.contains("line 2") && err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn a_relative_path_missing_from_the_working_directory_resolves_beside_the_config() {
        let dir = std::fs::canonicalize(repo_path("tests/data")).unwrap();
        let map = match json!({"class": "DictionaryLookup", "source": "a", "dest": "b",
            "dictPath": "dictionaries/countries.txt"})
        {
            serde_json::Value::Object(m) => m,
            _ => unreachable!(),
        };
        let plan = crate::pipeline::plan_stage(
            map,
            0,
            "s",
            &std::sync::Arc::new(crate::config::PathContext::new(Some(dir.clone()))),
        )
        .unwrap()
        .unwrap();
        let mut stage = plan.instantiate().unwrap().into_stage();
        let out = process(&mut stage, json!({"id": "d", "a": "Canada"}));
        assert_eq!(out.get("b"), Some(&json!("Canada")));
    }

    #[test]
    fn bad_values_fail_the_document() {
        let mut s = build_stage(
            json!({"class": "DictionaryLookup", "source": "a", "dest": "b", "dictPath": &*DICT}),
        );
        let err = process_err(&mut s, json!({"id": "d", "a": {"x": 1}}));
        assert!(err.contains("\"a\""), "{err}");
    }

    #[test]
    fn instances_share_one_dictionary() {
        let path = temp_file("shared.txt", b"x\n");
        let config = crate::config::ComponentConfig::new(serde_json::Map::new(), "s");
        let p = path.to_str().unwrap().to_string();
        let a = super::shared_by_files(&config, "t", std::slice::from_ref(&p), || Ok(1u8)).unwrap();
        let b = super::shared_by_files(&config, "t", std::slice::from_ref(&p), || Ok(2u8)).unwrap();
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        let c = super::shared_by_files(&config, "other", &[p], || Ok(3u8)).unwrap();
        assert_eq!(*c, 3);
    }
}
