//! One connector's run against the change store: which records are unchanged, which
//! documents are in flight with the hash they will be stored under, and the writes their
//! terminal events make (see the module comment of `unchanged`).
//!
//! - Only the writer thread writes the store, in transactions every [`WRITE_INTERVAL`].
//! - The entries of the connector are read once, on the first lookup: a run whose units are
//!   all unchanged never reads them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{combine, id_key, open_store, Change, ChangeStore, Hash, SkipMode, StoreError};
use crate::event::{Event, EventType};

/// How often the writer commits what it was sent.
pub const WRITE_INTERVAL: Duration = Duration::from_millis(200);

/// A unit a connector is reading (see [`ChangeTracker::begin_unit`]): its number in this run
/// and the hash of its key, which a record read from it is stored with (a record that moved to
/// another unit is processed again, so each stored document names the unit it is in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitRef(u32, Hash);

/// A published document (the root of its tree) still in flight.
struct Root {
    hash: Hash,
    /// Documents of its tree without a terminal event yet (itself and its children).
    outstanding: u32,
    failed: bool,
    unit: Option<u32>,
    /// A delete marker for a vanished document: its entry is removed once it ends well.
    deletion: bool,
}

struct Unit {
    key: Arc<str>,
    token: Hash,
    /// Its documents still in flight.
    outstanding: u32,
    docs: u64,
    failed: bool,
    /// Set when the connector finished reading it: whether it read it to the end.
    read: Option<bool>,
}

#[derive(Default)]
struct State {
    roots: FxHashMap<String, Root>,
    /// Child → the root of its tree, while in flight.
    children: FxHashMap<String, String>,
    /// Output mode: documents sent to the backend, with the hash of their operation.
    outputs: FxHashMap<String, Hash>,
    /// Ids looked up this run (not vanished).
    seen: FxHashSet<u64>,
    units: Vec<Unit>,
}

struct Writer {
    /// Changes in batches (one per applied batch of events), not one message each.
    sender: Sender<Vec<Change>>,
    thread: JoinHandle<()>,
}

pub struct ChangeTracker {
    scope: String,
    mode: SkipMode,
    config: Hash,
    path: PathBuf,
    store: Arc<Mutex<Box<dyn ChangeStore>>>,
    known: OnceLock<FxHashMap<u64, Hash>>,
    state: Mutex<State>,
    writer: Mutex<Option<Writer>>,
    /// The indexer's deletion marker (field, value), for vanished documents.
    deletion_marker: Option<(String, String)>,
}

impl ChangeTracker {
    /// Opens the store for connector `scope`. With `writes` false (test mode, or an indexer
    /// that sends nothing) it is only read: nothing this run does is recorded.
    pub fn open(
        scope: &str,
        settings: &super::SkipSettings,
        writes: bool,
        deletion_marker: Option<(String, String)>,
    ) -> Result<Arc<Self>, StoreError> {
        crate::config::paths::create_parent_folder(&settings.path).map_err(|e| StoreError {
            path: settings.path.display().to_string(),
            message: format!("cannot create its folder: {e}"),
        })?;
        let store = Arc::new(Mutex::new(open_store(&settings.path)?));
        let writer = if writes {
            let (sender, receiver) = unbounded();
            let (store2, scope2, path) = (
                store.clone(),
                scope.to_string(),
                settings.path.display().to_string(),
            );
            let thread = std::thread::Builder::new()
                .name("lucille-unchanged".into())
                .spawn(move || write_loop(&receiver, &store2, &scope2, &path))
                .map_err(|e| StoreError {
                    path: settings.path.display().to_string(),
                    message: format!("cannot start its writer: {e}"),
                })?;
            Some(Writer { sender, thread })
        } else {
            None
        };
        Ok(Arc::new(ChangeTracker {
            scope: scope.to_string(),
            mode: settings.mode,
            config: settings.config,
            path: settings.path.clone(),
            store,
            known: OnceLock::new(),
            state: Mutex::new(State::default()),
            writer: Mutex::new(writer),
            deletion_marker,
        }))
    }

    pub fn mode(&self) -> SkipMode {
        self.mode
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn known(&self) -> &FxHashMap<u64, Hash> {
        self.known.get_or_init(|| {
            let loaded = self.store.lock().entries(&self.scope);
            loaded.unwrap_or_else(|e| {
                tracing::error!("{e}; every document is processed this run");
                FxHashMap::default()
            })
        })
    }

    fn write(&self, change: Change) {
        self.write_all(vec![change]);
    }

    fn write_all(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        if let Some(w) = self.writer.lock().as_ref() {
            // The writer ends only when `finish` drops the sender.
            let _ = w.sender.send(changes);
        }
    }

    /// `id`'s key, the hash it would be stored under (`hash` with the config's), and whether
    /// the store holds that hash for it.
    fn lookup(&self, id: &str, hash: Hash) -> (u64, Hash, bool) {
        let stored = combine(hash, self.config);
        let key = id_key(id);
        (key, stored, self.known().get(&key) == Some(&stored))
    }

    /// A record (or published document) with content hash `hash`: true when it is unchanged
    /// (the caller ends it with an unchanged DROP and does not send it); else it is tracked
    /// until its tree ends, and stored then.
    pub fn check(&self, id: &str, hash: Hash, unit: Option<UnitRef>) -> bool {
        let hash = unit.map_or(hash, |u| combine(hash, u.1));
        let (key, stored, matches) = self.lookup(id, hash);
        let mut state = self.state.lock();
        // The same id already in flight this run: which copy the index keeps is not known, so
        // this one is processed too (and neither is recorded).
        let unchanged = matches && !state.roots.contains_key(id);
        state.seen.insert(key);
        if let Some(u) = unit.and_then(|u| state.units.get_mut(u.0 as usize)) {
            u.docs += 1;
            u.outstanding += u32::from(!unchanged);
        }
        if !unchanged {
            state.track(id, stored, unit.map(|u| u.0), false);
        }
        unchanged
    }

    /// Whether `check` would find the record unchanged, without tracking or counting it: for
    /// a connector that hashes a row's change token before building its document, which it
    /// then need not build.
    pub fn is_unchanged(&self, id: &str, hash: Hash, unit: Option<UnitRef>) -> bool {
        let hash = unit.map_or(hash, |u| combine(hash, u.1));
        self.lookup(id, hash).2 && !self.state.lock().roots.contains_key(id)
    }

    /// Output mode: a document about to be sent to the backend, with the hash of its
    /// operation. True when the backend already has it (the caller ends it with an unchanged
    /// DROP instead of sending it).
    pub fn check_output(&self, id: &str, hash: Hash) -> bool {
        let (key, stored, unchanged) = self.lookup(id, hash);
        let mut state = self.state.lock();
        state.seen.insert(key);
        if !unchanged {
            state.outputs.insert(id.to_string(), stored);
        }
        unchanged
    }

    /// A document published without a content check (output mode: the indexer checks it).
    pub fn published(&self, id: &str, unit: Option<UnitRef>) {
        let mut state = self.state.lock();
        state.seen.insert(id_key(id));
        if let Some(u) = unit.and_then(|u| state.units.get_mut(u.0 as usize)) {
            u.docs += 1;
        }
    }

    /// A record that could not become a document: processed again next run, and its unit
    /// read again.
    /// (Its entry, if any, goes with its FAIL event, as for any FAIL of an id not tracked.)
    pub fn failed_record(&self, id: &str, unit: Option<UnitRef>) {
        let mut state = self.state.lock();
        state.seen.insert(id_key(id));
        if let Some(u) = unit.and_then(|u| state.units.get_mut(u.0 as usize)) {
            u.docs += 1;
            u.failed = true;
        }
    }

    /// A delete marker for a vanished document, about to be published: its entry goes once
    /// the deletion ended well; the token of the unit it vanished from (if any) waits for it.
    pub fn deleting(&self, id: &str, unit: Option<UnitRef>) {
        let mut state = self.state.lock();
        if let Some(u) = unit.and_then(|u| state.units.get_mut(u.0 as usize)) {
            u.outstanding += 1;
        }
        state.track(id, 0, unit.map(|u| u.0), true);
    }

    /// The indexer's deletion marker (field, value), when it has one.
    pub fn deletion_marker(&self) -> Option<&(String, String)> {
        self.deletion_marker.as_ref()
    }

    /// Forgets vanished documents that cannot be deleted (the indexer has no deletion marker).
    pub fn forget(&self, ids: &[String]) {
        self.write_all(
            ids.iter()
                .map(|id| Change::Remove { id: id.clone() })
                .collect(),
        );
    }

    /// A unit's stored document count when its token (with the config) is what the store
    /// holds: it need not be read.
    pub fn unit_unchanged(&self, key: &str, token: Hash) -> Option<u64> {
        let found = self.store.lock().unit(&self.scope, key);
        match found {
            Ok(Some((stored, docs))) if stored == combine(token, self.config) => Some(docs),
            Ok(_) => None,
            Err(e) => {
                tracing::error!("{e}; {key} is read");
                None
            }
        }
    }

    /// A unit the connector starts reading; its documents are published with the returned
    /// reference.
    pub fn begin_unit(&self, key: &str, token: Hash) -> UnitRef {
        let mut state = self.state.lock();
        state.units.push(Unit {
            key: Arc::from(key),
            token: combine(token, self.config),
            outstanding: 0,
            docs: 0,
            failed: false,
            read: None,
        });
        UnitRef((state.units.len() - 1) as u32, super::json_hash(key))
    }

    /// The connector finished reading a unit; `complete` when it read it to the end (else
    /// it is read again next run). Its token is stored once every document of it ended well.
    pub fn end_unit(&self, unit: UnitRef, complete: bool) {
        let change = {
            let mut state = self.state.lock();
            if let Some(u) = state.units.get_mut(unit.0 as usize) {
                u.read = Some(complete);
            }
            state.unit_change(unit.0)
        };
        if let Some(c) = change {
            self.write(c);
        }
    }

    /// Every unit the store knows for this connector.
    pub fn known_units(&self) -> Vec<String> {
        let units = self.store.lock().units(&self.scope);
        units.unwrap_or_else(|e| {
            tracing::error!("{e}; vanished files are not looked for this run");
            Vec::new()
        })
    }

    /// The stored documents of `unit` that were not seen this run (all of them, for a unit
    /// that is gone).
    pub fn unseen_in_unit(&self, unit: &str) -> Vec<String> {
        let ids = match self.store.lock().ids_of_unit(&self.scope, unit) {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!("{e}; vanished documents of {unit} are not looked for");
                return Vec::new();
            }
        };
        let state = self.state.lock();
        ids.into_iter()
            .filter(|id| !state.seen.contains(&id_key(id)))
            .collect()
    }

    /// Forgets a unit that is gone.
    pub fn forget_unit(&self, unit: &str) {
        self.write(Change::RemoveUnit {
            unit: Arc::from(unit),
        });
    }

    /// Applies the run's events (after the ledger): the CREATE of a child (its message names
    /// its parent), and the terminal events that end a tree.
    pub fn on_events(&self, events: &[Event], ignored: &[usize]) {
        let mut changes = Vec::new();
        {
            let mut state = self.state.lock();
            for (i, e) in events.iter().enumerate() {
                if ignored.contains(&i) {
                    continue;
                }
                state.apply(e, &mut changes);
            }
        }
        self.write_all(changes);
    }

    /// Writes what is pending and stops the writer (end of the connector's run). Documents
    /// still in flight are not recorded.
    pub fn finish(&self) {
        let writer = self.writer.lock().take();
        if let Some(w) = writer {
            drop(w.sender);
            if w.thread.join().is_err() {
                tracing::error!("the change store's writer panicked");
            }
        }
    }
}

impl Drop for ChangeTracker {
    fn drop(&mut self) {
        self.finish();
    }
}

impl State {
    fn track(&mut self, id: &str, hash: Hash, unit: Option<u32>, deletion: bool) {
        match self.roots.get_mut(id) {
            // The same id in flight twice: which copy the index keeps is not known, so
            // neither is recorded.
            Some(r) => {
                r.outstanding += 1;
                r.failed = true;
            }
            None => {
                self.roots.insert(
                    id.to_string(),
                    Root {
                        hash,
                        outstanding: 1,
                        failed: false,
                        unit,
                        deletion,
                    },
                );
            }
        }
    }

    fn apply(&mut self, e: &Event, changes: &mut Vec<Change>) {
        // An unchanged document's own DROP: nothing to record (a copy of its id in flight,
        // if any, ends with its own event).
        if e.kind == EventType::Drop && e.message.as_deref() == Some(super::UNCHANGED) {
            return;
        }
        if e.kind == EventType::Create {
            let Some(parent) = e.message.as_deref() else {
                return;
            };
            let root = match self.children.get(parent) {
                Some(r) => r.clone(),
                None => parent.to_string(),
            };
            if let Some(r) = self.roots.get_mut(&root) {
                r.outstanding += 1;
                self.children.insert(e.doc_id.clone(), root);
            }
            return;
        }
        let failed = e.kind == EventType::Fail;
        if let Some(stored) = self.outputs.remove(&e.doc_id) {
            changes.push(match e.kind {
                EventType::Finish => Change::Put {
                    id: e.doc_id.clone(),
                    hash: stored,
                    unit: None,
                },
                _ => Change::Remove {
                    id: e.doc_id.clone(),
                },
            });
        } else if failed && !self.roots.contains_key(&e.doc_id) {
            // A FAIL of an id not tracked here: a record that never became a document, or
            // (output mode) a document that failed before the indexer.
            if !self.children.contains_key(&e.doc_id) {
                changes.push(Change::Remove {
                    id: e.doc_id.clone(),
                });
            }
        }
        let root_id = match self.children.remove(&e.doc_id) {
            Some(r) => r,
            None if self.roots.contains_key(&e.doc_id) => e.doc_id.clone(),
            None => return,
        };
        let Some(root) = self.roots.get_mut(&root_id) else {
            return;
        };
        root.outstanding = root.outstanding.saturating_sub(1);
        root.failed |= failed;
        if root.outstanding > 0 {
            return;
        }
        let Some(root) = self.roots.remove(&root_id) else {
            return;
        };
        if root.failed || root.deletion {
            changes.push(Change::Remove { id: root_id });
        } else {
            let unit = root.unit.and_then(|u| self.units.get(u as usize));
            changes.push(Change::Put {
                id: root_id,
                hash: root.hash,
                unit: unit.map(|u| u.key.clone()),
            });
        }
        if let Some(u) = root.unit {
            if let Some(unit) = self.units.get_mut(u as usize) {
                unit.outstanding = unit.outstanding.saturating_sub(1);
                unit.failed |= root.failed;
            }
            if let Some(c) = self.unit_change(u) {
                changes.push(c);
            }
        }
    }

    /// The write a unit's state calls for, once it was read and nothing of it is in flight.
    fn unit_change(&self, unit: u32) -> Option<Change> {
        let u = self.units.get(unit as usize)?;
        let complete = u.read?;
        if u.outstanding > 0 {
            return None;
        }
        Some(if complete && !u.failed {
            Change::Unit {
                unit: u.key.clone(),
                token: u.token,
                docs: u.docs,
            }
        } else {
            Change::RemoveUnit {
                unit: u.key.clone(),
            }
        })
    }
}

fn write_loop(
    receiver: &Receiver<Vec<Change>>,
    store: &Mutex<Box<dyn ChangeStore>>,
    scope: &str,
    path: &str,
) {
    let mut batch = Vec::new();
    let mut errors = 0u64;
    let mut last_write = std::time::Instant::now();
    loop {
        let done = match receiver.recv_timeout(WRITE_INTERVAL) {
            Ok(c) => {
                batch.extend(c);
                for more in receiver.try_iter() {
                    batch.extend(more);
                    if batch.len() >= 65_536 {
                        break;
                    }
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let due = done || batch.len() >= 65_536 || last_write.elapsed() >= WRITE_INTERVAL;
        if !batch.is_empty() && due {
            if let Err(e) = store.lock().apply(scope, &batch) {
                // Lost writes only make the next run process these documents again.
                errors += 1;
                if errors == 1 {
                    tracing::error!(
                        "{e}; {} change(s) not recorded (the next run processes them again)",
                        batch.len()
                    );
                }
            }
            batch.clear();
            last_write = std::time::Instant::now();
        }
        if done {
            break;
        }
    }
    if errors > 1 {
        tracing::error!("change store {path}: {errors} writes failed in all");
    }
}
