//! ApplyJSONata: applies a JSONata expression to one field, or transforms the whole document.
//!
//! Keys: `expression` (required; compiled once at validation, so a syntax error is a config
//! error naming the key), `source` (optional field, or nested path such as `a.b[0]`; reserved
//! fields such as `___children` may be read), `destination` (optional; default `source`; has no
//! effect without `source`).
//!
//! With `source`, the expression is evaluated on that field's value and the result written to
//! `destination` (a nested path is created as needed), keeping its JSON type. A result that is
//! undefined or null leaves the document unchanged, as in Lucille. A document without `source`
//! is skipped.
//!
//! Without `source`, the expression is evaluated on the whole document (reserved fields
//! included) and must return an object, which replaces the document's fields: fields it keeps
//! stay in place, new ones follow, and the reserved fields (`id`, `run_id`, children, flags)
//! are kept; see `Document::transform`.
//!
//! Difference from Lucille: an evaluation error, a whole-document result that is not an object,
//! or one that changes a reserved field, fails the document with the evaluator's message;
//! Lucille logs a warning and passes the document on unchanged, which hides mistakes such as a
//! misspelt function name.

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, FieldPath};
use lucille_jsonata::Expression;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyJSONata",
    spec: ApplyJsonataOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Applies a JSONata expression to one field, or transforms the whole document.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ApplyJsonataOptions {
    /// The JSONata expression (compiled when the config is checked).
    expression: String,
    /// The field (or nested path, such as `a.b[0]`) the expression is applied to; without it,
    /// the expression transforms the whole document and must return an object.
    source: Option<String>,
    /// Where the result goes (default: source; a nested path is created as needed); needs
    /// source.
    destination: Option<String>,
}

struct ApplyJsonata {
    expression: Expression,
    /// `(source, destination)`; `None` for a whole-document transform.
    fields: Option<(FieldPath, FieldPath)>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ApplyJsonataOptions::from_config(config)?;
    let mut errors = Vec::new();
    let expression = Expression::compile(&o.expression)
        .map_err(|e| errors.push(config.error("expression", e.to_string())))
        .ok();
    let mut path = |key: &str, p: &str| {
        FieldPath::parse(p)
            .map_err(|e| errors.push(config.error(key, e.to_string())))
            .ok()
    };
    let fields = match &o.source {
        None => None,
        Some(source) => {
            let src = path("source", source);
            let dest = match &o.destination {
                Some(d) => path("destination", d),
                None => src.clone(),
            };
            src.zip(dest)
        }
    };
    match expression {
        Some(expression) if errors.is_empty() => Ok(Box::new(ApplyJsonata { expression, fields })),
        _ => Err(errors.into()),
    }
}

impl Stage for ApplyJsonata {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some((source, dest)) = &self.fields else {
            doc.transform(&mut self.expression)?;
            return Ok(None);
        };
        let Some(input) = doc.get_nested_path(source) else {
            return Ok(None);
        };
        let result = self.expression.evaluate(input).map_err(|e| {
            StageFailure::msg(format!("document {:?}, field {source}: {e}", doc.id()))
        })?;
        match result {
            None | Some(serde_json::Value::Null) => {}
            Some(value) => doc.set_nested_path(dest, value)?,
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn field_stage(expr: &str, dest: Option<&str>) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "ApplyJSONata", "source": "source", "expression": expr});
        if let Some(d) = dest {
            cfg["destination"] = json!(d);
        }
        build_stage(cfg)
    }

    #[test]
    fn applies_to_a_field_with_and_without_destination() {
        let mut s = field_stage("\"foo\"", Some("destination"));
        let out = process(&mut s, json!({"id": "d", "source": "bar"}));
        assert_eq!(out.get("source"), Some(&json!("bar")));
        assert_eq!(out.get("destination"), Some(&json!("foo")));
        let out = process(&mut s, json!({"id": "d", "something_else": 12345}));
        assert!(!out.has("destination"), "no source: skipped");

        let mut s = field_stage("\"foo\"", None);
        let out = process(&mut s, json!({"id": "d", "source": "bar"}));
        assert_eq!(out.get("source"), Some(&json!("foo")));
    }

    #[test]
    fn results_keep_their_types() {
        let mut s = field_stage("field.value", Some("dest"));
        let out = process(
            &mut s,
            json!({"id": "d", "source": {"field": {"value": "8.2"}}}),
        );
        assert_eq!(out.get("dest"), Some(&json!("8.2")));
        let out = process(
            &mut s,
            json!({"id": "d", "source": {"field": {"value": {"a": "AQID"}}}}),
        );
        assert_eq!(out.get("dest"), Some(&json!({"a": "AQID"})));
        let out = process(
            &mut s,
            json!({"id": "d", "source": {"field": {"value": [0, 1, 2]}}}),
        );
        assert_eq!(out.get("dest"), Some(&json!([0, 1, 2])));

        let mut s = field_stage("$string()", Some("dest"));
        let out = process(&mut s, json!({"id": "d", "source": 1}));
        assert_eq!(out.get("dest"), Some(&json!("1")));
        let out = process(&mut s, json!({"id": "d", "source": {"a": "b"}}));
        assert_eq!(out.get("dest"), Some(&json!("{\"a\":\"b\"}")));
    }

    #[test]
    fn null_or_undefined_results_change_nothing() {
        let mut s = field_stage(
            "$exists(field.value) ? $number(field.value) : null",
            Some("dest"),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "source": {"field": {"value": "1"}}}),
        );
        assert_eq!(out.get("dest"), Some(&json!(1)));
        let out = process(&mut s, json!({"id": "d", "source": {"field": "text"}}));
        assert!(!out.has("dest"));
        let mut s = field_stage("nothing.here", Some("dest"));
        let out = process(&mut s, json!({"id": "d", "source": {"a": 1}}));
        assert!(!out.has("dest"));
    }

    #[test]
    fn nested_source_destination_and_reserved_children() {
        let mut s = build_stage(json!({"class": "ApplyJSONata", "source": "a.b[1]",
            "destination": "out.x", "expression": "$ * 2"}));
        let out = process(&mut s, json!({"id": "d", "a": {"b": [1, 21]}}));
        assert_eq!(out.get("out"), Some(&json!({"x": 42})));

        let mut s = build_stage(json!({"class": "ApplyJSONata", "source": "___children",
            "destination": "isEnabled", "expression": "$[0].enabled ? $[0].enabled : false"}));
        let out = process(
            &mut s,
            json!({"id": "d", "___children": [
            {"id": "c0", "enabled": true}, {"id": "c1", "enabled": false}]}),
        );
        assert_eq!(out.get("isEnabled"), Some(&json!(true)));

        let mut s = build_stage(json!({"class": "ApplyJSONata", "source": "a",
            "destination": "id", "expression": "'x'"}));
        let err = process_err(&mut s, json!({"id": "d", "a": 1}));
        assert!(err.contains("reserved"), "{err}");
    }

    #[test]
    fn whole_document_transform() {
        let mut s = build_stage(
            json!({"class": "ApplyJSONata", "expression": "{\"id\": id, \"keys\": $keys()}"}),
        );
        let out = process(&mut s, json!({"id": "abc123", "foo": "bar"}));
        assert_eq!(out.id(), "abc123");
        assert!(!out.has("foo"));
        // The evaluator does not promise an order for $keys(); compare as a set.
        let mut keys = out.get_string_list("keys").unwrap();
        keys.sort();
        assert_eq!(keys, vec!["foo", "id"]);

        let mut s = build_stage(
            json!({"class": "ApplyJSONata", "expression": "{\"id\": id, \"value\": field.value}"}),
        );
        let out = process(&mut s, json!({"id": "123", "field": {"value": {"a": "b"}}}));
        assert!(!out.has("field"));
        assert_eq!(out.get("value"), Some(&json!({"a": "b"})));

        let mut s = build_stage(json!({"class": "ApplyJSONata", "expression": "\"foo\""}));
        let err = process_err(&mut s, json!({"id": "abc", "foo": "bar"}));
        assert!(err.contains("object"), "{err}");
    }

    #[test]
    fn evaluation_errors_fail_the_document() {
        let mut s = field_stage("$invalidFunction(field)", Some("destination"));
        let err = process_err(
            &mut s,
            json!({"id": "doc1", "source": {"value": {"a": "b"}}}),
        );
        assert!(err.contains("doc1"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "ApplyJSONata", "source": "source"})).contains("expression")
        );
        assert!(
            build_err(json!({"class": "ApplyJSONata", "source": "s", "expression": "||"}))
                .contains("expression")
        );
        assert!(
            build_err(json!({"class": "ApplyJSONata", "source": "a..b", "expression": "1"}))
                .contains("source")
        );
        assert!(build_err(json!({"class": "ApplyJSONata", "source": "a",
            "destination": "b[", "expression": "1"}))
        .contains("destination"));
    }
}
