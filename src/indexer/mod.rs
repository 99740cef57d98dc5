//! Every indexer backend under one path: the indexer loop, its settings and the `Backend`
//! trait (`lucille-core`), and the backends of the component crates.

pub use lucille_core::indexer::*;
#[cfg(feature = "files")]
pub use lucille_files::indexer::*;
#[cfg(feature = "search-engines")]
pub use lucille_search_engines::indexer::*;
#[cfg(feature = "tantivy")]
pub use lucille_tantivy::indexer::*;
