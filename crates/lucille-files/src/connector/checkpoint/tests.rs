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

#[test]
fn units_read_within_the_publish_cutoff_are_skipped_and_older_ones_read() {
    let dir = tempdir::Dir::new("cutoff");
    let p = publisher();
    let t = open(&dir, false).start_tracker(&p);
    read_unit(&t, 0, "a", stamp(3, "x"), 0, 1);
    read_unit(&t, 1, "b", stamp(3, "y"), 0, 1);
    ack(&p, "a-0");
    ack(&p, "b-0");
    assert!(t.finish(true, Vec::new()).unwrap().finished);
    // "b" was read a day ago.
    let conn = Connection::open(dir.path().join("state/files.sqlite")).unwrap();
    let day_ago = now_ms() - 24 * 3600 * 1000;
    conn.execute(
        "UPDATE units SET published_ms = ?1 WHERE path = 'b'",
        [day_ago],
    )
    .unwrap();
    drop(conn);

    let hour = Some(Duration::from_secs(3600));
    let cp = open(&dir, false).with_published_cutoff(hour);
    assert_eq!(cp.state("b").unwrap().published_ms, Some(day_ago));
    // Read a moment ago: skipped even though it changed (Lucille's lastPublishedCutoff).
    assert_eq!(
        cp.plan("a", 99, 5000, || unreachable!()).unwrap().0,
        Plan::SkipRecentlyPublished
    );
    assert_eq!(
        cp.plan("b", 3, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
    // Unknown units are read; without a cutoff nothing is skipped for its age.
    assert_eq!(
        cp.plan("new", 1, 1, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
    drop(cp);
    let cp = open(&dir, false);
    assert_eq!(
        cp.plan("a", 3, 1000, || unreachable!()).unwrap().0,
        Plan::Read { skip: 0 }
    );
}

#[test]
fn a_store_written_before_publish_times_were_kept_gets_the_column() {
    let dir = tempdir::Dir::new("migrate");
    let path = dir.path().join("old.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE traversals (connector TEXT PRIMARY KEY, current INTEGER NOT NULL,
                                  finished INTEGER NOT NULL);
         CREATE TABLE units (connector TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
             modified_ms INTEGER NOT NULL, hash TEXT, acked INTEGER NOT NULL,
             complete INTEGER NOT NULL, attempts INTEGER NOT NULL, last_error TEXT,
             traversal INTEGER NOT NULL, PRIMARY KEY (connector, path));
         INSERT INTO traversals VALUES ('files', 1, 1);
         INSERT INTO units VALUES ('files', 'a', 3, 1000, 'x', 1, 1, 0, NULL, 1);",
    )
    .unwrap();
    drop(conn);
    let cp = Checkpoint::open(&path, "files", true)
        .unwrap()
        .with_published_cutoff(Some(Duration::from_secs(3600)));
    let a = cp.state("a").unwrap();
    assert_eq!((a.published_ms, a.complete), (None, true));
    // No publish time: the cutoff does not apply; incremental still sees it unchanged.
    assert_eq!(
        cp.plan("a", 3, 1000, || Ok("x".into())).unwrap().0,
        Plan::SkipUnchanged
    );
}

#[test]
fn kept_vanished_units_stay_in_the_store() {
    let dir = tempdir::Dir::new("keep");
    let p = publisher();
    let t = open(&dir, false).start_tracker(&p);
    read_unit(&t, 0, "a", stamp(3, "x"), 0, 1);
    ack(&p, "a-0");
    assert!(t.finish(true, Vec::new()).unwrap().finished);
    let p = publisher();
    let cp = open(&dir, false).keeping_vanished(true);
    assert_eq!(cp.vanished(&HashSet::new()), vec!["a".to_string()]);
    let t = cp.start_tracker(&p);
    t.finish(true, vec!["a".to_string()]).unwrap();
    assert!(open(&dir, false).state("a").is_some());
}
