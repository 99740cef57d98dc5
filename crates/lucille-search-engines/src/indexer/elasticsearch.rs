//! `indexer.type: "elasticsearch"` with `elasticsearch { url, index, update, acceptInvalidCert,
//! username, password, apiKey }` (Lucille's keys plus `apiKey`, sent as
//! `Authorization: ApiKey ...`). Speaks the `_bulk` protocol (see `bulk`).

use super::bulk::{self, BulkBackend};
use super::{Backend, IndexerSettings};
use crate::config::{ComponentConfig, ConfigError};

inventory::submit!(super::IndexerDescriptor {
    name: "elasticsearch",
    aliases: &["com.kmwllc.lucille.indexer.ElasticsearchIndexer"],
    validate,
    build: |settings, config, _| build(settings, config),
    warning: Some(crate::http::insecure_warning),
});

pub fn validate(settings: &IndexerSettings, config: &ComponentConfig) -> Vec<ConfigError> {
    bulk::validate(settings, config, true)
}

pub fn build(
    settings: &IndexerSettings,
    config: &ComponentConfig,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    BulkBackend::from_config("Elasticsearch", settings, config)
        .map(|b| Box::new(b) as Box<dyn Backend>)
}
