//! Stages: one focused operation on a document. A stage modifies the document in
//! place and may return a lazy iterator of child documents; conditions, drop/skip handling,
//! metrics, panics and error context are the pipeline's job, not the stage's.
//!
//! Each built-in stage lives in its own file and exposes a `DESCRIPTOR` (its Lucille name, its
//! config spec and its constructor); `registry` resolves a config's `class` to one.

pub mod condition;
pub mod field_util;
pub mod registry;
#[cfg(any(test, feature = "testing"))]
pub mod test_stages;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use crate::config::ComponentConfig;
use crate::config::ConfigErrors;
use crate::config::Spec;
use crate::document::{Document, DocumentError};

/// Why a stage could not process a document. The pipeline adds the stage name and document
/// id to make a [`StageError`].
#[derive(Debug, thiserror::Error)]
pub enum StageFailure {
    #[error(transparent)]
    Document(#[from] DocumentError),
    #[error("{0}")]
    Message(String),
}

impl StageFailure {
    pub fn msg(message: impl Into<String>) -> Self {
        StageFailure::Message(message.into())
    }
}

/// A stage failure with its context: which stage, which document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StageError {
    #[error("stage {stage:?} failed on document {doc_id:?}: {message}")]
    Process {
        stage: String,
        doc_id: String,
        message: String,
    },
    #[error("stage {stage:?} panicked on document {doc_id:?}: {message}")]
    Panic {
        stage: String,
        doc_id: String,
        message: String,
    },
    #[error("stage {stage:?} failed to {phase}: {message}")]
    Lifecycle {
        stage: String,
        phase: &'static str,
        message: String,
    },
}

impl StageError {
    pub fn doc_id(&self) -> Option<&str> {
        match self {
            StageError::Process { doc_id, .. } | StageError::Panic { doc_id, .. } => Some(doc_id),
            StageError::Lifecycle { .. } => None,
        }
    }

    pub fn stage(&self) -> &str {
        match self {
            StageError::Process { stage, .. }
            | StageError::Panic { stage, .. }
            | StageError::Lifecycle { stage, .. } => stage,
        }
    }
}

/// The stage a FAIL's reason names, when a stage failed (the reason is a [`StageError`]'s
/// text, perhaps followed by a retry or timeout note); `None` for failures of the indexer, the
/// connector or a record. Read back from the text because a FAIL event carries only its reason,
/// across processes too; kept beside the `#[error]` formats it reads.
pub fn failed_stage(reason: &str) -> Option<String> {
    let start = reason.find("stage \"")? + "stage ".len();
    let rest = &reason[start..];
    // The name is written with `{:?}`: a quoted string with escapes; read it as JSON reads one.
    let mut de = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    let name = de.next()?.ok()?;
    let after = rest.get(de.byte_offset()..)?;
    [
        " failed on document ",
        " panicked on document ",
        " failed to ",
    ]
    .iter()
    .any(|p| after.starts_with(p))
    .then_some(name)
}

/// Children produced lazily by a stage. Items are fallible so a generator that breaks
/// half-way fails its parent without losing the children already emitted.
pub type Children = Box<dyn Iterator<Item = Result<Document, StageFailure>> + Send>;

pub type StageResult = Result<Option<Children>, StageFailure>;

/// The stage contract. One instance per pipeline instance (per worker thread), so a stage may
/// hold state without synchronisation.
pub trait Stage: Send {
    fn start(&mut self) -> Result<(), StageFailure> {
        Ok(())
    }

    /// Modifies `doc` in place; returns `None` or the children it generates.
    fn process_document(&mut self, doc: &mut Document) -> StageResult;

    fn stop(&mut self) -> Result<(), StageFailure> {
        Ok(())
    }

    /// Called when the children returned for `parent` are exhausted or have failed, before
    /// the parent moves on. A stage that lends the document elsewhere while its children are
    /// produced (a Python generator reads its parent lazily) puts it back here.
    fn children_done(&mut self, _parent: &mut Document) {}

    /// How many documents this stage takes at once through [`Stage::process_batch`]; 1 (the
    /// default) means one at a time through `process_document`.
    fn batch_size(&self) -> usize {
        1
    }

    /// Whether this stage wants a worker's whole block through [`Stage::process_batch`] when
    /// its batch size is 1: a stage whose every call has a fixed cost worth sharing (a Python
    /// stage takes the interpreter's lock once per block instead of once per document). The
    /// worker then runs the block eagerly ([`crate::pipeline::Pipeline::process_batch`]) as it
    /// was taken, without waiting to fill a batch.
    fn takes_blocks(&self) -> bool {
        false
    }

    /// Processes several documents at once (at most [`Stage::batch_size`]): one result per
    /// document, in order. Children are returned whole (the pipeline does not call
    /// `children_done` for them). The default calls `process_document` for each.
    fn process_batch(&mut self, docs: &mut [Document]) -> Vec<StageResult> {
        docs.iter_mut().map(|d| self.process_document(d)).collect()
    }
}

/// A built-in stage: its Lucille class name, its config spec and its constructor.
pub struct StageDescriptor {
    pub name: &'static str,
    pub spec: fn() -> Spec,
    pub build: fn(&ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors>,
}

/// Turns an owned list of children into the lazy `Children` form.
pub fn children_from(docs: Vec<Document>) -> Children {
    Box::new(docs.into_iter().map(Ok))
}

#[cfg(test)]
mod failed_stage_tests {
    use super::{failed_stage, StageError};

    #[test]
    fn the_stage_is_read_back_from_a_fail_reason() {
        let e = StageError::Process {
            stage: "parse \"dates\"".into(),
            doc_id: "d1".into(),
            message: "bad: stage \"other\" is not it".into(),
        };
        assert_eq!(
            failed_stage(&e.to_string()).as_deref(),
            Some("parse \"dates\"")
        );
        let p = StageError::Panic {
            stage: "boom".into(),
            doc_id: "d1".into(),
            message: "x".into(),
        };
        let reason = format!("{p} (after 3 attempts)");
        assert_eq!(failed_stage(&reason).as_deref(), Some("boom"));
        assert_eq!(failed_stage("could not send for indexing: closed"), None);
        assert_eq!(failed_stage("stage \"x\" was fine"), None);
        assert_eq!(failed_stage("stage \"unterminated"), None);
    }
}
