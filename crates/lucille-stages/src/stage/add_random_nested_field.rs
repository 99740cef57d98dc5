//! AddRandomNestedField: test data; writes a list of objects to `targetField`, each object
//! built from `entries` (a destination path inside the object → a source).
//!
//! Keys (Lucille's): `targetField` (required), `entries` (required, non-empty: `"user.name" =
//! "name"`; a path's all-digit segments are list indexes; nested HOCON objects are read as dotted
//! paths), `numObjects` (a fixed count, default 1) or `minNumObjects` with `maxNumObjects` (a
//! random count in that inclusive range), `generators` (named stage configs, e.g.
//! `intGen { class: "AddRandomInt", rangeEnd: 10 }`; each runs with `fieldName: generatorOut` on
//! a scratch document, and its output is the value).
//!
//! For each object and entry, the value is the document's source field when present (the whole
//! field: a multi-valued field gives its list), else the output of the generator the source
//! names; a null value is not written. A document with neither fails (Lucille's StageException).
//! When nothing was written the target becomes an empty list. Randomness is unseeded, as in
//! Lucille and the other AddRandom* stages.
//!
//! Differences from Lucille: an entry with an empty source (which could never get a value) is a
//! config error rather than a failure of every document; generator problems (missing `class`,
//! a stage without a `fieldName` key) are config errors at validation, not at start.

use rand::RngExt;
use serde_json::{Map, Value};

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::{Document, FieldPath, Segment};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomNestedField",
    spec: AddRandomNestedFieldOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Test data: writes a list of objects to a field, each built from document fields or
/// generator stages.
#[derive(Options)]
#[options(base = Spec::stage())]
struct AddRandomNestedFieldOptions {
    /// The field the list of objects is written to.
    target_field: String,
    /// A destination path inside each object to its source: a document field, else a
    /// generator's name (`"user.name" = "name"`; all-digit segments are list indexes).
    entries: Map<String, Value>,
    /// How many objects (default 1; or give minNumObjects with maxNumObjects).
    #[option(min = 1)]
    num_objects: Option<usize>,
    /// The fewest objects, for a random count (with maxNumObjects).
    #[option(min = 1)]
    min_num_objects: Option<usize>,
    /// The most objects, for a random count (with minNumObjects).
    #[option(min = 1)]
    max_num_objects: Option<usize>,
    /// Named stage configs whose output (their `fieldName`) is a value, e.g.
    /// `intGen { class: "AddRandomInt", rangeEnd: 10 }`.
    generators: Option<Map<String, Value>>,
}

/// The field generators write to on their scratch document.
const GENERATOR_FIELD: &str = "generatorOut";

struct Entry {
    /// Path inside one object.
    dest: Vec<Segment>,
    source: String,
}

/// A generator stage by its name in `generators`.
type Generator = (String, Box<dyn Stage>);

enum Count {
    Fixed(usize),
    Range(usize, usize),
}

struct AddRandomNestedField {
    target: String,
    entries: Vec<Entry>,
    count: Count,
    generators: Vec<Generator>,
    scratch: Document,
}

/// `entries` as (dotted path, source) pairs, nested objects flattened.
fn flatten(prefix: &str, map: &Map<String, Value>, out: &mut Vec<(String, Value)>) {
    for (k, v) in map {
        let key = if prefix.is_empty() {
            k.trim().to_string()
        } else {
            format!("{prefix}.{}", k.trim())
        };
        match v {
            Value::Object(inner) => flatten(&key, inner, out),
            other => out.push((key, other.clone())),
        }
    }
}

fn count(
    config: &ComponentConfig,
    fixed: Option<usize>,
    min: Option<usize>,
    max: Option<usize>,
) -> Result<Count, ConfigError> {
    match (fixed, min, max) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => Err(config.error(
            "numObjects",
            "give either numObjects or minNumObjects with maxNumObjects, not both",
        )),
        (Some(n), None, None) => Ok(Count::Fixed(n)),
        (None, Some(min), Some(max)) if min > max => Err(config.error(
            "minNumObjects",
            format!("must not be above maxNumObjects ({min} > {max})"),
        )),
        (None, Some(min), Some(max)) => Ok(Count::Range(min, max)),
        (None, Some(_), None) => {
            Err(config.error("maxNumObjects", "must be given with minNumObjects"))
        }
        (None, None, Some(_)) => {
            Err(config.error("minNumObjects", "must be given with maxNumObjects"))
        }
        (None, None, None) => Ok(Count::Fixed(1)),
    }
}

/// The stages of `generators`, built; their problems are pushed onto `errors`.
fn generators(
    config: &ComponentConfig,
    blocks: &Map<String, Value>,
    errors: &mut Vec<ConfigError>,
) -> Vec<Generator> {
    let mut out = Vec::new();
    for (key, block) in blocks {
        let path = config.key_path(&format!("generators.{key}"));
        let Value::Object(block) = block else {
            errors.push(ConfigError::new(path, "must be a stage config (an object)"));
            continue;
        };
        if !block.contains_key("class") {
            errors.push(ConfigError::new(
                format!("{path}.class"),
                "is required: a generator is a stage, such as AddRandomInt",
            ));
            continue;
        }
        let mut block = block.clone();
        block.insert("name".into(), Value::from(format!("arnf_gen_{key}")));
        block.insert("fieldName".into(), Value::from(GENERATOR_FIELD));
        match crate::pipeline::plan_stage(block, 0, &path, config.paths()) {
            Ok(Some(plan)) => match plan.instantiate() {
                Ok(slot) => out.push((key.clone(), slot.into_stage())),
                Err(e) => errors.extend(e.0),
            },
            Ok(None) => errors.push(ConfigError::new(
                format!("{path}.enabled"),
                "a generator cannot be disabled",
            )),
            Err(e) => errors.extend(e),
        }
    }
    out
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = AddRandomNestedFieldOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Err(e) = check_writable(config, "targetField", &o.target_field) {
        errors.push(e);
    }
    let count =
        count(config, o.num_objects, o.min_num_objects, o.max_num_objects).unwrap_or_else(|e| {
            errors.push(e);
            Count::Fixed(1)
        });
    let generators = match &o.generators {
        Some(blocks) => generators(config, blocks, &mut errors),
        None => Vec::new(),
    };
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let target = o.target_field;
    let mut flat = Vec::new();
    flatten("", &o.entries, &mut flat);
    if flat.is_empty() {
        return Err(config
            .error(
                "entries",
                "must map at least one nested path to a source field or generator",
            )
            .into());
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(flat.len());
    for (dest, source) in flat {
        let at = format!("entries.{dest}");
        let source = match source {
            Value::String(s) => s.trim().to_string(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(config
                    .error(&at, "must be a source field name or a generator name")
                    .into())
            }
        };
        if source.is_empty() {
            return Err(config
                .error(
                    &at,
                    "has an empty source; name a document field or a generator",
                )
                .into());
        }
        let segments: Vec<Segment> = dest
            .split('.')
            .map(|s| match s.parse::<usize>() {
                Ok(i) if s.bytes().all(|b| b.is_ascii_digit()) => Segment::Index(i),
                _ => Segment::Field(s.to_string()),
            })
            .collect();
        let mut full = vec![Segment::Field(target.clone()), Segment::Index(0)];
        full.extend(segments.iter().cloned());
        if let Err(e) = FieldPath::from_segments(full) {
            return Err(config
                .error(&at, format!("is not a valid destination: {e}"))
                .into());
        }
        if entries.iter().any(|e| e.dest == segments) {
            return Err(config.error(&at, "is given twice").into());
        }
        entries.push(Entry {
            dest: segments,
            source,
        });
    }
    Ok(Box::new(AddRandomNestedField {
        target,
        entries,
        count,
        generators,
        scratch: Document::new("__arnf_gen_reserved__")
            .map_err(|e| config.error("class", e.to_string()))?,
    }))
}

impl AddRandomNestedField {
    fn generate(&mut self, index: usize) -> Result<Option<Value>, StageFailure> {
        let (name, generator) = &mut self.generators[index];
        self.scratch.remove_field(GENERATOR_FIELD)?;
        // Children a generator might emit are not wanted: dropping them discards them.
        drop(
            generator
                .process_document(&mut self.scratch)
                .map_err(|e| StageFailure::msg(format!("generator {name:?} failed: {e}")))?,
        );
        Ok(self.scratch.remove_field(GENERATOR_FIELD)?)
    }
}

impl Stage for AddRandomNestedField {
    fn start(&mut self) -> Result<(), StageFailure> {
        for (_, g) in &mut self.generators {
            g.start()?;
        }
        Ok(())
    }

    fn stop(&mut self) -> Result<(), StageFailure> {
        let mut first_error = None;
        for (name, g) in &mut self.generators {
            if let Err(e) = g.stop() {
                tracing::error!("AddRandomNestedField: stopping generator {name:?} failed: {e}");
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let n = match self.count {
            Count::Fixed(n) => n,
            Count::Range(min, max) => rand::rng().random_range(min..=max),
        };
        for i in 0..n {
            for e in 0..self.entries.len() {
                let mut segments = vec![Segment::Field(self.target.clone()), Segment::Index(i)];
                segments.extend(self.entries[e].dest.iter().cloned());
                let path = FieldPath::from_segments(segments)?;
                let source = &self.entries[e].source;
                let value = match doc.get(source) {
                    Some(v) => Some(v.clone()),
                    None => match self.generators.iter().position(|(k, _)| k == source) {
                        Some(g) => self.generate(g)?,
                        None => {
                            return Err(StageFailure::msg(format!(
                                "no value for {path}: the document has no field {source:?} \
                                 and no generator has that name"
                            )))
                        }
                    },
                };
                let Some(value) = value.filter(|v| !v.is_null()) else {
                    continue;
                };
                doc.set_nested_path(&path, value)?;
            }
        }
        if !doc.has(&self.target) {
            doc.set_field(&self.target, Value::Array(Vec::new()))?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::stage::testing::{build_err, build_stage, process, process_err};

    fn stage(config: Value) -> Box<dyn crate::stage::Stage> {
        let mut c = json!({"class": "com.kmwllc.lucille.stage.AddRandomNestedField",
            "targetField": "out"});
        if let (Value::Object(c), Value::Object(e)) = (&mut c, config) {
            c.extend(e);
        }
        let mut s = build_stage(c);
        s.start().unwrap();
        s
    }

    #[test]
    fn sources_fill_the_objects() {
        let mut s = stage(json!({"entries": {"user.name": "name", "user.age": "age"}}));
        let out = process(&mut s, json!({"id": "d1", "name": "Alice", "age": 30}));
        assert_eq!(
            out.get("out"),
            Some(&json!([{"user": {"name": "Alice", "age": 30}}]))
        );
        let mut s = stage(json!({"numObjects": 2, "entries": {"location.city": "city"}}));
        let out = process(&mut s, json!({"id": "d2", "city": "Boston"}));
        assert_eq!(
            out.get("out"),
            Some(&json!([{"location": {"city": "Boston"}}, {"location": {"city": "Boston"}}]))
        );
        let mut s = stage(json!({"minNumObjects": 3, "maxNumObjects": 3,
            "entries": {"job.title": "title"}}));
        let out = process(&mut s, json!({"id": "d3", "title": "Engineer"}));
        assert_eq!(
            out.get("out").and_then(Value::as_array).map(Vec::len),
            Some(3)
        );
        // Nested HOCON objects are dotted paths; digit segments are list indexes.
        let mut s = stage(json!({"entries": {"a": {"b": "x"}, "tags.0": "t"}}));
        let out = process(&mut s, json!({"id": "d", "x": [1, 2], "t": "first"}));
        assert_eq!(
            out.get("out"),
            Some(&json!([{"a": {"b": [1, 2]}, "tags": ["first"]}]))
        );
    }

    #[test]
    fn random_counts_stay_in_range() {
        let mut s = stage(json!({"minNumObjects": 1, "maxNumObjects": 3,
            "entries": {"v": "v"}}));
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let out = process(&mut s, json!({"id": "d", "v": 1}));
            seen.insert(out.get("out").and_then(Value::as_array).map_or(0, Vec::len));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn generators_fill_missing_sources() {
        let mut s = stage(json!({"entries": {"user.id": "intGen"},
            "generators": {"intGen": {"class": "com.kmwllc.lucille.stage.AddRandomInt",
                "rangeStart": 0, "rangeEnd": 1}}}));
        let out = process(&mut s, json!({"id": "d5"}));
        assert_eq!(out.get("out"), Some(&json!([{"user": {"id": 0}}])));
        assert_eq!(
            out.field_count(),
            1,
            "the generator's field stays off the document"
        );
        // The document's field wins over the generator.
        let out = process(&mut s, json!({"id": "d8", "intGen": 42}));
        assert_eq!(out.get("out"), Some(&json!([{"user": {"id": 42}}])));
        let mut s = stage(json!({"entries": {"tags": "stringGen"},
            "generators": {"stringGen": {"class": "AddRandomString",
                "minNumOfTerms": 2, "maxNumOfTerms": 2, "rangeSize": 1}}}));
        let out = process(&mut s, json!({"id": "d6"}));
        assert_eq!(out.get("out"), Some(&json!([{"tags": ["0", "0"]}])));
    }

    #[test]
    fn missing_and_null_values() {
        let mut s = stage(json!({"entries": {"temp": "nowhere"}}));
        let err = process_err(&mut s, json!({"id": "d4"}));
        assert!(
            err.contains("nowhere") && err.contains("out[0].temp"),
            "{err}"
        );
        let mut s = stage(json!({"entries": {"deleted_at": "deleted_src"}}));
        let out = process(&mut s, json!({"id": "d7", "deleted_src": null}));
        assert_eq!(out.get("out"), Some(&json!([])));
    }

    #[test]
    fn invalid_configs() {
        let err = |extra: Value| {
            let mut c = json!({"class": "AddRandomNestedField", "targetField": "out"});
            if let (Value::Object(c), Value::Object(e)) = (&mut c, extra) {
                c.extend(e);
            }
            build_err(c)
        };
        assert!(err(json!({"numObjects": 0, "entries": {"a": "x"}})).contains("numObjects"));
        assert!(err(json!({"minNumObjects": 2, "entries": {"a": "x"}})).contains("maxNumObjects"));
        assert!(err(json!({"maxNumObjects": 2, "entries": {"a": "x"}})).contains("minNumObjects"));
        assert!(err(
            json!({"numObjects": 2, "minNumObjects": 1, "maxNumObjects": 3,
            "entries": {"a": "x"}})
        )
        .contains("not both"));
        assert!(
            err(json!({"minNumObjects": 3, "maxNumObjects": 1, "entries": {"a": "x"}}))
                .contains("minNumObjects")
        );
        let e = err(json!({"entries": {"a": {"b": "genWithoutClass"}},
            "generators": {"genWithoutClass": {"field_name": ".tmp"}}}));
        assert!(e.contains("generators.genWithoutClass.class"), "{e}");
        assert!(err(json!({"entries": {}})).contains("entries"));
        assert!(err(json!({"entries": {"temp": ""}})).contains("entries.temp"));
        assert!(err(json!({"entries": {"a..b": "x"}})).contains("entries.a..b"));
        let e = err(
            json!({"entries": {"a": "g"}, "generators": {"g": {"class": "CopyFields",
            "fieldMapping": {"a": "b"}}}}),
        );
        assert!(e.contains("generators.g") && e.contains("fieldName"), "{e}");
        let e = err(
            json!({"entries": {"a": "g"}, "generators": {"g": {"class": "AddRandomInt",
            "rangeStart": 5, "rangeEnd": 1}}}),
        );
        assert!(e.contains("generators.g"), "{e}");
        assert!(
            build_err(json!({"class": "AddRandomNestedField", "targetField": "id",
            "entries": {"a": "x"}}))
            .contains("targetField")
        );
    }
}
