//! Databases: the DatabaseConnector and the QueryDatabase stage, over the SQL drivers of
//! `lucille-sql`.

pub mod connector;
pub mod stage;

// The core and the services under the paths the components use.
pub(crate) use lucille_core::{accounting, config, document, unchanged};
#[cfg(test)]
pub(crate) use lucille_core::{runner, test_service};
pub(crate) use lucille_sql as database;
