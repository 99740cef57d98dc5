//! ComputeFieldSize: writes the size in bytes of a binary field.
//!
//! Keys: `source` (a field holding bytes, stored as base64 text as `Document::set_bytes` and
//! Lucille's JSON form do), `dest` (receives the decoded byte count as an integer, overwriting;
//! `destination`, the name Lucille's documentation uses, is accepted as another spelling).
//!
//! As in Lucille, the first value is measured, a missing source is skipped, and a value that is
//! not base64 bytes (plain text, a number, null, an object) fails the document.

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ComputeFieldSize",
    spec: ComputeFieldSizeOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes the size in bytes of a binary field.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ComputeFieldSizeOptions {
    /// The field holding bytes (base64 text); its first value is measured.
    source: String,
    /// The field the byte count is written to, overwriting (`destination` is accepted too).
    #[option(alias = "destination")]
    dest: String,
}

struct ComputeFieldSize {
    source: String,
    dest: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ComputeFieldSizeOptions::from_config(config)?;
    check_writable(config, "dest", &o.dest)?;
    Ok(Box::new(ComputeFieldSize {
        source: o.source,
        dest: o.dest,
    }))
}

impl Stage for ComputeFieldSize {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.has(&self.source) {
            return Ok(None);
        }
        let Some(bytes) = doc.get_bytes(&self.source)? else {
            return Err(StageFailure::msg(format!(
                "field {:?} of document {:?} holds no bytes (null or an empty list)",
                self.source,
                doc.id()
            )));
        };
        doc.set_field(&self.dest, bytes.len())?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::document::Document;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn with_bytes(n: usize) -> serde_json::Value {
        let mut d = Document::new("d").unwrap();
        d.set_bytes("source", &vec![7u8; n]).unwrap();
        d.set_field("destination", "default").unwrap();
        d.into_value()
    }

    #[test]
    fn computes_decoded_sizes() {
        let mut s = build_stage(
            json!({"class": "ComputeFieldSize", "source": "source", "dest": "destination"}),
        );
        for n in [0, 5, 10, 1000] {
            let out = process(&mut s, with_bytes(n));
            assert_eq!(out.get("destination"), Some(&json!(n)), "{n} bytes");
        }
        let out = process(&mut s, json!({"id": "d", "source": ["aGVsbG8=", "eA=="]}));
        assert_eq!(out.get("destination"), Some(&json!(5)));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.to_json(), r#"{"id":"d"}"#);
    }

    #[test]
    fn destination_spelling_is_accepted() {
        let mut s = build_stage(
            json!({"class": "ComputeFieldSize", "source": "source", "destination": "size"}),
        );
        assert_eq!(process(&mut s, with_bytes(3)).get("size"), Some(&json!(3)));
    }

    #[test]
    fn non_bytes_fail() {
        let mut s =
            build_stage(json!({"class": "ComputeFieldSize", "source": "source", "dest": "size"}));
        let err = process_err(&mut s, json!({"id": "d", "source": "string"}));
        assert!(
            err.contains("base64") && err.contains("\"source\""),
            "{err}"
        );
        let err = process_err(&mut s, json!({"id": "d", "source": 12}));
        assert!(err.contains("base64"), "{err}");
        let err = process_err(&mut s, json!({"id": "d", "source": null}));
        assert!(err.contains("no bytes"), "{err}");
        let err = process_err(&mut s, json!({"id": "d", "source": {"a": 1}}));
        assert!(err.contains("object"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "ComputeFieldSize", "dest": "x"})).contains("source"));
        assert!(build_err(json!({"class": "ComputeFieldSize", "source": "x"})).contains("dest"));
        assert!(
            build_err(json!({"class": "ComputeFieldSize", "source": "x", "dest": "id"}))
                .contains("reserved")
        );
        assert!(build_err(
            json!({"class": "ComputeFieldSize", "source": "x", "dest": "a", "destination": "b"})
        )
        .contains("older name"));
    }
}
