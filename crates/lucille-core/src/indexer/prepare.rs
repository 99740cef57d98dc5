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

use std::sync::Arc;

use super::IndexerSettings;
use crate::document::Document;
use crate::op::{EncodeError, Encoded, IndexOp, PreparedOp};

/// Encodes operations for one backend; shared by every worker thread.
pub trait Encoder: Send + Sync {
    /// Encodes `op`. It may take what it consumed out of `op` (an upsert's fields); the op
    /// keeps its id, index, routing and version. `Ok(None)`: this op is not encoded (the
    /// backend applies it as it is); `Err(reason)`: the document FAILs with that reason and
    /// never reaches the backend.
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, EncodeError>;
}

/// How workers prepare documents for one run's backend: the indexer settings (overrides,
/// filters, deletion markers) and the backend's encoder, if it has one.
#[derive(Clone)]
pub struct Preparer {
    settings: Arc<IndexerSettings>,
    encoder: Option<Arc<dyn Encoder>>,
    /// `skipUnchanged: "output"`: hash each op before it is encoded.
    hash_output: bool,
}

impl Preparer {
    pub fn new(settings: IndexerSettings, encoder: Option<Arc<dyn Encoder>>) -> Self {
        Preparer {
            settings: Arc::new(settings),
            encoder,
            hash_output: false,
        }
    }

    /// Hashes each op before encoding it (`skipUnchanged: "output"`).
    pub fn hashing_output(mut self, on: bool) -> Self {
        self.hash_output = on;
        self
    }

    /// The document's operation, its fields moved out, encoded when the backend encodes.
    pub fn prepare(&self, doc: Document) -> PreparedOp {
        let doc_id = doc.id().to_string();
        let bytes = match self.settings.batch_byte_size {
            Some(_) => doc.byte_size(),
            None => 0,
        };
        let mut op = self.settings.op_into(doc);
        let output_hash = self.hash_output.then(|| op.content_hash()).flatten();
        let encoded = encode(self.encoder.as_deref(), &mut op);
        PreparedOp {
            doc_id,
            op,
            encoded,
            bytes,
            output_hash,
        }
    }
}

/// Encodes `op` with `encoder`, turning a panic in the encoder into the document's FAIL.
pub fn encode(
    encoder: Option<&dyn Encoder>,
    op: &mut IndexOp,
) -> Result<Option<Encoded>, EncodeError> {
    let Some(encoder) = encoder else {
        return Ok(None);
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| encoder.encode(op))) {
        Ok(r) => r,
        Err(p) => Err(EncodeError::from(format!(
            "encoding the document for the index panicked: {}",
            lucille_panic::message(p.as_ref())
        ))),
    }
}
