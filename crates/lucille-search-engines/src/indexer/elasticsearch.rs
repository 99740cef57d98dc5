//! `indexer.type: "elasticsearch"` with `elasticsearch { url, index, update, acceptInvalidCert,
//! username, password, apiKey, childDocumentsField }` (Lucille's keys plus `apiKey`, sent as
//! `Authorization: ApiKey ...`). Speaks the `_bulk` protocol (see `bulk`), which also nests
//! attached child documents under `childDocumentsField`.

use super::bulk::{BulkBackend, BulkBlock, BulkOptions};
use super::IndexerSettings;
use crate::config::{ComponentConfig, ConfigErrors, Options};

inventory::submit!(super::IndexerDescriptor {
    name: "elasticsearch",
    aliases: &["com.kmwllc.lucille.indexer.ElasticsearchIndexer"],
    spec: ElasticsearchOptions::spec,
    check: |settings, config| Ok(read(settings, config)?.check(settings, config)),
    build: |settings, config, _| {
        let block = read(settings, config)?;
        Ok(Box::new(BulkBackend::new("Elasticsearch", settings, block)))
    },
});

/// Sends documents to Elasticsearch with its `_bulk` API (index, update and delete actions).
#[derive(Options)]
struct ElasticsearchOptions {
    /// The keys OpenSearch and Elasticsearch share.
    #[option(flatten)]
    bulk: BulkOptions,
    /// An API key, sent as `Authorization: ApiKey ...` (instead of username / password).
    api_key: Option<String>,
}

/// The block, read once for checking and building.
fn read(settings: &IndexerSettings, config: &ComponentConfig) -> Result<BulkBlock, ConfigErrors> {
    let o = ElasticsearchOptions::from_config(config)?;
    BulkBlock {
        options: o.bulk,
        api_key: o.api_key,
    }
    .checked(settings, config)
}
