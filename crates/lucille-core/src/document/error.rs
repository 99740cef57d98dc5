use thiserror::Error;

/// Everything that can go wrong when building, reading or writing a [`super::Document`].
///
/// Errors about a field carry the document id and the field name so that a FAIL event or a log
/// line says exactly where the problem is.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DocumentError {
    #[error("document id must be a non-empty string")]
    EmptyId,
    #[error("field name must not be empty (document {id:?})")]
    EmptyFieldName { id: String },
    #[error(
        "{field:?} is a reserved field and cannot be written, removed or renamed (document {id:?})"
    )]
    ReservedField { id: String, field: String },
    #[error(
        "field {field:?} of document {id:?} holds {found}, which cannot be read as {expected}"
    )]
    TypeMismatch {
        id: String,
        field: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error(
        "field {field:?} of document {id:?} holds {value}, which cannot be converted to {expected}"
    )]
    Unconvertible {
        id: String,
        field: String,
        expected: &'static str,
        value: String,
    },
    #[error("invalid field path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("cannot apply path {path:?} to document {id:?}: {reason}")]
    PathConflict {
        id: String,
        path: String,
        reason: String,
    },
    #[error("index {index} is out of range for field {field:?} of document {id:?} (length {len})")]
    IndexOutOfRange {
        id: String,
        field: String,
        index: usize,
        len: usize,
    },
    #[error("invalid document JSON: {0}")]
    InvalidJson(String),
    #[error("document {id:?} already has run_id {run_id:?}")]
    RunIdAlreadySet { id: String, run_id: String },
    #[error("transform of document {id:?} failed: {reason}")]
    Transform { id: String, reason: String },
    #[error("{0}")]
    Jsonata(String),
    #[error("value for field {field:?} of document {id:?} is not representable in JSON: {reason}")]
    UnrepresentableValue {
        id: String,
        field: String,
        reason: String,
    },
}

impl DocumentError {
    /// True for errors that Python reports as `TypeError` (a value of the wrong shape); the rest
    /// are `ValueError`s.
    pub fn is_type_error(&self) -> bool {
        matches!(self, DocumentError::TypeMismatch { .. })
    }
}
