//! Lucille-rs: a search ETL framework. Connectors read sources, a pipeline of stages enriches
//! each document, and an indexer batches documents into a search engine, while the Publisher
//! accounts for every document until its terminal event.

// The core, re-exported under the paths the components and the bindings use.
#[cfg(test)]
pub(crate) use lucille_core::fault_point;
pub use lucille_core::{accounting, catalog, config, document, event, pipeline, record, registry};
pub use lucille_core::{health, metrics, thread_scope, worker};
pub use lucille_core::{Document, DocumentError, UpdateMode};

// The services the components share.
pub use lucille_changes as changes;
pub use lucille_http as http;
pub use lucille_storage as storage;

// The components of the crates this build includes (one Cargo feature each, all by default),
// under the paths the bindings and benches use.
pub mod connector;
pub mod indexer;
pub mod messaging;
#[cfg(feature = "python")]
mod python;
pub mod runner;
pub mod stage;
// The core run with the built-in components: needs every one of them.
#[cfg(all(
    test,
    feature = "stages",
    feature = "files",
    feature = "search-engines",
    feature = "ai",
    feature = "tantivy",
    feature = "database",
    feature = "kafka"
))]
mod tests;

// The Rust blocks of docs/ARCHITECTURE.md (its worked example) compile and run as doctests.
#[cfg(all(doctest, feature = "stages"))]
#[doc = include_str!("../docs/ARCHITECTURE.md")]
mod architecture_doc {}
