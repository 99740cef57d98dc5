//! Records published unparsed: a connector that reads serialised records (a JSON line) hands
//! the Publisher the record's id and its text, and a worker builds the document.
//!
//! Parsing is most of a connector's per-record work, and a document parsed on the connector
//! thread is allocated there and freed on a worker: measured with the standard benchmark's raw
//! serde_json loop, parsing on the reading thread instead of the threads that serialise cost
//! ~40% more CPU per record and ran 1.6x slower. The connector only scans each record for its
//! id (nothing allocated but the id), so the Publisher can track it before it is sent, as
//! every document is; the workers parse in parallel, where the document lives and dies.

use std::sync::Arc;

use crate::document::{Document, DocumentError, ParseError};

/// Builds documents from one connector's records (one per handler configuration).
pub trait RecordBuilder: Send + Sync {
    /// The document with this `id` (already extracted, prefixed and formatted), built from
    /// `text`; `Err(reason)` when the record cannot become one.
    fn build(&self, id: &str, text: &str) -> Result<Document, BuildError>;
}

/// Why a record's text did not make a document.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// The text is not what the builder's format expects (the builder says how).
    #[error("{0}")]
    Invalid(String),
    #[error("building the document panicked: {0}")]
    Panicked(String),
}

/// A record that could not become a document: its id, and why (with file and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct RecordError {
    pub id: String,
    pub reason: String,
}

/// A record on its way to a worker.
pub struct Record {
    pub id: String,
    /// The record as read (checked UTF-8 once, by the connector, so parsers take it as text).
    pub text: String,
    pub builder: Arc<dyn RecordBuilder>,
    /// Where the record came from (a file), and its line, for a failure's reason.
    pub origin: Arc<str>,
    pub line: u64,
    /// Stamped by the Publisher; the built document carries it.
    pub run_id: Option<Arc<str>>,
}

impl Record {
    /// The document, stamped with the run id; or the record's id and why it cannot be built
    /// (naming the file and line).
    pub fn build(self) -> Result<Document, RecordError> {
        let (builder, text, id) = (&self.builder, self.text.as_str(), self.id.as_str());
        // A panicking builder FAILs this record, as a panicking stage fails its document.
        let built =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.build(id, text)))
                .unwrap_or_else(|p| Err(BuildError::Panicked(lucille_panic::message(p.as_ref()))));
        let fail = |reason: &dyn std::fmt::Display| RecordError {
            reason: format!("{}: line {}: {reason}", self.origin, self.line),
            id: self.id.clone(),
        };
        let mut doc = built.map_err(|e| fail(&e))?;
        if let Some(run_id) = &self.run_id {
            doc.initialize_run_id(run_id).map_err(|e| fail(&e))?;
        }
        Ok(doc)
    }
}

/// What the source queue carries.
pub enum ToProcess {
    Doc(Document),
    Record(Record),
    /// A document not to process again: a Kafka worker's `worker.maxRetries` count says it was
    /// started too many times (each attempt ending its worker); the worker FAILs it with
    /// `reason`, as it FAILs a document after its last attempt.
    Exhausted {
        doc: Document,
        reason: String,
        attempts: u32,
    },
    /// A message a broker delivered that is not a document (a Kafka worker read it from the
    /// source topic): the worker FAILs it with `reason` and keeps `text` in the dead-letter
    /// output; its FAIL event goes to `run_id` when the message names its run.
    Unreadable {
        id: String,
        run_id: Option<Arc<str>>,
        reason: String,
        text: Option<String>,
    },
}

impl From<Document> for ToProcess {
    fn from(doc: Document) -> Self {
        ToProcess::Doc(doc)
    }
}

impl ToProcess {
    pub fn id(&self) -> &str {
        match self {
            ToProcess::Doc(d) => d.id(),
            ToProcess::Record(r) => &r.id,
            ToProcess::Exhausted { doc, .. } => doc.id(),
            ToProcess::Unreadable { id, .. } => id,
        }
    }

    /// The document (a record is built here).
    pub fn into_document(self) -> Result<Document, RecordError> {
        match self {
            ToProcess::Doc(d) => Ok(d),
            ToProcess::Record(r) => r.build(),
            ToProcess::Exhausted { doc, reason, .. } => Err(RecordError {
                id: doc.id().to_string(),
                reason,
            }),
            ToProcess::Unreadable { id, reason, .. } => Err(RecordError { id, reason }),
        }
    }
}
