//! The built-in stages that need no service: field manipulation, parsing and extraction from
//! fields (regex, dates, JSON, XPath, HTML, JavaScript, JSONata), dictionaries and entities,
//! control flow, children and chunking, random test data. One file per stage; each registers
//! itself with the core's registry.

pub mod stage;

// The core under the paths the components use.
#[cfg(test)]
pub(crate) use lucille_core::test_service;
pub(crate) use lucille_core::{config, document, pipeline};
