//! Connectors of this crate. The core's `connector` module is re-exported inside the crate, so
//! the files here name the core's items as `super::` / `crate::connector::` (the facade crate
//! `lucille` gathers every crate's `connector` module under one path).

pub(crate) use lucille_core::connector::*;

pub mod solr;
