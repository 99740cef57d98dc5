//! `indexer.type: "nop"`: accepts every document and writes nothing (benchmarks, dry runs).

use std::sync::Arc;

use super::prepare::Encoder;
use super::{Backend, BackendCheck, BackendError, ChildDocuments, IndexOp};
use crate::config::Options;
use crate::op::{EncodeError, Encoded};

inventory::submit!(super::IndexerDescriptor {
    name: "nop",
    aliases: &["none", "com.kmwllc.lucille.indexer.NopIndexer"],
    spec: NopOptions::spec,
    check: |_, config| {
        NopOptions::from_config(config)?;
        Ok(BackendCheck::default())
    },
    build: |_, config, _| {
        NopOptions::from_config(config)?;
        Ok(Box::new(NopBackend))
    },
});

/// Accepts every document and writes nothing (benchmarks, dry runs); its block has no keys.
#[derive(Options)]
struct NopOptions {}

pub struct NopBackend;

impl Backend for NopBackend {
    /// Children are written nowhere, as their parents are: nothing to warn about.
    fn child_documents(&self) -> ChildDocuments {
        ChildDocuments::All
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        Ok(vec![None; ops.len()])
    }

    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        Some(Arc::new(DropFields))
    }
}

/// Drops an upsert's fields on the worker that made them: nothing reads them, and freeing
/// them on the one indexer thread made it the bottleneck of nop runs (every field a
/// cross-thread free).
struct DropFields;

impl Encoder for DropFields {
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, EncodeError> {
        if let IndexOp::Upsert { fields, .. } = op {
            *fields = crate::document::Fields::default();
        }
        Ok(None)
    }
}
