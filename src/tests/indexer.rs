//! The indexer loop and the workers' prepared ops, through the JSONL backend.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::accounting::EventType;
use crate::config::ComponentConfig;
use crate::document::Document;
use crate::indexer::*;
use crate::messaging::{LocalMessenger, PublisherSide, WorkerSide};

fn settings(v: Value) -> IndexerSettings {
    match v {
        Value::Object(m) => {
            IndexerSettings::from_config(&ComponentConfig::new(m, "indexer")).unwrap()
        }
        _ => panic!(),
    }
}

fn doc(v: Value) -> Document {
    Document::from_value(v).unwrap()
}

#[test]
fn jsonl_writes_upserts_and_delete_intents_in_order() {
    let dir = std::env::temp_dir().join(format!("lucille-jsonl-{}", std::process::id()));
    let path = dir.join("out.jsonl");
    let mut b = jsonl::JsonlBackend::open(path.clone(), false).unwrap();
    let ops = vec![
        IndexOp::Upsert {
            id: "a".into(),
            index: None,
            fields: match json!({"t": 1}) {
                Value::Object(m) => m.into_iter().collect(),
                _ => unreachable!(),
            },
            children: Default::default(),
            routing: None,
            version: None,
        },
        IndexOp::DeleteById {
            id: "a".into(),
            index: None,
            routing: None,
            version: None,
        },
        IndexOp::DeleteByField {
            field: "f".into(),
            value: "v".into(),
            index: Some("i".into()),
        },
    ];
    assert_eq!(b.send(&ops).unwrap(), vec![None, None, None]);
    b.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "{\"id\":\"a\",\"t\":1}\n{\"id\":\"a\",\"_delete\":true}\n{\"_delete_by\":{\"field\":\"f\",\"value\":\"v\"},\"_index\":\"i\"}\n"
    );
    let mut again = jsonl::JsonlBackend::open(path.clone(), true).unwrap();
    again.send(&ops[..1]).unwrap();
    again.close().unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().lines().count(),
        4,
        "append keeps earlier lines"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Writes `docs` through a JSONL backend twice: as documents the indexer turns into ops, and
/// as ops prepared (and encoded) the way workers prepare them. Returns both files' text.
fn jsonl_both_ways(s: &IndexerSettings, docs: &[Value]) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("lucille-prep-{}", std::process::id()));
    let mut out = Vec::new();
    for prepared in [false, true] {
        let path = dir.join(format!("out-{prepared}.jsonl"));
        let backend = jsonl::JsonlBackend::open(path.clone(), false).unwrap();
        let preparer = Preparer::new(s.clone(), backend.encoder());
        let m = Arc::new(LocalMessenger::new(100));
        let h = IndexerHandle::start(
            s.clone(),
            Box::new(backend),
            m.clone(),
            Arc::from("r"),
            false,
        )
        .unwrap();
        for d in docs {
            let d = doc(d.clone());
            let item = if prepared {
                ToIndex::Op(preparer.prepare(d))
            } else {
                ToIndex::Doc(d)
            };
            m.send_for_indexing(item).unwrap();
        }
        h.terminate().unwrap();
        let mut finished = 0;
        while let Some(e) = m.try_poll_event() {
            assert_eq!(e.kind, EventType::Finish, "{e:?}");
            finished += 1;
        }
        assert_eq!(finished, docs.len());
        out.push(std::fs::read_to_string(&path).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
    (out.remove(0), out.remove(0))
}

#[test]
fn worker_prepared_jsonl_lines_equal_the_indexers_own() {
    let s = settings(json!({
        "blacklist": ["secret"], "indexOverrideField": "idx",
        "deletionMarkerField": "gone", "deletionMarkerFieldValue": "yes"
    }));
    let docs = [
        json!({"id": "a", "title": "t \"q\" \u{e9}", "tags": ["x", "y"], "nested": {"k": [1, 2.5]}, "secret": "s"}),
        json!({"id": "b", "idx": "other", "n": null}),
        json!({"id": "c", "gone": "yes"}),
    ];
    let (indexer_made, worker_made) = jsonl_both_ways(&s, &docs);
    assert_eq!(worker_made, indexer_made);
    let lines: Vec<Value> = worker_made
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"id": "a", "title": "t \"q\" \u{e9}", "tags": ["x", "y"], "nested": {"k": [1, 2.5]}}),
            json!({"id": "b", "_index": "other", "idx": "other", "n": null}),
            json!({"id": "c", "_delete": true}),
        ]
    );
    // Field order is the document's, id first.
    assert!(
        worker_made.starts_with(r#"{"id":"a","title":"#),
        "{worker_made}"
    );
}
