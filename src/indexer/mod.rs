//! Every indexer backend under one path: the indexer loop, its settings and the `Backend`
//! trait (`lucille-core`), and the backends of the component crates.

pub use lucille_core::indexer::*;
pub use lucille_files::indexer::*;
pub use lucille_search_engines::indexer::*;
pub use lucille_tantivy::indexer::*;
