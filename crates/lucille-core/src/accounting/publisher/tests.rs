use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::*;
use crate::accounting::EventType;
use crate::messaging::{Events, LocalMessenger, WorkerSide};

struct Done(bool);
impl ConnectorStatus for Done {
    fn is_finished(&self) -> bool {
        self.0
    }
}

fn publisher(settings: PublisherSettings) -> (Arc<Publisher>, Arc<LocalMessenger>) {
    let m = Arc::new(LocalMessenger::new(100));
    let p = Arc::new(Publisher::new(
        Arc::from("run-1"),
        m.clone(),
        settings,
        Arc::new(AtomicBool::new(false)),
    ));
    (p, m)
}

fn doc(id: &str) -> Document {
    Document::new(id).unwrap()
}

fn finish(m: &LocalMessenger, id: &str, kind: EventType) {
    m.send_event(Event::new(id, Arc::from("run-1"), kind))
        .unwrap();
}

#[test]
fn stamps_run_id_and_tracks_before_sending() {
    let (p, m) = publisher(PublisherSettings::default());
    p.publish(doc("a")).unwrap();
    assert_eq!(p.pending(), 1);
    let sent = m
        .poll_doc_to_process(Duration::from_millis(10))
        .unwrap()
        .into_document()
        .unwrap();
    assert_eq!(sent.run_id(), Some("run-1"));
    let mut stamped = doc("b");
    stamped.initialize_run_id("other").unwrap();
    assert!(matches!(
        p.publish(stamped),
        Err(PublishError::AlreadyStamped { .. })
    ));
    assert_eq!(p.pending(), 1);
}

#[test]
fn completion_needs_connector_done_nothing_pending_no_event_in_transit() {
    let (p, m) = publisher(PublisherSettings::default());
    p.publish(doc("a")).unwrap();
    // Connector still running: not complete even when nothing is pending.
    finish(&m, "a", EventType::Finish);
    let (tx, rx) = std::sync::mpsc::channel();
    let p2 = p.clone();
    let h = thread::spawn(move || {
        let flag = Arc::new(AtomicBool::new(false));
        struct Flag(Arc<AtomicBool>);
        impl ConnectorStatus for Flag {
            fn is_finished(&self) -> bool {
                self.0.load(Ordering::SeqCst)
            }
        }
        tx.send(flag.clone()).unwrap();
        p2.wait_for_completion(
            &Flag(flag),
            None,
            |_| Ok::<(), std::convert::Infallible>(()),
        )
    });
    let flag = rx.recv().unwrap();
    thread::sleep(Duration::from_millis(150));
    assert!(!h.is_finished(), "must wait for the connector");
    flag.store(true, Ordering::SeqCst);
    let r = h.join().unwrap();
    assert!(r.ok);
    assert_eq!(p.counts().succeeded, 1);
}

#[test]
fn children_created_mid_run_are_waited_for() {
    let (p, m) = publisher(PublisherSettings::default());
    p.publish(doc("p")).unwrap();
    finish(&m, "p-1", EventType::Create);
    finish(&m, "p", EventType::Finish);
    let p2 = p.clone();
    let h = thread::spawn(move || {
        p2.wait_for_completion(
            &Done(true),
            None,
            |_| Ok::<(), std::convert::Infallible>(()),
        )
    });
    thread::sleep(Duration::from_millis(150));
    assert!(!h.is_finished(), "child p-1 is still pending");
    finish(&m, "p-1", EventType::Finish);
    assert!(h.join().unwrap().ok);
    assert_eq!(p.counts().succeeded, 2);
}

#[test]
fn timeout_fails_the_connector() {
    let (p, _m) = publisher(PublisherSettings::default());
    p.publish(doc("a")).unwrap();
    let r = p.wait_for_completion(&Done(true), Some(Duration::from_millis(120)), |_| {
        Ok::<(), std::convert::Infallible>(())
    });
    assert_eq!(
        r,
        PublisherResult {
            ok: false,
            message: Some("Connector timeout.".into())
        }
    );
}

#[test]
fn collapse_merges_consecutive_same_id_documents() {
    let (p, m) = publisher(PublisherSettings {
        collapse: true,
        ..Default::default()
    });
    for (id, v) in [("a", 1), ("a", 2), ("b", 3), ("a", 4)] {
        let mut d = doc(id);
        d.set_field("v", v).unwrap();
        p.publish(d).unwrap();
    }
    p.flush().unwrap();
    assert_eq!(p.num_received(), 4);
    assert_eq!(p.num_published(), 3);
    let got: Vec<_> = (0..3)
        .map(|_| {
            m.poll_doc_to_process(Duration::from_millis(10))
                .unwrap()
                .into_document()
                .unwrap()
        })
        .collect();
    assert_eq!(got[0].get("v"), Some(&serde_json::json!([1, 2])));
    assert_eq!((got[1].id(), got[2].id()), ("b", "a"));
}

#[test]
fn max_pending_docs_blocks_publish_until_events_arrive() {
    let (p, m) = publisher(PublisherSettings {
        max_pending_docs: Some(2),
        ..Default::default()
    });
    p.publish(doc("1")).unwrap();
    p.publish(doc("2")).unwrap();
    let p2 = p.clone();
    let h = thread::spawn(move || p2.publish(doc("3")));
    thread::sleep(Duration::from_millis(100));
    assert!(
        !h.is_finished(),
        "third publish must block at maxPendingDocs"
    );
    assert_eq!(p.pending(), 2);
    p.handle_event(&Event::new("1", Arc::from("run-1"), EventType::Finish));
    h.join().unwrap().unwrap();
    assert_eq!(p.pending(), 2);
    let _ = m;
}

#[test]
fn pause_blocks_until_resume() {
    let (p, _m) = publisher(PublisherSettings::default());
    p.pause();
    let p2 = p.clone();
    let h = thread::spawn(move || p2.publish(doc("a")));
    thread::sleep(Duration::from_millis(100));
    assert!(!h.is_finished());
    assert_eq!(p.pending(), 0);
    p.resume();
    h.join().unwrap().unwrap();
    assert_eq!(p.pending(), 1);
}

#[test]
fn stopping_refuses_new_documents_and_unblocks_waiters() {
    let m = Arc::new(LocalMessenger::new(10));
    let stop = Arc::new(AtomicBool::new(false));
    let p = Arc::new(Publisher::new(
        Arc::from("r"),
        m,
        PublisherSettings {
            max_pending_docs: Some(1),
            ..Default::default()
        },
        stop.clone(),
    ));
    p.publish(doc("1")).unwrap();
    let p2 = p.clone();
    let h = thread::spawn(move || p2.publish(doc("2")));
    thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::SeqCst);
    assert!(matches!(h.join().unwrap(), Err(PublishError::Stopped(_))));
    assert!(matches!(p.publish(doc("3")), Err(PublishError::Stopped(_))));
    assert_eq!(p.pending(), 1);
}

#[test]
fn failed_send_rolls_back() {
    struct Closed;
    impl crate::messaging::Events for Closed {
        fn send_event(&self, _: Event) -> Result<(), MessagingError> {
            Ok(())
        }
    }
    impl crate::messaging::PublisherSide for Closed {
        fn send_for_processing(&self, _: crate::record::ToProcess) -> Result<(), MessagingError> {
            Err(MessagingError::Closed("source"))
        }
        fn poll_event(&self, _: Duration) -> Option<Event> {
            None
        }
        fn try_poll_event(&self) -> Option<Event> {
            None
        }
    }
    let p = Publisher::new(
        Arc::from("r"),
        Arc::new(Closed),
        PublisherSettings::default(),
        Arc::new(AtomicBool::new(false)),
    );
    assert!(matches!(
        p.publish(doc("a")),
        Err(PublishError::Send { .. })
    ));
    assert_eq!(p.pending(), 0);
    assert_eq!(p.num_published(), 0);
}

#[test]
fn terminal_listener_hears_every_terminal_event_after_the_ledger_applied_it() {
    let (p, _m) = publisher(PublisherSettings::default());
    let heard = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (h2, p2) = (heard.clone(), Arc::downgrade(&p));
    p.on_terminal(Box::new(move |id| {
        let pending = p2.upgrade().map(|p| p.pending());
        h2.lock().push((id.to_string(), pending));
    }));
    p.publish(doc("a")).unwrap();
    p.publish(doc("b")).unwrap();
    // "b" found "a" queued, so it was held for a block; the connector's end sends it.
    p.flush().unwrap();
    let ev = |id: &str, kind| Event::new(id, Arc::from("run-1"), kind);
    p.handle_event(&ev("c", EventType::Create));
    p.handle_event(&ev("c", EventType::Drop));
    p.handle_event(&ev("a", EventType::Fail));
    p.handle_event(&ev("b", EventType::Finish));
    // CREATE is not terminal; each terminal event is heard once, with the ledger already updated.
    assert_eq!(
        *heard.lock(),
        vec![
            ("c".to_string(), Some(2)),
            ("a".to_string(), Some(1)),
            ("b".to_string(), Some(0))
        ]
    );
}

#[test]
fn publish_failed_counts_a_failure_without_sending_a_document() {
    let (p, m) = publisher(PublisherSettings::default());
    let dead = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let d2 = dead.clone();
    p.on_failed_record(Box::new(move |id, reason| {
        d2.lock().push(format!("{id}: {reason}"))
    }));
    p.publish_failed("bad-row", "rows.csv line 3: 2 columns, header has 3")
        .unwrap();
    assert_eq!(
        *dead.lock(),
        ["bad-row: rows.csv line 3: 2 columns, header has 3"]
    );
    assert!(m.poll_doc_to_process(Duration::from_millis(10)).is_none());
    assert_eq!(p.pending(), 1);
    let r = p.wait_for_completion(
        &Done(true),
        None,
        |_| Ok::<(), std::convert::Infallible>(()),
    );
    assert!(r.ok);
    let c = p.counts();
    assert_eq!((c.published, c.failed, c.succeeded), (1, 1, 0));
    assert_eq!(p.num_received(), 1);
}

/// Builds a document from a record's text, refusing "bad".
struct Builder;
impl crate::record::RecordBuilder for Builder {
    fn build(&self, id: &str, text: &str) -> Result<Document, crate::record::BuildError> {
        if text == "bad" {
            return Err(crate::record::BuildError::Invalid("unbuildable".into()));
        }
        Ok(Document::new(id)?)
    }
}

fn record(id: &str, text: &str) -> crate::record::Record {
    crate::record::Record {
        id: id.into(),
        text: text.into(),
        builder: Arc::new(Builder),
        origin: Arc::from("f.jsonl"),
        line: 7,
        run_id: None,
    }
}

#[test]
fn a_record_is_tracked_by_its_id_and_sent_unbuilt_with_the_run_id() {
    use crate::record::ToProcess;
    let (p, m) = publisher(PublisherSettings::default());
    p.publish_record(record("r1", "bad")).unwrap();
    assert_eq!(p.pending(), 1, "tracked before a worker sees it");
    let Some(ToProcess::Record(r)) = m.poll_doc_to_process(Duration::from_millis(10)) else {
        panic!("the record travels unbuilt")
    };
    assert_eq!(r.id, "r1");
    assert_eq!(r.run_id.as_deref(), Some("run-1"));
    assert_eq!(
        ToProcess::Record(r).into_document().unwrap_err().reason,
        "f.jsonl: line 7: unbuildable"
    );
}

#[test]
fn a_run_that_keeps_documents_builds_records_at_publish_and_fails_unbuildable_ones() {
    use crate::record::ToProcess;
    let m = Arc::new(crate::messaging::TestMessenger::new(100));
    let p = Publisher::new(
        Arc::from("run-1"),
        m.clone(),
        PublisherSettings::default(),
        Arc::new(AtomicBool::new(false)),
    );
    p.publish_record(record("ok", "fine")).unwrap();
    p.publish_record(record("nope", "bad")).unwrap();
    assert_eq!(p.pending(), 2);
    let Some(ToProcess::Doc(d)) = m.poll_doc_to_process(Duration::from_millis(10)) else {
        panic!("built before sending")
    };
    assert_eq!((d.id(), d.run_id()), ("ok", Some("run-1")));
    assert!(m.poll_doc_to_process(Duration::from_millis(10)).is_none());
    let h = m.history();
    assert_eq!(h.sent_for_processing.len(), 1);
    let fail = h.events.iter().find(|e| e.doc_id == "nope").unwrap();
    assert_eq!(fail.kind, EventType::Fail);
    assert_eq!(
        fail.message.as_deref(),
        Some("f.jsonl: line 7: unbuildable")
    );
}

/// The ids queued for the workers, in order.
fn drain_ids(m: &LocalMessenger) -> Vec<String> {
    let mut items = Vec::new();
    m.poll_block(usize::MAX, Duration::ZERO, &mut items);
    items.iter().map(|i| i.id().to_string()).collect()
}

#[test]
fn while_the_workers_are_busy_publishes_are_held_and_handed_over_as_one_block() {
    // Capacity 8: blocks of 4.
    let m = Arc::new(LocalMessenger::new(8));
    let p = Publisher::new(
        Arc::from("run-1"),
        m.clone(),
        PublisherSettings::default(),
        Arc::new(AtomicBool::new(false)),
    );
    // Nothing queued: the first goes at once (a trickle is never held).
    p.publish(doc("a")).unwrap();
    assert_eq!(m.queued().0, 1);
    // "a" waits for a worker: the next are held until a block of 4 is full.
    for id in ["b", "c", "d"] {
        p.publish(doc(id)).unwrap();
    }
    assert_eq!(m.queued().0, 1, "held, not queued");
    assert_eq!(p.pending(), 4, "held documents count as in flight");
    assert!(p.has_pending());
    assert_eq!(p.counts().published, 1, "only what was sent is tracked");
    p.publish(doc("e")).unwrap();
    assert_eq!(drain_ids(&m), ["a", "b", "c", "d", "e"], "in publish order");
    assert_eq!(p.counts().published, 5);
    // The connector's end sends what is held.
    for id in ["f", "g", "h"] {
        p.publish(doc(id)).unwrap();
    }
    assert_eq!(m.queued().0, 1);
    p.flush().unwrap();
    assert_eq!(drain_ids(&m), ["f", "g", "h"]);
    assert_eq!(p.pending(), 8);
    // With the workers idle, a held document goes with the next publish.
    p.publish(doc("i")).unwrap();
    p.publish(doc("j")).unwrap();
    assert_eq!(drain_ids(&m), ["i"]);
    p.publish(doc("k")).unwrap();
    assert_eq!(drain_ids(&m), ["j", "k"]);
}

#[test]
fn a_held_document_goes_out_once_the_workers_run_dry_even_if_the_connector_publishes_no_more() {
    let (p, m) = publisher(PublisherSettings::default());
    p.publish(doc("a")).unwrap();
    p.publish(doc("b")).unwrap();
    assert_eq!(m.queued().0, 1, "b is held behind a");
    // The event loop's tick leaves it while a worker has work...
    p.send_held_if_idle();
    assert_eq!(m.queued().0, 1);
    // ...and sends it once the workers ran dry.
    assert_eq!(drain_ids(&m), ["a"]);
    p.send_held_if_idle();
    assert_eq!(drain_ids(&m), ["b"]);
    // The same through wait_for_completion, with a connector that is still running.
    p.publish(doc("c")).unwrap();
    p.publish(doc("d")).unwrap();
    let m2 = m.clone();
    let worker = thread::spawn(move || {
        let mut ids = Vec::new();
        while ids.len() < 2 {
            let mut got = Vec::new();
            m2.poll_block(16, Duration::from_millis(20), &mut got);
            for item in got {
                finish(&m2, item.id(), EventType::Finish);
                ids.push(item.id().to_string());
            }
        }
        ids
    });
    let finish_ab = |p: &Publisher| {
        for id in ["a", "b"] {
            p.handle_event(&Event::new(id, Arc::from("run-1"), EventType::Finish));
        }
    };
    finish_ab(&p);
    let r = p.wait_for_completion(&Done(true), Some(Duration::from_secs(10)), |_| {
        Ok::<(), String>(())
    });
    assert!(r.ok, "{r:?}");
    assert_eq!(worker.join().unwrap(), ["c", "d"]);
}
