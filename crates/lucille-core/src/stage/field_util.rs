//! Helpers shared by the field-manipulation stages (not a stage itself): config checks for the
//! field names a stage writes, and per-value text mapping that keeps a field's shape.

use serde_json::Value;

use super::StageFailure;
use crate::config::{ComponentConfig, ConfigError};
use crate::document::{is_reserved, Document, DocumentError};

/// The `destination` a stage writes, defaulting to its source field (in place); whichever is
/// written is checked with [`check_writable`].
pub fn destination_or(
    config: &ComponentConfig,
    destination: Option<String>,
    source: &str,
) -> Result<String, ConfigError> {
    match destination {
        Some(d) => {
            check_writable(config, "destination", &d)?;
            Ok(d)
        }
        None => {
            check_writable(config, "source", source)?;
            Ok(source.to_string())
        }
    }
}

/// Rejects a field name that a stage would write, remove or rename: empty or reserved.
pub fn check_writable(config: &ComponentConfig, key: &str, field: &str) -> Result<(), ConfigError> {
    if field.is_empty() {
        Err(config.error(key, "field names must not be empty"))
    } else if is_reserved(field) {
        Err(config.error(
            key,
            format!("{field:?} is a reserved field and cannot be written, removed or renamed"),
        ))
    } else {
        Ok(())
    }
}

/// Checks the list of field names read from `key`: not empty, no empty name, and with
/// `writable` every name passes [`check_writable`].
pub fn check_fields(
    config: &ComponentConfig,
    key: &str,
    fields: &[String],
    writable: bool,
) -> Result<(), ConfigError> {
    if fields.is_empty() {
        return Err(config.error(key, "needs at least one field"));
    }
    for f in fields {
        if writable {
            check_writable(config, key, f)?;
        } else if f.is_empty() {
            return Err(config.error(key, "field names must not be empty"));
        }
    }
    Ok(())
}

/// Checks the `source: destination` pairs read from `key`: not empty, destinations writable,
/// and sources too when `writable_sources` (a rename removes its source).
pub fn check_mapping(
    config: &ComponentConfig,
    key: &str,
    pairs: &[(String, String)],
    writable_sources: bool,
) -> Result<(), ConfigError> {
    if pairs.is_empty() {
        return Err(config.error(key, "needs at least one source-destination pair"));
    }
    for (source, dest) in pairs {
        if writable_sources {
            check_writable(config, key, source)?;
        } else if source.is_empty() {
            return Err(config.error(key, "field names must not be empty"));
        }
        check_writable(config, key, dest)?;
    }
    Ok(())
}

/// A short name for a JSON value's type, for messages.
pub fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The error for a value that a text stage cannot treat as text.
pub fn not_text(doc: &Document, field: &str, value: &Value) -> StageFailure {
    StageFailure::Document(DocumentError::TypeMismatch {
        id: doc.id().to_string(),
        field: field.to_string(),
        expected: "text",
        found: kind_name(value),
    })
}

/// Applies `f` to one scalar value: a string is mapped; a number, boolean or null is returned
/// unchanged; an object or a list is an error.
fn map_scalar(
    doc: &Document,
    field: &str,
    value: &Value,
    f: &impl Fn(&str) -> String,
) -> Result<Value, StageFailure> {
    match value {
        Value::String(s) => Ok(Value::String(f(s))),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(value.clone()),
        other => Err(not_text(doc, field, other)),
    }
}

/// The field's value with `f` applied to every string in it, keeping the field's shape (a
/// single value stays single, a list stays a list). Numbers, booleans and nulls are kept
/// unchanged; an object, or a list inside the list, fails. `None` if the field is absent.
pub fn map_text_field(
    doc: &Document,
    field: &str,
    f: impl Fn(&str) -> String,
) -> Result<Option<Value>, StageFailure> {
    let Some(value) = doc.get(field) else {
        return Ok(None);
    };
    let mapped = match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| map_scalar(doc, field, v, &f))
                .collect::<Result<_, _>>()?,
        ),
        v => map_scalar(doc, field, v, &f)?,
    };
    Ok(Some(mapped))
}

/// Every value of the field with `f` applied to its strings (see [`map_text_field`]), as a list.
pub fn map_text_values(
    doc: &Document,
    field: &str,
    f: impl Fn(&str) -> String,
) -> Result<Vec<Value>, StageFailure> {
    doc.values(field)
        .iter()
        .map(|v| map_scalar(doc, field, v, &f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_strings_keeping_shape_and_scalars() {
        let doc = Document::from_value(
            json!({"id": "d", "a": "x", "l": ["x", 1, null, true], "o": {"k": 1}, "n": [["x"]]}),
        )
        .unwrap();
        let up = |s: &str| s.to_uppercase();
        assert_eq!(map_text_field(&doc, "a", up).unwrap(), Some(json!("X")));
        assert_eq!(
            map_text_field(&doc, "l", up).unwrap(),
            Some(json!(["X", 1, null, true]))
        );
        assert_eq!(map_text_field(&doc, "missing", up).unwrap(), None);
        let err = map_text_field(&doc, "o", up).unwrap_err().to_string();
        assert!(err.contains("an object") && err.contains("\"o\""), "{err}");
        assert!(map_text_field(&doc, "n", up).is_err());
        assert_eq!(map_text_values(&doc, "a", up).unwrap(), vec![json!("X")]);
        assert!(map_text_values(&doc, "missing", up).unwrap().is_empty());
    }
}
