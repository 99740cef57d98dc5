//! RenameFields: renames fields.
//!
//! Keys: `fieldMapping { old: new }` (at least one pair), `updateMode` (what happens when `new`
//! already exists: overwrite replaces it, append adds the old field's values to it, skip keeps
//! it and drops the old field, as Lucille; default overwrite), `applyToChildren` (also rename in
//! the attached children, recursively; default false). A missing source is skipped.
//!
//! Pairs are applied in config order (Lucille's map has no defined order), so `a: b, b: c`
//! moves `a` to `c`. Reserved fields (`id`, `run_id`, ...) cannot be renamed or be renamed to:
//! a config error, where Lucille fails each document.

use super::field_util::check_mapping;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "RenameFields",
    spec: RenameFieldsOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Renames fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct RenameFieldsOptions {
    /// `{ old: new }`, applied in order.
    field_mapping: Vec<(String, String)>,
    /// When `new` already exists: overwrite replaces it, append adds the old field's values,
    /// skip keeps it and drops the old field.
    #[option(default)]
    update_mode: UpdateMode,
    /// Also rename in the attached children, recursively.
    #[option(default)]
    apply_to_children: bool,
}

struct RenameFields {
    pairs: Vec<(String, String)>,
    mode: UpdateMode,
    apply_to_children: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = RenameFieldsOptions::from_config(config)?;
    check_mapping(config, "fieldMapping", &o.field_mapping, true)?;
    Ok(Box::new(RenameFields {
        pairs: o.field_mapping,
        mode: o.update_mode,
        apply_to_children: o.apply_to_children,
    }))
}

impl RenameFields {
    fn rename(&self, doc: &mut Document) -> Result<(), StageFailure> {
        for (old, new) in &self.pairs {
            doc.rename_field(old, new, self.mode)?;
        }
        if self.apply_to_children && doc.has_children() {
            let mut children = doc.take_children();
            // Re-attach every child even if one fails, so the document is not left without them.
            let result = children.iter_mut().try_for_each(|c| self.rename(c));
            for child in children {
                doc.add_child(child);
            }
            result?;
        }
        Ok(())
    }
}

impl Stage for RenameFields {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        self.rename(doc)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn renames_in_order_and_skips_missing() {
        let mut s = build_stage(
            json!({"class": "RenameFields", "fieldMapping": {"a": "b", "b": "c", "x": "y"}}),
        );
        let out = process(&mut s, json!({"id": "d", "a": [1, 2], "k": "v"}));
        assert_eq!(out.to_json(), r#"{"id":"d","k":"v","c":[1,2]}"#);
    }

    #[test]
    fn update_modes() {
        let doc = json!({"id": "d", "a": ["x", "y"], "b": "old"});
        let mut s = build_stage(json!({"class": "RenameFields", "fieldMapping": {"a": "b"}}));
        assert_eq!(
            process(&mut s, doc.clone()).get("b"),
            Some(&json!(["x", "y"]))
        );
        let mut s = build_stage(
            json!({"class": "RenameFields", "fieldMapping": {"a": "b"}, "updateMode": "append"}),
        );
        assert_eq!(
            process(&mut s, doc.clone()).get("b"),
            Some(&json!(["old", "x", "y"]))
        );
        let mut s = build_stage(
            json!({"class": "RenameFields", "fieldMapping": {"a": "b"}, "updateMode": "skip"}),
        );
        let out = process(&mut s, doc);
        assert_eq!(out.get("b"), Some(&json!("old")));
        assert!(!out.has("a"));
    }

    #[test]
    fn apply_to_children() {
        let doc = json!({"id": "p", "a": 1, "___children": [
            {"id": "c1", "a": 2, "___children": [{"id": "g", "a": 3}]},
            {"id": "c2", "z": 0}
        ]});
        let mut s = build_stage(json!({"class": "RenameFields", "fieldMapping": {"a": "b"}}));
        let out = process(&mut s, doc.clone());
        assert_eq!(out.children()[0].get("a"), Some(&json!(2)));

        let mut s = build_stage(
            json!({"class": "RenameFields", "fieldMapping": {"a": "b"}, "applyToChildren": true}),
        );
        let out = process(&mut s, doc);
        assert_eq!(out.get("b"), Some(&json!(1)));
        let children = out.children();
        assert_eq!(children.len(), 2);
        assert_eq!(children[0].id(), "c1");
        assert_eq!(children[0].get("b"), Some(&json!(2)));
        assert!(!children[0].has("a"));
        assert_eq!(children[0].children()[0].get("b"), Some(&json!(3)));
        assert_eq!(children[1].get("z"), Some(&json!(0)));
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "RenameFields"})).contains("fieldMapping"));
        assert!(
            build_err(json!({"class": "RenameFields", "fieldMapping": {}}))
                .contains("at least one")
        );
        let err = build_err(json!({"class": "RenameFields", "fieldMapping": {"a": "id"}}));
        assert!(
            err.contains("fieldMapping") && err.contains("reserved"),
            "{err}"
        );
        assert!(
            build_err(json!({"class": "RenameFields", "fieldMapping": {"run_id": "x"}}))
                .contains("reserved")
        );
        assert!(build_err(
            json!({"class": "RenameFields", "fieldMapping": {"a": "b"}, "updateMode": "x"})
        )
        .contains("updateMode"));
        assert!(build_err(
            json!({"class": "RenameFields", "fieldMapping": {"a": "b"}, "applyToChildren": "maybe"})
        )
        .contains("applyToChildren"));
        assert!(
            build_err(json!({"class": "RenameFields", "fieldMapping": {"a": ["b"]}}))
                .contains("fieldMapping")
        );
    }
}
