//! Index operations prepared on the worker threads.
//!
//! One indexer thread serves every worker, so whatever it does per document bounds the whole
//! run. The workers therefore do the per-document part of indexing themselves, in parallel:
//! they turn each finished document into its [`IndexOp`] by moving its fields (no copy), and
//! when the backend has an [`Encoder`], encode it (the JSON line, the bulk body fragment, the
//! Tantivy document). The indexer thread then only batches, writes or sends, and accounts.
//!
//! A [`ToIndex`] is what travels on the destination queue: either a document the indexer
//! still has to turn into an operation (test mode, and callers that hand documents straight
//! to the queue), or an operation a worker prepared.

use std::any::Any;
use std::sync::Arc;

use super::{IndexOp, IndexerSettings};
use crate::document::Document;

/// A backend's encoding of one operation, made on a worker thread; only the backend that
/// made it reads it (each downcasts to its own type).
pub type Encoded = Box<dyn Any + Send>;

/// Encodes operations for one backend; shared by every worker thread.
pub trait Encoder: Send + Sync {
    /// Encodes `op`. It may take what it consumed out of `op` (an upsert's fields); the op
    /// keeps its id, index, routing and version. `Ok(None)`: this op is not encoded (the
    /// backend applies it as it is); `Err(reason)`: the document FAILs with that reason and
    /// never reaches the backend.
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, String>;
}

/// Takes `encoded[i]` as the backend's own type `T` (`None` where the op was not encoded).
pub fn take_encoded<T: 'static>(encoded: &mut [Option<Encoded>], i: usize) -> Option<T> {
    encoded
        .get_mut(i)
        .and_then(Option::take)
        .and_then(|e| e.downcast::<T>().ok())
        .map(|b| *b)
}

/// An operation a worker prepared.
pub struct PreparedOp {
    /// The document's id (its FINISH / FAIL event names it; the op's id may be overridden).
    pub doc_id: String,
    pub op: IndexOp,
    pub encoded: Result<Option<Encoded>, String>,
    /// The document's JSON size when `indexer.batchByteSize` is set, else 0.
    pub bytes: u64,
}

/// What the destination queue carries.
pub enum ToIndex {
    /// A processed document; the indexer builds (and encodes) its operation.
    Doc(Document),
    /// An operation prepared on a worker.
    Op(PreparedOp),
}

impl From<Document> for ToIndex {
    fn from(doc: Document) -> Self {
        ToIndex::Doc(doc)
    }
}

impl ToIndex {
    /// The document's id.
    pub fn id(&self) -> &str {
        match self {
            ToIndex::Doc(d) => d.id(),
            ToIndex::Op(p) => &p.doc_id,
        }
    }

    /// The document, when it still travels whole.
    pub fn document(&self) -> Option<&Document> {
        match self {
            ToIndex::Doc(d) => Some(d),
            ToIndex::Op(_) => None,
        }
    }
}

/// How workers prepare documents for one run's backend: the indexer settings (overrides,
/// filters, deletion markers) and the backend's encoder, if it has one.
#[derive(Clone)]
pub struct Preparer {
    settings: Arc<IndexerSettings>,
    encoder: Option<Arc<dyn Encoder>>,
}

impl Preparer {
    pub fn new(settings: IndexerSettings, encoder: Option<Arc<dyn Encoder>>) -> Self {
        Preparer {
            settings: Arc::new(settings),
            encoder,
        }
    }

    /// The document's operation, its fields moved out, encoded when the backend encodes.
    pub fn prepare(&self, doc: Document) -> PreparedOp {
        let doc_id = doc.id().to_string();
        let bytes = match self.settings.batch_byte_size {
            Some(_) => doc.byte_size(),
            None => 0,
        };
        let mut op = self.settings.op_into(doc);
        let encoded = encode(self.encoder.as_deref(), &mut op);
        PreparedOp {
            doc_id,
            op,
            encoded,
            bytes,
        }
    }
}

/// Encodes `op` with `encoder`, turning a panic in the encoder into the document's FAIL.
pub fn encode(encoder: Option<&dyn Encoder>, op: &mut IndexOp) -> Result<Option<Encoded>, String> {
    let Some(encoder) = encoder else {
        return Ok(None);
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| encoder.encode(op))) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "encoding the document for the index panicked: {}",
            lucille_panic::message(p.as_ref())
        )),
    }
}
