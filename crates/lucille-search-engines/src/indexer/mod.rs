//! Indexer backends of this crate. The core's `indexer` module is re-exported inside the crate, so
//! the files here name the core's items as `super::` / `crate::indexer::` (the facade crate
//! `lucille` gathers every crate's `indexer` module under one path).

pub(crate) use lucille_core::indexer::*;

pub mod bulk;
#[cfg(test)]
mod bulk_tests;
pub mod elasticsearch;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
pub(crate) mod mock_http;
pub mod opensearch;
pub mod pinecone;
#[cfg(test)]
mod pinecone_tests;
pub mod solr;
pub mod solr_cloud;
#[cfg(test)]
mod solr_tests;
pub mod typesense;
#[cfg(test)]
mod typesense_tests;
pub mod weaviate;
#[cfg(test)]
mod weaviate_tests;

/// What checking an HTTP backend's block gives: the once-per-run warning when it turns the
/// TLS check off (`acceptInvalidCert: true`).
pub(crate) fn tls_check(
    accept_invalid_cert: bool,
    settings: &IndexerSettings,
    config: &crate::config::ComponentConfig,
) -> BackendCheck {
    BackendCheck {
        warning: crate::http::insecure_warning(accept_invalid_cert, config.path(), &settings.kind),
        output: None,
    }
}
