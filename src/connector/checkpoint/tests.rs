use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

use super::*;
use crate::accounting::{Event, EventType, PublisherSettings};
use crate::messaging::LocalMessenger;

fn publisher() -> Arc<Publisher> {
    Arc::new(Publisher::new(
        Arc::from("run"),
        Arc::new(LocalMessenger::new(16)),
        PublisherSettings::default(),
        Arc::new(AtomicBool::new(false)),
    ))
}

fn ack(p: &Publisher, id: &str) {
    p.handle_event(&Event::new(id, Arc::from("run"), EventType::Finish));
}

fn stamp(size: u64, hash: &str) -> Stamp {
    Stamp {
        size,
        modified_ms: 1000,
        hash: Some(hash.into()),
    }
}

fn open(dir: &tempdir::Dir, incremental: bool) -> Checkpoint {
    // A folder that does not exist yet is created.
    Checkpoint::open(&dir.path().join("state/files.sqlite"), "files", incremental).unwrap()
}

/// Registers `unit` and publishes records `[skip, total)` as `{path}-{n}`.
fn read_unit(t: &Tracker, n: u32, path: &str, st: Stamp, skip: u64, total: u64) -> UnitId {
    let h = t.handle();
    let unit = UnitId(n);
    h.begin(unit, path, st, skip);
    for r in skip..total {
        h.published(unit, r, &format!("{path}-{r}"));
    }
    h.read(unit, total);
    unit
}

mod tempdir {
    /// A temporary folder removed on drop (std only, to keep dev-dependencies small).
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new(tag: &str) -> Self {
            let p = std::env::temp_dir().join(format!(
                "lucille-checkpoint-{tag}-{}-{}",
                std::process::id(),
                uuid::Uuid::new_v4()
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn an_interrupted_unit_resumes_after_its_contiguous_acknowledged_prefix() {
    let dir = tempdir::Dir::new("resume");
    let p = publisher();
    let cp = open(&dir, false);
    assert!(!cp.is_resuming());
    assert_eq!(
        cp.plan("a.jsonl", 10, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
    let t = cp.start_tracker(&p);
    read_unit(&t, 0, "a.jsonl", stamp(10, "h"), 0, 6);
    // Out of order: 0, 1, 3 acknowledged; 2 is not, so only [0, 2) is safe to skip.
    for id in ["a.jsonl-3", "a.jsonl-0", "a.jsonl-1", "child-of-something"] {
        ack(&p, id);
    }
    drop(t); // a failed run: commits, does not finish the traversal

    let cp = open(&dir, false);
    assert!(cp.is_resuming());
    let (plan, _) = cp.plan("a.jsonl", 10, 1000, || unreachable!()).unwrap();
    assert_eq!(plan, Plan::Read { skip: 2 });
    // A unit that changed since restarts from the beginning.
    let (plan, _) = cp.plan("a.jsonl", 11, 1000, || unreachable!()).unwrap();
    assert_eq!(plan, Plan::Read { skip: 0 });

    // The resumed run publishes 2..6; once all are acknowledged the unit is complete.
    let t = cp.start_tracker(&p);
    read_unit(&t, 0, "a.jsonl", stamp(10, "h"), 2, 6);
    for r in 2..6 {
        ack(&p, &format!("a.jsonl-{r}"));
    }
    let summary = t.finish(true, Vec::new()).unwrap();
    assert_eq!(
        summary,
        TraversalSummary {
            complete: 1,
            incomplete: 0,
            finished: true
        }
    );
}

#[test]
fn a_resumed_traversal_skips_completed_units_and_a_finished_one_starts_anew() {
    let dir = tempdir::Dir::new("skip");
    let p = publisher();
    let t = open(&dir, false).start_tracker(&p);
    read_unit(&t, 0, "done.csv", stamp(3, "h1"), 0, 2);
    read_unit(&t, 1, "half.csv", stamp(5, "h2"), 0, 2);
    for id in ["done.csv-0", "done.csv-1", "half.csv-1"] {
        ack(&p, id);
    }
    let s = t.finish(false, Vec::new()).unwrap();
    assert_eq!((s.complete, s.incomplete, s.finished), (1, 1, false));

    let cp = open(&dir, false);
    assert!(cp.is_resuming());
    assert_eq!(
        cp.plan("done.csv", 3, 1000, || unreachable!()).unwrap().0,
        Plan::SkipDone
    );
    assert_eq!(
        cp.plan("half.csv", 5, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
    let t = cp.start_tracker(&p);
    read_unit(&t, 0, "half.csv", stamp(5, "h2"), 0, 2);
    ack(&p, "half.csv-0");
    ack(&p, "half.csv-1");
    let s = t.finish(true, Vec::new()).unwrap();
    assert_eq!((s.complete, s.incomplete, s.finished), (2, 0, true));

    // Finished: the next run is a new traversal that reads everything again.
    let cp = open(&dir, false);
    assert!(!cp.is_resuming());
    assert_eq!(
        cp.plan("done.csv", 3, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
}

#[test]
fn incremental_skips_units_whose_size_mtime_and_hash_are_unchanged() {
    let dir = tempdir::Dir::new("incr");
    let p = publisher();
    let t = open(&dir, true).start_tracker(&p);
    read_unit(&t, 0, "a", stamp(3, "same"), 0, 1);
    read_unit(&t, 1, "b", stamp(3, "old"), 0, 1);
    ack(&p, "a-0");
    ack(&p, "b-0");
    assert!(t.finish(true, Vec::new()).unwrap().finished);

    let cp = open(&dir, true);
    let (plan, st) = cp.plan("a", 3, 1000, || Ok("same".into())).unwrap();
    assert_eq!(plan, Plan::SkipUnchanged);
    assert_eq!(st.hash.as_deref(), Some("same"));
    // Same size and mtime but other content: read again.
    assert_eq!(
        cp.plan("b", 3, 1000, || Ok("new".into())).unwrap().0,
        Plan::Read { skip: 0 }
    );
    // Another mtime: read again, without hashing.
    assert_eq!(
        cp.plan("a", 3, 2000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
    // Without incremental the same store re-reads everything.
    drop(cp);
    let cp = open(&dir, false);
    assert_eq!(
        cp.plan("a", 3, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
}

#[test]
fn a_unit_whose_reads_keep_failing_is_settled_after_three_attempts() {
    let dir = tempdir::Dir::new("fail");
    let p = publisher();
    for attempt in 1..=MAX_UNIT_ATTEMPTS {
        let cp = open(&dir, false);
        assert_eq!(
            cp.plan("bad", 1, 1000, || unreachable!()).unwrap().0,
            Plan::Read { skip: 0 },
            "attempt {attempt}"
        );
        let t = cp.start_tracker(&p);
        let h = t.handle();
        h.begin(UnitId(0), "bad", stamp(1, "h"), 0);
        h.failed(UnitId(0), "permission denied");
        let s = t.finish(true, Vec::new()).unwrap();
        assert!(!s.finished);
    }
    let cp = open(&dir, false);
    assert_eq!(cp.state("bad").unwrap().attempts, MAX_UNIT_ATTEMPTS);
    assert_eq!(
        cp.plan("bad", 1, 1000, || unreachable!()).unwrap().0,
        Plan::SkipSettledFailed {
            error: "permission denied".into()
        }
    );
    // A settled unit keeps the traversal from finishing, visibly.
    let t = cp.start_tracker(&p);
    t.handle().settled();
    assert!(!t.finish(true, Vec::new()).unwrap().finished);
    // Once the file changes it gets a fresh chance.
    let cp = open(&dir, false);
    assert_eq!(
        cp.plan("bad", 2, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
}

#[test]
fn vanished_units_are_listed_then_forgotten_and_repeated_ids_ack_in_order() {
    let dir = tempdir::Dir::new("vanish");
    let p = publisher();
    let t = open(&dir, false).start_tracker(&p);
    let h = t.handle();
    h.begin(UnitId(0), "keep", stamp(1, "h"), 0);
    // The same id twice in one unit (a CSV with a repeated key): two acknowledgements needed.
    h.published(UnitId(0), 0, "dup");
    h.published(UnitId(0), 1, "dup");
    h.read(UnitId(0), 2);
    read_unit(&t, 1, "gone", stamp(1, "h"), 0, 1);
    ack(&p, "dup");
    ack(&p, "gone-0");
    let s = t.finish(true, Vec::new()).unwrap();
    assert!(!s.finished, "one 'dup' is still unacknowledged");

    let cp = open(&dir, false);
    assert_eq!(cp.state("keep").unwrap().acked, 1);
    let seen: HashSet<String> = ["keep".to_string()].into();
    let vanished = cp.vanished(&seen);
    assert_eq!(vanished, vec!["gone".to_string()]);
    let t = cp.start_tracker(&p);
    read_unit(&t, 0, "keep", stamp(1, "h"), 1, 2);
    ack(&p, "keep-1");
    let s = t.finish(true, vanished).unwrap();
    assert!(s.finished);
    assert!(open(&dir, false).state("gone").is_none());
}
