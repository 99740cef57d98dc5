//! Lucille's FileConnector `state { }` block (a JDBC table of the files it published and when)
//! mapped onto this connector's checkpoint (`connector::checkpoint`, a SQLite store): Lucille's
//! configs keep working, with the checkpoint's resumable traversal on top.
//!
//! - `state.connectionString` names the store: `jdbc:sqlite:PATH` is used as it is; Lucille's
//!   embedded Java databases (`jdbc:h2:[file:]NAME`, `jdbc:derby:NAME`, `jdbc:hsqldb:file:NAME`,
//!   the default `jdbc:h2:./state/{connector}`) become the SQLite file `NAME.sqlite` (logged);
//!   a database server (`jdbc:postgresql:`, `jdbc:mysql:`, ...) or an in-memory one is a config
//!   error, as the checkpoint is a local file.
//! - `state.tableName` (default the connector's name) is the name the files are kept under;
//!   `state.performDeletions: false` keeps the rows of files that vanished; `state.enabled:
//!   false` turns the block off. `driver`, `jdbcUser`, `jdbcPassword` and `pathLength` describe
//!   the JDBC table and have nothing to set on a SQLite file: they are logged as unused.
//!   `runsBeforeExpiration` other than 1 is a config error (a vanished file is forgotten after
//!   the first run that misses it).
//! - `filterOptions.lastPublishedCutoff` skips files read more recently than that;
//!   `filterOptions.publishMode: "incremental"` is `incremental: true` (unchanged files are
//!   skipped) and `sendTombstones: true` is `emitDeletes: true`.

use std::path::PathBuf;

use crate::config::{ComponentConfig, ConfigError, Options};

/// Lucille's `state { }` block: the files published and when, kept here in the connector's
/// SQLite checkpoint.
#[derive(Options)]
pub(super) struct StateOptions {
    /// false turns the block off.
    #[option(default = true)]
    enabled: bool,
    /// Lucille's JDBC driver class: not used (the state is a local SQLite file), logged.
    driver: Option<String>,
    /// The state database: jdbc:sqlite:PATH, or Lucille's embedded jdbc:h2: / jdbc:derby: /
    /// jdbc:hsqldb:file: NAME, kept as the SQLite file NAME.sqlite (default
    /// jdbc:h2:./state/CONNECTOR).
    connection_string: Option<String>,
    /// Lucille's JDBC user: not used, logged.
    jdbc_user: Option<String>,
    /// Lucille's JDBC password: not used, logged.
    jdbc_password: Option<String>,
    /// The name the files are kept under (default: the connector's name).
    table_name: Option<String>,
    /// false keeps the rows of files that vanished.
    #[option(default = true)]
    perform_deletions: bool,
    /// Lucille's JDBC column size: not used, logged.
    path_length: Option<i64>,
    /// Must be 1: a vanished file is forgotten after the first run that misses it.
    runs_before_expiration: Option<i64>,
}

/// What the `state` block asks of the checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct State {
    pub path: PathBuf,
    pub namespace: String,
    pub keep_vanished: bool,
}

/// Why a JDBC connection string names no local SQLite file ([`store_path`]); `connection` is
/// the string as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum StoreError {
    #[error("an in-memory database keeps no state between runs")]
    InMemory,
    /// An embedded database's in-memory or server form (`mem:`, `tcp:`, `ssl:`, `//`).
    #[error(
        "{connection:?} is not an embedded database file; the state is kept in a local SQLite \
         file here"
    )]
    NotAFile { connection: String },
    #[error(
        "{connection:?}: the state is kept in a local SQLite file here, not a database server; \
         use \"jdbc:sqlite:PATH\" (or checkpoint {{ path }})"
    )]
    Server { connection: String },
}

/// The SQLite file a JDBC connection string names, or why it cannot be one.
fn store_path(connection: &str) -> Result<(String, bool), StoreError> {
    let lower = connection.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("jdbc:sqlite:") {
        let path = &connection[connection.len() - rest.len()..];
        let path = path.split(['?', ';']).next().unwrap_or(path);
        if path.is_empty() || path == ":memory:" {
            return Err(StoreError::InMemory);
        }
        return Ok((path.to_string(), false));
    }
    for prefix in [
        "jdbc:h2:file:",
        "jdbc:h2:",
        "jdbc:derby:",
        "jdbc:hsqldb:file:",
    ] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let name = &connection[connection.len() - rest.len()..];
            let name = name.split([';', '?']).next().unwrap_or(name);
            if name.is_empty()
                || name.starts_with("mem:")
                || name.starts_with("tcp:")
                || name.starts_with("ssl:")
                || name.starts_with("//")
            {
                return Err(StoreError::NotAFile {
                    connection: connection.to_string(),
                });
            }
            return Ok((format!("{name}.sqlite"), true));
        }
    }
    Err(StoreError::Server {
        connection: connection.to_string(),
    })
}

/// What the `state` block (read into `o`; `block` names its keys in errors) asks of the
/// checkpoint: None when `enabled: false` or with a problem, which goes to `errors`.
pub(super) fn settings(
    block: &ComponentConfig,
    o: StateOptions,
    connector: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<State> {
    if let Some(n) = o.runs_before_expiration.filter(|n| *n != 1) {
        errors.push(block.error(
            "runsBeforeExpiration",
            format!(
                "must be 1 here, found {n}: a file that vanished is forgotten after the first \
                 run that misses it"
            ),
        ));
    }
    if !o.enabled {
        return None;
    }
    let unused: Vec<&str> = [
        ("driver", o.driver.is_some()),
        ("jdbcUser", o.jdbc_user.is_some()),
        ("jdbcPassword", o.jdbc_password.is_some()),
        ("pathLength", o.path_length.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, given)| given.then_some(k))
    .collect();
    if !unused.is_empty() {
        tracing::info!(
            "{}: {} describe a JDBC table; the state is a local SQLite file here, so they are \
             not used",
            block.path(),
            unused.join(", ")
        );
    }
    let connection = o
        .connection_string
        .unwrap_or_else(|| format!("jdbc:h2:./state/{connector}"));
    match store_path(&connection) {
        Ok((path, mapped)) => {
            let path = block.resolve_output_path(&path);
            if mapped {
                tracing::info!(
                    "{}: Lucille's state database {connection:?} is kept as the SQLite checkpoint {}",
                    block.key_path("connectionString"),
                    path.display()
                );
            }
            Some(State {
                path,
                namespace: o.table_name.unwrap_or_else(|| connector.to_string()),
                keep_vanished: !o.perform_deletions,
            })
        }
        Err(e) => {
            errors.push(block.error("connectionString", e.to_string()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::store_path;

    #[test]
    fn connection_strings_name_a_sqlite_file_or_are_refused() {
        assert_eq!(
            store_path("jdbc:sqlite:/tmp/s.db"),
            Ok(("/tmp/s.db".into(), false))
        );
        assert_eq!(
            store_path("jdbc:derby:lucille_state;create=true"),
            Ok(("lucille_state.sqlite".into(), true))
        );
        assert_eq!(
            store_path("jdbc:h2:./state/files"),
            Ok(("./state/files.sqlite".into(), true))
        );
        assert_eq!(
            store_path("JDBC:H2:file:/data/st;MODE=MySQL"),
            Ok(("/data/st.sqlite".into(), true))
        );
        for bad in [
            "jdbc:h2:mem:x",
            "jdbc:h2:tcp://host/db",
            "jdbc:postgresql://db:5432/state",
            "jdbc:sqlite::memory:",
            "jdbc:derby:",
        ] {
            let err = store_path(bad).unwrap_err().to_string();
            assert!(
                err.contains("SQLite") || err.contains("memory"),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            store_path("jdbc:mysql://db/state").unwrap_err().to_string(),
            "\"jdbc:mysql://db/state\": the state is kept in a local SQLite file here, not a \
             database server; use \"jdbc:sqlite:PATH\" (or checkpoint { path })"
        );
        assert_eq!(
            store_path("jdbc:h2:mem:x").unwrap_err().to_string(),
            "\"jdbc:h2:mem:x\" is not an embedded database file; the state is kept in a local \
             SQLite file here"
        );
    }
}
