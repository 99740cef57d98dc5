//! Lucille-rs: a search ETL framework. Connectors read sources, a pipeline of stages enriches
//! each document, and an indexer batches documents into a search engine, while the Publisher
//! accounts for every document until its terminal event.

pub mod accounting;
pub mod config;
pub mod connector;
pub(crate) mod database;
pub mod document;
pub mod event;
#[cfg(test)]
pub(crate) mod fault_point;
pub mod http;
pub mod indexer;
pub mod messaging;
pub mod pipeline;
#[cfg(feature = "python")]
mod python;
pub mod record;
pub mod registry;
pub mod runner;
pub mod stage;
pub mod storage;
#[cfg(test)]
pub(crate) mod test_service;
pub mod thread_scope;
pub mod worker;

pub use document::{Document, DocumentError, UpdateMode};

// The Rust blocks of docs/ARCHITECTURE.md (its worked example) compile and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/ARCHITECTURE.md")]
mod architecture_doc {}
