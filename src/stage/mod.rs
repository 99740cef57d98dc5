//! Stages: one focused operation on a document. A stage modifies the document in
//! place and may return a lazy iterator of child documents; conditions, drop/skip handling,
//! metrics, panics and error context are the pipeline's job, not the stage's.
//!
//! Each built-in stage lives in its own file and exposes a `DESCRIPTOR` (its Lucille name, its
//! config spec and its constructor); `registry` resolves a config's `class` to one.

pub mod condition;
pub mod registry;
#[cfg(test)]
pub mod test_stages;
#[cfg(test)]
pub mod testing;

use crate::config::ComponentConfig;
use crate::config::ConfigError;
use crate::config::Spec;
use crate::document::{Document, DocumentError};

// ---- built-in stages (one file each); listed in registry.rs ----
// group: field manipulation
pub mod compute_field_size;
pub mod concatenate;
pub mod copy_fields;
pub mod delete_fields;
pub mod drop_values;
pub mod extract_first_character;
pub(crate) mod field_util;
pub mod hash_field_value_to_bucket;
pub mod length;
pub mod normalize_field_names;
pub mod normalize_text;
pub mod remove_diacritics;
pub mod remove_duplicate_values;
pub mod remove_empty_fields;
pub mod rename_fields;
pub mod set_static_values;
pub mod split_field_values;
pub mod timestamp;
pub mod trim_whitespace;
pub mod truncate_field;
// end group: field manipulation
// group: parsing and extraction
pub mod apply_javascript;
pub mod apply_jsonata;
pub mod apply_jsoup;
pub mod apply_ocr;
pub mod apply_regex;
pub mod base64_decode;
pub mod create_static_teaser;
pub mod detect_language;
pub mod parse_date;
pub mod parse_file_path;
pub mod parse_floats;
pub mod parse_json;
pub mod replace_patterns;
pub mod text_extractor;
pub mod xpath_extractor;
// end group: parsing and extraction
// group: dictionaries, control flow, children, test data
pub mod add_random_boolean;
pub mod add_random_date;
pub mod add_random_double;
pub mod add_random_int;
pub mod add_random_nested_field;
pub mod add_random_string;
pub mod chunk_text;
pub mod collapse_children_documents;
pub mod contains;
pub mod create_children_stage;
pub mod dictionary_lookup;
pub mod drop_document;
pub mod emit_nested_children;
pub mod extract_entities;
pub mod extract_entities_fst;
pub mod match_query;
pub mod print;
pub mod query_database;
pub(crate) mod random_value;
pub mod random_vector;
pub mod skip_document;
// end group: dictionaries, control flow, children, test data
// group: fetching (URLs, files, file handlers)
pub mod fetch;
// end group: fetching
// group: vectors
pub mod ai;
pub mod embed;
pub mod search;
// end group: vectors

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
    pub build: fn(&ComponentConfig) -> Result<Box<dyn Stage>, ConfigError>,
}

/// Turns an owned list of children into the lazy `Children` form.
pub fn children_from(docs: Vec<Document>) -> Children {
    Box::new(docs.into_iter().map(Ok))
}
