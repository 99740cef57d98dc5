//! DatabaseConnector (Lucille's `connector.jdbc.DatabaseConnector`): runs `sql` and publishes
//! one document per row, its id from the `idField` column (with `docIdPrefix`).
//!
//! Keys as Lucille's: `driver`, `connectionString`, `jdbcUser`, `jdbcPassword`, `sql`,
//! `idField`, `preSQL` / `postSQL` (older `preSql` / `postSql` accepted), `fetchSize`,
//! `otherSQLs` + `otherJoinFields`, `ignoreColumns`, `connectionRetries`,
//! `connectionRetryPause` (ms). Drivers: SQLite (`org.sqlite.JDBC`, bundled), PostgreSQL
//! (`org.postgresql.Driver`) and MySQL / MariaDB (`com.mysql.cj.jdbc.Driver`,
//! `org.mariadb.jdbc.Driver`), through the `database` service (`crate::database`, which the
//! QueryDatabase stage shares); `driver` may be omitted when the connection string names one.
//!
//! As Lucille: column labels are lower-cased and become field names; the id column is kept as a
//! field unless it is called `id`; NULLs are skipped; a column with a reserved name is an error
//! (rename it in the SQL or list it in `ignoreColumns`). With `otherSQLs`, the main SQL must be
//! ordered by `idField` and each other SQL by its join field: the result sets are merged in one
//! pass, and each other row whose join value equals the parent's id value becomes a child
//! document (ids `0`, `1`, ... counted per other SQL, as Lucille; all columns, no
//! `ignoreColumns`). Join values compare as numbers, or as text by byte order: order text keys
//! with a byte-order collation (PostgreSQL `ORDER BY key COLLATE "C"`) or children are missed.
//! Rows are streamed: SQLite steps the statement, PostgreSQL reads a portal `fetchSize` rows at
//! a time inside a transaction, MySQL reads rows off the socket as the server sends them.
//!
//! Values (see `database/value.rs`): integers and floats as numbers, NUMERIC as a number when it has at
//! most 15 significant digits (else its exact decimal text), booleans, dates and timestamps as
//! ISO-8601 text, bytes as base64. Differences from Lucille: `preSQL` / `postSQL` failures stop
//! the connector (Lucille logs and goes on); `jdbcUser` / `jdbcPassword` are optional (SQLite
//! has none); text values that are not valid UTF-8 (SQLite) are read lossily.
//!
//! Under `skipUnchanged: true` (ours, not Lucille's): rows are compared by their documents'
//! fields, or with `changeTokenColumn` by that column and the row's otherSQLs rows, before the
//! document is built; the main SQL's rows are one unit of the change store, so once all were
//! read, the documents of rows it no longer returns are deleted (the indexer's deletion marker).

#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Options, Spec};
use crate::database::{self, resolve_target, DbError, Problems, Query, RowSource, TargetOptions};
use crate::document::ids::id_text;
use crate::document::{is_reserved, Document};
use crate::unchanged::{json_hash, Hash, SkipMode, UnitRef};

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "DatabaseConnector",
    aliases: &["com.kmwllc.lucille.connector.jdbc.DatabaseConnector"],
    spec: DatabaseOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Rows fetched per round trip when `fetchSize` is not set (PostgreSQL).
const DEFAULT_FETCH_SIZE: usize = 1000;

/// The connector keys, with `maxDocumentBytes`: the runner reads it (`Common`) for the
/// connectors that hand over whole records.
fn base_spec() -> Spec {
    connector_spec()
        .optional("maxDocumentBytes", Kind::Integer)
        .doc("a row larger than this, as JSON, FAILs instead of being published")
}

/// Runs an SQL statement and publishes one document per row, its id from the idField column;
/// rows of other SQLs joined on it become child documents.
#[derive(Options)]
#[options(base = base_spec())]
struct DatabaseOptions {
    /// The database: driver, connectionString, jdbcUser, jdbcPassword.
    #[option(flatten)]
    target: TargetOptions,
    /// The SQL whose rows become documents (ordered by idField when otherSQLs are given).
    sql: String,
    /// The column holding each row's id.
    id_field: String,
    /// SQL run before the main one.
    #[option(key = "preSQL", alias = "preSql")]
    pre_sql: Option<String>,
    /// SQL run after every row was read.
    #[option(key = "postSQL", alias = "postSql")]
    post_sql: Option<String>,
    /// Rows fetched per round trip (PostgreSQL); not negative, 0 means the default.
    #[option(default = 1000)]
    fetch_size: i64,
    /// More SQLs, each ordered by its join field, whose rows become children of the row with
    /// the same id.
    #[option(key = "otherSQLs")]
    other_sqls: Option<Vec<String>>,
    /// The join field (column) of each of otherSQLs, in the same order.
    other_join_fields: Option<Vec<String>>,
    /// Columns left out of the documents.
    ignore_columns: Option<Vec<String>>,
    /// Attempts to connect; not negative, 0 means the default.
    #[option(default = 1)]
    connection_retries: i64,
    /// Milliseconds between connection attempts; not negative, 0 means the default.
    #[option(default = 10_000)]
    connection_retry_pause: i64,
    /// With skipUnchanged: true, a column that changes whenever its row does (an update
    /// timestamp, a version number): a row whose value, and whose otherSQLs rows, are what the
    /// last run indexed is not made into a document at all.
    change_token_column: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// What the database runs: connection, SQLs, fetch size, retries.
    pub query: Query,
    pub id_field: String,
    /// One join field per entry of `query.others`.
    pub join_fields: Vec<String>,
    /// Lower-cased.
    pub ignore_columns: Vec<String>,
    /// `changeTokenColumn`.
    pub change_token: Option<String>,
}

/// A count where 0 means `default`, as Lucille; a negative one is a problem (pushed onto `p`
/// with the rest rather than checked by a `min`, which would stop the other checks).
pub(crate) fn positive_or(p: &mut Problems<'_>, key: &str, n: i64, default: u64) -> u64 {
    match u64::try_from(n) {
        Ok(0) => default,
        Ok(n) => n,
        Err(_) => {
            p.push(key, format!("must not be negative, found {n}"));
            default
        }
    }
}

/// Reads and checks the whole config, collecting every problem.
/// `skip` is the connector's `skipUnchanged`, which `changeTokenColumn` needs.
pub(crate) fn settings(
    config: &ComponentConfig,
    skip: Option<SkipMode>,
) -> Result<Settings, ConfigErrors> {
    let o = DatabaseOptions::from_config(config)?;
    let mut p = Problems {
        config,
        list: Vec::new(),
    };
    let pre_sql = o.pre_sql.filter(|s| !s.trim().is_empty());
    let post_sql = o.post_sql.filter(|s| !s.trim().is_empty());

    if o.sql.trim().is_empty() {
        p.push("sql", "must not be empty");
    }
    if o.id_field.trim().is_empty() {
        p.push("idField", "must not be empty");
    }
    let target = resolve_target(&mut p, o.target);

    let fetch_size = positive_or(&mut p, "fetchSize", o.fetch_size, DEFAULT_FETCH_SIZE as u64);
    let connection_retries = positive_or(&mut p, "connectionRetries", o.connection_retries, 1);
    let retry_pause = positive_or(
        &mut p,
        "connectionRetryPause",
        o.connection_retry_pause,
        10_000,
    );

    let other_sqls = o.other_sqls.unwrap_or_default();
    let join_fields = o.other_join_fields.unwrap_or_default();
    let ignore_columns: Vec<String> = o
        .ignore_columns
        .unwrap_or_default()
        .iter()
        .map(|c| c.to_lowercase())
        .collect();
    if other_sqls.len() != join_fields.len() {
        p.push(
            "otherJoinFields",
            format!(
                "needs one join field per entry of otherSQLs ({} SQLs, {} join fields)",
                other_sqls.len(),
                join_fields.len()
            ),
        );
    }
    if other_sqls.iter().any(|s| s.trim().is_empty()) {
        p.push("otherSQLs", "must not contain an empty SQL");
    }
    let change_token = o.change_token_column.filter(|c| !c.trim().is_empty());
    if change_token.is_some() && skip != Some(SkipMode::Record) {
        p.push(
            "changeTokenColumn",
            "needs skipUnchanged: true on this connector (with \"output\" every row is \
             processed, without skipUnchanged the column would not be used); set it or remove \
             changeTokenColumn",
        );
    }

    match target {
        Some(target) if p.list.is_empty() => Ok(Settings {
            query: Query {
                target,
                sql: o.sql,
                pre_sql,
                post_sql,
                fetch_size: usize::try_from(fetch_size).unwrap_or(usize::MAX),
                others: other_sqls,
                connection_retries: u32::try_from(connection_retries).unwrap_or(u32::MAX),
                retry_pause: Duration::from_millis(retry_pause),
            },
            id_field: o.id_field,
            join_fields,
            ignore_columns,
            change_token,
        }),
        _ => Err(ConfigError::new(
            config.path(),
            format!("DatabaseConnector: {}", p.list.join("; ")),
        )
        .into()),
    }
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    Ok(Box::new(DatabaseConnector {
        common: common.clone(),
        settings: settings(config, common.skip_unchanged)?,
    }))
}

pub(crate) struct DatabaseConnector {
    common: Common,
    settings: Settings,
}

/// Compares an other SQL's join value with the parent's id value (numbers numerically, text
/// by bytes, as the ORDER BY of most collations for ASCII keys).
fn compare_keys(other: &Value, parent: &Value) -> Option<Ordering> {
    match (other, parent) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
        },
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// Per other SQL: its columns, its join column and the row read ahead but not yet consumed.
struct OtherCursor {
    columns: Vec<String>,
    join_column: usize,
    join_field: String,
    sql: String,
    ahead: Option<Vec<Value>>,
    exhausted: bool,
}

/// What one row of the main SQL becomes.
#[derive(Debug)]
pub(crate) enum Row {
    Doc(Document),
    /// A document with the content hash of its row's change token (`changeTokenColumn`) and
    /// its otherSQLs rows: stored under it once it ends well.
    Hashed(Document, Hash),
    /// A row that cannot become a document (no usable id): a FAIL with this id and reason.
    Failed {
        id: String,
        reason: String,
    },
}

/// Asked with a row's document id and token hash before its document is built: true when
/// the row is unchanged (accounted for; nothing is emitted for it).
pub(crate) type Unchanged<'a> = dyn FnMut(&str, Hash) -> Result<bool, ConnectorError> + 'a;

impl DatabaseConnector {
    /// Reads every row and hands each document to `emit`, in the main SQL's order (the
    /// tests' view; a run asks about change tokens too, `read_unchanged`).
    #[cfg(test)]
    pub(crate) fn read(
        &self,
        emit: &mut dyn FnMut(Row) -> Result<(), ConnectorError>,
    ) -> Result<u64, ConnectorError> {
        self.read_unchanged(&mut |_, _| Ok(false), emit)
    }

    /// As `read`; with `changeTokenColumn`, `unchanged` is asked first for each row whose
    /// token is not NULL.
    pub(crate) fn read_unchanged(
        &self,
        unchanged: &mut Unchanged<'_>,
        emit: &mut dyn FnMut(Row) -> Result<(), ConnectorError>,
    ) -> Result<u64, ConnectorError> {
        let mut stopped = None;
        let result = database::read(&self.settings.query, &mut |src| {
            self.merge(
                src,
                &mut |id, hash| {
                    unchanged(id, hash).map_err(|e| {
                        let message = e.to_string();
                        stopped = Some(e);
                        DbError::Stopped(message)
                    })
                },
                emit,
            )
        });
        if let Some(e) = stopped {
            return Err(e);
        }
        result.map_err(|e| match e {
            DbError::Stopped(message) => ConnectorError(message),
            other => {
                ConnectorError::new(format!("DatabaseConnector {:?}: {other}", self.common.name))
            }
        })
    }

    fn merge(
        &self,
        src: &mut dyn RowSource,
        unchanged: &mut dyn FnMut(&str, Hash) -> Result<bool, DbError>,
        emit: &mut dyn FnMut(Row) -> Result<(), ConnectorError>,
    ) -> Result<u64, DbError> {
        let s = &self.settings;
        let columns: Vec<String> = src.columns(0).to_vec();
        let find = |name: &str, key: &str| {
            columns
                .iter()
                .position(|c| c.eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    DbError::Row(format!(
                        "{key} {name:?} is not a column of the SQL {:?} (columns: {})",
                        s.query.sql,
                        columns.join(", ")
                    ))
                })
        };
        let id_column = find(&s.id_field, "idField")?;
        let token_column = match &s.change_token {
            Some(name) => Some(find(name, "changeTokenColumn")?),
            None => None,
        };
        for (i, name) in columns.iter().enumerate() {
            let skipped = (i == id_column && name == "id") || s.ignore_columns.contains(name);
            if !skipped && is_reserved(name) {
                return Err(DbError::Row(format!(
                    "column {name:?} of the SQL {:?} is a reserved field name; rename it in the SQL or add it to ignoreColumns",
                    s.query.sql
                )));
            }
        }
        let mut others = Vec::with_capacity(s.query.others.len());
        for (n, (sql, join_field)) in s.query.others.iter().zip(&s.join_fields).enumerate() {
            let cols = src.columns(n + 1);
            let join_column = cols
                .iter()
                .position(|c| c.eq_ignore_ascii_case(join_field.trim()))
                .ok_or_else(|| {
                    DbError::Row(format!(
                        "otherJoinFields[{n}] {join_field:?} is not a column of the SQL {sql:?} (columns: {})",
                        cols.join(", ")
                    ))
                })?;
            if let Some(bad) = cols.iter().find(|c| is_reserved(c)) {
                return Err(DbError::Row(format!(
                    "column {bad:?} of the other SQL {sql:?} is a reserved field name; rename it in the SQL"
                )));
            }
            others.push(OtherCursor {
                columns: cols.to_vec(),
                join_column,
                join_field: join_field.clone(),
                sql: sql.clone(),
                ahead: None,
                exhausted: false,
            });
        }

        let mut published = 0u64;
        while let Some(row) = src.next_row(0)? {
            published += 1;
            let row_number = published;
            let key = &row[id_column];
            let Some(id) = id_text(key) else {
                // Never silently skipped: the row is accounted for as a FAIL.
                let reason = format!(
                    "row {row_number} of the SQL {:?} has no usable id: idField {:?} is {}",
                    s.query.sql,
                    s.id_field,
                    if key.is_null() {
                        "NULL".to_string()
                    } else {
                        format!("{key}")
                    }
                );
                let id = self
                    .common
                    .doc_id(&format!("{}:row-{row_number}", self.common.name));
                // The other SQLs' rows of this key are passed over with the next parent.
                emit(Row::Failed { id, reason })?;
                continue;
            };
            let mut children = Vec::with_capacity(others.len());
            for (n, other) in others.iter_mut().enumerate() {
                children.push(take_children(src, n + 1, other, key)?);
            }
            let id = self.common.doc_id(&id);
            // The token and every joined row: a changed child changes the hash too.
            let hash = token_column
                .map(|t| &row[t])
                .filter(|token| !token.is_null())
                .map(|token| json_hash(&(token, &children)));
            if let Some(hash) = hash {
                if unchanged(&id, hash)? {
                    continue;
                }
            }
            let doc = self.build(&id, row_number, &columns, id_column, row, &others, children)?;
            if let Some(size) = self.common.oversize(&doc) {
                // The driver hands over whole rows; one over the limit is FAILed, not published.
                let reason = format!(
                    "row {row_number} of the SQL {:?}: the record is larger than \
                     maxDocumentBytes ({}): {size} bytes as JSON",
                    s.query.sql,
                    self.common.max_document_bytes.unwrap_or_default()
                );
                emit(Row::Failed {
                    id: doc.id().to_string(),
                    reason,
                })?;
                continue;
            }
            emit(match hash {
                Some(hash) => Row::Hashed(doc, hash),
                None => Row::Doc(doc),
            })?;
        }
        Ok(published)
    }

    /// The document of a main SQL row, with a child per joined row of each other SQL.
    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        id: &str,
        row_number: u64,
        columns: &[String],
        id_column: usize,
        row: Vec<Value>,
        others: &[OtherCursor],
        children: Vec<Vec<Vec<Value>>>,
    ) -> Result<Document, DbError> {
        let s = &self.settings;
        let mut doc =
            Document::new(id).map_err(|e| DbError::Row(format!("row {row_number}: {e}")))?;
        for (i, (name, value)) in columns.iter().zip(row).enumerate() {
            if value.is_null()
                || (i == id_column && name == "id")
                || s.ignore_columns.contains(name)
            {
                continue;
            }
            doc.set_or_add(name, value)
                .map_err(|e| DbError::Row(format!("row {row_number}, column {name:?}: {e}")))?;
        }
        for (other, rows) in others.iter().zip(children) {
            // Ids 0, 1, ... counted per other SQL, as Lucille.
            for (child_number, row) in rows.into_iter().enumerate() {
                let mut child = Document::new(child_number.to_string())
                    .map_err(|e| DbError::Row(e.to_string()))?;
                for (name, value) in other.columns.iter().zip(row) {
                    if !value.is_null() {
                        child
                            .set_or_add(name, value)
                            .map_err(|e| DbError::Row(format!("child column {name:?}: {e}")))?;
                    }
                }
                doc.add_child(child);
            }
        }
        Ok(doc)
    }
}

/// Advances an other SQL's cursor past smaller join values and takes the rows whose join
/// value equals `key`; the first larger row stays read ahead for the next parent.
fn take_children(
    src: &mut dyn RowSource,
    cursor: usize,
    other: &mut OtherCursor,
    key: &Value,
) -> Result<Vec<Vec<Value>>, DbError> {
    let mut rows = Vec::new();
    loop {
        if other.ahead.is_none() && !other.exhausted {
            other.ahead = src.next_row(cursor)?;
            other.exhausted = other.ahead.is_none();
        }
        let Some(row) = &other.ahead else {
            return Ok(rows);
        };
        let join = &row[other.join_column];
        let order = compare_keys(join, key).ok_or_else(|| {
            DbError::Row(format!(
                "cannot compare join field {:?} value {join} of the SQL {:?} with the parent id {key}{}",
                other.join_field,
                other.sql,
                if join.is_null() || key.is_null() { " (NULL)" } else { " (different types)" }
            ))
        })?;
        match order {
            Ordering::Less => other.ahead = None,
            Ordering::Greater => return Ok(rows),
            Ordering::Equal => rows.extend(other.ahead.take()),
        }
    }
}

/// Under `skipUnchanged: true` the main SQL's rows are one unit of the change store: once
/// they were all read, the documents the last runs indexed from rows it no longer returns are
/// deleted (through the indexer's deletion marker).
const ROWS_UNIT: &str = "rows of the main SQL";

impl Connector for DatabaseConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let unit: Option<UnitRef> = publisher
            .changes()
            .filter(|c| c.mode() == SkipMode::Record)
            .map(|c| c.begin_unit(ROWS_UNIT, 0));
        let result = self.read_unchanged(
            &mut |id, hash| Ok(publisher.publish_if_unchanged(id, hash, unit)?),
            &mut |row| {
                match row {
                    Row::Doc(doc) => publisher.publish_in(doc, unit),
                    Row::Hashed(doc, hash) => publisher.publish_hashed_in(doc, hash, unit),
                    Row::Failed { id, reason } => {
                        tracing::warn!(id, "{reason}");
                        publisher.publish_failed_in(&id, &reason, unit)
                    }
                }
                .map_err(ConnectorError::from)
            },
        );
        if let (Some(changes), Some(unit)) = (publisher.changes(), unit) {
            if result.is_ok() {
                let vanished = changes.unseen_in_unit(ROWS_UNIT);
                if !vanished.is_empty() {
                    tracing::info!(
                        "DatabaseConnector {:?}: {} document(s) indexed from rows the SQL no \
                         longer returns are deleted",
                        self.common.name,
                        vanished.len()
                    );
                }
                publisher.delete_vanished(&vanished, Some(unit))?;
            }
            changes.end_unit(unit, result.is_ok());
        }
        let count = result?;
        tracing::info!(
            "DatabaseConnector {:?}: read {count} rows",
            self.common.name
        );
        Ok(())
    }
}
