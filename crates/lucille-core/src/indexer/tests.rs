use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::*;
use crate::accounting::Event;
use crate::config::ComponentConfig;
use crate::document::Document;
use crate::messaging::{LocalMessenger, PublisherSide, WorkerSide};

fn settings(v: Value) -> IndexerSettings {
    match v {
        Value::Object(m) => {
            IndexerSettings::from_config(&ComponentConfig::new(m, "indexer")).unwrap()
        }
        _ => panic!(),
    }
}

fn settings_err(v: Value) -> String {
    match v {
        Value::Object(m) => IndexerSettings::from_config(&ComponentConfig::new(m, "indexer"))
            .err()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        _ => panic!(),
    }
}

fn doc(v: Value) -> Document {
    Document::from_value(v).unwrap()
}

#[test]
fn ops_apply_overrides_filters_and_deletion_markers() {
    let s = settings(json!({
        "idOverrideField": "cid", "indexOverrideField": "idx", "blacklist": ["secret"],
        "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
        "deleteByFieldField": "del_field", "deleteByFieldValue": "del_value"
    }));
    let mut d = doc(json!({"id": "a", "cid": "c-1", "idx": "books", "title": "t", "secret": "s"}));
    d.initialize_run_id("r").unwrap();
    d.set_skipped(true);
    assert_eq!(
        s.op_for(&d),
        IndexOp::Upsert {
            id: "c-1".into(),
            index: Some("books".into()),
            fields: match json!({"cid": "c-1", "idx": "books", "title": "t"}) {
                Value::Object(m) => m.into_iter().collect(),
                _ => unreachable!(),
            },
            children: Default::default(),
            routing: None,
            version: None,
        }
    );
    assert_eq!(
        s.op_for(&doc(json!({"id": "a", "deleted": true}))),
        IndexOp::DeleteById {
            id: "a".into(),
            index: None,
            routing: None,
            version: None,
        }
    );
    assert_eq!(
        s.op_for(&doc(
            json!({"id": "a", "deleted": "true", "del_field": "author", "del_value": "ann"})
        )),
        IndexOp::DeleteByField {
            field: "author".into(),
            value: "ann".into(),
            index: None
        }
    );
    assert!(matches!(
        s.op_for(&doc(json!({"id": "a", "deleted": "false"}))),
        IndexOp::Upsert { .. }
    ));
    let w = settings(json!({"whitelist": ["title"]}));
    match w.op_for(&doc(json!({"id": "a", "title": "t", "other": 1}))) {
        IndexOp::Upsert { fields, id, .. } => {
            assert_eq!(id, "a");
            assert_eq!(fields.keys().collect::<Vec<_>>(), ["title"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn settings_defaults_and_errors() {
    let s = settings(json!({}));
    assert_eq!(
        (s.kind.as_str(), s.batch_size, s.batch_timeout),
        ("nop", 100, Duration::from_millis(100))
    );
    let e = settings_err(json!({"batchSize": 0, "bogus": 1, "batchTimeout": "soon"}));
    for part in [
        "indexer.batchSize: must be at least 1",
        "indexer.bogus: unknown key",
        "indexer.batchTimeout",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    // Keys that go together are checked once each key is right.
    let e = settings_err(
        json!({"deletionMarkerField": "x", "versionType": "External",
        "retryWaitDurationMs": 5}),
    );
    for part in [
        "indexer.deletionMarkerField: \"deletionMarkerField\" and \"deletionMarkerFieldValue\" must be set together",
        "indexer.versionField: indexer.versionType and indexer.versionField must be set together",
        "indexer.retryWaitDurationMs: needs indexer.maxRetries to be set",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    assert_eq!(settings(json!({"type": "NOP"})).kind, "nop");
    assert_eq!(
        settings(json!({"ignoreFields": ["a"]})).blacklist,
        Some(vec!["a".to_string()])
    );
}

#[test]
fn a_python_indexer_takes_its_own_keys_from_the_block() {
    let s = settings(json!({"class": "sinks:Sink", "out": "x.jsonl", "batchSize": 5}));
    assert_eq!(
        (s.kind.as_str(), s.class.as_deref(), s.batch_size),
        ("python", Some("sinks:Sink"), 5)
    );
    let s = settings(json!({"class": "PythonIndexer", "script": "..."}));
    assert_eq!(s.class.as_deref(), Some("PythonIndexer"));
    // Its generic keys are still checked; another backend's block has no room for extra keys.
    let e = settings_err(json!({"class": "sinks:Sink", "batchSize": "many"}));
    assert!(e.contains("indexer.batchSize: must be an integer"), "{e}");
    let e = settings_err(json!({"type": "nop", "out": "x.jsonl"}));
    assert!(e.contains("indexer.out: unknown key"), "{e}");
    // The Python backend is looked up as any other: without the bindings, or without a class,
    // checking it says what is needed.
    let block = ComponentConfig::new(serde_json::Map::new(), "indexer");
    let e = validate_backend(&s, &block).unwrap_err();
    assert!(
        e[0].to_string()
            .contains("indexer.class: Python indexers need the lucille Python package"),
        "{e:?}"
    );
    let e = validate_backend(&settings(json!({"type": "python"})), &block).unwrap_err();
    assert!(
        e[0].to_string()
            .starts_with("indexer.class: a Python indexer is named by indexer.class"),
        "{e:?}"
    );
    let e = validate_backend(&settings(json!({"type": "pythn"})), &block).unwrap_err();
    assert!(
        e[0].to_string().contains("unknown indexer type \"pythn\"")
            && !e[0].to_string().contains("python,"),
        "{e:?}"
    );
}

#[test]
fn retry_keys_and_timeouts_are_read_into_the_settings() {
    let s = settings(json!({"maxRetries": 2, "retryWaitDurationMs": 10,
        "retryRandomizationFactor": 0, "retryableStatusCodes": ["503", -1],
        "indexerRequestTimeout": 1500, "inactivityTimeout": 0, "batchByteSize": 1000}));
    assert_eq!(
        (
            s.retry.max_retries,
            s.retry.initial_wait,
            s.retry.randomization
        ),
        (2, Duration::from_millis(10), 0.0)
    );
    assert_eq!(s.retry.retryable, [503, -1]);
    assert_eq!(s.request_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(s.inactivity_timeout, None, "0 disables the watchdog");
    assert_eq!(
        (s.batch_byte_size, s.batch_size),
        (Some(1000), usize::MAX),
        "a byte limit alone leaves the count unlimited"
    );
    let e = settings_err(json!({"maxRetries": 0, "retryRandomizationFactor": 1,
        "retryableStatusCodes": [99], "indexerConnectionTimeout": -5}));
    for part in [
        "indexer.maxRetries: must be a positive integer",
        "indexer.retryRandomizationFactor: must be at least 0 and less than 1",
        "indexer.retryableStatusCodes: must be a list of HTTP status codes (100-599)",
        "indexer.indexerConnectionTimeout: must be a positive number of milliseconds",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
}

#[test]
fn every_backend_checks_its_keys() {
    super::test_backends::assert_every_backend_checks_its_keys();
}

/// Records batches; rejects documents whose id starts with "bad"; fails whole batches holding "down".
struct Recorder(Arc<Mutex<Vec<Vec<IndexOp>>>>);
impl Backend for Recorder {
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        self.0.lock().push(ops.to_vec());
        let id = |op: &IndexOp| match op {
            IndexOp::Upsert { id, .. } | IndexOp::DeleteById { id, .. } => id.clone(),
            IndexOp::DeleteByField { value, .. } => value.clone(),
        };
        if ops.iter().any(|o| id(o) == "down") {
            return Err(BackendError::new("backend unavailable"));
        }
        Ok(ops
            .iter()
            .map(|o| {
                id(o)
                    .starts_with("bad")
                    .then(|| "mapping rejected".to_string())
            })
            .collect())
    }
}

fn run_indexer(batch: usize, ids: &[&str], bypass: bool) -> (Vec<Vec<IndexOp>>, Vec<Event>) {
    let m = Arc::new(LocalMessenger::new(100));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut s = settings(json!({"batchSize": batch, "batchTimeout": 10_000}));
    s.kind = "test".into();
    let h = IndexerHandle::start(
        s,
        Box::new(Recorder(seen.clone())),
        m.clone(),
        Arc::from("r"),
        bypass,
    )
    .unwrap();
    for id in ids {
        m.send_for_indexing(Document::new(*id).unwrap().into())
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    h.terminate().unwrap();
    let mut events = Vec::new();
    while let Some(e) = m.try_poll_event() {
        events.push(e);
    }
    let batches = seen.lock().clone();
    (batches, events)
}

#[test]
fn batches_by_size_flush_at_end_and_fail_per_document() {
    let (batches, events) = run_indexer(2, &["a", "bad1", "c", "d", "e"], false);
    assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    let kinds: Vec<_> = events.iter().map(|e| (e.doc_id.as_str(), e.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("a", EventType::Finish),
            ("bad1", EventType::Fail),
            ("c", EventType::Finish),
            ("d", EventType::Finish),
            ("e", EventType::Finish)
        ]
    );
    assert_eq!(events[1].message.as_deref(), Some("mapping rejected"));
}

#[test]
fn whole_batch_failure_fails_every_document_in_it() {
    let (_, events) = run_indexer(3, &["a", "down", "c", "x"], false);
    let fails: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventType::Fail)
        .map(|e| e.doc_id.as_str())
        .collect();
    assert_eq!(fails, ["a", "down", "c"]);
    assert!(events
        .iter()
        .any(|e| e.doc_id == "x" && e.kind == EventType::Finish));
    assert!(events
        .iter()
        .all(|e| e.kind != EventType::Fail || e.message.as_deref() == Some("backend unavailable")));
}

#[test]
fn bypass_finishes_without_calling_the_backend() {
    let (batches, events) = run_indexer(10, &["a", "bad"], true);
    assert!(batches.is_empty());
    assert!(events.iter().all(|e| e.kind == EventType::Finish));
    assert_eq!(events.len(), 2);
}

#[test]
fn batch_timeout_flushes_a_partial_batch() {
    let m = Arc::new(LocalMessenger::new(10));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = settings(json!({"batchSize": 100, "batchTimeout": 20}));
    let h = IndexerHandle::start(
        s,
        Box::new(Recorder(seen.clone())),
        m.clone(),
        Arc::from("r"),
        false,
    )
    .unwrap();
    m.send_for_indexing(Document::new("a").unwrap().into())
        .unwrap();
    let got = m.poll_event(Duration::from_secs(5));
    assert_eq!(
        got.map(|e| e.kind),
        Some(EventType::Finish),
        "flushed by timeout, not by size or end"
    );
    h.terminate().unwrap();
}

#[test]
fn op_into_moves_fields_and_matches_op_for() {
    let s = settings(json!({"whitelist": ["title", "n", "id"], "idOverrideField": "cid"}));
    let mut d = doc(json!({"id": "a", "cid": "c-1", "title": "t", "n": 3, "secret": "s"}));
    d.initialize_run_id("r").unwrap();
    d.set_dropped(false);
    let op = s.op_into(d.clone());
    assert_eq!(op, s.op_for(&d));
    let IndexOp::Upsert { id, fields, .. } = op else {
        panic!("an upsert")
    };
    assert_eq!(id, "c-1");
    // Reserved fields (the id among them) never reach the backend, even when whitelisted.
    assert_eq!(fields.keys().collect::<Vec<_>>(), ["title", "n"]);
}

/// An encoder that refuses documents whose title is "poison", and panics on "boom".
struct Picky;

impl Encoder for Picky {
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, EncodeError> {
        match op {
            IndexOp::Upsert { fields, .. } => match fields.get("title").and_then(Value::as_str) {
                Some("poison") => Err("title cannot be encoded".into()),
                Some("boom") => panic!("encoder exploded"),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }
}

#[test]
fn an_encoding_failure_or_panic_fails_that_document_only() {
    let p = Preparer::new(settings(json!({})), Some(Arc::new(Picky)));
    let m = Arc::new(LocalMessenger::new(100));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = IndexerHandle::start(
        settings(json!({"batchSize": 10})),
        Box::new(Recorder(seen.clone())),
        m.clone(),
        Arc::from("r"),
        false,
    )
    .unwrap();
    for (id, title) in [("a", "fine"), ("b", "poison"), ("c", "boom"), ("d", "fine")] {
        let item = ToIndex::Op(p.prepare(doc(json!({"id": id, "title": title}))));
        m.send_for_indexing(item).unwrap();
    }
    h.terminate().unwrap();
    let mut events = Vec::new();
    while let Some(e) = m.try_poll_event() {
        events.push((e.doc_id, e.kind, e.message.unwrap_or_default()));
    }
    events.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(events[0], ("a".into(), EventType::Finish, String::new()));
    assert_eq!(
        events[1],
        (
            "b".into(),
            EventType::Fail,
            "title cannot be encoded".into()
        )
    );
    assert_eq!((events[2].0.as_str(), events[2].1), ("c", EventType::Fail));
    assert!(events[2].2.contains("encoder exploded"), "{:?}", events[2]);
    assert_eq!(events[3], ("d".into(), EventType::Finish, String::new()));
    let sent: Vec<String> = seen
        .lock()
        .iter()
        .flatten()
        .map(|op| match op {
            IndexOp::Upsert { id, .. } => id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(sent, ["a", "d"], "failed documents never reach the backend");
}

/// Attached children reach the op filtered as the document is (the id always kept, run_id and
/// flags left out, idOverrideField not applied), with their own children the same way.
#[test]
fn an_upsert_carries_the_children_filtered() {
    let s = settings(json!({"idOverrideField": "cid", "blacklist": ["secret"]}));
    let d = doc(json!({"id": "p", "cid": "P", "t": "parent", "secret": "s",
    "___children": [
        {"t": "one", "id": "c1", "cid": "C", "secret": "x", "run_id": "r0", "___skipped": true,
         "___children": [{"id": "g1", "secret": "y", "t": "g"}]},
        {"id": "c2"}
    ]}));
    let IndexOp::Upsert {
        id,
        fields,
        children,
        ..
    } = s.op_for(&d)
    else {
        panic!("not an upsert");
    };
    assert_eq!(id, "P");
    assert!(!fields.contains_key("___children"));
    let children: Vec<Value> = children
        .into_vec()
        .into_iter()
        .map(|c| Value::Object(c.into_iter().collect()))
        .collect();
    assert_eq!(
        serde_json::to_string(&children).unwrap(),
        r#"[{"id":"c1","t":"one","cid":"C","___children":[{"id":"g1","t":"g"}]},{"id":"c2"}]"#
    );
    // The whitelist filters children too; their id stays in the op (a backend that stores ids
    // asks keeps_field("id")).
    let w = settings(json!({"whitelist": ["t"]}));
    let IndexOp::Upsert { children, .. } = w.op_for(&d) else {
        panic!("not an upsert");
    };
    assert_eq!(
        Value::Object(children[0].clone().into_iter().collect()),
        json!({"id": "c1", "t": "one", "___children": [{"id": "g1", "t": "g"}]})
    );
    // No children: none in the op, and its hash is what it was before ops carried children.
    let plain = s.op_for(&doc(json!({"id": "q", "t": "x"})));
    assert!(matches!(&plain, IndexOp::Upsert { children, .. } if children.is_empty()));
    assert!(!serde_json::to_string(&plain).unwrap().contains("children"));
}

#[test]
fn the_indexer_says_what_a_backend_drops_of_the_children() {
    let s = settings(json!({"deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true"}));
    let ops = [
        s.op_for(&doc(json!({"id": "a"}))),
        s.op_for(&doc(json!({"id": "b", "___children": [
            {"id": "b1", "___children": [{"id": "b11"}, {"id": "b12"}]}, {"id": "b2"}]}))),
        s.op_for(&doc(json!({"id": "c", "___children": [{"id": "c1"}]}))),
        s.op_for(&doc(json!({"id": "d", "deleted": true}))),
    ];
    let batch = || ["a", "b", "c", "d"].into_iter().zip(&ops);
    assert_eq!(
        dropped_children("csv", &ChildDocuments::Dropped { hint: None }, batch()).as_deref(),
        Some("indexer.type \"csv\" does not index child documents: 2 of the 4 documents in this batch carry 3 children, indexed without them (the first: \"b\")")
    );
    assert_eq!(
        dropped_children(
            "x",
            &ChildDocuments::Dropped {
                hint: Some("set x.k".into())
            },
            batch()
        )
        .as_deref()
        .map(|w| w.ends_with("(the first: \"b\"); set x.k")),
        Some(true)
    );
    assert_eq!(
        dropped_children("solr", &ChildDocuments::OneLevel, batch()).as_deref(),
        Some("indexer.type \"solr\" indexes one level of child documents: 2 children of children of 1 of the 4 documents in this batch are not indexed (the first such document: \"b\")")
    );
    assert_eq!(
        dropped_children("jsonl", &ChildDocuments::All, batch()),
        None
    );
    let none = [s.op_for(&doc(json!({"id": "a"})))];
    assert_eq!(
        dropped_children(
            "csv",
            &ChildDocuments::Dropped { hint: None },
            [("a", &none[0])]
        ),
        None
    );
    // A backend says nothing of children unless it handles them: by default it drops them.
    struct Plain;
    impl Backend for Plain {
        fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
            Ok(vec![None; ops.len()])
        }
    }
    assert_eq!(
        Plain.child_documents(),
        ChildDocuments::Dropped { hint: None }
    );
    assert_eq!(nop::NopBackend.child_documents(), ChildDocuments::All);
}
