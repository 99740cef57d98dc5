//! The PostgreSQL driver: `jdbc:postgresql://host:port/db?user=..&password=..` (translated) or
//! a libpq `postgresql://` URL; `jdbcUser` / `jdbcPassword` override the URL's. Each SQL is
//! bound to a portal inside one transaction and read `fetchSize` rows per round trip, so a large
//! result set is never held in memory. No TLS (`sslmode=require` fails to connect).
//!
//! Types: int2/int4/int8/oid as integers, float4/float8 as numbers, numeric as in `value.rs`,
//! text types as strings, bool, date (`2024-01-31`), time, timestamp (`2024-01-31T10:00:00`,
//! no zone), timestamptz (UTC, `...Z`), `infinity` dates as that text, bytea as base64, uuid
//! and enums as text, json/jsonb as JSON, one-dimensional arrays of these as lists. Other types
//! (intervals, ranges, geometry, ...) are skipped with one warning per column, as Lucille skips
//! unsupported types; cast them to text in the SQL to keep them.

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, Utc};
use postgres::types::{FromSql, Kind, Type};
use postgres::{Client, Config, NoTls, Portal, Row, Transaction};
use serde_json::Value;

use super::value::{Found, Param};
use super::{
    self as database, value, with_retries, ConnectError, Cursors, DbError, Query, RowSource,
};

/// JDBC URL properties and the libpq parameter each becomes.
const JDBC_PARAMS: &[(&str, &str)] = &[
    ("user", "user"),
    ("password", "password"),
    ("sslmode", "sslmode"),
    ("applicationname", "application_name"),
    ("connecttimeout", "connect_timeout"),
    ("options", "options"),
];

/// Why a PostgreSQL `connectionString` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PostgresUrlError {
    #[error("is not a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database)")]
    NotJdbc,
    #[error(
        "has the JDBC property {key:?}, which is not supported (supported: user, password, sslmode, ApplicationName, connectTimeout, options, currentSchema)"
    )]
    UnknownProperty { key: String },
    #[error("is not a valid PostgreSQL URL: {0}")]
    Invalid(#[source] postgres::Error),
}

/// Builds the client config from the connection string and the optional user / password.
pub fn target(
    connection: &str,
    user: Option<&str>,
    password: Option<&str>,
) -> Result<Config, PostgresUrlError> {
    let url = if connection.len() >= 5 && connection[..5].eq_ignore_ascii_case("jdbc:") {
        jdbc_to_url(&connection[5..])?
    } else {
        connection.to_string()
    };
    let mut config = Config::from_str(&url).map_err(PostgresUrlError::Invalid)?;
    if let Some(u) = user.filter(|u| !u.is_empty()) {
        config.user(u);
    }
    if let Some(p) = password.filter(|p| !p.is_empty()) {
        config.password(p);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(30));
    }
    Ok(config)
}

/// `postgresql://host:port/db?user=x` (JDBC form, without `jdbc:`) as a libpq URL; the JDBC
/// properties are renamed and `currentSchema` becomes a `search_path` option.
fn jdbc_to_url(rest: &str) -> Result<String, PostgresUrlError> {
    let Some(body) = rest.strip_prefix("postgresql:") else {
        return Err(PostgresUrlError::NotJdbc);
    };
    let (location, query) = body.split_once('?').unwrap_or((body, ""));
    // jdbc:postgresql:db and jdbc:postgresql:/ mean localhost.
    let location = match location.strip_prefix("//") {
        Some(l) => l.to_string(),
        None => format!("localhost/{}", location.trim_start_matches('/')),
    };
    let mut params = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, val) = pair.split_once('=').unwrap_or((pair, ""));
        let lower = key.to_ascii_lowercase();
        if lower == "currentschema" {
            params.push(format!("options=-c%20search_path%3D{val}"));
        } else if let Some((_, libpq)) = JDBC_PARAMS.iter().find(|(j, _)| *j == lower) {
            params.push(format!("{libpq}={val}"));
        } else {
            return Err(PostgresUrlError::UnknownProperty {
                key: key.to_string(),
            });
        }
    }
    let mut url = format!("postgresql://{location}");
    if !params.is_empty() {
        url.push('?');
        url.push_str(&params.join("&"));
    }
    Ok(url)
}

/// The server's message for a failed call (the driver's own text is only "db error").
pub(crate) fn message(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut m = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            let _ = write!(m, ": {detail}");
        }
        return m;
    }
    let mut m = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let _ = write!(m, ": {s}");
        source = s.source();
    }
    m
}

fn sql_error(what: &'static str, sql: &str, e: &postgres::Error) -> DbError {
    DbError::Sql {
        what,
        sql: sql.to_string(),
        message: message(e),
    }
}

fn describe_target(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports = config.get_ports();
    format!(
        "PostgreSQL {}:{} database {:?} as {:?}",
        hosts.join(","),
        ports.first().copied().unwrap_or(5432),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or("")
    )
}

fn supported(ty: &Type) -> bool {
    match ty.kind() {
        Kind::Enum(_) => return true,
        Kind::Array(member) => {
            return !matches!(member.kind(), Kind::Array(_)) && supported(member)
        }
        _ => {}
    }
    [
        Type::BOOL,
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::OID,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::NUMERIC,
        Type::TEXT,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::NAME,
        Type::UNKNOWN,
        Type::BYTEA,
        Type::DATE,
        Type::TIME,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::UUID,
        Type::JSON,
        Type::JSONB,
    ]
    .contains(ty)
}

/// A column value as JSON, decoded from PostgreSQL's binary format.
struct PgValue(Value);

type DecodeError = Box<dyn StdError + Sync + Send>;

impl<'a> FromSql<'a> for PgValue {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, DecodeError> {
        match ty.kind() {
            // A 1-D array becomes a list (a multi-valued field); NULL members stay null.
            Kind::Array(_) => {
                let items = Vec::<PgValue>::from_sql(ty, raw)?;
                return Ok(PgValue(Value::Array(
                    items.into_iter().map(|v| v.0).collect(),
                )));
            }
            // An enum's binary form is its label.
            Kind::Enum(_) => return Ok(PgValue(Value::String(std::str::from_utf8(raw)?.into()))),
            _ => {}
        }
        if let Some(text) = infinite_time(ty, raw) {
            return Ok(PgValue(Value::String(text.into())));
        }
        let v = match *ty {
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Value::from(i16::from_sql(ty, raw)?),
            Type::INT4 => Value::from(i32::from_sql(ty, raw)?),
            Type::INT8 => Value::from(i64::from_sql(ty, raw)?),
            Type::OID => Value::from(u32::from_sql(ty, raw)?),
            Type::FLOAT4 => value::float32(f32::from_sql(ty, raw)?),
            Type::FLOAT8 => value::float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => value::decimal(&numeric_text(raw)?),
            Type::BYTEA => value::bytes(raw),
            Type::DATE => {
                Value::String(NaiveDate::from_sql(ty, raw)?.format("%Y-%m-%d").to_string())
            }
            Type::TIME => Value::String(
                NaiveTime::from_sql(ty, raw)?
                    .format("%H:%M:%S%.f")
                    .to_string(),
            ),
            Type::TIMESTAMP => Value::String(
                NaiveDateTime::from_sql(ty, raw)?
                    .format("%Y-%m-%dT%H:%M:%S%.f")
                    .to_string(),
            ),
            Type::TIMESTAMPTZ => Value::String(
                DateTime::<Utc>::from_sql(ty, raw)?.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            ),
            Type::UUID => Value::String(uuid_text(raw)?),
            Type::JSON => serde_json::from_slice(raw)?,
            Type::JSONB => match raw.split_first() {
                Some((1, json)) => serde_json::from_slice(json)?,
                _ => return Err("unknown jsonb format version".into()),
            },
            // Text types (and UNKNOWN, a literal with no type) arrive as UTF-8 text.
            _ => Value::String(std::str::from_utf8(raw)?.to_string()),
        };
        Ok(PgValue(v))
    }

    fn from_sql_null(_: &Type) -> Result<Self, DecodeError> {
        Ok(PgValue(Value::Null))
    }

    fn accepts(ty: &Type) -> bool {
        supported(ty)
    }
}

/// PostgreSQL's `infinity` / `-infinity` dates and timestamps (no chrono value holds them).
fn infinite_time(ty: &Type, raw: &[u8]) -> Option<&'static str> {
    let positive = match *ty {
        Type::DATE => match <[u8; 4]>::try_from(raw).ok().map(i32::from_be_bytes)? {
            i32::MAX => true,
            i32::MIN => false,
            _ => return None,
        },
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            match <[u8; 8]>::try_from(raw).ok().map(i64::from_be_bytes)? {
                i64::MAX => true,
                i64::MIN => false,
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(if positive { "infinity" } else { "-infinity" })
}

fn uuid_text(raw: &[u8]) -> Result<String, DecodeError> {
    if raw.len() != 16 {
        return Err("a uuid must have 16 bytes".into());
    }
    let mut s = String::with_capacity(36);
    for (i, b) in raw.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    Ok(s)
}

/// NUMERIC's binary form (base-10000 digits with a weight, sign and display scale) as its
/// exact decimal text.
fn numeric_text(raw: &[u8]) -> Result<String, DecodeError> {
    let word = |i: usize| -> Result<u16, DecodeError> {
        raw.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "truncated numeric".into())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(2)? as i16);
    let sign = word(4)?;
    let dscale = usize::from(word(6)?);
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let mut digits = Vec::with_capacity(ndigits);
    for i in 0..ndigits {
        digits.push(word(8 + 2 * i)?);
    }
    let digit = |i: i64| -> u16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    if weight < 0 {
        text.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                let _ = write!(text, "{}", digit(i));
            } else {
                let _ = write!(text, "{:04}", digit(i));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::with_capacity(dscale + 4);
        let mut i = weight + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        text.push('.');
        text.push_str(&frac);
    }
    Ok(text)
}

struct Cursor<'s> {
    what: &'static str,
    sql: &'s str,
    portal: Portal,
    columns: Vec<String>,
    supported: Vec<bool>,
    buffer: VecDeque<Row>,
    done: bool,
}

/// What every cursor of a run reads through: the transaction its portals live in, and how
/// many rows one round trip fetches.
struct Fetch<'t> {
    tx: Transaction<'t>,
    fetch: i32,
}

impl<'t> database::Cursor<Fetch<'t>> for Cursor<'_> {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn next_row(&mut self, shared: &mut Fetch<'t>) -> Result<Option<Vec<Value>>, DbError> {
        let c = self;
        if c.buffer.is_empty() && !c.done {
            let rows = shared
                .tx
                .query_portal(&c.portal, shared.fetch)
                .map_err(|e| sql_error(c.what, c.sql, &e))?;
            // A short batch means the portal is exhausted: no extra round trip to learn it.
            c.done = rows.len() < usize::try_from(shared.fetch).unwrap_or(usize::MAX);
            c.buffer.extend(rows);
        }
        let Some(row) = c.buffer.pop_front() else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(c.columns.len());
        for (i, ok) in c.supported.iter().enumerate() {
            if !ok {
                values.push(Value::Null);
                continue;
            }
            let v: PgValue = row.try_get(i).map_err(|e| {
                DbError::Row(format!(
                    "column {:?} of the SQL {:?}: {}",
                    c.columns[i],
                    c.sql,
                    message(&e)
                ))
            })?;
            values.push(v.0);
        }
        Ok(Some(values))
    }
}

fn connect(query: &Query, config: &Config) -> Result<Client, DbError> {
    with_retries(
        query.connection_retries,
        query.retry_pause,
        &describe_target(config),
        || config.connect(NoTls).map_err(ConnectError::Postgres),
    )
}

/// JDBC's `?` placeholders as PostgreSQL's `$1`, `$2`, ... (what the PostgreSQL JDBC driver
/// does for Lucille's configs; the `postgres` crate takes only `$n`). Written by hand as no
/// crate does just this: `?` inside quotes, quoted identifiers, dollar-quoted strings and
/// comments is left alone, and `??` stands for a literal `?` (the JDBC escape).
pub fn jdbc_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    let mut chars = sql.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                for (_, d) in chars.by_ref() {
                    out.push(d);
                    if d == c {
                        break;
                    }
                }
            }
            '-' if sql[i..].starts_with("--") => {
                let end = sql[i..].find('\n').map_or(sql.len(), |k| i + k);
                out.push_str(&sql[i..end]);
                while chars.peek().is_some_and(|&(j, _)| j < end) {
                    chars.next();
                }
            }
            '/' if sql[i..].starts_with("/*") => {
                let end = sql[i + 2..].find("*/").map_or(sql.len(), |k| i + 2 + k + 2);
                out.push_str(&sql[i..end]);
                while chars.peek().is_some_and(|&(j, _)| j < end) {
                    chars.next();
                }
            }
            '$' => {
                // A dollar quote `$tag$ ... $tag$` (a `$1` parameter has a digit after `$`).
                let tag_len = sql[i + 1..]
                    .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                    .filter(|&k| sql[i + 1 + k..].starts_with('$'))
                    .filter(|_| !sql[i + 1..].starts_with(|ch: char| ch.is_ascii_digit()));
                match tag_len {
                    Some(k) => {
                        let tag = &sql[i..i + k + 2];
                        let body = i + tag.len();
                        let end = sql[body..]
                            .find(tag)
                            .map_or(sql.len(), |m| body + m + tag.len());
                        out.push_str(&sql[i..end]);
                        while chars.peek().is_some_and(|&(j, _)| j < end) {
                            chars.next();
                        }
                    }
                    None => out.push(c),
                }
            }
            '?' if chars.peek().is_some_and(|&(_, d)| d == '?') => {
                chars.next();
                out.push('?');
            }
            '?' => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

/// A QueryDatabase stage's connection and its prepared statement.
pub struct Prepared {
    client: Client,
    statement: postgres::Statement,
    columns: Vec<String>,
    supported: Vec<bool>,
}

/// Connects for a QueryDatabase stage and prepares its statement (a bad one is found here).
pub fn prepare_lookup(
    config: &Config,
    retries: u32,
    pause: Duration,
    sql: &str,
) -> Result<Prepared, DbError> {
    let mut client = with_retries(retries, pause, &describe_target(config), || {
        config.connect(NoTls).map_err(ConnectError::Postgres)
    })?;
    let statement = client
        .prepare(&jdbc_placeholders(sql))
        .map_err(|e| sql_error("sql", sql, &e))?;
    let columns = statement
        .columns()
        .iter()
        .map(|c| c.name().to_lowercase())
        .collect();
    let supported = statement
        .columns()
        .iter()
        .map(|c| supported(c.type_()))
        .collect();
    Ok(Prepared {
        client,
        statement,
        columns,
        supported,
    })
}

/// Why a lookup parameter cannot be sent as the type the statement expects.
#[derive(Debug, thiserror::Error)]
pub enum PostgresParamError {
    #[error("{value} is out of range for {sql_type}")]
    OutOfRange {
        value: i64,
        sql_type: &'static str,
        #[source]
        source: std::num::TryFromIntError,
    },
    #[error("a {param} parameter cannot be sent where the statement expects {expected}")]
    Mismatch {
        /// The parameter's `inputTypes` name (`String`, `Integer`, ...).
        param: &'static str,
        expected: Type,
    },
}

/// A parameter as the type the statement expects there: JDBC drivers convert `setInt` for a
/// bigint column and the like, and PostgreSQL's binary protocol would otherwise refuse.
fn pg_param(
    ty: &Type,
    p: &Param,
) -> Result<Box<dyn postgres::types::ToSql + Sync>, PostgresParamError> {
    let out_of_range = |value: i64, sql_type: &'static str| {
        move |source| PostgresParamError::OutOfRange {
            value,
            sql_type,
            source,
        }
    };
    let wide = match p {
        Param::Int(n) => Some(i64::from(*n)),
        Param::Long(n) => Some(*n),
        _ => None,
    };
    let out: Box<dyn postgres::types::ToSql + Sync> = match (ty, p, wide) {
        (&Type::INT2, _, Some(n)) => {
            Box::new(i16::try_from(n).map_err(out_of_range(n, "smallint"))?)
        }
        (&Type::INT4, _, Some(n)) => {
            Box::new(i32::try_from(n).map_err(out_of_range(n, "integer"))?)
        }
        (&Type::INT8, _, Some(n)) => Box::new(n),
        (&Type::FLOAT4, Param::Double(f), _) => Box::new(*f as f32),
        (&Type::FLOAT8, Param::Double(f), _) => Box::new(*f),
        (&Type::FLOAT4, _, Some(n)) => Box::new(n as f32),
        (&Type::FLOAT8, _, Some(n)) => Box::new(n as f64),
        (&Type::BOOL, Param::Bool(b), _) => Box::new(*b),
        (&Type::DATE, Param::Date(d), _) => Box::new(*d),
        (&Type::TIMESTAMP, Param::Date(d), _) => Box::new(d.and_time(NaiveTime::MIN)),
        (_, Param::Str(s), _) => Box::new(s.clone()),
        (ty, p, _) => {
            return Err(PostgresParamError::Mismatch {
                param: match p {
                    Param::Str(_) => "String",
                    Param::Int(_) => "Integer",
                    Param::Long(_) => "Long",
                    Param::Double(_) => "Double",
                    Param::Bool(_) => "Boolean",
                    Param::Date(_) => "Date",
                },
                expected: ty.clone(),
            })
        }
    };
    Ok(out)
}

impl Prepared {
    pub fn lookup(&mut self, sql: &str, params: &[Param]) -> Result<Found, DbError> {
        let types = self.statement.params();
        if types.len() != params.len() {
            return Err(DbError::Sql {
                what: "sql",
                sql: sql.to_string(),
                message: format!(
                    "the statement takes {} parameter(s) and keyFields give {}",
                    types.len(),
                    params.len()
                ),
            });
        }
        let bound = types
            .iter()
            .zip(params)
            .map(|(ty, p)| pg_param(ty, p))
            .collect::<Result<Vec<_>, PostgresParamError>>()
            .map_err(|e| DbError::Sql {
                what: "sql",
                sql: sql.to_string(),
                message: e.to_string(),
            })?;
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            bound.iter().map(|b| b.as_ref()).collect();
        let rows = self
            .client
            .query(&self.statement, &refs)
            .map_err(|e| sql_error("sql", sql, &e))?;
        let mut found = Vec::with_capacity(rows.len());
        for row in rows {
            let mut values = Vec::with_capacity(self.columns.len());
            for (i, ok) in self.supported.iter().enumerate() {
                if !ok {
                    values.push(Value::Null);
                    continue;
                }
                let v: PgValue = row.try_get(i).map_err(|e| {
                    DbError::Row(format!(
                        "column {:?} of the SQL {sql:?}: {}",
                        self.columns[i],
                        message(&e)
                    ))
                })?;
                values.push(v.0);
            }
            found.push(values);
        }
        Ok(Found {
            columns: self.columns.clone(),
            rows: found,
        })
    }
}

pub fn run(
    query: &Query,
    config: &Config,
    body: &mut dyn FnMut(&mut dyn RowSource) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    let mut client = connect(query, config)?;
    if let Some(pre) = &query.pre_sql {
        client
            .batch_execute(pre)
            .map_err(|e| sql_error("preSQL", pre, &e))?;
    }
    let sqls = query.statements();
    let count = {
        let mut tx = client
            .transaction()
            .map_err(|e| sql_error("sql", &query.sql, &e))?;
        let mut cursors = Vec::with_capacity(sqls.len());
        for (what, sql) in &sqls {
            let stmt = tx.prepare(sql).map_err(|e| sql_error(what, sql, &e))?;
            let portal = tx.bind(&stmt, &[]).map_err(|e| sql_error(what, sql, &e))?;
            let columns: Vec<String> = stmt
                .columns()
                .iter()
                .map(|c| c.name().to_lowercase())
                .collect();
            let ok: Vec<bool> = stmt
                .columns()
                .iter()
                .map(|c| supported(c.type_()))
                .collect();
            for (col, ok) in stmt.columns().iter().zip(&ok) {
                if !ok {
                    tracing::warn!(
                        "DatabaseConnector: column {:?} of type {} in {sql:?} is not supported and is skipped; cast it to text in the SQL to keep it",
                        col.name(),
                        col.type_()
                    );
                }
            }
            cursors.push(Cursor {
                what,
                sql,
                portal,
                columns,
                supported: ok,
                buffer: VecDeque::new(),
                done: false,
            });
        }
        let fetch = i32::try_from(query.fetch_size).unwrap_or(i32::MAX);
        let mut src = Cursors {
            shared: Fetch { tx, fetch },
            cursors,
        };
        let count = body(&mut src)?;
        src.shared
            .tx
            .commit()
            .map_err(|e| sql_error("sql", &query.sql, &e))?;
        count
    };
    if let Some(post) = &query.post_sql {
        client
            .batch_execute(post)
            .map_err(|e| sql_error("postSQL", post, &e))?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jdbc_placeholders_become_numbered_outside_quotes_and_comments() {
        let cases = [
            (
                "SELECT a FROM t WHERE x = ? AND y = ?",
                "SELECT a FROM t WHERE x = $1 AND y = $2",
            ),
            (
                "SELECT '?', \"q?\" FROM t WHERE x = ?",
                "SELECT '?', \"q?\" FROM t WHERE x = $1",
            ),
            (
                "SELECT 'it''s ?' WHERE a = ? -- why?\nAND b = ?",
                "SELECT 'it''s ?' WHERE a = $1 -- why?\nAND b = $2",
            ),
            (
                "SELECT /* ? */ j ?? 'k' WHERE a = ?",
                "SELECT /* ? */ j ? 'k' WHERE a = $1",
            ),
            (
                "SELECT $$ a ? $$, $x$?$x$ WHERE a = ?",
                "SELECT $$ a ? $$, $x$?$x$ WHERE a = $1",
            ),
            (
                "SELECT * FROM t WHERE a = $1",
                "SELECT * FROM t WHERE a = $1",
            ),
            ("unterminated '?", "unterminated '?"),
        ];
        for (jdbc, pg) in cases {
            assert_eq!(super::jdbc_placeholders(jdbc), pg, "{jdbc}");
        }
    }

    #[test]
    fn jdbc_urls_are_translated() {
        let c = target(
            "jdbc:postgresql://db.example:6543/shop?ApplicationName=etl&currentSchema=s1",
            Some("u"),
            Some("p"),
        )
        .unwrap();
        assert_eq!(c.get_dbname(), Some("shop"));
        assert_eq!(c.get_ports(), &[6543]);
        assert_eq!(c.get_user(), Some("u"));
        assert_eq!(c.get_password(), Some(&b"p"[..]));
        assert_eq!(c.get_application_name(), Some("etl"));
        assert_eq!(c.get_options(), Some("-c search_path=s1"));
        let local = target("jdbc:postgresql:shop", None, None).unwrap();
        assert_eq!(local.get_dbname(), Some("shop"));
        let err = target("jdbc:postgresql://h/db?loginTimeout=3", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("loginTimeout"), "{err}");
        assert!(target("postgresql://u:p@127.0.0.1:5/x", None, None).is_ok());
    }

    #[test]
    fn url_and_param_errors_keep_their_messages() {
        let msg = |url: &str| target(url, None, None).unwrap_err().to_string();
        assert_eq!(
            msg("jdbc:mysql://h/db"),
            "is not a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database)"
        );
        assert_eq!(
            msg("jdbc:postgresql://h/db?loginTimeout=3"),
            "has the JDBC property \"loginTimeout\", which is not supported (supported: user, password, sslmode, ApplicationName, connectTimeout, options, currentSchema)"
        );
        let bad = "postgresql://h/db?bogus=1";
        let e = Config::from_str(bad).unwrap_err();
        assert_eq!(msg(bad), format!("is not a valid PostgreSQL URL: {e}"));
        let param = |ty: &Type, p: &Param| pg_param(ty, p).err().map(|e| e.to_string());
        assert_eq!(
            param(&Type::INT2, &Param::Long(70_000)).as_deref(),
            Some("70000 is out of range for smallint")
        );
        assert_eq!(
            param(&Type::INT4, &Param::Long(1 << 40)).as_deref(),
            Some("1099511627776 is out of range for integer")
        );
        assert_eq!(
            param(&Type::BOOL, &Param::Int(1)).as_deref(),
            Some(
                format!(
                    "a Integer parameter cannot be sent where the statement expects {}",
                    Type::BOOL
                )
                .as_str()
            )
        );
    }

    #[test]
    fn numeric_binary_form_as_text() {
        // 12345.678 : ndigits 3, weight 1, sign +, dscale 3, digits [1, 2345, 6780]
        let raw = [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1A, 0x7C];
        assert_eq!(numeric_text(&raw).unwrap(), "12345.678");
        // -0.05 : ndigits 1, weight -1, sign -, dscale 2, digits [500]
        let raw = [0, 1, 0xFF, 0xFF, 0x40, 0, 0, 2, 0x01, 0xF4];
        assert_eq!(numeric_text(&raw).unwrap(), "-0.05");
        assert_eq!(numeric_text(&[0, 0, 0, 0, 0xC0, 0, 0, 0]).unwrap(), "NaN");
    }
}
