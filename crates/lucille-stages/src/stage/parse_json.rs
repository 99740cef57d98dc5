//! ParseJson: parses JSON text held in a field and writes parts of it (or all of it) to
//! document fields.
//!
//! Keys: `src` (required: the field holding the JSON text), `sourceIsBase64` (the field holds
//! base64 of the JSON's UTF-8 bytes; default false), `jsonFieldPaths` (optional object
//! `{ destinationField: path }`), `updateMode` (default overwrite).
//!
//! Paths are JSONPath, as Lucille's (`$.menu.id`, `$.items[0]`, `$.menu.popup.menuitem[*].value`,
//! filters such as `$.items[?@.price < 10]`), parsed at validation by `serde_json_path`
//! (RFC 9535); a path without the leading `$` gets `$.` put in front, as Jayway JsonPath does.
//! A path that starts with `/` is a JSON Pointer (RFC 6901, `/items/6/id`).
//!
//! A definite path (names and indexes only) writes the value it finds, keeping its JSON type;
//! a list value becomes a multi-valued field. An indefinite path (wildcards, `..`, filters,
//! slices, unions) writes the list of every match. A path that finds nothing, or finds null,
//! writes nothing. Without `jsonFieldPaths` the JSON must be an object and every one of its
//! keys is written to the document (null values included, as Lucille); a key that is a
//! reserved field (`id`, ...) fails the document, unless `updateMode` is skip (the reserved
//! field always exists, so it is left alone).
//!
//! With `updateMode` overwrite the destination is replaced by the value; with append the
//! value (each element of a list) is appended, an absent field being set as is; with skip an
//! existing destination is left alone. The `src` field is kept. A missing `src` is skipped; a
//! null or non-text `src`, text that is not JSON, or bad base64, fails the document.
//!
//! Difference from Lucille: an indefinite path with no match writes nothing (Lucille writes an
//! empty list); JSON Pointers are accepted.

use serde_json::{Map, Value};
use serde_json_path::JsonPath;

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ParseJson",
    spec: ParseJsonOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Parses JSON text held in a field and writes parts of it (or all of it) to document fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ParseJsonOptions {
    /// The field holding the JSON text.
    src: String,
    /// The field holds base64 of the JSON's UTF-8 bytes.
    #[option(default)]
    source_is_base64: bool,
    /// `{ destinationField: path }`, each path a JSONPath (`$.menu.id`) or a JSON Pointer
    /// (`/items/0`); without it every key of the JSON object is written.
    json_field_paths: Option<Map<String, Value>>,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
}

enum Query {
    Pointer(String),
    Path { path: JsonPath, definite: bool },
}

impl Query {
    /// The value(s) the query finds, or `None` when it finds nothing (or null).
    fn find(&self, json: &Value) -> Option<Value> {
        match self {
            Query::Pointer(p) => json.pointer(p).filter(|v| !v.is_null()).cloned(),
            Query::Path { path, definite } => {
                let found = path.query(json).all();
                if *definite {
                    found.first().filter(|v| !v.is_null()).map(|v| (*v).clone())
                } else if found.is_empty() {
                    None
                } else {
                    Some(Value::Array(found.into_iter().cloned().collect()))
                }
            }
        }
    }
}

/// True if a JSONPath can select more than one node (Jayway's "indefinite" path): it has a
/// wildcard, a descendant step, a filter, a slice or a union outside quoted names.
fn is_indefinite(path: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut prev = '\0';
    for c in path.chars() {
        if let Some(q) = quote {
            if c == q && prev != '\\' {
                quote = None;
            }
        } else {
            match c {
                '\'' | '"' => quote = Some(c),
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                '*' | '?' => return true,
                '.' if prev == '.' => return true,
                ':' | ',' if depth > 0 => return true,
                _ => {}
            }
        }
        prev = c;
    }
    false
}

/// A `jsonFieldPaths` value that is not a JSONPath.
#[derive(Debug, thiserror::Error)]
#[error("invalid JSONPath {text:?}: {source}")]
struct BadPath {
    text: String,
    source: serde_json_path::ParseError,
}

fn compile_query(text: &str) -> Result<Query, BadPath> {
    let trimmed = text.trim();
    if trimmed.starts_with('/') {
        return Ok(Query::Pointer(trimmed.to_string()));
    }
    let full = if trimmed.starts_with('$') {
        trimmed.to_string()
    } else if trimmed.starts_with('[') {
        format!("${trimmed}")
    } else {
        format!("$.{trimmed}")
    };
    let path = JsonPath::parse(&full).map_err(|source| BadPath {
        text: text.to_string(),
        source,
    })?;
    Ok(Query::Path {
        definite: !is_indefinite(&full),
        path,
    })
}

struct ParseJson {
    src: String,
    base64: bool,
    paths: Option<Vec<(String, Query)>>,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ParseJsonOptions::from_config(config)?;
    let paths = match &o.json_field_paths {
        None => None,
        Some(map) => {
            let mut paths = Vec::new();
            let mut errors = Vec::new();
            for (field, path) in map {
                let path = match path {
                    Value::String(p) if !p.trim().is_empty() => p,
                    _ => {
                        errors.push(config.error(
                            "jsonFieldPaths",
                            format!("the path for {field:?} must be a non-blank string"),
                        ));
                        continue;
                    }
                };
                if field.trim().is_empty() {
                    errors.push(config.error("jsonFieldPaths", "has a blank destination field"));
                    continue;
                }
                match compile_query(path) {
                    Ok(query) => paths.push((field.clone(), query)),
                    Err(e) => errors.push(config.error("jsonFieldPaths", e.to_string())),
                }
            }
            if !errors.is_empty() {
                return Err(errors.into());
            }
            Some(paths)
        }
    };
    Ok(Box::new(ParseJson {
        src: o.src,
        base64: o.source_is_base64,
        paths,
        mode: o.update_mode,
    }))
}

/// Writes one JSON value to a field the way Lucille's `update(field, mode, JsonNode)` does:
/// a list stays a (multi-valued) list.
pub(crate) fn write_value(
    doc: &mut Document,
    field: &str,
    mode: UpdateMode,
    value: Value,
) -> Result<(), StageFailure> {
    if !doc.has(field) || mode == UpdateMode::Overwrite {
        doc.set_field(field, value)?;
        return Ok(());
    }
    if mode == UpdateMode::Append {
        match value {
            Value::Array(items) => {
                for item in items {
                    doc.add_to_field(field, item)?;
                }
            }
            other => doc.add_to_field(field, other)?,
        }
    }
    Ok(())
}

impl ParseJson {
    fn text(&self, doc: &Document) -> Result<String, StageFailure> {
        let fail = |why: &str| {
            StageFailure::msg(format!(
                "src field {:?} of document {:?} {why}",
                self.src,
                doc.id()
            ))
        };
        if self.base64 {
            let Some(Value::String(text)) = doc.get_first(&self.src) else {
                return Err(fail("must hold base64 text"));
            };
            let bytes = super::base64_decode::decode_lenient(text)
                .map_err(|e| fail(&format!("is not valid base64: {e}")))?;
            String::from_utf8(bytes).map_err(|_| fail("does not decode to UTF-8 text"))
        } else {
            match doc.get_first(&self.src) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(Value::Null) | None => Err(fail("is null")),
                Some(other) => Err(fail(&format!(
                    "must hold JSON text, found {}",
                    short(other)
                ))),
            }
        }
    }
}

fn short(v: &Value) -> String {
    let t = v.to_string();
    if t.chars().count() > 60 {
        format!("{}...", t.chars().take(57).collect::<String>())
    } else {
        t
    }
}

impl Stage for ParseJson {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.has(&self.src) {
            return Ok(None);
        }
        let text = self.text(doc)?;
        let json: Value = serde_json::from_str(&text).map_err(|e| {
            StageFailure::msg(format!(
                "src field {:?} of document {:?} is not valid JSON: {e}",
                self.src,
                doc.id()
            ))
        })?;
        match &self.paths {
            Some(paths) => {
                for (field, query) in paths {
                    if let Some(v) = query.find(&json) {
                        write_value(doc, field, self.mode, v)?;
                    }
                }
            }
            None => {
                let Value::Object(map) = json else {
                    return Err(StageFailure::msg(format!(
                        "src field {:?} of document {:?} must hold a JSON object to copy all its keys",
                        self.src,
                        doc.id()
                    )));
                };
                for (k, v) in map {
                    write_value(doc, &k, self.mode, v)?;
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::is_indefinite;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    const TEST_JSON: &str = r#"{
      "menu": {"id": "file", "value": "File",
        "popup": {"menuitem": [
          {"value": "New", "onclick": "CreateNewDoc()"},
          {"value": "Open", "onclick": "OpenDoc()"},
          {"value": "Close", "onclick": "CloseDoc()"}]}},
      "aNumber": 1, "aDate": "2021-12-10", "isFalse": false, "nothing": null,
      "items": [1, 2, 3, false, true, 3.74, {"id": "foo-bar-23", "label": "Foo Bar 23"}]
    }"#;

    fn mapping_stage(extra: serde_json::Value) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "ParseJson", "src": "json", "jsonFieldPaths": {
            "aNumber": "$.aNumber", "menuId": "$.menu.id", "menuItems": "$.menu.popup.menuitem",
            "isFalse": "$.isFalse", "item6": "$.items[5]", "item7Id": "$.items[6].id",
            "item7": "/items/6", "items": "$.items", "menuItemValues": "$.menu.popup.menuitem[*].value",
            "bare": "menu.value", "cheap": "$.items[?@ < 3]", "nothing": "$.nothing",
            "absent": "$.no.such", "none": "$.menu.popup.menuitem[?@.value == 'X'].value"}});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        build_stage(cfg)
    }

    #[test]
    fn json_paths_keep_types() {
        let mut s = mapping_stage(json!({}));
        let out = process(&mut s, json!({"id": "d", "json": TEST_JSON}));
        assert!(out.has("json"), "src kept");
        assert_eq!(out.get("aNumber"), Some(&json!(1)));
        assert_eq!(out.get("menuId"), Some(&json!("file")));
        assert_eq!(out.get("isFalse"), Some(&json!(false)));
        assert_eq!(out.get("item6"), Some(&json!(3.74)));
        assert_eq!(out.get("item7Id"), Some(&json!("foo-bar-23")));
        assert_eq!(
            out.get("item7"),
            Some(&json!({"id": "foo-bar-23", "label": "Foo Bar 23"}))
        );
        assert_eq!(out.len_of("menuItems"), 3);
        assert_eq!(out.len_of("items"), 7);
        assert_eq!(
            out.get("menuItemValues"),
            Some(&json!(["New", "Open", "Close"]))
        );
        assert_eq!(out.get("bare"), Some(&json!("File")));
        assert_eq!(out.get("cheap"), Some(&json!([1, 2])));
        assert!(!out.has("nothing") && !out.has("absent") && !out.has("none"));
    }

    #[test]
    fn base64_source_and_update_modes() {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(TEST_JSON);
        let mut s = mapping_stage(json!({"src": "file_content", "sourceIsBase64": true,
            "updateMode": "append"}));
        let out = process(
            &mut s,
            json!({"id": "d", "file_content": encoded, "menuId": "old", "aNumber": [0]}),
        );
        assert_eq!(out.get("menuId"), Some(&json!(["old", "file"])));
        assert_eq!(out.get("aNumber"), Some(&json!([0, 1])));
        assert_eq!(
            out.get("menuItemValues"),
            Some(&json!(["New", "Open", "Close"]))
        );
        let err = process_err(&mut s, json!({"id": "d", "file_content": "!!!"}));
        assert!(err.contains("base64"), "{err}");
    }

    #[test]
    fn copy_all_mode_respects_skip() {
        let mut s = build_stage(json!({"class": "ParseJson", "src": "json", "updateMode": "skip"}));
        let json_text = r#"{"field1": true, "field2": 1, "field3": [1, 2, 3, 4],
            "field4": {"a": "A"}, "field5": [true, false], "field6": null}"#;
        let out = process(
            &mut s,
            json!({"id": "d", "json": json_text, "field5": "existing"}),
        );
        assert_eq!(out.get("field1"), Some(&json!(true)));
        assert_eq!(out.get("field3"), Some(&json!([1, 2, 3, 4])));
        assert_eq!(out.get("field4"), Some(&json!({"a": "A"})));
        assert_eq!(out.get("field5"), Some(&json!("existing")));
        assert_eq!(out.get("field6"), Some(&json!(null)));
        let err = process_err(&mut s, json!({"id": "d", "json": "[1, 2]"}));
        assert!(err.contains("JSON object"), "{err}");
        let out = process(&mut s, json!({"id": "d", "json": r#"{"id": "other"}"#}));
        assert_eq!(out.id(), "d", "skip leaves the existing id alone");
        let mut s = build_stage(json!({"class": "ParseJson", "src": "json"}));
        let err = process_err(&mut s, json!({"id": "d", "json": r#"{"id": "other"}"#}));
        assert!(err.contains("reserved"), "{err}");
    }

    #[test]
    fn missing_and_bad_sources() {
        let mut s = mapping_stage(json!({}));
        let out = process(&mut s, json!({"id": "d", "other": 1}));
        assert_eq!(out.field_count(), 1);
        let err = process_err(&mut s, json!({"id": "d", "json": null}));
        assert!(err.contains("is null"), "{err}");
        let err = process_err(&mut s, json!({"id": "d", "json": "{not json"}));
        assert!(
            err.contains("not valid JSON") && err.contains("\"json\""),
            "{err}"
        );
        let err = process_err(&mut s, json!({"id": "d", "json": 5}));
        assert!(err.contains("JSON text"), "{err}");
    }

    #[test]
    fn indefinite_paths() {
        assert!(!is_indefinite("$.a.b[0]['x.y']"));
        assert!(!is_indefinite("$['a*b']"));
        assert!(is_indefinite("$.a[*]"));
        assert!(is_indefinite("$..a"));
        assert!(is_indefinite("$.a[0,1]"));
        assert!(is_indefinite("$.a[1:]"));
        assert!(is_indefinite("$.a[?@.b]"));
        assert!(is_indefinite("$.a.*"));
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "ParseJson"})).contains("src"));
        assert!(build_err(json!({"class": "ParseJson", "src": "j",
            "jsonFieldPaths": {"aNumber": "", "x": "$.a"}}))
        .contains("jsonFieldPaths"));
        assert!(build_err(json!({"class": "ParseJson", "src": "j",
            "jsonFieldPaths": {"": "$.aDate"}}))
        .contains("blank destination"));
        assert!(build_err(json!({"class": "ParseJson", "src": "j",
            "jsonFieldPaths": {"isFalse": null}}))
        .contains("non-blank string"));
        assert!(build_err(json!({"class": "ParseJson", "src": "j",
            "jsonFieldPaths": {"x": "$.a[["}}))
        .contains("invalid JSONPath"));
        assert!(
            build_err(json!({"class": "ParseJson", "src": "j", "jsonFieldPaths": "x"}))
                .contains("jsonFieldPaths")
        );
    }
}
