//! Parsing a JSON object into a document's field map, pre-sized.
//!
//! serde_json builds every object from an empty map, so a record of a dozen fields grows its
//! entry vector and hash table three times while parsing (a tenth of a whole run's CPU under
//! perf), and again when stages add fields. Sources of many similar records know roughly how
//! many fields the next one has; [`ObjectParser`] sizes the top-level map for that (nested
//! values are parsed as serde_json does).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::Fields;

/// Room left for the fields stages typically add to a record.
const HEADROOM: usize = 8;

/// Parses JSON objects, sizing each map from the field count of the previous one (shared by
/// threads: the hint is only a hint, so relaxed atomics do).
#[derive(Debug, Default)]
pub struct ObjectParser {
    last_len: AtomicUsize,
}

/// What a parsed line was when it was not an object.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("invalid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A JSON value of this kind ("an array", "a string", ...).
    #[error("expected a JSON object, found {0}")]
    NotAnObject(&'static str),
}

impl ObjectParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `bytes` as one JSON object (surrounding whitespace allowed).
    pub fn parse(&self, text: &str) -> Result<Fields, ParseError> {
        let capacity = self.last_len.load(Ordering::Relaxed) + HEADROOM;
        let map = read_object(text, SizedMap(capacity))?;
        self.last_len.store(map.len(), Ordering::Relaxed);
        Ok(map)
    }
}

/// What to make of a JSON object's entries (the rest of [`read_object`] is shared).
pub trait ObjectReader<'de> {
    type Out;
    fn read<A: MapAccess<'de>>(self, entries: A) -> Result<Self::Out, A::Error>;
}

/// Reads `text` as one JSON object with `reader`; any other JSON value is an error naming
/// its kind (consumed as serde_json would, so errors are positioned the same way). Text, not
/// bytes: a `&str` is known UTF-8, so serde_json does not validate every string again.
pub fn read_object<'de, R: ObjectReader<'de>>(
    text: &'de str,
    reader: R,
) -> Result<R::Out, ParseError> {
    let mut de = serde_json::Deserializer::from_str(text);
    match ObjectOnly(reader)
        .deserialize(&mut de)
        .and_then(|r| de.end().map(|()| r))
    {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(kind)) => Err(ParseError::NotAnObject(kind)),
        Err(e) => Err(ParseError::Json(e)),
    }
}

/// The entries into a map of the given capacity; later duplicates win, as serde_json's own
/// map does.
struct SizedMap(usize);

impl<'de> ObjectReader<'de> for SizedMap {
    type Out = Fields;
    fn read<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Out, A::Error> {
        let mut map = super::fields_with_capacity(self.0);
        while let Some((k, v)) = entries.next_entry::<String, Value>()? {
            map.insert(k, v);
        }
        Ok(map)
    }
}

struct ObjectOnly<R>(R);

impl<'de, R: ObjectReader<'de>> DeserializeSeed<'de> for ObjectOnly<R> {
    type Value = Result<R::Out, &'static str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, R: ObjectReader<'de>> Visitor<'de> for ObjectOnly<R> {
    type Value = Result<R::Out, &'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Self::Value, A::Error> {
        self.0.read(access).map(Ok)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Err("an array"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err("a string"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err("a number"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err("a boolean"))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Err("null"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_objects_in_order_and_sizes_from_the_previous_one() {
        let p = ObjectParser::new();
        let m = p.parse(r#" {"id":"a","b":[1,{"c":2}],"a":null} "#).unwrap();
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"id":"a","b":[1,{"c":2}],"a":null}"#
        );
        assert_eq!(m.keys().collect::<Vec<_>>(), ["id", "b", "a"]);
        assert_eq!(
            p.last_len.load(Ordering::Relaxed),
            3,
            "the next map is sized from this one"
        );
        p.parse(r#"{"x":1}"#).unwrap();
        assert_eq!(p.last_len.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn duplicate_keys_keep_the_last_value_as_serde_json() {
        let p = ObjectParser::new();
        let ours = p.parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        let theirs: Value = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(serde_json::to_value(&ours).unwrap(), theirs);
        assert_eq!(theirs, json!({"a": 3, "b": 2}));
    }

    #[test]
    fn other_values_and_bad_json_are_errors_that_say_what_they_were() {
        let p = ObjectParser::new();
        for (text, want) in [
            ("[1, 2]", "expected a JSON object, found an array"),
            ("\"s\"", "expected a JSON object, found a string"),
            ("3.5", "expected a JSON object, found a number"),
            ("true", "expected a JSON object, found a boolean"),
            ("null", "expected a JSON object, found null"),
        ] {
            assert_eq!(p.parse(text).unwrap_err().to_string(), want);
        }
        let bad = p.parse(r#"{"a": 1"#).unwrap_err().to_string();
        assert!(bad.starts_with("invalid JSON: EOF"), "{bad}");
        let trailing = p.parse(r#"{"a": 1} x"#).unwrap_err().to_string();
        assert!(trailing.contains("trailing characters"), "{trailing}");
    }
}
