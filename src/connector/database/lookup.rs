//! Per-document lookups (the QueryDatabase stage): one connection and one prepared statement
//! per stage instance, run with each document's key values as the statement's parameters.

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;

use super::{mysql, postgresql, sqlite, DbError, Target};

/// A statement parameter, typed as Lucille's `inputTypes` name it.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Str(String),
    Int(i32),
    Long(i64),
    Double(f64),
    Bool(bool),
    Date(NaiveDate),
}

/// The rows a lookup found: lower-cased column labels, then each row's values (SQL NULL as
/// `Value::Null`, unsupported column types as `Value::Null` with a warning when prepared).
pub struct Found {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgresql::Prepared>),
    Mysql(Box<mysql::Prepared>),
}

pub struct Lookup {
    conn: Conn,
    sql: String,
}

impl Lookup {
    /// Connects (with `retries` retries, `pause` apart) and prepares `sql`, so a bad
    /// statement is found when the stage starts.
    pub fn open(
        target: &Target,
        retries: u32,
        pause: Duration,
        sql: &str,
    ) -> Result<Self, DbError> {
        let conn = match target {
            Target::Sqlite(t) => Conn::Sqlite(sqlite::prepare_lookup(t, retries, pause, sql)?),
            Target::Postgres(c) => Conn::Postgres(Box::new(postgresql::prepare_lookup(
                c, retries, pause, sql,
            )?)),
            Target::Mysql(t) => {
                Conn::Mysql(Box::new(mysql::prepare_lookup(t, retries, pause, sql)?))
            }
        };
        Ok(Lookup {
            conn,
            sql: sql.to_string(),
        })
    }

    pub fn query(&mut self, params: &[Param]) -> Result<Found, DbError> {
        match &mut self.conn {
            Conn::Sqlite(c) => sqlite::lookup(c, &self.sql, params),
            Conn::Postgres(p) => p.lookup(&self.sql, params),
            Conn::Mysql(p) => p.lookup(&self.sql, params),
        }
    }
}
