//! The embedded Tantivy index: the default indexer backend, and searching it (by text or by
//! vector).

pub mod indexer;
pub mod stage;

// The core under the paths the components use.
#[cfg(test)]
pub(crate) use lucille_core::messaging;
pub(crate) use lucille_core::{config, document};
