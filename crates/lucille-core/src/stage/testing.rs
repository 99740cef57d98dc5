//! Helpers for stage unit tests: build a stage from a JSON config as the pipeline would
//! (spec validation, aliases, constructor) and run documents through it.

use serde_json::Value;

use super::Stage;
use crate::document::Document;
use crate::pipeline::plan_stage;

fn plan(config: Value) -> Result<Box<dyn Stage>, String> {
    let Value::Object(map) = config else {
        return Err("config must be an object".into());
    };
    let join = |errs: Vec<crate::config::ConfigError>| {
        errs.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let plan = plan_stage(
        map,
        0,
        "stage",
        &std::sync::Arc::new(crate::config::PathContext::new(None)),
    )
    .map_err(join)?;
    let plan = plan.ok_or_else(|| "stage is disabled".to_string())?;
    let slot = plan.instantiate().map_err(|e| e.to_string())?;
    Ok(slot.into_stage())
}

/// Builds a stage, panicking with the config errors if it is invalid.
pub fn build_stage(config: Value) -> Box<dyn Stage> {
    match plan(config) {
        Ok(s) => s,
        Err(e) => panic!("stage config rejected: {e}"),
    }
}

/// The config errors of an invalid stage config, joined; panics if it is valid.
pub fn build_err(config: Value) -> String {
    match plan(config) {
        Ok(_) => panic!("stage config unexpectedly accepted"),
        Err(e) => e,
    }
}

/// Processes one document, asserting the stage succeeds and emits no children.
pub fn process(stage: &mut Box<dyn Stage>, doc: Value) -> Document {
    let (doc, children) = process_children(stage, doc);
    assert!(children.is_empty(), "unexpected children: {children:?}");
    doc
}

/// Processes one document, returning it and every child the stage emitted.
pub fn process_children(stage: &mut Box<dyn Stage>, doc: Value) -> (Document, Vec<Document>) {
    let mut doc = match Document::from_value(doc) {
        Ok(d) => d,
        Err(e) => panic!("bad test document: {e}"),
    };
    let children = match stage.process_document(&mut doc) {
        Ok(None) => Vec::new(),
        Ok(Some(it)) => it
            .map(|c| c.unwrap_or_else(|e| panic!("child failed: {e}")))
            .collect(),
        Err(e) => panic!("stage failed: {e}"),
    };
    (doc, children)
}

/// Processes one document, asserting the stage fails; returns the message.
pub fn process_err(stage: &mut Box<dyn Stage>, doc: Value) -> String {
    let mut doc = match Document::from_value(doc) {
        Ok(d) => d,
        Err(e) => panic!("bad test document: {e}"),
    };
    match stage.process_document(&mut doc) {
        Ok(Some(mut it)) => match it.find_map(Result::err) {
            Some(e) => e.to_string(),
            None => panic!("stage unexpectedly succeeded"),
        },
        Ok(None) => panic!("stage unexpectedly succeeded"),
        Err(e) => e.to_string(),
    }
}

/// Writes a file under a fresh temp folder and returns its path.
pub fn temp_file(name: &str, content: &[u8]) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lucille-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}
