//! EmitNestedChildren: detaches the children attached to a document (`___children`, as added
//! by `add_child` or a connector) and emits them as documents of their own, which flow through
//! the stages after this one.
//!
//! Keys: `dropParent` (default false: mark the parent dropped once it has children to emit),
//! `fieldsToCopy { parentField: childField }` (copied from the parent to every child, keeping
//! JSON types; a field the parent lacks is skipped), `updateMode` (how copied fields are
//! written to the children: overwrite, append, skip; default overwrite).
//!
//! A document without attached children is left alone (and not dropped), as in Lucille.
//! Writing to a reserved child field is a config error here.

use serde_json::Value;

use super::{children_from, Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "EmitNestedChildren",
    spec: EmitNestedChildrenOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Detaches a document's attached children (`___children`) and emits them as documents of
/// their own, which flow through the later stages.
#[derive(Options)]
#[options(base = Spec::stage())]
struct EmitNestedChildrenOptions {
    /// Mark the parent dropped once it has children to emit.
    #[option(default)]
    drop_parent: bool,
    /// Parent fields copied to every child (`{ parentField: childField }`; a field the parent
    /// lacks is skipped).
    fields_to_copy: Option<Vec<(String, String)>>,
    /// How copied fields are written to the children.
    #[option(default)]
    update_mode: UpdateMode,
}

struct EmitNestedChildren {
    drop_parent: bool,
    fields: Vec<(String, String)>,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = EmitNestedChildrenOptions::from_config(config)?;
    let fields = o.fields_to_copy.unwrap_or_default();
    let errors: Vec<_> = fields
        .iter()
        .filter(|(_, dest)| dest.is_empty() || crate::document::is_reserved(dest))
        .map(|(source, dest)| {
            config.error(
                "fieldsToCopy",
                format!("{source:?} cannot be copied to {dest:?}: it is reserved or empty"),
            )
        })
        .collect();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let mode = o.update_mode;
    Ok(Box::new(EmitNestedChildren {
        drop_parent: o.drop_parent,
        fields,
        mode,
    }))
}

impl Stage for EmitNestedChildren {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.has_children() {
            return Ok(None);
        }
        let mut children = doc.take_children();
        for (source, dest) in &self.fields {
            let Some(value) = doc.get(source) else {
                continue;
            };
            let values: Vec<Value> = match value {
                Value::Array(items) => items.clone(),
                v => vec![v.clone()],
            };
            for child in &mut children {
                child.update(dest, self.mode, values.iter().cloned())?;
            }
        }
        if self.drop_parent {
            doc.set_dropped(true);
        }
        Ok(Some(children_from(children)))
    }
}

#[cfg(test)]
mod tests {
    use crate::document::Document;
    use crate::stage::testing::{build_err, build_stage, process, process_children};
    use serde_json::json;

    fn parent_with_children() -> serde_json::Value {
        let mut p =
            Document::from_value(json!({"id": "p", "title": "T", "tags": ["a", "b"]})).unwrap();
        p.add_child(Document::from_value(json!({"id": "c1", "tags": "x"})).unwrap());
        p.add_child(Document::new("c2").unwrap());
        p.into_value()
    }

    #[test]
    fn emits_and_detaches_children() {
        let mut s = build_stage(json!({"class": "EmitNestedChildren"}));
        let (parent, children) = process_children(&mut s, parent_with_children());
        assert!(!parent.has_children());
        assert!(!parent.is_dropped());
        let ids: Vec<_> = children.iter().map(|c| c.id()).collect();
        assert_eq!(ids, ["c1", "c2"]);
        let out = process(&mut s, json!({"id": "lonely"}));
        assert!(!out.is_dropped());
    }

    #[test]
    fn copies_fields_and_drops_parent() {
        let mut s = build_stage(json!({"class": "EmitNestedChildren", "dropParent": true,
            "fieldsToCopy": {"title": "parent_title", "tags": "tags", "absent": "x"}}));
        let (parent, children) = process_children(&mut s, parent_with_children());
        assert!(parent.is_dropped());
        assert_eq!(children[0].get("parent_title"), Some(&json!("T")));
        assert_eq!(children[0].get("tags"), Some(&json!(["a", "b"])));
        assert_eq!(children[1].get("tags"), Some(&json!(["a", "b"])));
        assert!(!children[0].has("x"));

        let mut s = build_stage(
            json!({"class": "EmitNestedChildren", "updateMode": "append",
            "fieldsToCopy": {"tags": "tags"}}),
        );
        let (_, children) = process_children(&mut s, parent_with_children());
        assert_eq!(children[0].get("tags"), Some(&json!(["x", "a", "b"])));
        let mut s = build_stage(json!({"class": "EmitNestedChildren", "updateMode": "skip",
            "fieldsToCopy": {"tags": "tags"}}));
        let (_, children) = process_children(&mut s, parent_with_children());
        assert_eq!(children[0].get("tags"), Some(&json!("x")));

        let mut s = build_stage(json!({"class": "EmitNestedChildren", "dropParent": true}));
        assert!(
            !process(&mut s, json!({"id": "lonely"})).is_dropped(),
            "no children: the parent is kept"
        );
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "EmitNestedChildren", "fieldsToCopy": {"a": "id"}}))
                .contains("reserved")
        );
        assert!(
            build_err(json!({"class": "EmitNestedChildren", "fieldsToCopy": ["a"]}))
                .contains("fieldsToCopy")
        );
        assert!(
            build_err(json!({"class": "EmitNestedChildren", "dropParent": "x"}))
                .contains("dropParent")
        );
    }
}
