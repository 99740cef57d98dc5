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

/// What a backend does with the child documents attached to an upsert
/// ([`IndexOp::Upsert`]'s `children`). The indexer logs, once per batch, what it drops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildDocuments {
    /// The children go wherever their parent goes, with their own children (a jsonl line
    /// holds them as `___children`, a Python indexer receives them on its documents, nop
    /// writes neither).
    All,
    /// The children are indexed with their parent; their own children are not, as in
    /// Lucille (OpenSearch / Elasticsearch `childDocumentsField`, Solr nested documents).
    OneLevel,
    /// The backend does not index child documents: the parent is indexed without them.
    /// `hint` says how to index them, when a key of the backend would.
    Dropped { hint: Option<String> },
}

/// A search backend (or file) that documents are written to.
pub trait Backend: Send {
    /// What it does with attached child documents; by default it drops them (and the
    /// indexer says so once per batch that carries any).
    fn child_documents(&self) -> ChildDocuments {
        ChildDocuments::Dropped { hint: None }
    }

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

/// The warning for a batch whose child documents `backend` (its `indexer.type`) drops in
/// part or whole, given what it does with them and the batch's `(document id, op)` pairs;
/// `None` when nothing in the batch is dropped.
pub fn dropped_children<'a>(
    backend: &str,
    policy: &ChildDocuments,
    batch: impl IntoIterator<Item = (&'a str, &'a IndexOp)>,
) -> Option<String> {
    if *policy == ChildDocuments::All {
        return None;
    }
    let (mut docs, mut parents, mut dropped) = (0usize, 0usize, 0usize);
    let mut first: Option<&str> = None;
    for (doc_id, op) in batch {
        docs += 1;
        let IndexOp::Upsert { children, .. } = op else {
            continue;
        };
        let lost = match policy {
            ChildDocuments::OneLevel => children
                .iter()
                .filter_map(|c| c.get(crate::document::CHILDREN_FIELD))
                .filter_map(serde_json::Value::as_array)
                .map(Vec::len)
                .sum(),
            _ => children.len(),
        };
        if lost > 0 {
            parents += 1;
            dropped += lost;
            first.get_or_insert(doc_id);
        }
    }
    let first = first?;
    Some(match policy {
        ChildDocuments::OneLevel => format!(
            "indexer.type {backend:?} indexes one level of child documents: {dropped} children of children of {parents} of the {docs} documents in this batch are not indexed (the first such document: {first:?})"
        ),
        _ => {
            let hint = match policy {
                ChildDocuments::Dropped { hint: Some(h) } => format!("; {h}"),
                _ => String::new(),
            };
            format!(
                "indexer.type {backend:?} does not index child documents: {parents} of the {docs} documents in this batch carry {dropped} children, indexed without them (the first: {first:?}){hint}"
            )
        }
    })
}
