//! What runs a worker thread's documents: its own pipeline, or (`worker.processes`) a pipeline
//! in a worker process. The worker turns the outputs of either into the same events.

use crate::document::Document;
use crate::pipeline::{Output, Outputs, Pipeline, StageMetrics};
use crate::stage::StageError;

use super::process::remote::RemotePipeline;

pub enum Engine {
    Local(Pipeline),
    Remote(RemotePipeline),
}

/// The outputs of one document: lazy from a local pipeline, all at once from a process.
pub enum EngineOutputs<'a> {
    Local(Outputs<'a>),
    Remote(std::vec::IntoIter<Output>),
}

impl Iterator for EngineOutputs<'_> {
    type Item = Output;
    fn next(&mut self) -> Option<Output> {
        match self {
            EngineOutputs::Local(o) => o.next(),
            EngineOutputs::Remote(o) => o.next(),
        }
    }
}

impl Engine {
    pub fn start(&mut self) -> Result<(), StageError> {
        match self {
            Engine::Local(p) => p.start(),
            // A worker process starts its stages before it says it is ready.
            Engine::Remote(_) => Ok(()),
        }
    }

    pub fn stop(&mut self) -> Result<(), StageError> {
        match self {
            Engine::Local(p) => p.stop(),
            Engine::Remote(r) => r.stop(),
        }
    }

    pub fn metrics(&self) -> Vec<StageMetrics> {
        match self {
            Engine::Local(p) => p.metrics(),
            Engine::Remote(r) => r.metrics(),
        }
    }

    pub fn batch_size(&self) -> usize {
        match self {
            Engine::Local(p) => p.batch_size(),
            Engine::Remote(r) => r.batch_size(),
        }
    }

    pub fn process(&mut self, doc: Document) -> EngineOutputs<'_> {
        match self {
            Engine::Local(p) => EngineOutputs::Local(p.process(doc)),
            Engine::Remote(r) => EngineOutputs::Remote(r.process(vec![doc]).into_iter()),
        }
    }

    pub fn process_batch(&mut self, docs: Vec<Document>) -> Vec<Output> {
        match self {
            Engine::Local(p) => p.process_batch(docs),
            Engine::Remote(r) => r.process(docs),
        }
    }
}
