//! Every connector under one path: the `Connector` trait and plans (`lucille-core`), and the
//! connectors of the component crates.

pub use lucille_core::connector::*;
pub use lucille_database::connector::*;
pub use lucille_files::connector::*;
pub use lucille_kafka::connector as kafka;
pub use lucille_search_engines::connector::*;
