//! Every connector under one path: the `Connector` trait and plans (`lucille-core`), and the
//! connectors of the component crates.

pub use lucille_core::connector::*;
#[cfg(feature = "database")]
pub use lucille_database::connector::*;
#[cfg(feature = "files")]
pub use lucille_files::connector::*;
#[cfg(feature = "kafka")]
pub use lucille_kafka::connector as kafka;
#[cfg(feature = "search-engines")]
pub use lucille_search_engines::connector::*;
