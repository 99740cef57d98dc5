//! Stages of this crate. The core's `stage` module is re-exported inside the crate, so
//! the files here name the core's items as `super::` / `crate::stage::` (the facade crate
//! `lucille` gathers every crate's `stage` module under one path).

pub(crate) use lucille_core::stage::*;

pub mod pinecone;
pub mod search;
