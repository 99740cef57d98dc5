//! Resumable traversal (reliable-scan-pattern.txt): a SQLite checkpoint of what a connector has
//! published and had acknowledged, per unit (a file), so an interrupted run resumes where it
//! stopped, a finished one can skip unchanged units (`incremental`), and units that vanished
//! since the last run are known (delete markers).
//!
//! - Only one thread writes the store: the tracker's writer. Readers post what they publish,
//!   the Publisher's terminal listener posts acknowledgements, both through one channel, so a
//!   record's `Published` is always seen before its acknowledgement.
//! - A unit's records are numbered in a deterministic order; the writer keeps a watermark per
//!   unit (every record below it reached a terminal event) and commits it every
//!   [`COMMIT_INTERVAL`]. A resumed unit skips the records below its watermark. A kill -9 loses
//!   at most one interval of acknowledgements; those records are published again, which the
//!   deterministic ids turn into upserts, never duplicates.
//! - A unit whose read failed is retried by the next run, boundedly: after
//!   [`MAX_UNIT_ATTEMPTS`] failed reads in all it is settled-failed and skipped (reported, so
//!   the run is visibly incomplete rather than silently partial).
//! - A traversal is finished when every unit it planned completed; the next run then starts a
//!   new traversal (and, with `incremental`, skips the units whose size, modification time and
//!   content hash are unchanged).
//! - Each unit keeps when it was last read (`published_ms`): with a publish cutoff (Lucille's
//!   `lastPublishedCutoff`) a unit read more recently than that is not read again.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use rusqlite::{params, Connection, OptionalExtension};

use crate::accounting::Publisher;

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// How often the writer commits acknowledgements.
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(200);
/// Failed reads a unit may spend in total, the first included.
pub const MAX_UNIT_ATTEMPTS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint {path}: {source}")]
    Store {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("checkpoint {path}: cannot create its folder: {source}")]
    Folder {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint writer: {0}")]
    Writer(String),
}

/// What identifies a unit's content: a change in any of these means the unit changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub modified_ms: i64,
    /// Content hash, computed only when size and modification time match the stored ones.
    pub hash: Option<String>,
}

/// A unit's stored state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitState {
    pub stamp: Stamp,
    /// Records `[0, acked)` were acknowledged.
    pub acked: u64,
    pub complete: bool,
    pub attempts: u32,
    pub last_error: Option<String>,
    /// The traversal this state belongs to.
    pub traversal: i64,
    /// When the unit was last read (milliseconds since the epoch); `None` in stores written
    /// before this was kept.
    pub published_ms: Option<i64>,
}

/// What to do with a unit in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Read it, skipping the first `skip` records (acknowledged by an interrupted run).
    Read { skip: u64 },
    /// Completed earlier in this (resumed) traversal.
    SkipDone,
    /// Unchanged since the last finished traversal (incremental).
    SkipUnchanged,
    /// Failed `MAX_UNIT_ATTEMPTS` reads; no longer retried.
    SkipSettledFailed { error: String },
    /// Read more recently than the publish cutoff.
    SkipRecentlyPublished,
}

/// The store and the plan of this run's traversal. Opened on the connector's thread before
/// any reader starts; `start_tracker` hands it to the one writer thread.
pub struct Checkpoint {
    conn: Connection,
    path: String,
    connector: String,
    traversal: i64,
    resuming: bool,
    incremental: bool,
    states: HashMap<String, UnitState>,
    /// Units read within this many milliseconds are skipped (Lucille's `lastPublishedCutoff`).
    published_cutoff_ms: Option<i64>,
    /// Whether vanished units are removed from the store when the traversal closes (Lucille's
    /// `state.performDeletions`, default true).
    forget_vanished: bool,
}

fn store_err(path: &str) -> impl Fn(rusqlite::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Store {
        path: path.to_string(),
        source,
    }
}

impl Checkpoint {
    /// Opens (or creates) the store at `path` for the connector named `connector`, and decides
    /// whether this run resumes an unfinished traversal or starts a new one.
    pub fn open(path: &Path, connector: &str, incremental: bool) -> Result<Self, CheckpointError> {
        let shown = path.display().to_string();
        let err = store_err(&shown);
        crate::config::paths::create_parent_folder(path).map_err(|source| {
            CheckpointError::Folder {
                path: shown.clone(),
                source,
            }
        })?;
        let conn = Connection::open(path).map_err(&err)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS traversals (
                 connector TEXT PRIMARY KEY,
                 current INTEGER NOT NULL,
                 finished INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS units (
                 connector TEXT NOT NULL,
                 path TEXT NOT NULL,
                 size INTEGER NOT NULL,
                 modified_ms INTEGER NOT NULL,
                 hash TEXT,
                 acked INTEGER NOT NULL,
                 complete INTEGER NOT NULL,
                 attempts INTEGER NOT NULL,
                 last_error TEXT,
                 traversal INTEGER NOT NULL,
                 published_ms INTEGER,
                 PRIMARY KEY (connector, path));",
        )
        .map_err(&err)?;
        // Stores written before `published_ms` was kept get the column (empty).
        let has_published: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('units') WHERE name = 'published_ms'",
                [],
                |r| r.get(0),
            )
            .map_err(&err)?;
        if has_published == 0 {
            conn.execute_batch("ALTER TABLE units ADD COLUMN published_ms INTEGER")
                .map_err(&err)?;
        }
        let row: Option<(i64, bool)> = conn
            .query_row(
                "SELECT current, finished FROM traversals WHERE connector = ?1",
                [connector],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(&err)?;
        let (traversal, resuming) = match row {
            Some((current, false)) => (current, true),
            Some((current, true)) => (current + 1, false),
            None => (1, false),
        };
        conn.execute(
            "INSERT INTO traversals (connector, current, finished) VALUES (?1, ?2, 0)
             ON CONFLICT(connector) DO UPDATE SET current = ?2, finished = 0",
            params![connector, traversal],
        )
        .map_err(&err)?;
        let mut states = HashMap::new();
        {
            let mut stmt = conn
                .prepare(
                    "SELECT path, size, modified_ms, hash, acked, complete, attempts, last_error,
                            traversal, published_ms
                     FROM units WHERE connector = ?1",
                )
                .map_err(&err)?;
            let rows = stmt
                .query_map([connector], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        UnitState {
                            stamp: Stamp {
                                size: r.get::<_, i64>(1)?.max(0) as u64,
                                modified_ms: r.get(2)?,
                                hash: r.get(3)?,
                            },
                            acked: r.get::<_, i64>(4)?.max(0) as u64,
                            complete: r.get(5)?,
                            attempts: r.get::<_, i64>(6)?.clamp(0, i64::from(u32::MAX)) as u32,
                            last_error: r.get(7)?,
                            traversal: r.get(8)?,
                            published_ms: r.get(9)?,
                        },
                    ))
                })
                .map_err(&err)?;
            for row in rows {
                let (path, state) = row.map_err(&err)?;
                states.insert(path, state);
            }
        }
        Ok(Checkpoint {
            conn,
            path: shown.clone(),
            connector: connector.to_string(),
            traversal,
            resuming,
            incremental,
            states,
            published_cutoff_ms: None,
            forget_vanished: true,
        })
    }

    /// Skips units read less than `cutoff` ago (Lucille's `lastPublishedCutoff`).
    pub fn with_published_cutoff(mut self, cutoff: Option<Duration>) -> Self {
        self.published_cutoff_ms = cutoff.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self
    }

    /// Keeps vanished units in the store instead of removing them when the traversal closes
    /// (Lucille's `state.performDeletions: false`).
    pub fn keeping_vanished(mut self, keep: bool) -> Self {
        self.forget_vanished = !keep;
        self
    }

    /// True when this run continues a traversal an earlier run did not finish.
    pub fn is_resuming(&self) -> bool {
        self.resuming
    }

    pub fn state(&self, unit: &str) -> Option<&UnitState> {
        self.states.get(unit)
    }

    /// Decides what to do with `unit`, whose current size and modification time are in
    /// `stamp`; `hash` computes its content hash, called only when it can decide the answer.
    pub fn plan(
        &self,
        unit: &str,
        size: u64,
        modified_ms: i64,
        hash: impl FnOnce() -> std::io::Result<String>,
    ) -> std::io::Result<(Plan, Stamp)> {
        let mut stamp = Stamp {
            size,
            modified_ms,
            hash: None,
        };
        let Some(state) = self.states.get(unit) else {
            return Ok((Plan::Read { skip: 0 }, stamp));
        };
        let same_meta = state.stamp.size == size && state.stamp.modified_ms == modified_ms;
        let current = state.traversal == self.traversal;
        // A changed unit gets a fresh chance even after failed reads.
        if current && same_meta && state.attempts >= MAX_UNIT_ATTEMPTS && !state.complete {
            let error = state.last_error.clone().unwrap_or_default();
            return Ok((Plan::SkipSettledFailed { error }, stamp));
        }
        // Read recently (not a unit this traversal left half-read): skipped, changed or not, as
        // Lucille's lastPublishedCutoff does.
        if let (Some(cutoff), Some(at)) = (self.published_cutoff_ms, state.published_ms) {
            let in_progress = current && same_meta && !state.complete;
            if !in_progress && at >= now_ms().saturating_sub(cutoff) {
                return Ok((Plan::SkipRecentlyPublished, stamp));
            }
        }
        if current && same_meta {
            stamp.hash = state.stamp.hash.clone();
            return Ok(if state.complete {
                (Plan::SkipDone, stamp)
            } else {
                (Plan::Read { skip: state.acked }, stamp)
            });
        }
        if !current && self.incremental && state.complete && same_meta {
            let h = hash()?;
            let unchanged = state.stamp.hash.as_deref() == Some(h.as_str());
            stamp.hash = Some(h);
            if unchanged {
                return Ok((Plan::SkipUnchanged, stamp));
            }
        }
        Ok((Plan::Read { skip: 0 }, stamp))
    }

    /// Units the store knows for this connector that are not in `seen`: vanished since they
    /// were last read. Removed from the store by `Tracker::finish`.
    pub fn vanished<'a>(&'a self, seen: &'a std::collections::HashSet<String>) -> Vec<String> {
        let mut v: Vec<String> = self
            .states
            .keys()
            .filter(|p| !seen.contains(*p))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Starts the writer thread and registers it as the publisher's terminal listener.
    pub fn start_tracker(self, publisher: &Arc<Publisher>) -> Tracker {
        let (tx, rx) = unbounded();
        let acks = tx.clone();
        publisher.on_terminal(Box::new(move |id| {
            let _ = acks.send(Msg::Acked(id.to_string()));
        }));
        let writer = Writer {
            units: Vec::new(),
            ids: HashMap::new(),
            dirty: BTreeSet::new(),
            traversal: self.traversal,
            settled: 0,
        };
        let thread = std::thread::Builder::new()
            .name("lucille-checkpoint".into())
            .spawn(move || writer.run(self, rx));
        Tracker {
            tx,
            thread: Some(thread),
        }
    }
}

/// A unit registered with the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitId(u32);

enum Msg {
    Begin {
        unit: UnitId,
        path: String,
        stamp: Stamp,
        skip: u64,
    },
    Published {
        unit: UnitId,
        record: u64,
        id: String,
    },
    Acked(String),
    Read {
        unit: UnitId,
        total: u64,
    },
    Failed {
        unit: UnitId,
        error: String,
    },
    /// A unit the plan skipped as settled-failed: it keeps the traversal open.
    Settled,
    Finish {
        /// The connector enumerated every unit (it did not stop early).
        enumerated: bool,
        vanished: Vec<String>,
        reply: Sender<Result<TraversalSummary, CheckpointError>>,
    },
}

/// How the traversal ended, from the writer's point of view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraversalSummary {
    /// Units read and acknowledged in full (this run or, when resuming, an earlier one).
    pub complete: u64,
    /// Units registered this run that are not complete.
    pub incomplete: u64,
    /// Every planned unit completed: the next run starts a new traversal.
    pub finished: bool,
}

/// The connector's handle on the writer thread; cheap to clone for reader threads.
pub struct Tracker {
    tx: Sender<Msg>,
    thread: Option<std::io::Result<JoinHandle<Result<(), CheckpointError>>>>,
}

/// A reader's view of the tracker.
#[derive(Clone)]
pub struct TrackerHandle {
    tx: Sender<Msg>,
}

impl Tracker {
    pub fn handle(&self) -> TrackerHandle {
        TrackerHandle {
            tx: self.tx.clone(),
        }
    }

    /// Commits everything acknowledged so far, forgets `vanished` units, and records whether
    /// the traversal finished: `enumerated` (the connector saw every unit) and every unit
    /// complete. Call once every published document reached a terminal event (after the run's
    /// completion) so the watermarks are final.
    pub fn finish(
        mut self,
        enumerated: bool,
        vanished: Vec<String>,
    ) -> Result<TraversalSummary, CheckpointError> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let sent = self.tx.send(Msg::Finish {
            enumerated,
            vanished,
            reply,
        });
        let summary = match sent {
            Ok(()) => answer
                .recv()
                .map_err(|_| CheckpointError::Writer("the writer thread ended early".into()))?,
            Err(_) => Err(CheckpointError::Writer("the writer thread is gone".into())),
        };
        self.join()?;
        summary
    }

    fn join(&mut self) -> Result<(), CheckpointError> {
        match self.thread.take() {
            Some(Ok(t)) => t
                .join()
                .map_err(|_| CheckpointError::Writer("the writer thread panicked".into()))?,
            Some(Err(e)) => Err(CheckpointError::Writer(format!("cannot start: {e}"))),
            None => Ok(()),
        }
    }
}

impl Drop for Tracker {
    /// Without `finish` (a failed run): the writer commits what it has and exits.
    fn drop(&mut self) {
        if self.thread.is_some() {
            let (reply, _answer) = crossbeam_channel::bounded(1);
            let _ = self.tx.send(Msg::Finish {
                enumerated: false,
                vanished: Vec::new(),
                reply,
            });
            let _ = self.join();
        }
    }
}

impl TrackerHandle {
    /// Registers a unit about to be read (after `Checkpoint::plan` said `Read { skip }`).
    pub fn begin(&self, unit: UnitId, path: &str, stamp: Stamp, skip: u64) {
        let _ = self.tx.send(Msg::Begin {
            unit,
            path: path.to_string(),
            stamp,
            skip,
        });
    }

    /// Record `record` of `unit` is about to be published as `id`. Call before `publish`.
    pub fn published(&self, unit: UnitId, record: u64, id: &str) {
        let _ = self.tx.send(Msg::Published {
            unit,
            record,
            id: id.to_string(),
        });
    }

    /// Every record of `unit` (`total` in all, skipped ones included) was published.
    pub fn read(&self, unit: UnitId, total: u64) {
        let _ = self.tx.send(Msg::Read { unit, total });
    }

    /// Reading `unit` failed; one attempt is spent.
    pub fn failed(&self, unit: UnitId, error: &str) {
        let _ = self.tx.send(Msg::Failed {
            unit,
            error: error.to_string(),
        });
    }

    /// A unit was skipped as settled-failed: the traversal cannot finish.
    pub fn settled(&self) {
        let _ = self.tx.send(Msg::Settled);
    }
}

/// Numbers units for a traversal (readers may register them from several threads).
#[derive(Debug, Default)]
pub struct UnitCounter(std::sync::atomic::AtomicU32);

impl UnitCounter {
    pub fn next(&self) -> UnitId {
        UnitId(self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

struct UnitTrack {
    path: String,
    stamp: Stamp,
    /// Every record below this was acknowledged.
    watermark: u64,
    /// When this run began reading it.
    published_ms: i64,
    ahead: BTreeSet<u64>,
    total: Option<u64>,
    complete: bool,
    failed: bool,
    /// A read failure not yet written (each costs one attempt, written once).
    new_failure: Option<String>,
}

struct Writer {
    units: Vec<Option<UnitTrack>>,
    /// Published, unacknowledged records by doc id, oldest first (ids may repeat).
    ids: HashMap<String, VecDeque<(UnitId, u64)>>,
    dirty: BTreeSet<usize>,
    traversal: i64,
    settled: u64,
}

impl Writer {
    fn run(mut self, mut cp: Checkpoint, rx: Receiver<Msg>) -> Result<(), CheckpointError> {
        let mut last_commit = Instant::now();
        loop {
            let msg = match rx.recv_timeout(COMMIT_INTERVAL) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            if let Some(Msg::Finish {
                enumerated,
                vanished,
                reply,
            }) = msg
            {
                let summary = self
                    .commit(&mut cp)
                    .and_then(|()| self.close(&mut cp, enumerated, vanished));
                let _ = reply.send(summary);
                return Ok(());
            }
            if let Some(m) = msg {
                self.apply(m);
            }
            if last_commit.elapsed() >= COMMIT_INTERVAL {
                self.commit(&mut cp)?;
                last_commit = Instant::now();
            }
        }
        self.commit(&mut cp)
    }

    fn unit(&mut self, unit: UnitId) -> Option<&mut UnitTrack> {
        self.units.get_mut(unit.0 as usize).and_then(Option::as_mut)
    }

    fn apply(&mut self, msg: Msg) {
        match msg {
            Msg::Begin {
                unit,
                path,
                stamp,
                skip,
            } => {
                let i = unit.0 as usize;
                if self.units.len() <= i {
                    self.units.resize_with(i + 1, || None);
                }
                self.units[i] = Some(UnitTrack {
                    path,
                    stamp,
                    watermark: skip,
                    published_ms: now_ms(),
                    ahead: BTreeSet::new(),
                    total: None,
                    complete: false,
                    failed: false,
                    new_failure: None,
                });
                self.dirty.insert(i);
            }
            Msg::Published { unit, record, id } => {
                self.ids.entry(id).or_default().push_back((unit, record));
            }
            Msg::Acked(id) => {
                let Some(queue) = self.ids.get_mut(&id) else {
                    return; // a child, or a document of no unit
                };
                let Some((unit, record)) = queue.pop_front() else {
                    return;
                };
                if queue.is_empty() {
                    self.ids.remove(&id);
                }
                if let Some(u) = self.unit(unit) {
                    if record == u.watermark {
                        u.watermark += 1;
                        while u.ahead.remove(&u.watermark) {
                            u.watermark += 1;
                        }
                    } else if record > u.watermark {
                        u.ahead.insert(record);
                    }
                    u.complete = !u.failed && u.total == Some(u.watermark);
                    self.dirty.insert(unit.0 as usize);
                }
            }
            Msg::Read { unit, total } => {
                if let Some(u) = self.unit(unit) {
                    u.total = Some(total);
                    u.complete = !u.failed && u.watermark >= total;
                    self.dirty.insert(unit.0 as usize);
                }
            }
            Msg::Failed { unit, error } => {
                if let Some(u) = self.unit(unit) {
                    u.failed = true;
                    u.new_failure = Some(error);
                    u.complete = false;
                    self.dirty.insert(unit.0 as usize);
                }
            }
            Msg::Settled => self.settled += 1,
            Msg::Finish { .. } => {}
        }
    }

    /// Writes the dirty units in one transaction.
    fn commit(&mut self, cp: &mut Checkpoint) -> Result<(), CheckpointError> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        let err = store_err(&cp.path);
        let tx = cp.conn.transaction().map_err(&err)?;
        {
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO units (connector, path, size, modified_ms, hash, acked, complete,
                                        attempts, last_error, traversal, published_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, NULL, ?8, ?9)
                     ON CONFLICT(connector, path) DO UPDATE SET
                         size = ?3, modified_ms = ?4, hash = ?5, acked = ?6, complete = ?7,
                         attempts = CASE WHEN traversal = ?8 THEN attempts ELSE 0 END,
                         traversal = ?8, published_ms = ?9",
                )
                .map_err(&err)?;
            let mut fail = tx
                .prepare_cached(
                    "UPDATE units SET attempts = attempts + 1, last_error = ?3
                     WHERE connector = ?1 AND path = ?2",
                )
                .map_err(&err)?;
            for i in std::mem::take(&mut self.dirty) {
                let Some(Some(u)) = self.units.get_mut(i) else {
                    continue;
                };
                upsert
                    .execute(params![
                        cp.connector,
                        u.path,
                        u.stamp.size as i64,
                        u.stamp.modified_ms,
                        u.stamp.hash,
                        u.watermark as i64,
                        u.complete,
                        self.traversal,
                        u.published_ms
                    ])
                    .map_err(&err)?;
                // An attempt is spent when the failure is recorded, once per failure.
                if let Some(e) = u.new_failure.take() {
                    fail.execute(params![cp.connector, u.path, e])
                        .map_err(&err)?;
                }
            }
        }
        tx.commit().map_err(&err)
    }

    fn close(
        &mut self,
        cp: &mut Checkpoint,
        enumerated: bool,
        vanished: Vec<String>,
    ) -> Result<TraversalSummary, CheckpointError> {
        let err = store_err(&cp.path);
        let registered: Vec<&UnitTrack> = self.units.iter().flatten().collect();
        let done_now = registered.iter().filter(|u| u.complete).count() as u64;
        let incomplete = registered.len() as u64 - done_now;
        // Completed by an earlier run of this traversal and not read again.
        let earlier = cp
            .states
            .iter()
            .filter(|(p, s)| {
                s.traversal == self.traversal
                    && s.complete
                    && !vanished.contains(p)
                    && !registered.iter().any(|u| &u.path == *p)
            })
            .count() as u64;
        let finished = enumerated && incomplete == 0 && self.settled == 0;
        let forget = cp.forget_vanished;
        let tx = cp.conn.transaction().map_err(&err)?;
        for path in vanished.iter().filter(|_| forget) {
            tx.execute(
                "DELETE FROM units WHERE connector = ?1 AND path = ?2",
                params![cp.connector, path],
            )
            .map_err(&err)?;
        }
        tx.execute(
            "UPDATE traversals SET finished = ?2 WHERE connector = ?1",
            params![cp.connector, finished],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(TraversalSummary {
            complete: done_now + earlier,
            incomplete,
            finished,
        })
    }
}

#[cfg(test)]
mod tests;
