//! Indexer backends of this crate. The core's `indexer` module is re-exported inside the crate, so
//! the files here name the core's items as `super::` / `crate::indexer::` (the facade crate
//! `lucille` gathers every crate's `indexer` module under one path).

pub(crate) use lucille_core::indexer::*;

pub mod tantivy;
