//! `indexer.type: "nop"`: accepts every document and writes nothing (benchmarks, dry runs).

use super::{Backend, BackendError, IndexOp};

pub struct NopBackend;

impl Backend for NopBackend {
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        Ok(vec![None; ops.len()])
    }
}
