//! Tests of the core's run (pipeline, workers, worker processes, runner) with the built-in
//! components: they need stages, connectors and backends that live above `lucille-core`.

mod indexer;
mod pipeline;
mod runner;
mod stage_registry;
mod worker;
mod worker_process;
