//! The SQLite driver (bundled): `jdbc:sqlite:PATH`, `jdbc:sqlite::memory:` or a plain path,
//! relative paths from the config file's folder. Statements are stepped, never collected.
//! Values follow SQLite's storage class; a column declared BOOLEAN gives booleans (as the
//! xerial JDBC driver Lucille uses); dates stay the text SQLite stores.

use serde_json::Value;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Rows, Statement};

use super::value::{Found, Param};
use super::{
    self as database, value, with_retries, ConnectError, Cursors, DbError, Query, RowSource,
    SqliteTarget,
};
use lucille_core::config::ComponentConfig;

/// A SQLite `connectionString` that names no database file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("names no SQLite database file")]
pub struct NoDatabaseFile;

pub fn target(connection: &str, config: &ComponentConfig) -> Result<SqliteTarget, NoDatabaseFile> {
    let rest = if connection.len() >= 12 && connection[..12].eq_ignore_ascii_case("jdbc:sqlite:") {
        &connection[12..]
    } else {
        connection
    };
    match rest.trim() {
        "" => Err(NoDatabaseFile),
        ":memory:" => Ok(SqliteTarget::Memory),
        path => Ok(SqliteTarget::File(config.resolve_path(path))),
    }
}

fn connect(query: &Query, target: &SqliteTarget) -> Result<Connection, DbError> {
    connect_with(query.connection_retries, query.retry_pause, target)
}

fn connect_with(
    retries: u32,
    pause: std::time::Duration,
    target: &SqliteTarget,
) -> Result<Connection, DbError> {
    let name = match target {
        SqliteTarget::File(p) => format!("SQLite database {}", p.display()),
        SqliteTarget::Memory => "an in-memory SQLite database".to_string(),
    };
    with_retries(retries, pause, &name, || match target {
        SqliteTarget::Memory => Ok(Connection::open_in_memory()?),
        SqliteTarget::File(path) => {
            // Never create a file: a wrong path must not look like an empty database.
            if !path.is_file() {
                return Err(ConnectError::NoSuchFile);
            }
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Ok(Connection::open_with_flags(path, flags)?)
        }
    })
}

fn sql_error(what: &'static str, sql: &str, e: rusqlite::Error) -> DbError {
    DbError::Sql {
        what,
        sql: sql.to_string(),
        message: e.to_string(),
    }
}

struct Cursor<'s> {
    what: &'static str,
    sql: &'s str,
    columns: Vec<String>,
    booleans: Vec<bool>,
    rows: Rows<'s>,
}

impl database::Cursor<()> for Cursor<'_> {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn next_row(&mut self, _: &mut ()) -> Result<Option<Vec<Value>>, DbError> {
        let (what, sql) = (self.what, self.sql);
        let Some(row) = self.rows.next().map_err(|e| sql_error(what, sql, e))? else {
            return Ok(None);
        };
        decode(row, &self.booleans, what, sql).map(Some)
    }
}

/// A row's values by SQLite storage class (a BOOLEAN-declared column as booleans).
fn decode(
    row: &rusqlite::Row<'_>,
    booleans: &[bool],
    what: &'static str,
    sql: &str,
) -> Result<Vec<Value>, DbError> {
    let mut values = Vec::with_capacity(booleans.len());
    for (i, boolean) in booleans.iter().enumerate() {
        let v = row.get_ref(i).map_err(|e| sql_error(what, sql, e))?;
        values.push(match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) if *boolean => Value::Bool(n != 0),
            ValueRef::Integer(n) => Value::from(n),
            ValueRef::Real(f) => value::float(f),
            ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => value::bytes(b),
        });
    }
    Ok(values)
}

/// Opens the database of a QueryDatabase stage and checks its statement compiles.
pub fn prepare_lookup(
    target: &SqliteTarget,
    retries: u32,
    pause: std::time::Duration,
    sql: &str,
) -> Result<Connection, DbError> {
    let conn = connect_with(retries, pause, target)?;
    conn.prepare_cached(sql)
        .map_err(|e| sql_error("sql", sql, e))?;
    Ok(conn)
}

/// Runs a QueryDatabase lookup.
pub fn lookup(conn: &Connection, sql: &str, params: &[Param]) -> Result<Found, DbError> {
    use rusqlite::types::Value as Sql;
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(|e| sql_error("sql", sql, e))?;
    let (columns, booleans) = describe(&stmt);
    let bound = params.iter().map(|p| match p {
        Param::Str(s) => Sql::Text(s.clone()),
        Param::Int(n) => Sql::Integer(i64::from(*n)),
        Param::Long(n) => Sql::Integer(*n),
        Param::Double(f) => Sql::Real(*f),
        Param::Bool(b) => Sql::Integer(i64::from(*b)),
        Param::Date(d) => Sql::Text(d.format("%Y-%m-%d").to_string()),
    });
    let mut rows = stmt
        .query(rusqlite::params_from_iter(bound))
        .map_err(|e| sql_error("sql", sql, e))?;
    let mut found = Vec::new();
    while let Some(row) = rows.next().map_err(|e| sql_error("sql", sql, e))? {
        found.push(decode(row, &booleans, "sql", sql)?);
    }
    Ok(Found {
        columns,
        rows: found,
    })
}

fn describe(stmt: &Statement<'_>) -> (Vec<String>, Vec<bool>) {
    let columns = stmt.columns();
    let names = columns.iter().map(|c| c.name().to_lowercase()).collect();
    let booleans = columns
        .iter()
        .map(|c| {
            c.decl_type()
                .is_some_and(|t| t.to_ascii_uppercase().contains("BOOL"))
        })
        .collect();
    (names, booleans)
}

pub fn run(
    query: &Query,
    target: &SqliteTarget,
    body: &mut dyn FnMut(&mut dyn RowSource) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    let conn = connect(query, target)?;
    if let Some(pre) = &query.pre_sql {
        conn.execute_batch(pre)
            .map_err(|e| sql_error("preSQL", pre, e))?;
    }
    let sqls = query.statements();
    let count = {
        let mut statements = Vec::with_capacity(sqls.len());
        for (what, sql) in &sqls {
            statements.push(conn.prepare(sql).map_err(|e| sql_error(what, sql, e))?);
        }
        let mut cursors = Vec::with_capacity(sqls.len());
        for (stmt, (what, sql)) in statements.iter_mut().zip(&sqls) {
            let (columns, booleans) = describe(stmt);
            let rows = stmt.query([]).map_err(|e| sql_error(what, sql, e))?;
            cursors.push(Cursor {
                what,
                sql,
                columns,
                booleans,
                rows,
            });
        }
        let mut source = Cursors {
            shared: (),
            cursors,
        };
        let count = body(&mut source)?;
        drop(source);
        count
    };
    if let Some(post) = &query.post_sql {
        conn.execute_batch(post)
            .map_err(|e| sql_error("postSQL", post, e))?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_and_connect_errors_keep_their_messages() {
        let config = ComponentConfig::new(serde_json::Map::new(), "connector");
        assert_eq!(
            target("jdbc:sqlite: ", &config).unwrap_err().to_string(),
            "names no SQLite database file"
        );
        let missing = SqliteTarget::File(std::path::PathBuf::from("/nonexistent/lucille.db"));
        let e = connect_with(0, std::time::Duration::ZERO, &missing).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot connect to SQLite database /nonexistent/lucille.db after 1 attempt(s): no such file"
        );
    }
}
