//! Database access, a service under the components that read databases: the
//! DatabaseConnector (`read`: SQLs run and their rows streamed to a consumer) and the
//! QueryDatabase stage (`lookup`: one prepared statement run per document). Drivers: SQLite
//! (bundled), PostgreSQL and MySQL / MariaDB (pure Rust), one file each; `value` turns their
//! column values into JSON. `resolve_target` reads the connection keys both components share
//! (`driver`, `connectionString`, `jdbcUser`, `jdbcPassword`), Lucille's JDBC forms included.

pub mod lookup;
mod mysql;
mod postgresql;
mod sqlite;
pub mod value;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use lucille_core::config::{ComponentConfig, Options};

/// Where to connect, resolved from `driver` and `connectionString`.
#[derive(Debug, Clone)]
pub enum Target {
    Sqlite(SqliteTarget),
    Postgres(Box<::postgres::Config>),
    Mysql(Box<mysql::MysqlTarget>),
}

#[derive(Debug, Clone)]
pub enum SqliteTarget {
    File(PathBuf),
    Memory,
}

/// What to run: the connection, the main SQL and the other SQLs whose result sets are read
/// beside it, the statements run before and after, and the connection retries.
#[derive(Debug, Clone)]
pub struct Query {
    pub target: Target,
    pub sql: String,
    pub pre_sql: Option<String>,
    pub post_sql: Option<String>,
    /// Rows fetched per round trip (PostgreSQL).
    pub fetch_size: usize,
    /// More SQLs whose result sets are open beside the main one (cursors 1..).
    pub others: Vec<String>,
    pub connection_retries: u32,
    pub retry_pause: Duration,
}

impl Query {
    /// The main SQL then the other SQLs, each with the name its errors give it: one result set
    /// (cursor) each, in this order.
    pub fn statements(&self) -> Vec<(&'static str, &str)> {
        std::iter::once(("sql", self.sql.as_str()))
            .chain(
                self.others
                    .iter()
                    .map(|sql| ("otherSQLs entry", sql.as_str())),
            )
            .collect()
    }
}

/// Runs `query` (its `pre_sql` first, its `post_sql` after) and hands the open result sets to
/// `consume`, which reads them and returns how many documents it made.
pub fn read(
    query: &Query,
    consume: &mut dyn FnMut(&mut dyn RowSource) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    match &query.target {
        Target::Sqlite(t) => sqlite::run(query, t, consume),
        Target::Postgres(c) => postgresql::run(query, c, consume),
        Target::Mysql(t) => mysql::run(query, t, consume),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Driver {
    Sqlite,
    Postgres,
    Mysql,
}

fn driver_from_name(name: &str) -> Option<Driver> {
    match name.to_ascii_lowercase().as_str() {
        "org.sqlite.jdbc" | "sqlite" | "sqlite3" => Some(Driver::Sqlite),
        "org.postgresql.driver" | "postgresql" | "postgres" => Some(Driver::Postgres),
        "com.mysql.cj.jdbc.driver"
        | "com.mysql.jdbc.driver"
        | "org.mariadb.jdbc.driver"
        | "mysql"
        | "mariadb" => Some(Driver::Mysql),
        _ => None,
    }
}

fn driver_from_connection(conn: &str) -> Option<Driver> {
    let lower = conn.to_ascii_lowercase();
    if lower.starts_with("jdbc:sqlite:") {
        Some(Driver::Sqlite)
    } else if lower.starts_with("jdbc:postgresql:")
        || lower.starts_with("postgresql://")
        || lower.starts_with("postgres://")
    {
        Some(Driver::Postgres)
    } else if ["jdbc:mysql:", "jdbc:mariadb:", "mysql://", "mariadb://"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        Some(Driver::Mysql)
    } else {
        None
    }
}

/// Collects every config problem so they are reported at once.
pub struct Problems<'a> {
    pub config: &'a ComponentConfig,
    pub list: Vec<String>,
}

impl Problems<'_> {
    pub fn push(&mut self, key: &str, message: impl Into<String>) {
        self.list.push(self.config.error(key, message).to_string());
    }
}

/// The keys that say which database to use, shared by the DatabaseConnector and the
/// QueryDatabase stage (flattened into their options).
#[derive(Options)]
pub struct TargetOptions {
    /// The JDBC driver class: org.sqlite.JDBC, org.postgresql.Driver,
    /// com.mysql.cj.jdbc.Driver or org.mariadb.jdbc.Driver (default: the one the
    /// connectionString names).
    pub driver: Option<String>,
    /// The JDBC connection string (jdbc:sqlite:file.db, jdbc:postgresql://host/db, ...).
    pub connection_string: String,
    /// The database user.
    pub jdbc_user: Option<String>,
    /// The database user's password.
    pub jdbc_password: Option<String>,
}

/// Where the [`TargetOptions`] point; problems go to `p`.
pub fn resolve_target(p: &mut Problems<'_>, o: TargetOptions) -> Option<Target> {
    let TargetOptions {
        driver: driver_name,
        connection_string,
        jdbc_user: user,
        jdbc_password: password,
    } = o;
    let connection = connection_string.as_str();
    let config = p.config;
    let from_conn = driver_from_connection(connection);
    let driver = match &driver_name {
        Some(name) => match driver_from_name(name) {
            Some(d) => {
                if from_conn.is_some_and(|c| c != d) {
                    p.push(
                        "connectionString",
                        format!("does not match driver {name:?}"),
                    );
                }
                Some(d)
            }
            None => {
                p.push(
                    "driver",
                    format!("unknown driver {name:?}; supported: org.sqlite.JDBC (SQLite), org.postgresql.Driver (PostgreSQL), com.mysql.cj.jdbc.Driver / org.mariadb.jdbc.Driver (MySQL, MariaDB)"),
                );
                None
            }
        },
        None => {
            if from_conn.is_none() {
                p.push(
                    "driver",
                    "missing, and the connectionString names no driver (jdbc:sqlite:..., jdbc:postgresql://..., postgresql://..., jdbc:mysql://..., jdbc:mariadb://...)",
                );
            }
            from_conn
        }
    };
    match driver {
        Some(Driver::Sqlite) => match sqlite::target(connection, config) {
            Ok(t) => Some(Target::Sqlite(t)),
            Err(e) => {
                p.push("connectionString", e.to_string());
                None
            }
        },
        Some(Driver::Postgres) => {
            match postgresql::target(connection, user.as_deref(), password.as_deref()) {
                Ok(c) => Some(Target::Postgres(Box::new(c))),
                Err(e) => {
                    p.push("connectionString", e.to_string());
                    None
                }
            }
        }
        Some(Driver::Mysql) => {
            match mysql::target(connection, user.as_deref(), password.as_deref()) {
                Ok(t) => Some(Target::Mysql(Box::new(t))),
                Err(e) => {
                    p.push("connectionString", e.to_string());
                    None
                }
            }
        }
        None => None,
    }
}

/// A failure while reading the database, before its user names itself in the message.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot connect to {target} after {attempts} attempt(s): {source}")]
    Connect {
        target: String,
        attempts: u32,
        #[source]
        source: ConnectError,
    },
    #[error("SQL error in {what} {sql:?}: {message}")]
    Sql {
        what: &'static str,
        sql: String,
        message: String,
    },
    #[error("{0}")]
    Row(String),
    /// Whoever consumed the rows stopped (a connector whose publishing failed): its message.
    #[error("{0}")]
    Stopped(String),
}

/// Why one connection attempt failed (the driver's error, as its driver words it).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// A SQLite database file that does not exist (it is never created).
    #[error("no such file")]
    NoSuchFile,
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", postgresql::message(.0))]
    Postgres(#[source] ::postgres::Error),
    #[error("{}", mysql::message(.0))]
    Mysql(#[source] ::mysql::Error),
}

/// A connector that cannot take more rows (its publish failed, the run is stopping) stops the
/// read.
impl From<lucille_core::connector::ConnectorError> for DbError {
    fn from(e: lucille_core::connector::ConnectorError) -> Self {
        DbError::Stopped(e.0)
    }
}

/// The open result sets of one run: cursor 0 is the main SQL, 1.. the other SQLs in order.
pub trait RowSource {
    /// Lower-cased column labels of a cursor.
    fn columns(&self, cursor: usize) -> &[String];
    /// The next row of a cursor (SQL NULL as `Value::Null`), `None` when exhausted.
    fn next_row(&mut self, cursor: usize) -> Result<Option<Vec<Value>>, DbError>;
}

/// One open result set of a driver: its lower-cased column labels and how to read its next
/// row. `S` is what every cursor of a run reads through (PostgreSQL's transaction; `()`).
pub trait Cursor<S> {
    fn columns(&self) -> &[String];
    fn next_row(&mut self, shared: &mut S) -> Result<Option<Vec<Value>>, DbError>;
}

/// The result sets of one run, cursor 0 the main SQL: the `RowSource` every driver hands out.
pub struct Cursors<C, S> {
    pub shared: S,
    pub cursors: Vec<C>,
}

impl<C: Cursor<S>, S> RowSource for Cursors<C, S> {
    fn columns(&self, cursor: usize) -> &[String] {
        self.cursors.get(cursor).map_or(&[], C::columns)
    }

    fn next_row(&mut self, cursor: usize) -> Result<Option<Vec<Value>>, DbError> {
        match self.cursors.get_mut(cursor) {
            Some(c) => c.next_row(&mut self.shared),
            None => Ok(None),
        }
    }
}

/// Connects with Lucille's retry policy: one attempt plus `connectionRetries` retries.
pub fn with_retries<C>(
    retries: u32,
    pause: Duration,
    target: &str,
    mut connect: impl FnMut() -> Result<C, ConnectError>,
) -> Result<C, DbError> {
    let attempts = retries.saturating_add(1);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match connect() {
            Ok(c) => return Ok(c),
            Err(source) if attempt >= attempts => {
                return Err(DbError::Connect {
                    target: target.to_string(),
                    attempts: attempt,
                    source,
                })
            }
            Err(e) => {
                tracing::warn!(
                    "cannot connect to {target} (attempt {attempt} of {attempts}): {e}; retrying in {pause:?}"
                );
                std::thread::sleep(pause);
            }
        }
    }
}
