//! The built-in connectors, one file or folder each; each submits its descriptor to the
//! registry. The `Connector` trait and plans live in `lucille-core` (re-exported here).

pub use lucille_core::connector::*;
pub use lucille_kafka::connector as kafka;

pub mod checkpoint;
pub mod database;
pub mod file;
pub mod legacy;
pub mod parquet;
pub mod rss;
pub mod solr;
