//! CollapseChildrenDocuments: copies fields of the children attached to a document
//! (`___children`) up to the document, as multi-valued fields (set if absent, else appended,
//! each child's values in child order).
//!
//! Keys: `fieldsToCopy` (a field or a list), `dropChildren` (required: detach the children
//! afterwards). A field a child lacks is skipped; a document without children is left alone.

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "CollapseChildrenDocuments",
    spec: CollapseChildrenDocumentsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Copies fields of a document's attached children (`___children`) up to the document, as
/// multi-valued fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct CollapseChildrenDocumentsOptions {
    /// The fields copied from each child (set if absent, else appended, in child order).
    fields_to_copy: Strings,
    /// Detach the children afterwards.
    drop_children: bool,
}

struct CollapseChildrenDocuments {
    fields: Vec<String>,
    drop_children: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = CollapseChildrenDocumentsOptions::from_config(config)?;
    let errors: Vec<_> = o
        .fields_to_copy
        .iter()
        .filter_map(|f| check_writable(config, "fieldsToCopy", f).err())
        .collect();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(CollapseChildrenDocuments {
        fields: o.fields_to_copy.into(),
        drop_children: o.drop_children,
    }))
}

impl Stage for CollapseChildrenDocuments {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.has_children() {
            return Ok(None);
        }
        let children = if self.drop_children {
            doc.take_children()
        } else {
            doc.children()
        };
        for child in &children {
            for field in &self.fields {
                doc.set_or_add_from(field, child)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::document::Document;
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    fn parent() -> serde_json::Value {
        let mut p = Document::from_value(json!({"id": "p", "a": "mine"})).unwrap();
        p.add_child(Document::from_value(json!({"id": "c1", "a": 1, "b": ["x", "y"]})).unwrap());
        p.add_child(Document::from_value(json!({"id": "c2", "a": 2, "c": true})).unwrap());
        p.into_value()
    }

    #[test]
    fn collapses_and_drops_children() {
        let mut s = build_stage(json!({"class": "CollapseChildrenDocuments",
            "fieldsToCopy": ["a", "b", "c"], "dropChildren": true}));
        let out = process(&mut s, parent());
        assert_eq!(out.get("a"), Some(&json!(["mine", 1, 2])));
        assert_eq!(out.get("b"), Some(&json!(["x", "y"])));
        assert_eq!(out.get("c"), Some(&json!(true)));
        assert!(!out.has_children());
    }

    #[test]
    fn keeps_children_when_asked_and_ignores_childless() {
        let mut s = build_stage(json!({"class": "CollapseChildrenDocuments",
            "fieldsToCopy": "b", "dropChildren": false}));
        let out = process(&mut s, parent());
        assert_eq!(out.get("b"), Some(&json!(["x", "y"])));
        assert_eq!(out.children().len(), 2);
        let out = process(&mut s, json!({"id": "p", "b": 1}));
        assert_eq!(out.get("b"), Some(&json!(1)));
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "CollapseChildrenDocuments", "fieldsToCopy": ["a"]}))
                .contains("dropChildren")
        );
        assert!(
            build_err(json!({"class": "CollapseChildrenDocuments", "dropChildren": true}))
                .contains("fieldsToCopy")
        );
        assert!(build_err(json!({"class": "CollapseChildrenDocuments",
            "fieldsToCopy": ["run_id"], "dropChildren": true}))
        .contains("reserved"));
    }
}
