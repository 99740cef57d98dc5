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

use crate::config::{ComponentConfig, ConfigError, Kind, Spec};

/// The keys of Lucille's `state` block.
pub(super) fn spec() -> Spec {
    Spec::new()
        .optional("enabled", Kind::Bool)
        .optional("driver", Kind::String)
        .optional("connectionString", Kind::String)
        .optional("jdbcUser", Kind::String)
        .optional("jdbcPassword", Kind::String)
        .optional("tableName", Kind::String)
        .optional("performDeletions", Kind::Bool)
        .optional("pathLength", Kind::Integer)
        .optional("runsBeforeExpiration", Kind::Integer)
}

/// What the `state` block asks of the checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct State {
    pub path: PathBuf,
    pub namespace: String,
    pub keep_vanished: bool,
}

/// The SQLite file a JDBC connection string names, or why it cannot be one.
fn store_path(connection: &str) -> Result<(String, bool), String> {
    let lower = connection.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("jdbc:sqlite:") {
        let path = &connection[connection.len() - rest.len()..];
        let path = path.split(['?', ';']).next().unwrap_or(path);
        if path.is_empty() || path == ":memory:" {
            return Err("an in-memory database keeps no state between runs".into());
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
                return Err(format!(
                    "{connection:?} is not an embedded database file; the state is kept in a \
                     local SQLite file here"
                ));
            }
            return Ok((format!("{name}.sqlite"), true));
        }
    }
    Err(format!(
        "{connection:?}: the state is kept in a local SQLite file here, not a database server; \
         use \"jdbc:sqlite:PATH\" (or checkpoint {{ path }})"
    ))
}

/// Reads the `state` block (None when absent or `enabled: false`); problems go to `errors`.
pub(super) fn read(
    block: &ComponentConfig,
    connector: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<State> {
    errors.extend(spec().validate(block.map(), block.path()));
    let mut take = |r: Result<Option<String>, ConfigError>| match r {
        Ok(v) => v,
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let connection = take(block.string("connectionString"));
    let table = take(block.string("tableName"));
    let enabled = block.bool_or("enabled", true).unwrap_or(true);
    let keep_vanished = !block.bool_or("performDeletions", true).unwrap_or(true);
    if let Some(n) = block.i64("runsBeforeExpiration").ok().flatten() {
        if n != 1 {
            errors.push(block.error(
                "runsBeforeExpiration",
                format!(
                    "must be 1 here, found {n}: a file that vanished is forgotten after the first \
                     run that misses it"
                ),
            ));
        }
    }
    if !enabled {
        return None;
    }
    let unused: Vec<&str> = ["driver", "jdbcUser", "jdbcPassword", "pathLength"]
        .into_iter()
        .filter(|k| block.has(k))
        .collect();
    if !unused.is_empty() {
        tracing::info!(
            "{}: {} describe a JDBC table; the state is a local SQLite file here, so they are \
             not used",
            block.path(),
            unused.join(", ")
        );
    }
    let connection = connection.unwrap_or_else(|| format!("jdbc:h2:./state/{connector}"));
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
                namespace: table.unwrap_or_else(|| connector.to_string()),
                keep_vanished,
            })
        }
        Err(m) => {
            errors.push(block.error("connectionString", m));
            None
        }
    }
}

/// `filterOptions.publishMode`: whether it asks for incremental publishing.
pub(super) fn incremental_mode(
    filter: &ComponentConfig,
    errors: &mut Vec<ConfigError>,
) -> Option<bool> {
    match filter.string("publishMode") {
        Ok(None) => None,
        Ok(Some(m)) => match m.to_ascii_lowercase().as_str() {
            "incremental" => Some(true),
            "full" => Some(false),
            _ => {
                errors.push(filter.error(
                    "publishMode",
                    format!("must be \"incremental\" or \"full\", found {m:?}"),
                ));
                None
            }
        },
        Err(e) => {
            errors.push(e);
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
            let err = store_path(bad).unwrap_err();
            assert!(
                err.contains("SQLite") || err.contains("memory"),
                "{bad}: {err}"
            );
        }
    }
}
