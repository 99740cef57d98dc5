//! HashFieldValueToBucket: assigns each document to one of a fixed list of buckets (shards,
//! routes, test groups) by hashing a field's value.
//!
//! Keys: `fieldName` (the field hashed), `dest` (receives the bucket label, overwriting),
//! `buckets` (the labels; at least one).
//!
//! The hash is Java's `String.hashCode` (the 32-bit polynomial over UTF-16 units, a fixed
//! function with no seed), and the bucket is `|hash % buckets|` with Java's remainder, exactly
//! as Lucille computes it. So the same value lands in the same bucket on every run and machine,
//! and in the same bucket Lucille would choose: an index sharded by Lucille keeps its routing.
//!
//! Lucille's code hashes the document id whatever `fieldName` says; here `fieldName` is honoured
//! (with `fieldName: id`, the usual setting, the two agree). Its first value is read as text
//! (numbers and booleans as their JSON text); a missing or null value writes no bucket, and an
//! object fails the document.

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "HashFieldValueToBucket",
    spec: HashFieldValueToBucketOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Assigns each document to one of a fixed list of buckets by hashing a field's value
/// (Java's String.hashCode, as Lucille).
#[derive(Options)]
#[options(base = Spec::stage())]
struct HashFieldValueToBucketOptions {
    /// The field whose first value is hashed.
    field_name: String,
    /// The field the bucket's label is written to, overwriting.
    dest: String,
    /// The bucket labels (at least one).
    buckets: Vec<String>,
}

struct HashFieldValueToBucket {
    field: String,
    dest: String,
    buckets: Vec<String>,
    count: i32,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = HashFieldValueToBucketOptions::from_config(config)?;
    let mut errors = Vec::new();
    if o.field_name.is_empty() {
        errors.push(config.error("fieldName", "must not be empty"));
    }
    if let Err(e) = check_writable(config, "dest", &o.dest) {
        errors.push(e);
    }
    let count = if o.buckets.is_empty() {
        errors.push(config.error("buckets", "needs at least one bucket"));
        None
    } else {
        i32::try_from(o.buckets.len())
            .map_err(|_| errors.push(config.error("buckets", "has too many buckets")))
            .ok()
    };
    let (Some(count), true) = (count, errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(Box::new(HashFieldValueToBucket {
        field: o.field_name,
        dest: o.dest,
        buckets: o.buckets,
        count,
    }))
}

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 units, wrapping.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The bucket index Lucille computes: `Math.abs(hash % count)`.
fn bucket_index(s: &str, count: i32) -> usize {
    // `%` truncates like Java's, and |hash % count| < count, so this cannot overflow.
    (java_string_hash(s) % count).unsigned_abs() as usize
}

impl Stage for HashFieldValueToBucket {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some(value) = doc.get_string(&self.field)? else {
            return Ok(None);
        };
        let index = bucket_index(&value, self.count);
        if let Some(bucket) = self.buckets.get(index) {
            doc.set_field(&self.dest, bucket.as_str())?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{bucket_index, java_string_hash};
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    #[test]
    fn java_hash_values() {
        // Values of "...".hashCode() in Java.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("id"), 3355);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("ﬁ😀"), 63_523_876);
        assert_eq!(bucket_index("polygenelubricants", 4), 0);
        assert_eq!(bucket_index("polygenelubricants", 3), 2);
    }

    fn stage(field: &str) -> Box<dyn crate::stage::Stage> {
        build_stage(
            json!({"class": "HashFieldValueToBucket", "fieldName": field, "dest": "bucket",
            "buckets": ["shard1", "shard2", "shard3", "shard4"]}),
        )
    }

    #[test]
    fn same_bucket_as_lucille() {
        let mut s = stage("id");
        assert_eq!(
            process(&mut s, json!({"id": "id"})).get("bucket"),
            Some(&json!("shard4"))
        );
        assert_eq!(
            process(&mut s, json!({"id": "doc1"})).get("bucket"),
            Some(&json!("shard2"))
        );
        assert_eq!(
            process(&mut s, json!({"id": "polygenelubricants", "bucket": "old"})).get("bucket"),
            Some(&json!("shard1"))
        );
    }

    #[test]
    fn hashes_the_named_field() {
        let mut s = stage("key");
        let out = process(&mut s, json!({"id": "x", "key": ["hello", "other"]}));
        assert_eq!(out.get("bucket"), Some(&json!("shard3")));
        let out = process(&mut s, json!({"id": "x", "key": 3355}));
        assert_eq!(
            out.get("bucket"),
            Some(&json!(format!(
                "shard{}",
                1 + (java_string_hash("3355") % 4).unsigned_abs()
            )))
        );
        assert!(!process(&mut s, json!({"id": "x"})).has("bucket"));
        assert!(!process(&mut s, json!({"id": "x", "key": null})).has("bucket"));
        let err = process_err(&mut s, json!({"id": "x", "key": {"a": 1}}));
        assert!(err.contains("\"key\""), "{err}");
    }

    #[test]
    fn spreads_over_buckets() {
        let mut s = stage("id");
        let mut counts = std::collections::HashMap::new();
        for i in 0..400 {
            let out = process(&mut s, json!({"id": format!("doc-{i}")}));
            *counts
                .entry(out.get_str("bucket").unwrap().to_string())
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 4, "{counts:?}");
        assert!(counts.values().all(|n| *n > 50), "{counts:?}");
    }

    #[test]
    fn bad_configs() {
        let ok = json!({"class": "HashFieldValueToBucket", "fieldName": "id", "dest": "b", "buckets": ["x"]});
        for key in ["fieldName", "dest", "buckets"] {
            let mut cfg = ok.clone();
            cfg.as_object_mut().map(|m| m.remove(key));
            assert!(build_err(cfg).contains(key), "{key}");
        }
        let mut cfg = ok.clone();
        cfg["buckets"] = json!([]);
        assert!(build_err(cfg).contains("at least one"));
        let mut cfg = ok.clone();
        cfg["fieldName"] = json!("");
        assert!(build_err(cfg).contains("fieldName"));
        let mut cfg = ok.clone();
        cfg["dest"] = json!("");
        assert!(build_err(cfg).contains("dest"));
        let mut cfg = ok;
        cfg["buckets"] = json!("x");
        assert!(build_err(cfg).contains("buckets"));
    }
}
