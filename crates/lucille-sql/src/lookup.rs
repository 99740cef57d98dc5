//! Per-document lookups (the QueryDatabase stage): one connection and one prepared statement
//! per stage instance, run with each document's key values as the statement's parameters.

use std::time::Duration;

pub use super::value::{Found, Param};
use super::{mysql, postgresql, sqlite, DbError, Target};

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
