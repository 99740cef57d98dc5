//! CreateChildrenStage: a testing stage that generates children, lazily.
//!
//! Keys: `numChildren` (default 3), `dropParent` (default false: mark the parent dropped),
//! `dropChild` (1-based number of one child to mark dropped), `failAfter` (fail the parent
//! once this many children have been generated: the children so far are kept, and the
//! generator stops). Children are empty documents with ids `<parentId>_child<N>` (N from 1),
//! as in Lucille, where the stage lives in the main source tree for manual tests.

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "CreateChildrenStage",
    spec: CreateChildrenStageOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// A testing stage that generates empty children (`<parentId>_child<N>`), lazily.
#[derive(Options)]
#[options(base = Spec::stage())]
struct CreateChildrenStageOptions {
    /// How many children each document gets.
    #[option(default = 3, min = 0)]
    num_children: i64,
    /// Mark the parent dropped.
    #[option(default)]
    drop_parent: bool,
    /// The number (from 1) of one child to mark dropped.
    drop_child: Option<usize>,
    /// Fail the parent once this many children have been generated (the children so far are
    /// kept, and the generator stops).
    fail_after: Option<usize>,
}

struct CreateChildrenStage {
    num_children: usize,
    drop_parent: bool,
    drop_child: Option<usize>,
    fail_after: Option<usize>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = CreateChildrenStageOptions::from_config(config)?;
    Ok(Box::new(CreateChildrenStage {
        // Not negative (checked by the options).
        num_children: usize::try_from(o.num_children).unwrap_or(0),
        drop_parent: o.drop_parent,
        drop_child: o.drop_child,
        fail_after: o.fail_after,
    }))
}

impl Stage for CreateChildrenStage {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if self.drop_parent {
            doc.set_dropped(true);
        }
        let parent = doc.id().to_string();
        let (total, drop_child, fail_after) = (self.num_children, self.drop_child, self.fail_after);
        let mut made = 0usize;
        let mut failed = false;
        Ok(Some(Box::new(std::iter::from_fn(move || {
            if failed || made >= total {
                return None;
            }
            if fail_after.is_some_and(|n| made >= n) {
                failed = true;
                return Some(Err(StageFailure::msg(format!(
                    "failing after {made} children, as configured by failAfter"
                ))));
            }
            made += 1;
            Some(
                Document::new(format!("{parent}_child{made}"))
                    .map(|mut child| {
                        if drop_child == Some(made) {
                            child.set_dropped(true);
                        }
                        child
                    })
                    .map_err(StageFailure::from),
            )
        }))))
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process_children, process_err};
    use serde_json::json;

    #[test]
    fn default_three_children() {
        let mut s = build_stage(json!({"class": "CreateChildrenStage"}));
        let (parent, children) = process_children(&mut s, json!({"id": "p"}));
        assert!(!parent.is_dropped());
        let ids: Vec<_> = children.iter().map(|c| c.id().to_string()).collect();
        assert_eq!(ids, ["p_child1", "p_child2", "p_child3"]);
        assert!(children.iter().all(|c| !c.is_dropped()));
    }

    #[test]
    fn drop_parent_drop_child_and_count() {
        let mut s = build_stage(json!({"class": "CreateChildrenStage", "numChildren": 5,
            "dropParent": true, "dropChild": 2}));
        let (parent, children) = process_children(&mut s, json!({"id": "p"}));
        assert!(parent.is_dropped());
        assert_eq!(children.len(), 5);
        let dropped: Vec<_> = children.iter().map(|c| c.is_dropped()).collect();
        assert_eq!(dropped, [false, true, false, false, false]);
        let mut none = build_stage(json!({"class": "CreateChildrenStage", "numChildren": 0}));
        assert!(process_children(&mut none, json!({"id": "p"})).1.is_empty());
    }

    #[test]
    fn fail_after_fails_the_parent_lazily() {
        let mut s = build_stage(json!({"class": "CreateChildrenStage", "numChildren": 10,
            "failAfter": 2}));
        let mut doc = crate::document::Document::new("p").unwrap();
        let mut it = s.process_document(&mut doc).unwrap().unwrap();
        assert_eq!(it.next().unwrap().unwrap().id(), "p_child1");
        assert_eq!(it.next().unwrap().unwrap().id(), "p_child2");
        let err = it.next().unwrap().unwrap_err().to_string();
        assert!(err.contains("failAfter"), "{err}");
        assert!(it.next().is_none(), "the generator stops after failing");
        let err = process_err(&mut s, json!({"id": "q"}));
        assert!(err.contains("after 2 children"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "CreateChildrenStage", "numChildren": -1}))
                .contains("numChildren")
        );
        assert!(
            build_err(json!({"class": "CreateChildrenStage", "failAfter": "x"}))
                .contains("failAfter")
        );
        assert!(
            build_err(json!({"class": "CreateChildrenStage", "dropChild": 1.5}))
                .contains("dropChild")
        );
    }
}
