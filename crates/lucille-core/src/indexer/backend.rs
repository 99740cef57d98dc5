//! What a backend is: the [`Backend`] trait a search engine or a file implements, and the
//! [`BackendError`] that fails a whole batch.

use super::prepare;
use crate::op::{Encoded, IndexOp};
use std::sync::Arc;

/// Why a whole batch could not be sent (every document in it FAILs with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    pub message: String,
}

impl BackendError {
    pub fn new(message: impl Into<String>) -> Self {
        BackendError {
            message: message.into(),
        }
    }
}

/// A search backend (or file) that documents are written to.
pub trait Backend: Send {
    /// BackendCheck once before the run starts; a failure fails the connector up front.
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Applies the operations in order. Returns one entry per op: `None` for success,
    /// `Some(reason)` when the backend rejected that document; `Err` when the whole batch failed.
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError>;

    /// An encoder the worker threads run on each operation before it reaches the indexer
    /// thread (see `prepare`); `None` (the default) sends ops as they are.
    fn encoder(&self) -> Option<Arc<dyn prepare::Encoder>> {
        None
    }

    /// As `send`, with `encoded[i]` this backend's encoding of `ops[i]` (`None` where the
    /// encoder left the op as it is, or the backend has no encoder). By default, `send`.
    fn send_encoded(
        &mut self,
        ops: &[IndexOp],
        encoded: Vec<Option<Encoded>>,
    ) -> Result<Vec<Option<String>>, BackendError> {
        let _ = encoded;
        self.send(ops)
    }

    /// Makes writes durable (end of run).
    fn close(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// `Some(commits so far)` for a backend whose accepted documents become durable only at a
    /// commit (Tantivy: lost if the commit fails, e.g. on a full disk). The indexer then holds
    /// their FINISH events until a commit succeeds, and FAILs them when it fails. `None` (the
    /// default): a document accepted by `send` is durable.
    fn commits(&self) -> Option<u64> {
        None
    }

    /// Commits now (called by the indexer when it holds `HELD_MAX` documents).
    fn commit(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
}
