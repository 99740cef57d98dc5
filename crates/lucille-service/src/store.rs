//! The service's history: runs, their numbers and failures, and schedules, in one SQLite
//! database in the data directory (`lucille.db`), so they survive a restart. One connection
//! behind a mutex: every statement is short (a row or a page), and writes of a live run are
//! batched about once a second.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::Value;

use crate::model::{ConnectorView, Mode, RunState, RunView};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the history database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("the history database: {0}")]
    Sql(#[from] rusqlite::Error),
}

impl StoreError {
    /// Whether the database could not be written because of its disk: full (SQLite's
    /// SQLITE_FULL), failing (SQLITE_IOERR), or no longer writable.
    pub fn is_storage_failure(&self) -> bool {
        let (StoreError::Open { source: e, .. } | StoreError::Sql(e)) = self;
        matches!(
            e,
            rusqlite::Error::SqliteFailure(f, _) if matches!(
                f.code,
                rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::ReadOnly
            )
        )
    }
}

/// A failed document of a run: its id, the connector whose document it was, the stage that
/// failed it (none for the indexer, the connector or a record), and the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub doc_id: String,
    pub connector: String,
    pub stage: Option<String>,
    pub reason: String,
}

/// A run as submitted: what the store keeps to run it (again, after a restart).
pub struct NewRun<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub mode: Mode,
    pub schedule_id: Option<&'a str>,
    pub replay_of: Option<&'a str>,
    pub submitted_at: &'a str,
    /// The resolved config (secrets included: it is run again from here; never shown).
    pub config: &'a Value,
    pub base_dir: Option<&'a Path>,
    pub connectors: &'a [ConnectorView],
}

/// What a queued run needs to start.
pub struct StoredConfig {
    pub config: Value,
    pub base_dir: Option<PathBuf>,
    pub mode: Mode,
}

/// A schedule as stored.
#[derive(Clone, Debug)]
pub struct ScheduleRow {
    pub id: String,
    pub name: String,
    pub cron: Option<String>,
    pub every_secs: Option<u64>,
    /// HOCON text, or a path read again each time it fires.
    pub source: crate::submit::Source,
    pub mode: Mode,
    pub paused: bool,
    pub last_run_id: Option<String>,
    pub created_at: String,
}

pub struct Store {
    conn: Mutex<Connection>,
}

/// An embedded index a run of the service wrote (`GET /api/indexes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRow {
    /// The folder's name, made unique among the service's indexes (`-2`, `-3`, ... after the
    /// first) when it is first written; it keeps its name.
    pub name: String,
    pub path: PathBuf,
    /// The last run that wrote it.
    pub run_id: String,
}

/// One connector's numbers at one moment of a run (`GET /api/runs/{id}/timeline`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgressPoint {
    /// When, in milliseconds since the epoch.
    pub at_ms: i64,
    pub connector: String,
    pub published: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub dropped: u64,
}

/// Records the numbers of the connectors of a run that have started, as of now.
fn insert_progress(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    connectors: &[ConnectorView],
) -> Result<(), StoreError> {
    let at_ms = chrono::Utc::now().timestamp_millis();
    let mut stmt = tx.prepare_cached(
        "INSERT INTO progress (run_id, at_ms, connector, published, succeeded, failed, dropped) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for c in connectors.iter().filter(|c| c.state != "pending") {
        let n = &c.counts;
        stmt.execute(params![
            run_id,
            at_ms,
            c.name,
            sql_int(n.published),
            sql_int(n.succeeded),
            sql_int(n.failed),
            sql_int(n.dropped),
        ])?;
    }
    Ok(())
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    mode TEXT NOT NULL,
    schedule_id TEXT,
    replay_of TEXT,
    submitted_at TEXT NOT NULL,
    started_at TEXT,
    ended_at TEXT,
    connectors TEXT NOT NULL,
    stages TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    summary TEXT,
    config TEXT NOT NULL,
    base_dir TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_state ON runs(state);
CREATE INDEX IF NOT EXISTS runs_by_schedule ON runs(schedule_id);
CREATE TABLE IF NOT EXISTS failures (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    connector TEXT NOT NULL,
    stage TEXT,
    reason TEXT NOT NULL,
    UNIQUE (run_id, doc_id)
);
CREATE TABLE IF NOT EXISTS progress (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    connector TEXT NOT NULL,
    published INTEGER NOT NULL,
    succeeded INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    dropped INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS progress_by_run ON progress(run_id, seq);
CREATE TABLE IF NOT EXISTS indexes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    written INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS schedules (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    cron TEXT,
    every_secs INTEGER,
    source_kind TEXT NOT NULL,
    source TEXT NOT NULL,
    mode TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    last_run_id TEXT,
    created_at TEXT NOT NULL
);
";

const RUN_COLUMNS: &str = "id, name, state, mode, schedule_id, replay_of, submitted_at, \
                           started_at, ended_at, connectors, stages, error, summary";

/// A JSON list the store wrote; empty when it cannot be read (a row from a newer version).
fn json_list<T: serde::de::DeserializeOwned>(text: &str) -> Vec<T> {
    serde_json::from_str(text).unwrap_or_default()
}

fn run_row(row: &Row<'_>) -> rusqlite::Result<RunView> {
    let state: String = row.get(2)?;
    let mode: String = row.get(3)?;
    let connectors: String = row.get(9)?;
    let stages: String = row.get(10)?;
    Ok(RunView {
        id: row.get(0)?,
        name: row.get(1)?,
        state: RunState::parse(&state).unwrap_or(RunState::Failed),
        mode: Mode::parse(&mode).unwrap_or(Mode::Local),
        schedule_id: row.get(4)?,
        replay_of: row.get(5)?,
        submitted_at: row.get(6)?,
        started_at: row.get(7)?,
        ended_at: row.get(8)?,
        connectors: json_list(&connectors),
        stages: json_list(&stages),
        error: row.get(11)?,
        summary: row.get(12)?,
    })
}

/// A list as the store keeps it: JSON text.
fn to_text<T: serde::Serialize>(items: &[T]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

impl Store {
    /// Opens (creating) `lucille.db` in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("lucille.db");
        let open = |path: &Path| -> rusqlite::Result<Connection> {
            let conn = Connection::open(path)?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            conn.execute_batch(SCHEMA)?;
            Ok(conn)
        };
        let conn = open(&path).map_err(|source| StoreError::Open { path, source })?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    pub fn insert_run(&self, run: &NewRun<'_>) -> Result<(), StoreError> {
        self.conn.lock().execute(
            "INSERT INTO runs (id, name, state, mode, schedule_id, replay_of, submitted_at, \
             connectors, config, base_dir) VALUES (?1, ?2, 'queued', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run.id,
                run.name,
                run.mode.as_str(),
                run.schedule_id,
                run.replay_of,
                run.submitted_at,
                to_text(run.connectors),
                run.config.to_string(),
                run.base_dir.map(|p| p.to_string_lossy().into_owned()),
            ],
        )?;
        Ok(())
    }

    pub fn set_running(&self, id: &str, started_at: &str) -> Result<(), StoreError> {
        self.conn.lock().execute(
            "UPDATE runs SET state = 'running', started_at = ?2 WHERE id = ?1",
            params![id, started_at],
        )?;
        Ok(())
    }

    /// A live run's numbers so far, and the failures seen since the last call.
    pub fn progress(
        &self,
        id: &str,
        connectors: &[ConnectorView],
        failures: &[Failure],
    ) -> Result<(), StoreError> {
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE runs SET connectors = ?2 WHERE id = ?1",
            params![id, to_text(connectors)],
        )?;
        insert_failures(&tx, id, failures)?;
        insert_progress(&tx, id, connectors)?;
        tx.commit()?;
        Ok(())
    }

    /// A run's progress samples in the order they were taken: one per connector that had
    /// started at each write of the run's numbers (about once a second) and at its end.
    pub fn timeline(&self, run_id: &str) -> Result<Vec<ProgressPoint>, StoreError> {
        let conn = self.conn.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT at_ms, connector, published, succeeded, failed, dropped FROM progress \
             WHERE run_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt
            .query_map([run_id], |r| {
                let n = |i| r.get::<_, i64>(i).map(count);
                Ok(ProgressPoint {
                    at_ms: r.get(0)?,
                    connector: r.get(1)?,
                    published: n(2)?,
                    succeeded: n(3)?,
                    failed: n(4)?,
                    dropped: n(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Records how a run ended.
    pub fn finish(&self, run: &RunView, failures: &[Failure]) -> Result<(), StoreError> {
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE runs SET state = ?2, started_at = ?3, ended_at = ?4, connectors = ?5, \
             stages = ?6, error = ?7, summary = ?8 WHERE id = ?1",
            params![
                run.id,
                run.state.as_str(),
                run.started_at,
                run.ended_at,
                to_text(&run.connectors),
                to_text(&run.stages),
                run.error,
                run.summary,
            ],
        )?;
        insert_failures(&tx, &run.id, failures)?;
        insert_progress(&tx, &run.id, &run.connectors)?;
        tx.commit()?;
        Ok(())
    }

    /// Notes that run `run_id` writes the embedded index at `path` (absolute): a path first
    /// seen gets its folder's name, or the first of `name-2`, `name-3`, ... not taken; a
    /// known one keeps its name and moves to the front of the list.
    pub fn record_index(&self, path: &Path, run_id: &str) -> Result<IndexRow, StoreError> {
        let text = path.to_string_lossy().into_owned();
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        // The order of writes (a counter: two runs may start in the same millisecond).
        let written: i64 = tx.query_row(
            "SELECT COALESCE(MAX(written), 0) + 1 FROM indexes",
            [],
            |r| r.get(0),
        )?;
        let known: Option<String> = tx
            .query_row("SELECT name FROM indexes WHERE path = ?1", [&text], |r| {
                r.get(0)
            })
            .optional()?;
        let name = match known {
            Some(name) => {
                tx.execute(
                    "UPDATE indexes SET run_id = ?2, written = ?3 WHERE path = ?1",
                    params![text, run_id, written],
                )?;
                name
            }
            None => {
                let folder = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "index".to_string());
                let taken = |name: &str| -> rusqlite::Result<bool> {
                    tx.query_row(
                        "SELECT EXISTS (SELECT 1 FROM indexes WHERE name = ?1)",
                        [name],
                        |r| r.get(0),
                    )
                };
                let mut name = folder.clone();
                let mut n = 1;
                while taken(&name)? {
                    n += 1;
                    name = format!("{folder}-{n}");
                }
                tx.execute(
                    "INSERT INTO indexes (name, path, run_id, written) VALUES (?1, ?2, ?3, ?4)",
                    params![name, text, run_id, written],
                )?;
                name
            }
        };
        tx.commit()?;
        Ok(IndexRow {
            name,
            path: path.to_path_buf(),
            run_id: run_id.to_string(),
        })
    }

    /// The embedded indexes the service's runs wrote, the most recently written first.
    pub fn indexes(&self) -> Result<Vec<IndexRow>, StoreError> {
        let conn = self.conn.lock();
        let mut stmt =
            conn.prepare_cached("SELECT name, path, run_id FROM indexes ORDER BY written DESC")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(IndexRow {
                    name: r.get(0)?,
                    path: PathBuf::from(r.get::<_, String>(1)?),
                    run_id: r.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// A queued run cancelled before it started.
    pub fn cancel_queued(&self, id: &str, at: &str) -> Result<bool, StoreError> {
        let n = self.conn.lock().execute(
            "UPDATE runs SET state = 'cancelled', ended_at = ?2 WHERE id = ?1 AND state = 'queued'",
            params![id, at],
        )?;
        Ok(n == 1)
    }

    pub fn get_run(&self, id: &str) -> Result<Option<RunView>, StoreError> {
        Ok(self
            .conn
            .lock()
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                run_row,
            )
            .optional()?)
    }

    /// Newest first.
    pub fn list_runs(&self, limit: u64, offset: u64) -> Result<(Vec<RunView>, u64), StoreError> {
        let conn = self.conn.lock();
        let total: i64 = conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT ?1 OFFSET ?2"
        ))?;
        let runs = stmt
            .query_map(params![sql_int(limit), sql_int(offset)], run_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((runs, count(total)))
    }

    pub fn run_config(&self, id: &str) -> Result<Option<StoredConfig>, StoreError> {
        let row: Option<(String, Option<String>, String)> = self
            .conn
            .lock()
            .query_row(
                "SELECT config, base_dir, mode FROM runs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        Ok(row.map(|(config, base_dir, mode)| StoredConfig {
            config: serde_json::from_str(&config).unwrap_or(Value::Null),
            base_dir: base_dir.map(PathBuf::from),
            mode: Mode::parse(&mode).unwrap_or(Mode::Local),
        }))
    }

    /// Runs still queued (oldest first): after a restart they are queued again.
    pub fn queued(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn.lock();
        let mut stmt = conn.prepare("SELECT id FROM runs WHERE state = 'queued' ORDER BY seq")?;
        let ids = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(ids)
    }

    /// At start: runs the last process left `running` (it was killed) become `interrupted`;
    /// their ids.
    pub fn interrupt_running(&self, at: &str) -> Result<Vec<String>, StoreError> {
        let conn = self.conn.lock();
        let ids = {
            let mut stmt = conn.prepare("SELECT id FROM runs WHERE state = 'running'")?;
            let ids = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            ids
        };
        conn.execute(
            "UPDATE runs SET state = 'interrupted', ended_at = ?1, \
             error = 'the service stopped while the run was going' WHERE state = 'running'",
            [at],
        )?;
        Ok(ids)
    }

    /// Retention: removes the ended runs past the newest `keep_runs` (0: no count limit) or
    /// that ended before `ended_before` (RFC 3339; none: no age limit), with their failures;
    /// their ids, so their files can go too. Never a queued or running run, nor the last run
    /// of a schedule (the schedule's page links to it).
    pub fn prune(
        &self,
        keep_runs: u64,
        ended_before: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        let ids = {
            let mut stmt = tx.prepare(
                "SELECT id FROM (SELECT id, seq, COALESCE(ended_at, submitted_at) AS at, \
                 ROW_NUMBER() OVER (ORDER BY seq DESC) AS newest FROM runs \
                 WHERE state NOT IN ('queued', 'running')) \
                 WHERE ((?1 > 0 AND newest > ?1) OR (?2 IS NOT NULL AND at < ?2)) \
                 AND id NOT IN (SELECT last_run_id FROM schedules WHERE last_run_id IS NOT NULL) \
                 ORDER BY seq",
            )?;
            let ids = stmt
                .query_map(params![sql_int(keep_runs), ended_before], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            ids
        };
        {
            let mut failures = tx.prepare("DELETE FROM failures WHERE run_id = ?1")?;
            let mut progress = tx.prepare("DELETE FROM progress WHERE run_id = ?1")?;
            let mut runs = tx.prepare("DELETE FROM runs WHERE id = ?1")?;
            for id in &ids {
                failures.execute([id])?;
                progress.execute([id])?;
                runs.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Whether the history holds a run of this id (any state).
    pub fn has_run(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.conn.lock().query_row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?)
    }

    /// Whether a schedule's last run is still queued or running.
    pub fn schedule_busy(&self, schedule_id: &str) -> Result<bool, StoreError> {
        Ok(self.conn.lock().query_row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE schedule_id = ?1 \
             AND state IN ('queued', 'running'))",
            [schedule_id],
            |r| r.get(0),
        )?)
    }

    pub fn add_failures(&self, run_id: &str, failures: &[Failure]) -> Result<(), StoreError> {
        let mut conn = self.conn.lock();
        let tx = conn.transaction()?;
        insert_failures(&tx, run_id, failures)?;
        tx.commit()?;
        Ok(())
    }

    /// A page of a run's failures, in the order they happened, and how many there are.
    pub fn failures(
        &self,
        run_id: &str,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<Failure>, u64), StoreError> {
        let conn = self.conn.lock();
        let total: i64 = conn.query_row(
            "SELECT COUNT(*) FROM failures WHERE run_id = ?1",
            [run_id],
            |r| r.get(0),
        )?;
        let mut stmt = conn.prepare_cached(
            "SELECT doc_id, connector, stage, reason FROM failures WHERE run_id = ?1 \
             ORDER BY seq LIMIT ?2 OFFSET ?3",
        )?;
        let rows = stmt
            .query_map(params![run_id, sql_int(limit), sql_int(offset)], |r| {
                Ok(Failure {
                    doc_id: r.get(0)?,
                    connector: r.get(1)?,
                    stage: r.get(2)?,
                    reason: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((rows, count(total)))
    }

    pub fn insert_schedule(&self, s: &ScheduleRow) -> Result<(), StoreError> {
        let (kind, source) = s.source.to_stored();
        self.conn.lock().execute(
            "INSERT INTO schedules (id, name, cron, every_secs, source_kind, source, mode, \
             paused, last_run_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                s.id,
                s.name,
                s.cron,
                s.every_secs.map(sql_int),
                kind,
                source,
                s.mode.as_str(),
                s.paused,
                s.last_run_id,
                s.created_at
            ],
        )?;
        Ok(())
    }

    pub fn schedules(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        let conn = self.conn.lock();
        let mut stmt = conn.prepare(
            "SELECT id, name, cron, every_secs, source_kind, source, mode, paused, last_run_id, \
             created_at FROM schedules ORDER BY seq",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let kind: String = r.get(4)?;
                let source: String = r.get(5)?;
                let mode: String = r.get(6)?;
                Ok(ScheduleRow {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    cron: r.get(2)?,
                    every_secs: r.get::<_, Option<i64>>(3)?.map(count),
                    source: crate::submit::Source::from_stored(&kind, source),
                    mode: Mode::parse(&mode).unwrap_or(Mode::Local),
                    paused: r.get(7)?,
                    last_run_id: r.get(8)?,
                    created_at: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Pauses or resumes a schedule; false when there is none with that id.
    pub fn set_paused(&self, id: &str, paused: bool) -> Result<bool, StoreError> {
        let n = self.conn.lock().execute(
            "UPDATE schedules SET paused = ?2 WHERE id = ?1",
            params![id, paused],
        )?;
        Ok(n == 1)
    }

    pub fn set_last_run(&self, id: &str, run_id: &str) -> Result<(), StoreError> {
        self.conn.lock().execute(
            "UPDATE schedules SET last_run_id = ?2 WHERE id = ?1",
            params![id, run_id],
        )?;
        Ok(())
    }

    pub fn delete_schedule(&self, id: &str) -> Result<bool, StoreError> {
        let n = self
            .conn
            .lock()
            .execute("DELETE FROM schedules WHERE id = ?1", [id])?;
        Ok(n == 1)
    }
}

/// SQLite's integers are signed.
fn sql_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn insert_failures(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    failures: &[Failure],
) -> rusqlite::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    // A document fails once per run; a second report of it (a replayed event) is ignored.
    let mut stmt = tx.prepare_cached(
        "INSERT OR IGNORE INTO failures (run_id, doc_id, connector, stage, reason) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for f in failures {
        stmt.execute(params![run_id, f.doc_id, f.connector, f.stage, f.reason])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_keeps_its_name_and_a_second_folder_of_that_name_gets_another() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = Store::open(dir.path()).expect("the store");
        let a = Path::new("/data/a/index");
        let b = Path::new("/data/b/index");
        assert_eq!(store.record_index(a, "run-1").unwrap().name, "index");
        assert_eq!(store.record_index(b, "run-2").unwrap().name, "index-2");
        // Written again: the same name, the new run, first in the list.
        assert_eq!(store.record_index(a, "run-3").unwrap().name, "index");
        let listed = store.indexes().unwrap();
        let names: Vec<(&str, &str)> = listed
            .iter()
            .map(|i| (i.name.as_str(), i.run_id.as_str()))
            .collect();
        assert_eq!(names, [("index", "run-3"), ("index-2", "run-2")]);
        assert_eq!(listed[0].path, a);
        let c = Path::new("/data/c/index-2");
        assert_eq!(store.record_index(c, "run-4").unwrap().name, "index-2-2");
    }
}
