//! The tracker's rules against an in-memory store (the SQLite store has its own tests in
//! `lucille-changes`; the runs end to end are in the facade's and the Python tests).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use super::*;
use crate::event::{Event, EventType};

/// Stores by path, kept for the test binary's life so a "next run" reopens what the last
/// wrote.
type Tables = (
    HashMap<String, (Hash, Option<Arc<str>>)>,
    HashMap<String, (Hash, u64)>,
);
static STORES: Mutex<Option<HashMap<PathBuf, Tables>>> = Mutex::new(None);

struct MemoryStore(PathBuf);

impl MemoryStore {
    fn with<T>(&self, f: impl FnOnce(&mut Tables) -> T) -> T {
        let mut all = STORES.lock();
        f(all
            .get_or_insert_with(HashMap::new)
            .entry(self.0.clone())
            .or_default())
    }
}

impl ChangeStore for MemoryStore {
    fn entries(&mut self, _scope: &str) -> Result<FxHashMap<u64, Hash>, StoreError> {
        Ok(self.with(|(docs, _)| docs.iter().map(|(id, (h, _))| (id_key(id), *h)).collect()))
    }
    fn unit(&mut self, _scope: &str, unit: &str) -> Result<Option<(Hash, u64)>, StoreError> {
        Ok(self.with(|(_, units)| units.get(unit).copied()))
    }
    fn units(&mut self, _scope: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.with(|(_, units)| units.keys().cloned().collect()))
    }
    fn ids_of_unit(&mut self, _scope: &str, unit: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.with(|(docs, _)| {
            docs.iter()
                .filter(|(_, (_, u))| u.as_deref() == Some(unit))
                .map(|(id, _)| id.clone())
                .collect()
        }))
    }
    fn apply(&mut self, _scope: &str, changes: &[Change]) -> Result<(), StoreError> {
        self.with(|(docs, units)| {
            for c in changes {
                match c {
                    Change::Put { id, hash, unit, .. } => {
                        docs.insert(id.clone(), (*hash, unit.clone()));
                    }
                    Change::Remove { id } => {
                        docs.remove(id);
                    }
                    Change::Unit {
                        unit,
                        token,
                        docs: n,
                    } => {
                        units.insert(unit.to_string(), (*token, *n));
                    }
                    Change::RemoveUnit { unit } => {
                        units.remove(&**unit);
                    }
                }
            }
        });
        Ok(())
    }
}

inventory::submit!(ChangeStoreDescriptor {
    open: |p: &Path| Ok(Box::new(MemoryStore(p.to_path_buf())))
});

fn settings(name: &str, mode: SkipMode, config: Hash) -> SkipSettings {
    SkipSettings {
        mode,
        path: PathBuf::from(format!("memory-{name}")),
        config,
    }
}

fn ev(id: &str, kind: EventType) -> Event {
    Event::new(id, Arc::from("run"), kind)
}

fn created(child: &str, root: &str) -> Event {
    ev(child, EventType::Create).with_message(root)
}

/// One run: `f` drives the tracker, then its writes are flushed.
fn run(s: &SkipSettings, f: impl FnOnce(&ChangeTracker)) {
    let t = ChangeTracker::open("files", s, true, None).unwrap();
    f(&t);
    t.finish();
}

#[test]
fn a_record_is_unchanged_only_after_a_run_finished_it_with_the_same_content_and_config() {
    let s = settings("basic", SkipMode::Record, 7);
    run(&s, |t| {
        assert!(!t.check("a", 1, None));
        assert!(!t.check("b", 2, None));
        // Only a's tree ends: b is still in flight when the run ends, so it is not recorded.
        t.on_events(&[ev("a", EventType::Finish)], &[]);
    });
    run(&s, |t| {
        assert!(t.check("a", 1, None), "unchanged");
        assert!(!t.check("b", 2, None), "never finished: processed again");
    });
    run(&s, |t| assert!(!t.check("a", 9, None), "changed content"));
    let other_config = settings("basic", SkipMode::Record, 8);
    run(&other_config, |t| {
        assert!(!t.check("a", 1, None), "changed pipeline or indexer config")
    });
}

#[test]
fn a_failure_anywhere_in_the_tree_removes_the_entry_and_children_hold_it_back() {
    let s = settings("tree", SkipMode::Record, 1);
    run(&s, |t| {
        for id in ["p", "q", "r"] {
            assert!(!t.check(id, 1, None));
        }
        t.on_events(
            &[
                created("p-1", "p"),
                created("p-1-1", "p"), // a grandchild names the root too
                ev("p", EventType::Finish),
                ev("p-1-1", EventType::Finish),
                ev("q", EventType::Finish),
                created("r-1", "r"),
                ev("r-1", EventType::Fail),
                ev("r", EventType::Finish),
            ],
            &[],
        );
    });
    run(&s, |t| {
        assert!(!t.check("p", 1, None), "p-1 never ended: p is not recorded");
        assert!(t.check("q", 1, None));
        assert!(!t.check("r", 1, None), "a child failed");
        t.on_events(
            &[
                created("p-1", "p"),
                ev("p-1", EventType::Finish),
                ev("p", EventType::Drop),
            ],
            &[],
        );
        // q ran unchanged; a later FAIL of q (a rerun elsewhere) removes it.
    });
    run(&s, |t| {
        assert!(t.check("p", 1, None), "dropped by a stage: a good end too");
        assert!(!t.check("q2", 1, None));
        t.on_events(&[ev("q2", EventType::Fail)], &[]);
    });
    run(&s, |t| assert!(!t.check("q2", 1, None)));
}

#[test]
fn replayed_events_are_ignored_and_an_id_in_flight_twice_is_not_recorded() {
    let s = settings("dup", SkipMode::Record, 1);
    run(&s, |t| {
        assert!(!t.check("a", 1, None));
        assert!(!t.check("a", 2, None));
        assert!(!t.check("b", 1, None));
        t.on_events(
            &[
                ev("a", EventType::Finish),
                ev("a", EventType::Finish),
                ev("b", EventType::Fail),
                ev("b", EventType::Finish),
            ],
            &[2],
        );
    });
    run(&s, |t| {
        assert!(!t.check("a", 1, None));
        assert!(!t.check("a", 2, None));
        assert!(t.check("b", 1, None), "the FAIL was a replayed duplicate");
    });
    // b changed in its first copy and is as stored in its second: both are processed, and
    // the unchanged-looking copy ends nothing early.
    run(&s, |t| {
        assert!(!t.check("b", 9, None));
        assert!(!t.check("b", 1, None), "a copy of b is in flight");
        t.on_events(&[ev("b", EventType::Finish)], &[]);
        t.on_events(&[ev("b", EventType::Finish)], &[]);
    });
    run(&s, |t| {
        assert!(
            !t.check("b", 1, None),
            "which copy the index kept is not known"
        )
    });
}

#[test]
fn a_unit_is_stored_once_read_to_the_end_and_every_document_of_it_ended_well() {
    let s = settings("units", SkipMode::Record, 1);
    run(&s, |t| {
        assert_eq!(t.unit_unchanged("f1", 10), None);
        let f1 = t.begin_unit("f1", 10);
        let f2 = t.begin_unit("f2", 20);
        let f3 = t.begin_unit("f3", 30);
        assert!(!t.check("a", 1, Some(f1)));
        assert!(!t.check("b", 1, Some(f1)));
        assert!(!t.check("c", 1, Some(f2)));
        t.failed_record("bad", Some(f3));
        t.end_unit(f1, true);
        t.end_unit(f2, false); // not read to the end
        t.end_unit(f3, true);
        t.on_events(
            &[
                ev("a", EventType::Finish),
                ev("b", EventType::Finish),
                ev("c", EventType::Finish),
            ],
            &[],
        );
    });
    run(&s, |t| {
        assert_eq!(t.unit_unchanged("f1", 10), Some(2));
        assert_eq!(t.unit_unchanged("f1", 11), None, "a new size or mtime");
        assert_eq!(t.unit_unchanged("f2", 20), None, "read part way");
        assert_eq!(t.unit_unchanged("f3", 30), None, "a record of it failed");
        // f1 changed: a still there, b gone from it.
        let f1 = t.begin_unit("f1", 11);
        assert!(t.check("a", 1, Some(f1)));
        assert_eq!(t.unseen_in_unit("f1"), ["b"]);
        t.end_unit(f1, true);
    });
    run(&s, |t| {
        assert_eq!(t.unit_unchanged("f1", 11), Some(1), "a counted, unchanged")
    });
}

#[test]
fn a_unit_with_a_document_still_in_flight_is_not_stored() {
    let s = settings("unit-in-flight", SkipMode::Record, 1);
    run(&s, |t| {
        let f = t.begin_unit("f", 1);
        assert!(!t.check("a", 1, Some(f)));
        t.end_unit(f, true);
    });
    run(&s, |t| assert_eq!(t.unit_unchanged("f", 1), None));
}

#[test]
fn a_read_only_tracker_checks_but_records_nothing() {
    let s = settings("read-only", SkipMode::Record, 1);
    run(&s, |t| {
        assert!(!t.check("a", 1, None));
        t.on_events(&[ev("a", EventType::Finish)], &[]);
    });
    let t = ChangeTracker::open("files", &s, false, None).unwrap();
    assert!(t.check("a", 1, None));
    assert!(!t.check("new", 1, None));
    t.on_events(&[ev("new", EventType::Finish)], &[]);
    t.finish();
    run(&s, |t| assert!(!t.check("new", 1, None)));
}

#[test]
fn output_mode_records_what_the_backend_acknowledged() {
    let s = settings("output", SkipMode::Output, 1);
    run(&s, |t| {
        t.published("a", None);
        assert!(!t.check_output("a", 5));
        assert!(!t.check_output("a-child", 6));
        assert!(!t.check_output("b", 7));
        t.on_events(
            &[
                ev("a", EventType::Finish),
                ev("a-child", EventType::Finish),
                ev("b", EventType::Fail),
            ],
            &[],
        );
    });
    run(&s, |t| {
        assert!(t.check_output("a", 5));
        assert!(t.check_output("a-child", 6));
        assert!(!t.check_output("a", 50), "a stage's output changed");
        assert!(!t.check_output("b", 7));
    });
}

#[test]
fn a_deleted_document_leaves_the_store_once_its_deletion_ended() {
    let s = settings("deletion", SkipMode::Record, 1);
    run(&s, |t| {
        assert!(!t.check("gone", 1, None));
        t.on_events(&[ev("gone", EventType::Finish)], &[]);
    });
    run(&s, |t| {
        t.deleting("gone", None);
        t.on_events(&[ev("gone", EventType::Finish)], &[]);
    });
    run(&s, |t| assert!(!t.check("gone", 1, None)));
}

#[test]
fn skip_unchanged_reads_true_output_and_false() {
    let read = |v: serde_json::Value| {
        let mut m = serde_json::Map::new();
        m.insert("skipUnchanged".into(), v);
        SkipMode::read(&ComponentConfig::new(m, "connectors[0]"), "skipUnchanged")
    };
    assert_eq!(read(true.into()).unwrap(), Some(SkipMode::Record));
    assert_eq!(read("output".into()).unwrap(), Some(SkipMode::Output));
    assert_eq!(read("TRUE".into()).unwrap(), Some(SkipMode::Record));
    assert_eq!(read(false.into()).unwrap(), None);
    let e = read("yes".into()).unwrap_err();
    assert_eq!(e.path, "connectors[0].skipUnchanged");
    assert!(e.message.contains("\"output\""), "{e}");
}

#[test]
fn hashes_are_stable_across_builds() {
    // Stored hashes must match the next build's: these values are xxh3's, fixed.
    assert_eq!(id_key("doc-1"), 13915453443274895425);
    assert_eq!(
        record_hash("doc-1", "{}"),
        189202022126155703168182533856116892573
    );
    assert_ne!(record_hash("a", "bc"), record_hash("ab", "c"));
    assert_eq!(record_hash("a", "x"), record_hash("a", "x"));
    assert_eq!(
        beside(Path::new("out/index")),
        PathBuf::from("out/index.unchanged.sqlite")
    );
}
