//! Every stage under one path: the `Stage` trait, conditions and the stage registry
//! (`lucille-core`), and the built-in stages of the component crates.

#[cfg(feature = "ai")]
pub use lucille_ai::stage::*;
pub use lucille_core::stage::*;
#[cfg(feature = "database")]
pub use lucille_database::stage::*;
#[cfg(feature = "files")]
pub use lucille_files::stage::*;
#[cfg(feature = "search-engines")]
pub use lucille_search_engines::stage::*;
#[cfg(feature = "stages")]
pub use lucille_stages::stage::*;
#[cfg(feature = "tantivy")]
pub use lucille_tantivy::stage::*;
