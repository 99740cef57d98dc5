//! What runs a worker thread's documents: its own pipeline, or (`worker.processes`) a pipeline
//! in a worker process. The worker turns the outputs of either into the same events.

use crate::document::Document;
use crate::pipeline::{Output, Outputs, Pipeline, PipelinePlan, StageMetrics};
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

    /// Makes the stages count in the process's metrics (see [`Engine::flush_metrics`]).
    pub fn record_metrics(&mut self) {
        if let Engine::Local(p) = self {
            p.record_metrics();
        }
    }

    /// Adds what the stages did since the last flush to the process's metrics. A worker
    /// process reports its stages' counts only when it stops: those are added once `stop`
    /// has returned them (without call durations), by this call after it.
    pub fn flush_metrics(&mut self, plan: &PipelinePlan) {
        match self {
            Engine::Local(p) => p.flush_metrics(),
            Engine::Remote(r) => {
                let metrics = crate::metrics::global();
                for (stage, m) in plan.stages.iter().zip(r.take_reported_metrics()) {
                    metrics
                        .stage(&plan.name, &stage.name, stage.class_name())
                        .flush(m.processed, m.errors);
                }
            }
        }
    }

    pub fn batch_size(&self) -> usize {
        match self {
            Engine::Local(p) => p.batch_size(),
            Engine::Remote(r) => r.batch_size(),
        }
    }

    /// Whether a stage wants whole blocks (see `Pipeline::takes_blocks`); a worker process's
    /// pipeline already takes batches ([`RemotePipeline::batch_size`]).
    pub fn takes_blocks(&self) -> bool {
        match self {
            Engine::Local(p) => p.takes_blocks(),
            Engine::Remote(_) => false,
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
