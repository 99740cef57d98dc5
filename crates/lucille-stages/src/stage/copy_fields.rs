//! CopyFields: copies each source field's values to one or more destination fields.
//!
//! Keys: `fieldMapping { source: dest | [dest, ...] }`, `updateMode` (overwrite, append, skip;
//! default overwrite), `isNested` (source and destination are nested paths such as `a.b[0]`;
//! the destination is then always overwritten, as in Lucille). The older form, `source: [..]`
//! with `dest: [..]` lists of the same length, is accepted.
//!
//! Values keep their JSON types (Lucille copies them as text); a missing source is skipped.

use serde_json::{Map, Value};

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{as_string, ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::{Document, FieldPath, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "CopyFields",
    spec: CopyFieldsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Copies each source field's values to one or more destination fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct CopyFieldsOptions {
    /// Each source field to its destination, or a list of destinations (`{ a: b, n: [n1, n2] }`).
    field_mapping: Option<Map<String, Value>>,
    /// How a destination that already has values is written (with isNested, always
    /// overwritten).
    #[option(default)]
    update_mode: UpdateMode,
    /// Sources and destinations are nested paths such as `a.b[0]`.
    #[option(default)]
    is_nested: bool,
    /// The older form: the source fields, with dest (instead of fieldMapping).
    source: Option<Vec<String>>,
    /// The older form: the destination of each source field, in the same order.
    dest: Option<Vec<String>>,
}

enum Pairs {
    Flat(Vec<(String, String)>),
    Nested(Vec<(FieldPath, FieldPath)>),
}

struct CopyFields {
    pairs: Pairs,
    mode: UpdateMode,
}

/// `fieldMapping` (or the older `source` / `dest` lists) as ordered (source, dest) pairs.
fn mapping_pairs(
    config: &ComponentConfig,
    o: &CopyFieldsOptions,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut pairs = Vec::new();
    match (&o.field_mapping, &o.source, &o.dest) {
        (Some(map), None, None) => {
            for (source, dest) in map {
                match dest {
                    Value::Array(items) => {
                        for d in items {
                            let d = as_string(d).ok_or_else(|| {
                                config.error(
                                    "fieldMapping",
                                    format!("destinations of {source:?} must be strings"),
                                )
                            })?;
                            pairs.push((source.clone(), d));
                        }
                    }
                    other => {
                        let d = as_string(other).ok_or_else(|| {
                            config.error(
                                "fieldMapping",
                                format!("destination of {source:?} must be a string or a list"),
                            )
                        })?;
                        pairs.push((source.clone(), d));
                    }
                }
            }
        }
        (None, Some(sources), Some(dests)) => {
            if sources.len() != dests.len() {
                return Err(config.error(
                    "dest",
                    format!(
                        "needs as many entries as \"source\" ({} vs {})",
                        dests.len(),
                        sources.len()
                    ),
                ));
            }
            pairs.extend(sources.iter().cloned().zip(dests.iter().cloned()));
        }
        (None, None, None) => {
            return Err(config.error("fieldMapping", "missing required key \"fieldMapping\""))
        }
        _ => {
            return Err(config.error(
                "fieldMapping",
                "give either \"fieldMapping\" or both \"source\" and \"dest\"",
            ))
        }
    }
    if pairs.is_empty() {
        return Err(config.error("fieldMapping", "needs at least one source-destination pair"));
    }
    Ok(pairs)
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = CopyFieldsOptions::from_config(config)?;
    let pairs = mapping_pairs(config, &o)?;
    let mode = o.update_mode;
    let pairs = if o.is_nested {
        let mut errors = Vec::new();
        let mut parse = |p: &str| {
            FieldPath::parse(p)
                .map_err(|e| errors.push(config.error("fieldMapping", e.to_string())))
                .ok()
        };
        let nested: Vec<_> = pairs
            .iter()
            .filter_map(|(s, d)| parse(s).zip(parse(d)))
            .collect();
        if !errors.is_empty() {
            return Err(errors.into());
        }
        Pairs::Nested(nested)
    } else {
        Pairs::Flat(pairs)
    };
    Ok(Box::new(CopyFields { pairs, mode }))
}

impl Stage for CopyFields {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        match &self.pairs {
            Pairs::Flat(pairs) => {
                for (source, dest) in pairs {
                    if !doc.has(source) {
                        continue;
                    }
                    let values = doc.values(source).to_vec();
                    doc.update(dest, self.mode, values)?;
                }
            }
            Pairs::Nested(pairs) => {
                for (source, dest) in pairs {
                    let Some(value) = doc.get_nested_path(source).cloned() else {
                        continue;
                    };
                    doc.set_nested_path(dest, value)
                        .map_err(StageFailure::from)?;
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn copies_with_each_mode_keeping_types() {
        let mut s = build_stage(
            json!({"class": "CopyFields", "fieldMapping": {"a": "b", "n": ["n1", "n2"]}}),
        );
        let out = process(&mut s, json!({"id": "d", "a": "x", "n": 5, "b": "old"}));
        assert_eq!(
            out.to_json(),
            r#"{"id":"d","a":"x","n":5,"b":"x","n1":5,"n2":5}"#
        );

        let mut s = build_stage(
            json!({"class": "CopyFields", "fieldMapping": {"a": "b"}, "updateMode": "append"}),
        );
        let out = process(&mut s, json!({"id": "d", "a": ["x", "y"], "b": "old"}));
        assert_eq!(out.get("b"), Some(&json!(["old", "x", "y"])));

        let mut s = build_stage(
            json!({"class": "CopyFields", "fieldMapping": {"a": "b"}, "updateMode": "skip"}),
        );
        let out = process(&mut s, json!({"id": "d", "a": "x", "b": "old"}));
        assert_eq!(out.get("b"), Some(&json!("old")));
        let out = process(&mut s, json!({"id": "d", "c": 1}));
        assert!(!out.has("b"), "missing source is skipped");
    }

    #[test]
    fn nested_paths() {
        let mut s = build_stage(
            json!({"class": "CopyFields", "fieldMapping": {"a.b[0]": "x.y"}, "isNested": true}),
        );
        let out = process(&mut s, json!({"id": "d", "a": {"b": [{"k": 1}]}}));
        assert_eq!(out.get_nested("x.y").unwrap(), Some(&json!({"k": 1})));
    }

    #[test]
    fn older_source_dest_form() {
        let mut s =
            build_stage(json!({"class": "CopyFields", "source": ["a", "b"], "dest": ["c", "d"]}));
        let out = process(&mut s, json!({"id": "d", "a": 1, "b": 2}));
        assert_eq!(out.get("c"), Some(&json!(1)));
        assert_eq!(out.get("d"), Some(&json!(2)));
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "CopyFields"})).contains("fieldMapping"));
        assert!(
            build_err(json!({"class": "CopyFields", "fieldMapping": {}})).contains("at least one")
        );
        assert!(
            build_err(json!({"class": "CopyFields", "source": ["a"], "dest": []}))
                .contains("as many")
        );
        assert!(build_err(
            json!({"class": "CopyFields", "fieldMapping": {"a": "b"}, "updateMode": "x"})
        )
        .contains("updateMode"));
        assert!(build_err(
            json!({"class": "CopyFields", "fieldMapping": {"a..b": "c"}, "isNested": true})
        )
        .contains("invalid field path"));
        assert!(
            build_err(json!({"class": "CopyFields", "fieldMapping": {"a": {"x": 1}}}))
                .contains("destination")
        );
    }

    #[test]
    fn writing_a_reserved_destination_fails_the_document() {
        let mut s = build_stage(json!({"class": "CopyFields", "fieldMapping": {"a": "id"}}));
        let err = crate::stage::testing::process_err(&mut s, json!({"id": "d", "a": "x"}));
        assert!(err.contains("reserved"), "{err}");
    }
}
