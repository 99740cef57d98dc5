//! Connectors of this crate. The core's `connector` module is re-exported inside the crate, so
//! the files here name the core's items as `super::` / `crate::connector::` (the facade crate
//! `lucille` gathers every crate's `connector` module under one path).

pub(crate) use lucille_core::connector::*;

pub mod checkpoint;
pub mod file;
pub mod legacy;
pub mod parquet;
pub mod rss;

/// The keys every connector accepts, with `maxDocumentBytes` for the connectors that read
/// records (the core reads it into `Common`; they enforce it).
pub(crate) fn record_connector_spec() -> crate::config::Spec {
    connector_spec()
        .optional("maxDocumentBytes", crate::config::Kind::Integer)
        .doc("a record larger than this many bytes FAILs with its position instead of being read whole (at least 1)")
}
