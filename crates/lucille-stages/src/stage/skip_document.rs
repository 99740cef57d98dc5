//! SkipDocument: marks documents skipped, so they bypass the remaining stages but are still
//! indexed. Meant to be used with `conditions`, e.g. for delete requests that must reach the
//! indexer untouched. No keys of its own.

use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "SkipDocument",
    spec: SkipDocumentOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Marks documents skipped: they bypass the remaining stages and are still indexed (with
/// `conditions`, e.g. delete requests that must reach the indexer untouched).
#[derive(Options)]
#[options(base = Spec::stage())]
struct SkipDocumentOptions {}

struct SkipDocument;

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    SkipDocumentOptions::from_config(config)?;
    Ok(Box::new(SkipDocument))
}

impl Stage for SkipDocument {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        doc.set_skipped(true);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn skips_and_keeps_fields() {
        let mut s = build_stage(json!({"class": "SkipDocument"}));
        let out = process(&mut s, json!({"id": "d", "a": 1}));
        assert!(out.is_skipped());
        assert!(!out.is_dropped());
        assert_eq!(out.get("a"), Some(&json!(1)));
    }

    #[test]
    fn has_no_keys() {
        assert!(build_err(json!({"class": "SkipDocument", "percentage": 1})).contains("percentage"));
    }
}
