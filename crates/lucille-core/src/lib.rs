//! The core of Lucille-rs: the document, the config model and its validation, the component
//! traits and the one registry, accounting, messaging roles over local queues, the pipeline,
//! the worker pool, the indexer loop and the runner. Components (stages, connectors, indexer
//! backends, file handlers), the services they share and the Kafka transport live in crates
//! above this one and register themselves with [`registry`]; nothing here depends on them.

// `#[derive(Options)]` names `::lucille_core` in the code it writes, here too.
extern crate self as lucille_core;

pub mod accounting;
pub mod catalog;
pub mod config;
pub mod connector;
pub mod document;
pub mod event;
#[cfg(any(test, feature = "testing"))]
pub mod fault_point;
pub mod health;
pub mod indexer;
pub mod messaging;
pub mod metrics;
pub mod op;
pub mod pipeline;
pub mod record;
pub mod registry;
pub mod retry;
pub mod runner;
pub mod stage;
#[cfg(any(test, feature = "testing"))]
pub mod test_service;
pub mod thread_scope;
pub mod trace;
pub mod unchanged;
pub mod worker;

pub use document::{Document, DocumentError, UpdateMode};
