//! Files and feeds, local or remote: the FileConnector (traversal, checkpoints, one file per
//! handler: CSV, JSON / JSONL, XML, compressed archives, documents through text extraction),
//! Lucille's legacy CSV / JSON / XML connectors, the ParquetConnector and the RSSConnector; the
//! file sinks (`jsonl`, `csv`); the stages that fetch and extract content (`fetch/`,
//! TextExtractor, ApplyOCR). Over the storage, HTTP and extraction services.

pub mod connector;
pub mod indexer;
pub mod stage;

// The core and the services under the paths the components use.
pub(crate) use lucille_core::{accounting, config, document, record, registry, unchanged};
#[cfg(test)]
pub(crate) use lucille_core::{messaging, runner, test_service};
pub(crate) use lucille_http as http;
pub(crate) use lucille_sql as database;
pub(crate) use lucille_storage as storage;
