//! The indexer backends, one file each; each submits its descriptor to the registry. The
//! indexer loop, settings and the `Backend` trait live in `lucille-core` (re-exported here).

pub use lucille_core::indexer::*;

mod batch_file;
pub mod bulk;
pub mod csv;
pub mod elasticsearch;
pub mod jsonl;
pub mod opensearch;
pub mod pinecone;
pub mod solr;
pub mod solr_cloud;
pub mod tantivy;
pub mod typesense;
pub mod weaviate;

#[cfg(test)]
mod bulk_tests;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
pub(crate) mod mock_http;
#[cfg(test)]
mod pinecone_tests;
#[cfg(test)]
mod solr_tests;
#[cfg(test)]
mod typesense_tests;
#[cfg(test)]
mod weaviate_tests;
