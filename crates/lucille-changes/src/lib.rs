//! The change store of `skipUnchanged` (see `lucille_core::unchanged`): one SQLite file
//! beside the index or output, one row per document (its hash and the unit it was read from)
//! and one per unit (its token and document count), each under its connector's name.
//!
//! Only the tracker's writer thread writes (one transaction per batch of changes); WAL lets
//! the run's lookups read meanwhile.

use std::collections::HashMap;
use std::path::Path;

use lucille_core::unchanged::{
    id_key, Change, ChangeStore, ChangeStoreDescriptor, Hash, StoreError,
};
use rusqlite::{params, Connection, OptionalExtension};
use rustc_hash::FxHashMap;

inventory::submit!(ChangeStoreDescriptor { open: open_boxed });

fn open_boxed(path: &Path) -> Result<Box<dyn ChangeStore>, StoreError> {
    Ok(Box::new(SqliteChangeStore::open(path)?))
}

/// The schema's version, kept in `user_version`: a store written by another version is
/// refused with a message rather than misread.
const SCHEMA_VERSION: i64 = 1;

/// A document's row names its unit by number (the units' rows hold the names): with the name
/// itself in every row and in the index over it, 200k puts took 1.5x as long (measured with
/// `time_puts` in the tests). Rows are keyed by the id's text: ids usually come in the source's
/// order, so rows are appended to the B-tree (keyed by the ids' hashes, in random order, a first
/// run of the standard benchmark took 2.3x as long).
pub struct SqliteChangeStore {
    conn: Connection,
    path: String,
    /// Unit numbers by (connector, unit name).
    unit_ids: HashMap<String, HashMap<String, i64>>,
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
            "CREATE TABLE IF NOT EXISTS units (
                 id INTEGER PRIMARY KEY,
                 scope TEXT NOT NULL,
                 unit TEXT NOT NULL,
                 token BLOB,
                 docs INTEGER NOT NULL DEFAULT 0,
                 UNIQUE (scope, unit)
             );
             CREATE TABLE IF NOT EXISTS docs (
                 scope TEXT NOT NULL,
                 id TEXT NOT NULL,
                 hash BLOB NOT NULL,
                 unit INTEGER,
                 PRIMARY KEY (scope, id)
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS docs_by_unit ON docs (scope, unit);",
        )
        .map_err(err)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
        Ok(SqliteChangeStore {
            conn,
            path: shown,
            unit_ids: HashMap::new(),
        })
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn strings(&self, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(args, |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

/// A unit's number in `tx`, made when missing (`ids` caches them).
fn unit_id(
    tx: &rusqlite::Transaction<'_>,
    ids: &mut HashMap<String, i64>,
    scope: &str,
    unit: &str,
) -> rusqlite::Result<i64> {
    if let Some(id) = ids.get(unit) {
        return Ok(*id);
    }
    tx.prepare_cached("INSERT OR IGNORE INTO units (scope, unit) VALUES (?1, ?2)")?
        .execute(params![scope, unit])?;
    let id: i64 = tx
        .prepare_cached("SELECT id FROM units WHERE scope = ?1 AND unit = ?2")?
        .query_row(params![scope, unit], |r| r.get(0))?;
    ids.insert(unit.to_string(), id);
    Ok(id)
}

fn hash_of(bytes: &[u8]) -> Option<Hash> {
    Some(Hash::from_le_bytes(bytes.try_into().ok()?))
}

impl ChangeStore for SqliteChangeStore {
    fn entries(&mut self, scope: &str) -> Result<FxHashMap<u64, Hash>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, hash FROM docs WHERE scope = ?1")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![scope]).map_err(|e| self.err(e))?;
        let mut out = FxHashMap::default();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let id = row
                .get_ref(0)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(|e| self.err(e))?;
            let key = id_key(id);
            let hash = row
                .get_ref(1)
                .and_then(|v| Ok(v.as_blob()?))
                .map_err(|e| self.err(e))?;
            // A malformed hash is no entry: that document is processed.
            if let Some(h) = hash_of(hash) {
                out.insert(key, h);
            }
        }
        Ok(out)
    }

    fn unit(&mut self, scope: &str, unit: &str) -> Result<Option<(Hash, u64)>, StoreError> {
        let row: Option<(Option<Vec<u8>>, i64)> = self
            .conn
            .query_row(
                "SELECT token, docs FROM units WHERE scope = ?1 AND unit = ?2",
                params![scope, unit],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(token, docs)| Some((hash_of(&token?)?, docs.max(0) as u64))))
    }

    fn units(&mut self, scope: &str) -> Result<Vec<String>, StoreError> {
        self.strings("SELECT unit FROM units WHERE scope = ?1", &[&scope])
    }

    fn ids_of_unit(&mut self, scope: &str, unit: &str) -> Result<Vec<String>, StoreError> {
        self.strings(
            "SELECT d.id FROM units u JOIN docs d ON d.scope = u.scope AND d.unit = u.id
             WHERE u.scope = ?1 AND u.unit = ?2",
            &[&scope, &unit],
        )
    }

    fn apply(&mut self, scope: &str, changes: &[Change]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| StoreError {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut ids = self.unit_ids.remove(scope).unwrap_or_default();
        let tx = self.conn.transaction().map_err(err)?;
        let applied = (|| -> rusqlite::Result<()> {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO docs (scope, id, hash, unit) VALUES (?1, ?2, ?3, ?4)",
            )?;
            let mut remove = tx.prepare_cached("DELETE FROM docs WHERE scope = ?1 AND id = ?2")?;
            let mut token =
                tx.prepare_cached("UPDATE units SET token = ?1, docs = ?2 WHERE id = ?3")?;
            // A unit's token goes; its row too once no document names it.
            let mut untoken = tx.prepare_cached(
                "UPDATE units SET token = NULL WHERE scope = ?1 AND unit = ?2 RETURNING id",
            )?;
            let mut unused = tx.prepare_cached(
                "DELETE FROM units WHERE id = ?1
                 AND NOT EXISTS (SELECT 1 FROM docs WHERE scope = ?2 AND unit = ?1)",
            )?;
            for c in changes {
                match c {
                    Change::Put { id, hash, unit, .. } => {
                        let unit = match unit {
                            Some(u) => Some(unit_id(&tx, &mut ids, scope, u)?),
                            None => None,
                        };
                        put.execute(params![scope, id, &hash.to_le_bytes()[..], unit])?;
                    }
                    Change::Remove { id } => {
                        remove.execute(params![scope, id])?;
                    }
                    Change::Unit {
                        unit,
                        token: t,
                        docs,
                    } => {
                        let u = unit_id(&tx, &mut ids, scope, unit)?;
                        token.execute(params![&t.to_le_bytes()[..], *docs as i64, u])?;
                    }
                    Change::RemoveUnit { unit } => {
                        let found: Option<i64> = untoken
                            .query_row(params![scope, &**unit], |r| r.get(0))
                            .optional()?;
                        if let Some(u) = found {
                            if unused.execute(params![u, scope])? > 0 {
                                ids.remove(&**unit);
                            }
                        }
                    }
                }
            }
            Ok(())
        })();
        match applied.and_then(|()| tx.commit()) {
            Ok(()) => {
                self.unit_ids.insert(scope.to_string(), ids);
                Ok(())
            }
            // Rolled back (dropped): numbers made in it are gone, so the cache is too.
            Err(e) => Err(err(e)),
        }
    }
}

#[cfg(test)]
mod tests;
