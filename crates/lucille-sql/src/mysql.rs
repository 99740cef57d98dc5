//! The MySQL / MariaDB driver (pure Rust `mysql` crate: no libmysqlclient, no TLS):
//! `jdbc:mysql://host:port/db`, `jdbc:mariadb://host:port/db` (Connector/J and MariaDB
//! Connector/J URLs, `user:password@` and the properties below), or a plain `mysql://` /
//! `mariadb://` URL; `jdbcUser` / `jdbcPassword` override the URL's.
//!
//! Rows are streamed from the socket as the server sends them (MySQL has no cursor for the
//! text protocol: `fetchSize` does not apply). MySQL allows one open result set per connection,
//! so each entry of `otherSQLs` is read on a connection of its own (temporary tables made by
//! `preSQL` are not visible to them). Sessions use `time_zone = '+00:00'`.
//!
//! Types: integer types as integers (unsigned BIGINT too), TINYINT(1) / BOOLEAN and BIT(1) as
//! booleans (as Connector/J), wider BIT as an integer, DECIMAL as in `value.rs`, FLOAT / DOUBLE
//! as numbers, YEAR as an integer, text types, ENUM and SET as strings, DATE (`2024-01-31`),
//! DATETIME (`2024-01-31T10:00:00`, no zone), TIMESTAMP (UTC, `...Z`), TIME as its text
//! (`-838:59:59` is valid), zero dates (`0000-00-00`) as their text, binary strings and BLOBs
//! as base64, JSON (MySQL's type) as JSON. GEOMETRY is skipped with one warning per column, as
//! PostgreSQL's unsupported types.

use std::num::ParseIntError;
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use mysql::consts::ColumnType;
use mysql::prelude::Queryable;
use mysql::{Column, Conn, Opts, OptsBuilder, Value as My};
use serde_json::Value;

use super::value::{Found, Param};
use super::{
    self as database, value, with_retries, ConnectError, Cursors, DbError, Query, RowSource,
};

/// The character set number of binary strings and BLOBs.
const BINARY_CHARSET: u16 = 63;

/// Where to connect: the parsed URL and credentials.
#[derive(Debug, Clone)]
pub struct MysqlTarget {
    host: String,
    port: u16,
    database: Option<String>,
    user: Option<String>,
    password: Option<String>,
    connect_timeout: Duration,
    socket_timeout: Option<Duration>,
}

impl MysqlTarget {
    fn opts(&self) -> Opts {
        OptsBuilder::new()
            .ip_or_hostname(Some(self.host.clone()))
            .tcp_port(self.port)
            .db_name(self.database.clone())
            .user(self.user.clone())
            .pass(self.password.clone())
            .prefer_socket(false)
            .tcp_connect_timeout(Some(self.connect_timeout))
            .read_timeout(self.socket_timeout)
            .write_timeout(self.socket_timeout)
            .init(vec![
                "SET NAMES utf8mb4".to_string(),
                "SET time_zone = '+00:00'".to_string(),
            ])
            .into()
    }

    fn describe(&self) -> String {
        format!(
            "MySQL {}:{} database {:?} as {:?}",
            self.host,
            self.port,
            self.database.as_deref().unwrap_or(""),
            self.user.as_deref().unwrap_or("")
        )
    }
}

/// Why a MySQL / MariaDB `connectionString` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MysqlUrlError {
    #[error("is not a MySQL / MariaDB URL (jdbc:mysql://host:port/database)")]
    NotMysql,
    #[error("names several hosts; only one host is supported")]
    SeveralHosts,
    #[error("has an invalid port {port:?}")]
    InvalidPort {
        port: String,
        #[source]
        source: ParseIntError,
    },
    #[error("has {key}={val}, which is not a number of milliseconds")]
    NotMillis {
        key: String,
        val: String,
        #[source]
        source: ParseIntError,
    },
    /// A property with a value this driver does not implement; `why` says what it does.
    #[error("has {key}={val}, which is not supported: {why}")]
    Unsupported {
        key: String,
        val: String,
        why: &'static str,
    },
    #[error(
        "has the JDBC property {key:?}, which is not supported (supported: user, password, connectTimeout, socketTimeout, useSSL=false, sslMode=DISABLED, useUnicode=true, characterEncoding=UTF-8, serverTimezone=UTC, allowPublicKeyRetrieval)"
    )]
    UnknownProperty { key: String },
}

/// A boolean JDBC property that may only take the value this driver implements.
fn only(key: &str, val: &str, allowed: &[&str], why: &'static str) -> Result<(), MysqlUrlError> {
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(val)) {
        Ok(())
    } else {
        Err(MysqlUrlError::Unsupported {
            key: key.to_string(),
            val: val.to_string(),
            why,
        })
    }
}

/// Parses `jdbc:mysql://`, `jdbc:mariadb://`, `mysql://` or `mariadb://` URLs.
pub fn target(
    connection: &str,
    user: Option<&str>,
    password: Option<&str>,
) -> Result<MysqlTarget, MysqlUrlError> {
    let lower = connection.to_ascii_lowercase();
    let rest = ["jdbc:mysql://", "jdbc:mariadb://", "mysql://", "mariadb://"]
        .iter()
        .find(|p| lower.starts_with(**p))
        .map(|p| &connection[p.len()..])
        .ok_or(MysqlUrlError::NotMysql)?;
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, database) = location.split_once('/').unwrap_or((location, ""));
    let (creds, hostport) = match authority.rsplit_once('@') {
        Some((c, h)) => (Some(c), h),
        None => (None, authority),
    };
    if hostport.contains(',') {
        return Err(MysqlUrlError::SeveralHosts);
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || p.parse::<u16>().is_ok() => (
            h,
            p.parse::<u16>()
                .map_err(|source| MysqlUrlError::InvalidPort {
                    port: p.to_string(),
                    source,
                })?,
        ),
        _ => (hostport, 3306),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut t = MysqlTarget {
        host: if host.is_empty() {
            "localhost".into()
        } else {
            host.into()
        },
        port,
        database: Some(database.to_string()).filter(|d| !d.is_empty()),
        user: None,
        password: None,
        connect_timeout: Duration::from_secs(30),
        socket_timeout: None,
    };
    if let Some(c) = creds {
        let (u, p) = c.split_once(':').unwrap_or((c, ""));
        t.user = Some(u.to_string()).filter(|u| !u.is_empty());
        t.password = Some(p.to_string()).filter(|p| !p.is_empty());
    }
    let millis = |key: &str, val: &str| -> Result<Option<Duration>, MysqlUrlError> {
        let ms: u64 = val.parse().map_err(|source| MysqlUrlError::NotMillis {
            key: key.to_string(),
            val: val.to_string(),
            source,
        })?;
        Ok((ms > 0).then(|| Duration::from_millis(ms)))
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, val) = pair.split_once('=').unwrap_or((pair, ""));
        match key.to_ascii_lowercase().as_str() {
            "user" => t.user = Some(val.to_string()),
            "password" => t.password = Some(val.to_string()),
            "connecttimeout" => {
                if let Some(d) = millis(key, val)? {
                    t.connect_timeout = d;
                }
            }
            "sockettimeout" => t.socket_timeout = millis(key, val)?,
            "usessl" | "ssl" | "requiressl" => {
                only(key, val, &["false"], "this driver has no TLS")?
            }
            "sslmode" => only(key, val, &["disabled", "disable"], "this driver has no TLS")?,
            "useunicode" => only(key, val, &["true"], "connections are always UTF-8")?,
            "characterencoding" => only(
                key,
                val,
                &["utf8", "utf-8", "utf8mb4"],
                "connections are always UTF-8 (utf8mb4)",
            )?,
            "servertimezone" | "connectiontimezone" => only(
                key,
                val,
                &["utc", "gmt", "z", "+00:00", "etc/utc"],
                "sessions are in UTC and TIMESTAMP values are read as UTC",
            )?,
            // The server's RSA key for caching_sha2_password without TLS is always requested.
            "allowpublickeyretrieval" => only(key, val, &["true", "false"], "true or false")?,
            _ => {
                return Err(MysqlUrlError::UnknownProperty {
                    key: key.to_string(),
                })
            }
        }
    }
    if let Some(u) = user.filter(|u| !u.is_empty()) {
        t.user = Some(u.to_string());
    }
    if let Some(p) = password.filter(|p| !p.is_empty()) {
        t.password = Some(p.to_string());
    }
    Ok(t)
}

/// The server's message with its error number and SQLSTATE, or the driver's error.
pub(crate) fn message(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(m) => {
            format!("{} (error {}, SQLSTATE {})", m.message, m.code, m.state)
        }
        other => other.to_string(),
    }
}

fn sql_error(what: &'static str, sql: &str, e: &mysql::Error) -> DbError {
    DbError::Sql {
        what,
        sql: sql.to_string(),
        message: message(e),
    }
}

fn connect(target: &MysqlTarget, retries: u32, pause: Duration) -> Result<Conn, DbError> {
    with_retries(retries, pause, &target.describe(), || {
        Conn::new(target.opts()).map_err(ConnectError::Mysql)
    })
}

/// How a column's values are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decode {
    Int,
    Bool,
    Bits,
    Float32,
    Float64,
    Decimal,
    Date,
    DateTime,
    Timestamp,
    Time,
    Text,
    Bytes,
    Json,
    Unsupported,
}

fn decoder(c: &Column) -> Decode {
    use ColumnType::*;
    let binary = c.character_set() == BINARY_CHARSET;
    match c.column_type() {
        MYSQL_TYPE_TINY if c.column_length() == 1 => Decode::Bool,
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
        | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_YEAR => Decode::Int,
        MYSQL_TYPE_BIT if c.column_length() == 1 => Decode::Bool,
        MYSQL_TYPE_BIT => Decode::Bits,
        MYSQL_TYPE_FLOAT => Decode::Float32,
        MYSQL_TYPE_DOUBLE => Decode::Float64,
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => Decode::Decimal,
        MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => Decode::Date,
        MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 => Decode::DateTime,
        MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2 => Decode::Timestamp,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Decode::Time,
        MYSQL_TYPE_JSON => Decode::Json,
        MYSQL_TYPE_NULL => Decode::Text,
        MYSQL_TYPE_VARCHAR
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB
            if binary =>
        {
            Decode::Bytes
        }
        MYSQL_TYPE_VARCHAR
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB
        | MYSQL_TYPE_ENUM
        | MYSQL_TYPE_SET => Decode::Text,
        _ => Decode::Unsupported,
    }
}

/// Why a column value cannot be read as its column's type.
#[derive(Debug, thiserror::Error)]
pub enum MysqlValueError {
    #[error("is not valid UTF-8 text: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    #[error("{0:?} is not a boolean")]
    NotBoolean(String),
    #[error("{0:?} is not an integer")]
    NotInteger(String),
    #[error("{0:?} is not a number")]
    NotNumber(String),
    #[error("bad JSON: {0}")]
    Json(#[from] serde_json::Error),
}

fn text(raw: &[u8]) -> Result<&str, MysqlValueError> {
    Ok(std::str::from_utf8(raw)?)
}

/// Fractional seconds as `.ffffff` trimmed to milliseconds or microseconds, as chrono's `%.f`.
fn date_time_text(y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, us: u32) -> Option<String> {
    let date = NaiveDate::from_ymd_opt(i32::from(y), u32::from(mo), u32::from(d))?;
    let time = NaiveTime::from_hms_micro_opt(u32::from(h), u32::from(mi), u32::from(s), us)?;
    Some(
        NaiveDateTime::new(date, time)
            .format("%Y-%m-%dT%H:%M:%S%.f")
            .to_string(),
    )
}

/// Text-protocol DATETIME / TIMESTAMP (`2024-01-31 10:00:00.250`) as ISO-8601; a zero date or
/// anything unparsable stays the server's text.
fn date_time_from_text(t: &str) -> Option<String> {
    let dt = NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f").ok()?;
    Some(dt.format("%Y-%m-%dT%H:%M:%S%.f").to_string())
}

/// One value as JSON: text-protocol values arrive as bytes, binary-protocol ones typed.
fn decode(how: Decode, v: &My) -> Result<Value, MysqlValueError> {
    Ok(match (how, v) {
        (_, My::NULL) | (Decode::Unsupported, _) => Value::Null,
        (Decode::Bool, My::Int(n)) => Value::Bool(*n != 0),
        (Decode::Bool, My::UInt(n)) => Value::Bool(*n != 0),
        (Decode::Bool, My::Bytes(b)) if b.len() == 1 && b[0] <= 1 => Value::Bool(b[0] == 1),
        (Decode::Bits, My::Bytes(b)) if b.len() <= 8 => {
            Value::from(b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
        }
        (_, My::Int(n)) => Value::from(*n),
        (_, My::UInt(n)) => Value::from(*n),
        (_, My::Float(f)) => value::float32(*f),
        (_, My::Double(f)) => value::float(*f),
        (Decode::Date, My::Date(y, mo, d, ..)) => Value::String(format!("{y:04}-{mo:02}-{d:02}")),
        (how, My::Date(y, mo, d, h, mi, s, us)) => {
            match date_time_text(*y, *mo, *d, *h, *mi, *s, *us) {
                Some(t) if how == Decode::Timestamp => Value::String(format!("{t}Z")),
                Some(t) => Value::String(t),
                None => Value::String(format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")),
            }
        }
        (_, My::Time(neg, days, h, mi, s, us)) => {
            let hours = u64::from(*days) * 24 + u64::from(*h);
            let mut t = format!("{}{hours:02}:{mi:02}:{s:02}", if *neg { "-" } else { "" });
            if *us > 0 {
                t.push_str(&format!(".{us:06}"));
            }
            Value::String(t)
        }
        (Decode::Bytes, My::Bytes(b)) => value::bytes(b),
        (how, My::Bytes(b)) => {
            let t = text(b)?;
            match how {
                Decode::Bool => Value::Bool(
                    t.parse::<i64>()
                        .map_err(|_| MysqlValueError::NotBoolean(t.to_string()))?
                        != 0,
                ),
                Decode::Int => {
                    if let Ok(n) = t.parse::<i64>() {
                        Value::from(n)
                    } else if let Ok(n) = t.parse::<u64>() {
                        Value::from(n)
                    } else {
                        return Err(MysqlValueError::NotInteger(t.to_string()));
                    }
                }
                Decode::Float32 => value::float32(
                    t.parse()
                        .map_err(|_| MysqlValueError::NotNumber(t.to_string()))?,
                ),
                Decode::Float64 => value::float(
                    t.parse()
                        .map_err(|_| MysqlValueError::NotNumber(t.to_string()))?,
                ),
                Decode::Decimal => value::decimal(t),
                Decode::DateTime => Value::String(date_time_from_text(t).unwrap_or(t.into())),
                Decode::Timestamp => Value::String(
                    date_time_from_text(t).map_or_else(|| t.to_string(), |s| format!("{s}Z")),
                ),
                Decode::Json => serde_json::from_str(t)?,
                _ => Value::String(t.to_string()),
            }
        }
    })
}

fn describe_columns(columns: &[Column], sql: &str) -> (Vec<String>, Vec<Decode>) {
    let names = columns
        .iter()
        .map(|c| c.name_str().to_lowercase())
        .collect();
    let decoders = columns
        .iter()
        .map(|c| {
            let d = decoder(c);
            if d == Decode::Unsupported {
                tracing::warn!(
                    "DatabaseConnector: column {:?} of type {:?} in {sql:?} is not supported and is skipped; cast it to text in the SQL to keep it",
                    c.name_str(),
                    c.column_type()
                );
            }
            d
        })
        .collect();
    (names, decoders)
}

fn decode_row(
    row: &mysql::Row,
    columns: &[String],
    decoders: &[Decode],
    sql: &str,
) -> Result<Vec<Value>, DbError> {
    let mut values = Vec::with_capacity(decoders.len());
    for (i, how) in decoders.iter().enumerate() {
        let v = row.as_ref(i).unwrap_or(&My::NULL);
        values.push(decode(*how, v).map_err(|m| {
            DbError::Row(format!(
                "column {:?} of the SQL {sql:?}: {m}",
                columns.get(i).map_or("", String::as_str)
            ))
        })?);
    }
    Ok(values)
}

struct Cursor<'c, 's> {
    what: &'static str,
    sql: &'s str,
    columns: Vec<String>,
    decoders: Vec<Decode>,
    rows: mysql::QueryResult<'c, 'c, 'c, mysql::Text>,
}

impl database::Cursor<()> for Cursor<'_, '_> {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn next_row(&mut self, _: &mut ()) -> Result<Option<Vec<Value>>, DbError> {
        match self.rows.next() {
            None => Ok(None),
            Some(Err(e)) => Err(sql_error(self.what, self.sql, &e)),
            Some(Ok(row)) => decode_row(&row, &self.columns, &self.decoders, self.sql).map(Some),
        }
    }
}

pub fn run(
    query: &Query,
    target: &MysqlTarget,
    body: &mut dyn FnMut(&mut dyn RowSource) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    let (retries, pause) = (query.connection_retries, query.retry_pause);
    let sqls = query.statements();
    let mut conns = Vec::with_capacity(sqls.len());
    conns.push(connect(target, retries, pause)?);
    if let Some(pre) = &query.pre_sql {
        conns[0]
            .query_drop(pre)
            .map_err(|e| sql_error("preSQL", pre, &e))?;
    }
    for _ in 1..sqls.len() {
        conns.push(connect(target, retries, pause)?);
    }
    let ids: Vec<u32> = conns.iter().map(Conn::connection_id).collect();
    let count = {
        let mut cursors = Vec::with_capacity(sqls.len());
        let mut opened = Ok(());
        for (conn, (what, sql)) in conns.iter_mut().zip(&sqls) {
            match conn.query_iter(*sql) {
                Ok(rows) => {
                    let (columns, decoders) = describe_columns(rows.columns().as_ref(), sql);
                    cursors.push(Cursor {
                        what,
                        sql,
                        columns,
                        decoders,
                        rows,
                    });
                }
                Err(e) => {
                    opened = Err(sql_error(what, sql, &e));
                    break;
                }
            }
        }
        let mut source = Cursors {
            shared: (),
            cursors,
        };
        let result = opened.and_then(|()| body(&mut source));
        if result.is_err() {
            // Dropping an open result set reads it to its end: stop the server's queries first,
            // so a failure early in a large result does not wait for all of it.
            interrupt(target, &ids);
        }
        drop(source);
        result?
    };
    if let Some(post) = &query.post_sql {
        conns[0]
            .query_drop(post)
            .map_err(|e| sql_error("postSQL", post, &e))?;
    }
    Ok(count)
}

/// Asks the server to stop the queries of connections `ids` (`KILL QUERY`, allowed on one's
/// own connections); best effort, failures are logged.
fn interrupt(target: &MysqlTarget, ids: &[u32]) {
    match Conn::new(target.opts()) {
        Ok(mut admin) => {
            for id in ids {
                if let Err(e) = admin.query_drop(format!("KILL QUERY {id}")) {
                    tracing::warn!(
                        "MySQL: cannot interrupt the query of connection {id}: {}",
                        message(&e)
                    );
                }
            }
        }
        Err(e) => tracing::warn!(
            "MySQL: cannot connect to interrupt the open queries: {}",
            message(&e)
        ),
    }
}

/// A QueryDatabase stage's connection and its prepared statement.
pub struct Prepared {
    conn: Conn,
    statement: mysql::Statement,
    columns: Vec<String>,
    decoders: Vec<Decode>,
}

/// Connects for a QueryDatabase stage and prepares its statement (a bad one is found here).
pub fn prepare_lookup(
    target: &MysqlTarget,
    retries: u32,
    pause: Duration,
    sql: &str,
) -> Result<Prepared, DbError> {
    let mut conn = connect(target, retries, pause)?;
    let statement = conn.prep(sql).map_err(|e| sql_error("sql", sql, &e))?;
    let (columns, decoders) = describe_columns(&statement.columns(), sql);
    Ok(Prepared {
        conn,
        statement,
        columns,
        decoders,
    })
}

impl Prepared {
    pub fn lookup(&mut self, sql: &str, params: &[Param]) -> Result<Found, DbError> {
        let expected = usize::from(self.statement.num_params());
        if expected != params.len() {
            return Err(DbError::Sql {
                what: "sql",
                sql: sql.to_string(),
                message: format!(
                    "the statement takes {expected} parameter(s) and keyFields give {}",
                    params.len()
                ),
            });
        }
        let bound: Vec<My> = params
            .iter()
            .map(|p| match p {
                Param::Str(s) => My::Bytes(s.as_bytes().to_vec()),
                Param::Int(n) => My::Int(i64::from(*n)),
                Param::Long(n) => My::Int(*n),
                Param::Double(f) => My::Double(*f),
                Param::Bool(b) => My::Int(i64::from(*b)),
                Param::Date(d) => {
                    use chrono::Datelike;
                    My::Date(
                        u16::try_from(d.year()).unwrap_or(0),
                        d.month() as u8,
                        d.day() as u8,
                        0,
                        0,
                        0,
                        0,
                    )
                }
            })
            .collect();
        let params = if bound.is_empty() {
            mysql::Params::Empty
        } else {
            mysql::Params::Positional(bound)
        };
        let result = self
            .conn
            .exec_iter(&self.statement, params)
            .map_err(|e| sql_error("sql", sql, &e))?;
        let mut found = Vec::new();
        for row in result {
            let row = row.map_err(|e| sql_error("sql", sql, &e))?;
            found.push(decode_row(&row, &self.columns, &self.decoders, sql)?);
        }
        Ok(Found {
            columns: self.columns.clone(),
            rows: found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jdbc_urls_are_parsed() {
        let t = target(
            "jdbc:mysql://db.example:3307/shop?useSSL=false&serverTimezone=UTC&connectTimeout=5000",
            Some("u"),
            Some("p"),
        )
        .unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.database.as_deref()),
            ("db.example", 3307, Some("shop"))
        );
        assert_eq!(
            (t.user.as_deref(), t.password.as_deref()),
            (Some("u"), Some("p"))
        );
        assert_eq!(t.connect_timeout, Duration::from_secs(5));
        let t = target("jdbc:mariadb://a:b@localhost/x?user=c", None, None).unwrap();
        assert_eq!(
            (t.port, t.user.as_deref(), t.password.as_deref()),
            (3306, Some("c"), Some("b"))
        );
        let t = target("mysql://127.0.0.1:33069", None, None).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.database),
            ("127.0.0.1", 33069, None)
        );
        let err = target("jdbc:mysql://h/db?useSSL=true", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no TLS"), "{err}");
        let err = target(
            "jdbc:mysql://h/db?rewriteBatchedStatements=true",
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("\"rewriteBatchedStatements\""), "{err}");
        let err = target("jdbc:mysql://h1,h2/db", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("several hosts"), "{err}");
        assert!(target("jdbc:mysql://h:port/db", None, None).is_err());
        assert!(target("jdbc:postgresql://h/db", None, None).is_err());
    }

    #[test]
    fn url_errors_keep_their_messages() {
        let msg = |url: &str| target(url, None, None).unwrap_err().to_string();
        assert_eq!(
            msg("jdbc:postgresql://h/db"),
            "is not a MySQL / MariaDB URL (jdbc:mysql://host:port/database)"
        );
        assert_eq!(
            msg("jdbc:mysql://h1,h2/db"),
            "names several hosts; only one host is supported"
        );
        assert_eq!(
            msg("jdbc:mysql://h:port/db"),
            "has an invalid port \"port\""
        );
        assert_eq!(
            msg("jdbc:mysql://h/db?connectTimeout=soon"),
            "has connectTimeout=soon, which is not a number of milliseconds"
        );
        assert_eq!(
            msg("jdbc:mysql://h/db?useSSL=true"),
            "has useSSL=true, which is not supported: this driver has no TLS"
        );
        assert_eq!(
            msg("jdbc:mysql://h/db?bogus=1"),
            "has the JDBC property \"bogus\", which is not supported (supported: user, password, connectTimeout, socketTimeout, useSSL=false, sslMode=DISABLED, useUnicode=true, characterEncoding=UTF-8, serverTimezone=UTC, allowPublicKeyRetrieval)"
        );
    }

    #[test]
    fn text_and_binary_values_decode_alike() {
        let b = |s: &str| My::Bytes(s.as_bytes().to_vec());
        assert_eq!(
            decode(Decode::Int, &b("18446744073709551615")).unwrap(),
            Value::from(u64::MAX)
        );
        assert_eq!(decode(Decode::Bool, &b("1")).unwrap(), Value::Bool(true));
        assert_eq!(
            decode(Decode::Bool, &My::Int(0)).unwrap(),
            Value::Bool(false)
        );
        assert_eq!(
            decode(Decode::Bits, &My::Bytes(vec![1, 2])).unwrap(),
            Value::from(258)
        );
        assert_eq!(
            decode(Decode::Float32, &b("0.1")).unwrap(),
            serde_json::json!(0.1)
        );
        assert_eq!(
            decode(Decode::Decimal, &b("12.50")).unwrap(),
            serde_json::json!(12.5)
        );
        assert_eq!(
            decode(Decode::DateTime, &b("2024-02-29 13:45:07.250")).unwrap(),
            Value::from("2024-02-29T13:45:07.250")
        );
        assert_eq!(
            decode(Decode::DateTime, &My::Date(2024, 2, 29, 13, 45, 7, 250_000)).unwrap(),
            Value::from("2024-02-29T13:45:07.250")
        );
        assert_eq!(
            decode(Decode::Timestamp, &b("2024-02-29 13:00:00")).unwrap(),
            Value::from("2024-02-29T13:00:00Z")
        );
        assert_eq!(
            decode(Decode::DateTime, &b("0000-00-00 00:00:00")).unwrap(),
            Value::from("0000-00-00 00:00:00")
        );
        assert_eq!(
            decode(Decode::Date, &My::Date(2024, 2, 29, 0, 0, 0, 0)).unwrap(),
            Value::from("2024-02-29")
        );
        assert_eq!(
            decode(Decode::Time, &My::Time(true, 1, 2, 3, 4, 0)).unwrap(),
            Value::from("-26:03:04")
        );
        assert_eq!(
            decode(Decode::Bytes, &My::Bytes(vec![0, 255])).unwrap(),
            Value::from("AP8=")
        );
        assert!(decode(Decode::Text, &My::Bytes(vec![0xff])).is_err());
        assert!(decode(Decode::Int, &b("x")).is_err());
        let msg = |how: Decode, v: &My| decode(how, v).unwrap_err().to_string();
        let invalid = vec![0xff_u8];
        let utf8 = std::str::from_utf8(&invalid).unwrap_err();
        assert_eq!(
            msg(Decode::Text, &My::Bytes(vec![0xff])),
            format!("is not valid UTF-8 text: {utf8}")
        );
        assert_eq!(msg(Decode::Bool, &b("x")), "\"x\" is not a boolean");
        assert_eq!(msg(Decode::Int, &b("x")), "\"x\" is not an integer");
        assert_eq!(msg(Decode::Float64, &b("x")), "\"x\" is not a number");
        let json = serde_json::from_str::<Value>("{").unwrap_err();
        assert_eq!(msg(Decode::Json, &b("{")), format!("bad JSON: {json}"));
    }
}
