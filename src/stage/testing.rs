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

/// Test-only stages the registry resolves in unit tests (never in a shipped build).
pub fn test_descriptors() -> &'static [&'static super::StageDescriptor] {
    static ALL: &[&super::StageDescriptor] = &[&PANIC_ON, &SLEEP_ON];
    ALL
}

/// `TestPanicOn { field, value }`: panics when the document's field has that value.
pub static PANIC_ON: super::StageDescriptor = super::StageDescriptor {
    name: "TestPanicOn",
    spec: || {
        crate::config::Spec::stage()
            .required("field", crate::config::Kind::String)
            .required("value", crate::config::Kind::String)
    },
    build: |config| {
        let field = config.require_string("field")?;
        let value = config.require_string("value")?;
        Ok(Box::new(PanicOn { field, value }))
    },
};

struct PanicOn {
    field: String,
    value: String,
}

impl Stage for PanicOn {
    fn process_document(&mut self, doc: &mut Document) -> super::StageResult {
        if doc.get_string(&self.field)?.as_deref() == Some(self.value.as_str()) {
            panic!("TestPanicOn hit {:?}", self.value);
        }
        Ok(None)
    }
}

/// `TestSleepOn { field, value, millis, untilFile? }`: sleeps that long when the document's
/// field has that value, or until file `untilFile` exists (a stage that does not return, for
/// `worker.maxProcessingSecs`).
pub static SLEEP_ON: super::StageDescriptor = super::StageDescriptor {
    name: "TestSleepOn",
    spec: || {
        crate::config::Spec::stage()
            .required("field", crate::config::Kind::String)
            .required("value", crate::config::Kind::String)
            .required("millis", crate::config::Kind::Integer)
            .optional("untilFile", crate::config::Kind::String)
    },
    build: |config| {
        let field = config.require_string("field")?;
        let value = config.require_string("value")?;
        let millis = config.i64("millis")?.unwrap_or(0).max(0) as u64;
        let until = config.string("untilFile")?.map(std::path::PathBuf::from);
        Ok(Box::new(SleepOn {
            field,
            value,
            millis,
            until,
        }))
    },
};

struct SleepOn {
    field: String,
    value: String,
    millis: u64,
    until: Option<std::path::PathBuf>,
}

impl Stage for SleepOn {
    fn process_document(&mut self, doc: &mut Document) -> super::StageResult {
        if doc.get_string(&self.field)?.as_deref() == Some(self.value.as_str()) {
            let end = std::time::Instant::now() + std::time::Duration::from_millis(self.millis);
            while std::time::Instant::now() < end
                && !self.until.as_ref().is_some_and(|p| p.exists())
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        Ok(None)
    }
}
