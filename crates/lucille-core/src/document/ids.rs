//! Deterministic document ids: re-running an ingest must produce the same ids, so
//! connectors derive them from the source (a path hash, a primary key) and children from their
//! parent's id and position.

use md5::{Digest, Md5};

/// Lower-case hex MD5 of the text, as the FileConnector uses for a file's full path.
pub fn md5_hex(text: &str) -> String {
    hex(&Md5::digest(text.as_bytes()))
}

/// Lower-case hex of bytes (a digest).
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    out
}

/// The id text of a source value (a key column, an id field): a non-empty string as it is, a
/// number or boolean as its JSON text; `None` for anything else.
pub fn id_text(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A connector's `docIdPrefix` followed by the source id.
pub fn with_prefix(prefix: Option<&str>, id: &str) -> String {
    match prefix {
        Some(p) if !p.is_empty() => format!("{p}{id}"),
        _ => id.to_string(),
    }
}

/// The id of the `number`-th child (1-based) of a parent, e.g. `doc1-3`, as ChunkText does.
pub fn child_id(parent_id: &str, number: usize) -> String {
    format!("{parent_id}-{number}")
}

/// A random UUID for sources with no natural key; ids made this way are not stable across runs.
pub fn random_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_matches_known_digests() {
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            md5_hex("The quick brown fox jumps over the lazy dog"),
            "9e107d9d372bb6826bd81d3542a419d6"
        );
        assert_eq!(md5_hex("hello"), "5d41402abc4b2a76b9719d911017c592");
    }

    #[test]
    fn prefix_and_child_ids() {
        assert_eq!(with_prefix(Some("file-"), "abc"), "file-abc");
        assert_eq!(with_prefix(None, "abc"), "abc");
        assert_eq!(with_prefix(Some(""), "abc"), "abc");
        assert_eq!(child_id("doc1", 1), "doc1-1");
        assert_eq!(child_id("doc1", 12), "doc1-12");
    }

    #[test]
    fn random_ids_differ() {
        let a = random_id();
        assert_eq!(a.len(), 36);
        assert_ne!(a, random_id());
    }
}
