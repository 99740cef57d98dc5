//! Search engines over HTTP: the indexer backends for OpenSearch, Elasticsearch (one bulk
//! protocol), Solr (with SolrCloud discovery in ZooKeeper), Typesense, Pinecone and Weaviate;
//! Lucille's SolrConnector; the per-document search stages (QueryOpensearch,
//! ElasticsearchLookup). Over the HTTP client.

pub mod connector;
pub mod indexer;
pub(crate) mod pinecone;
pub mod stage;

// The core and the services under the paths the components use.
pub(crate) use lucille_core::{accounting, config, document};
#[cfg(test)]
pub(crate) use lucille_core::{messaging, runner, test_service};
pub(crate) use lucille_http as http;
