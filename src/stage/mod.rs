//! Every stage under one path: the `Stage` trait, conditions and the stage registry
//! (`lucille-core`), and the built-in stages of the component crates.

pub use lucille_ai::stage::*;
pub use lucille_core::stage::*;
pub use lucille_database::stage::*;
pub use lucille_files::stage::*;
pub use lucille_search_engines::stage::*;
pub use lucille_stages::stage::*;
pub use lucille_tantivy::stage::*;
