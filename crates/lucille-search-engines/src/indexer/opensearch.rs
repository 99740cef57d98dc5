//! `indexer.type: "opensearch"` with `opensearch { url, index, update, acceptInvalidCert,
//! username, password }` (Lucille's keys; credentials may also sit in the URL as
//! `https://user:pass@host:9200`). Speaks the `_bulk` protocol (see `bulk`).

use super::bulk::{self, BulkBackend};
use super::{Backend, IndexerSettings};
use crate::config::{ComponentConfig, ConfigError};

inventory::submit!(super::IndexerDescriptor {
    name: "opensearch",
    aliases: &["com.kmwllc.lucille.indexer.OpenSearchIndexer"],
    validate,
    build: |settings, config, _| build(settings, config),
    warning: Some(crate::http::insecure_warning),
});

pub fn validate(settings: &IndexerSettings, config: &ComponentConfig) -> Vec<ConfigError> {
    bulk::validate(settings, config, false)
}

pub fn build(
    settings: &IndexerSettings,
    config: &ComponentConfig,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    BulkBackend::from_config("OpenSearch", settings, config)
        .map(|b| Box::new(b) as Box<dyn Backend>)
}
