//! The change store of `skipUnchanged` (see `lucille_core::unchanged`): one SQLite file
//! beside the index or output, one row per document (its hash and the unit it was read from)
//! and one per unit (its token and document count), each under its connector's name.
//!
//! Only the tracker's writer thread writes (one transaction per batch of changes); WAL lets
//! the run's lookups read meanwhile.

use std::path::Path;

use lucille_core::unchanged::{Change, ChangeStore, ChangeStoreDescriptor, Hash, StoreError};
use rusqlite::{params, Connection, OptionalExtension};
use rustc_hash::FxHashMap;

inventory::submit!(ChangeStoreDescriptor { open: open_boxed });

fn open_boxed(path: &Path) -> Result<Box<dyn ChangeStore>, StoreError> {
    Ok(Box::new(SqliteChangeStore::open(path)?))
}

/// The schema's version, kept in `user_version`: a store written by another version is
/// refused with a message rather than misread.
const SCHEMA_VERSION: i64 = 1;

pub struct SqliteChangeStore {
    conn: Connection,
    path: String,
}

impl SqliteChangeStore {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let err = |e: rusqlite::Error| StoreError {
            path: shown.clone(),
            message: e.to_string(),
        };
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        if version != 0 && version != SCHEMA_VERSION {
            return Err(StoreError {
                path: shown,
                message: format!(
                    "written by another version of Lucille-rs (schema {version}, this one reads \
                     {SCHEMA_VERSION}): delete it to process every document again"
                ),
            });
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS docs (
                 scope TEXT NOT NULL,
                 id TEXT NOT NULL,
                 key INTEGER NOT NULL,
                 hash BLOB NOT NULL,
                 unit TEXT,
                 PRIMARY KEY (scope, id)
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS docs_by_unit ON docs (scope, unit);
             CREATE TABLE IF NOT EXISTS units (
                 scope TEXT NOT NULL,
                 unit TEXT NOT NULL,
                 token BLOB NOT NULL,
                 docs INTEGER NOT NULL,
                 PRIMARY KEY (scope, unit)
             ) WITHOUT ROWID;",
        )
        .map_err(err)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
        Ok(SqliteChangeStore { conn, path: shown })
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }
}

fn hash_of(bytes: &[u8]) -> Option<Hash> {
    Some(Hash::from_le_bytes(bytes.try_into().ok()?))
}

impl ChangeStore for SqliteChangeStore {
    fn entries(&mut self, scope: &str) -> Result<FxHashMap<u64, Hash>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, hash FROM docs WHERE scope = ?1")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![scope]).map_err(|e| self.err(e))?;
        let mut out = FxHashMap::default();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let key: i64 = row.get(0).map_err(|e| self.err(e))?;
            let hash: Vec<u8> = row.get(1).map_err(|e| self.err(e))?;
            // A malformed hash is no entry: that document is processed.
            if let Some(h) = hash_of(&hash) {
                out.insert(key as u64, h);
            }
        }
        Ok(out)
    }

    fn unit(&mut self, scope: &str, unit: &str) -> Result<Option<(Hash, u64)>, StoreError> {
        let row: Option<(Vec<u8>, i64)> = self
            .conn
            .query_row(
                "SELECT token, docs FROM units WHERE scope = ?1 AND unit = ?2",
                params![scope, unit],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(token, docs)| Some((hash_of(&token)?, docs.max(0) as u64))))
    }

    fn units(&mut self, scope: &str) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT unit FROM units WHERE scope = ?1
                 UNION SELECT DISTINCT unit FROM docs WHERE scope = ?1 AND unit IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![scope], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn ids_of_unit(&mut self, scope: &str, unit: &str) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM docs WHERE scope = ?1 AND unit = ?2")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![scope, unit], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn apply(&mut self, scope: &str, changes: &[Change]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| StoreError {
            path: path.clone(),
            message: e.to_string(),
        };
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut put = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO docs (scope, id, key, hash, unit) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            let mut remove = tx
                .prepare_cached("DELETE FROM docs WHERE scope = ?1 AND id = ?2")
                .map_err(err)?;
            let mut unit = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO units (scope, unit, token, docs) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            let mut remove_unit = tx
                .prepare_cached("DELETE FROM units WHERE scope = ?1 AND unit = ?2")
                .map_err(err)?;
            for c in changes {
                match c {
                    Change::Put {
                        id,
                        key,
                        hash,
                        unit,
                    } => put.execute(params![
                        scope,
                        id,
                        *key as i64,
                        &hash.to_le_bytes()[..],
                        unit.as_deref()
                    ]),
                    Change::Remove { id } => remove.execute(params![scope, id]),
                    Change::Unit {
                        unit: u,
                        token,
                        docs,
                    } => unit.execute(params![scope, &**u, &token.to_le_bytes()[..], *docs as i64]),
                    Change::RemoveUnit { unit: u } => remove_unit.execute(params![scope, &**u]),
                }
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }
}

#[cfg(test)]
mod tests;
