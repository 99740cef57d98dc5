//! `indexer.type: "opensearch"` with `opensearch { url, index, update, acceptInvalidCert,
//! username, password, childDocumentsField }` (Lucille's keys; credentials may also sit in the
//! URL as `https://user:pass@host:9200`). Speaks the `_bulk` protocol (see `bulk`), which also
//! nests attached child documents under `childDocumentsField`.

use super::bulk::{BulkBackend, BulkBlock, BulkOptions};
use super::IndexerSettings;
use crate::config::{ComponentConfig, ConfigErrors, Options};

inventory::submit!(super::IndexerDescriptor {
    name: "opensearch",
    aliases: &["com.kmwllc.lucille.indexer.OpenSearchIndexer"],
    spec: OpenSearchOptions::spec,
    check: |settings, config| Ok(read(settings, config)?.check(settings, config)),
    build: |settings, config, _| {
        let block = read(settings, config)?;
        Ok(Box::new(BulkBackend::new("OpenSearch", settings, block)))
    },
});

/// Sends documents to OpenSearch with its `_bulk` API (index, update and delete actions).
#[derive(Options)]
struct OpenSearchOptions {
    /// The keys OpenSearch and Elasticsearch share.
    #[option(flatten)]
    bulk: BulkOptions,
}

/// The block, read once for checking and building.
fn read(settings: &IndexerSettings, config: &ComponentConfig) -> Result<BulkBlock, ConfigErrors> {
    let o = OpenSearchOptions::from_config(config)?;
    BulkBlock {
        options: o.bulk,
        api_key: None,
    }
    .checked(settings, config)
}
