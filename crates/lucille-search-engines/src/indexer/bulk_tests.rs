//! OpenSearch and Elasticsearch against a mock cluster that implements `GET /`, `_bulk` and
//! `_delete_by_query` with the real response shapes: per-item status and error objects,
//! partial failures, 429 item rejections, 503 answers, version conflicts.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::mock_http::*;
use super::{build_backend, IndexerSettings};
use crate::config::ComponentConfig;

#[derive(Debug, Clone, PartialEq)]
struct Stored {
    source: Value,
    routing: Option<String>,
    version: Option<i64>,
}

#[derive(Default)]
struct Cluster {
    docs: BTreeMap<(String, String), Stored>,
    /// Answer this many requests with 503 first.
    unavailable: usize,
    /// Ids whose next bulk item is rejected with 429.
    reject_once: HashSet<String>,
    bulk_calls: usize,
}

type Shared = Arc<Mutex<Cluster>>;

fn item(action: &str, index: &str, id: &str, status: u16, extra: Value) -> Value {
    let mut m = obj(json!({"_index": index, "_id": id, "status": status}));
    m.extend(obj(extra));
    json!({ action: m })
}

fn handle(c: &Shared, req: &Seen) -> (u16, String) {
    let mut c = c.lock();
    if c.unavailable > 0 {
        c.unavailable -= 1;
        return (503, json!({"error": {"root_cause": [], "type": "cluster_block_exception",
            "reason": "blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];"}, "status": 503}).to_string());
    }
    match (req.method.as_str(), req.path()) {
        ("GET", "/") => (
            200,
            json!({"name": "node-1", "cluster_name": "mock",
            "version": {"distribution": "opensearch", "number": "2.11.0"},
            "tagline": "The OpenSearch Project: https://opensearch.org/"})
            .to_string(),
        ),
        ("POST", "/_bulk") => {
            c.bulk_calls += 1;
            let mut lines = req.body.lines();
            let mut items = Vec::new();
            let mut errors = false;
            while let Some(line) = lines.next() {
                let action_line: Value = serde_json::from_str(line).unwrap();
                let (action, meta) = action_line.as_object().unwrap().iter().next().unwrap();
                let index = meta["_index"].as_str().unwrap().to_string();
                let id = meta["_id"].as_str().unwrap().to_string();
                let source: Option<Value> = (action != "delete")
                    .then(|| serde_json::from_str(lines.next().unwrap()).unwrap());
                let key = (index.clone(), id.clone());
                let version = meta.get("version").and_then(Value::as_i64);
                if c.reject_once.remove(&id) {
                    errors = true;
                    items.push(item(action, &index, &id, 429, json!({"error": {"type": "es_rejected_execution_exception",
                        "reason": "rejected execution of coordinating operation [shard_detail=[idx][0][P], coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=1, max_coordinating_and_primary_bytes=1]"}})));
                    continue;
                }
                if let (Some(v), Some(vt)) =
                    (version, meta.get("version_type").and_then(Value::as_str))
                {
                    let current = c.docs.get(&key).and_then(|s| s.version);
                    let conflict = match current {
                        Some(cur) if vt == "external" => v <= cur,
                        Some(cur) => v < cur,
                        None => false,
                    };
                    if conflict {
                        errors = true;
                        items.push(item(action, &index, &id, 409, json!({"error": {"type": "version_conflict_engine_exception",
                            "reason": format!("[{id}]: version conflict, current version [{}] is higher or equal to the one provided [{v}]", current.unwrap_or(0)),
                            "index": index, "shard": "0"}})));
                        continue;
                    }
                }
                match action.as_str() {
                    "index" | "update" => {
                        let src = source.unwrap();
                        let src = if action == "update" {
                            src["doc"].clone()
                        } else {
                            src
                        };
                        if let Some(bad) = src.get("bad") {
                            errors = true;
                            items.push(item(action, &index, &id, 400, json!({"error": {"type": "mapper_parsing_exception",
                                "reason": format!("failed to parse field [bad] of type [long] in document with id '{id}'. Preview of field's value: '{}'", bad.as_str().unwrap_or("")),
                                "caused_by": {"type": "illegal_argument_exception", "reason": format!("For input string: \"{}\"", bad.as_str().unwrap_or(""))}}})));
                            continue;
                        }
                        let created = !c.docs.contains_key(&key);
                        c.docs.insert(
                            key,
                            Stored {
                                source: src,
                                routing: meta
                                    .get("routing")
                                    .and_then(Value::as_str)
                                    .map(String::from),
                                version,
                            },
                        );
                        items.push(item(action, &index, &id, if created { 201 } else { 200 }, json!({"_version": version.unwrap_or(1),
                            "result": if created { "created" } else { "updated" },
                            "_shards": {"total": 2, "successful": 1, "failed": 0}, "_seq_no": 0, "_primary_term": 1})));
                    }
                    "delete" => {
                        let found = c.docs.remove(&key).is_some();
                        items.push(item("delete", &index, &id, if found { 200 } else { 404 }, json!({"_version": 2,
                            "result": if found { "deleted" } else { "not_found" },
                            "_shards": {"total": 2, "successful": 1, "failed": 0}, "_seq_no": 1, "_primary_term": 1})));
                    }
                    other => panic!("unexpected action {other}"),
                }
            }
            (
                200,
                json!({"took": 3, "errors": errors, "items": items}).to_string(),
            )
        }
        ("POST", path) if path.ends_with("/_delete_by_query") => {
            let index = path
                .trim_start_matches('/')
                .trim_end_matches("/_delete_by_query")
                .to_string();
            let q: Value = serde_json::from_str(&req.body).unwrap();
            let (field, value) = q["query"]["term"]
                .as_object()
                .unwrap()
                .iter()
                .next()
                .unwrap();
            let before = c.docs.len();
            c.docs
                .retain(|(i, _), s| !(i == &index && s.source.get(field) == Some(value)));
            let n = before - c.docs.len();
            (
                200,
                json!({"took": 5, "timed_out": false, "total": n, "deleted": n, "batches": 1,
                "version_conflicts": 0, "noops": 0, "retries": {"bulk": 0, "search": 0},
                "throttled_millis": 0, "requests_per_second": -1.0, "throttled_until_millis": 0,
                "failures": []})
                .to_string(),
            )
        }
        _ => (
            404,
            json!({"error": {"type": "no_handler", "reason": req.url}, "status": 404}).to_string(),
        ),
    }
}

fn cluster() -> (Shared, Mock) {
    let c: Shared = Arc::default();
    let c2 = c.clone();
    let mock = Mock::start(Box::new(move |r| handle(&c2, r)));
    (c, mock)
}

const KINDS: [&str; 2] = ["opensearch", "elasticsearch"];

fn indexer(kind: &str, extra: Value) -> Value {
    let mut m = obj(json!({"type": kind, "batchSize": 1000, "batchTimeout": 60000}));
    m.extend(obj(extra));
    Value::Object(m)
}

fn source(c: &Shared, index: &str, id: &str) -> Option<Value> {
    c.lock()
        .docs
        .get(&(index.to_string(), id.to_string()))
        .map(|s| s.source.clone())
}

#[test]
fn upserts_deletes_and_overrides_reach_the_cluster() {
    for kind in KINDS {
        let (c, mock) = cluster();
        c.lock().docs.insert(
            ("books".into(), "old".into()),
            Stored {
                source: json!({"author": "ann"}),
                routing: None,
                version: None,
            },
        );
        c.lock().docs.insert(
            ("books".into(), "gone".into()),
            Stored {
                source: json!({"t": 1}),
                routing: None,
                version: None,
            },
        );
        let out = run_docs(
            indexer(
                kind,
                json!({"idOverrideField": "cid", "indexOverrideField": "idx",
                "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
                "deleteByFieldField": "del_field", "deleteByFieldValue": "del_value"}),
            ),
            json!({"url": mock.url, "index": "books"}),
            vec![
                json!({"id": "a", "title": "A"}),
                json!({"id": "b", "cid": "B-1", "title": "B"}),
                json!({"id": "c", "idx": "other", "title": "C"}),
                json!({"id": "gone", "deleted": "true"}),
                json!({"id": "d", "deleted": "true", "del_field": "author", "del_value": "ann"}),
            ],
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert_eq!(
            source(&c, "books", "a"),
            Some(json!({"id": "a", "title": "A"})),
            "{kind}"
        );
        assert_eq!(
            source(&c, "books", "B-1"),
            Some(json!({"id": "B-1", "cid": "B-1", "title": "B"}))
        );
        assert!(
            source(&c, "books", "b").is_none(),
            "id override replaces the id"
        );
        assert_eq!(
            source(&c, "other", "c"),
            Some(json!({"id": "c", "idx": "other", "title": "C"}))
        );
        assert!(source(&c, "books", "gone").is_none(), "delete by id");
        assert!(source(&c, "books", "old").is_none(), "delete by field");
        let reqs = mock.requests();
        assert_eq!(reqs[0].path(), "/", "connection check first");
        let ndjson = reqs.iter().find(|r| r.path() == "/_bulk").unwrap();
        assert_eq!(ndjson.header("Content-Type"), Some("application/x-ndjson"));
        assert!(ndjson.body.ends_with('\n'));
    }
}

#[test]
fn whitelist_and_blacklist_filter_the_source() {
    for kind in KINDS {
        let (c, mock) = cluster();
        run_docs(
            indexer(kind, json!({"whitelist": ["title"]})),
            json!({"url": mock.url, "index": "i"}),
            vec![json!({"id": "w", "title": "T", "secret": "s"})],
        );
        assert_eq!(
            source(&c, "i", "w"),
            Some(json!({"title": "T"})),
            "{kind}: id not whitelisted"
        );
        run_docs(
            indexer(kind, json!({"blacklist": ["secret"]})),
            json!({"url": mock.url, "index": "i"}),
            vec![json!({"id": "b", "title": "T", "secret": "s"})],
        );
        assert_eq!(source(&c, "i", "b"), Some(json!({"id": "b", "title": "T"})));
    }
}

#[test]
fn one_bad_document_fails_alone_with_the_cluster_reason() {
    for kind in KINDS {
        let (c, mock) = cluster();
        let out = run_docs(
            indexer(kind, json!({})),
            json!({"url": mock.url, "index": "i"}),
            vec![
                json!({"id": "ok1", "n": 1}),
                json!({"id": "bad", "bad": "oops"}),
                json!({"id": "ok2", "n": 2}),
            ],
        );
        assert_eq!(failed(&out), ["bad"], "{kind}");
        let msg = out["bad"].1.clone().unwrap();
        assert!(
            msg.contains("mapper_parsing_exception: failed to parse field [bad]"),
            "{msg}"
        );
        assert!(msg.contains("status 400"), "{msg}");
        assert!(source(&c, "i", "ok1").is_some() && source(&c, "i", "ok2").is_some());
    }
}

#[test]
fn routing_and_external_versions_are_sent_and_conflicts_fail() {
    for kind in KINDS {
        let (c, mock) = cluster();
        c.lock().docs.insert(
            ("i".into(), "stale".into()),
            Stored {
                source: json!({}),
                routing: None,
                version: Some(10),
            },
        );
        let out = run_docs(
            indexer(
                kind,
                json!({"routingField": "tenant", "versionType": "external", "versionField": "ver"}),
            ),
            json!({"url": mock.url, "index": "i"}),
            vec![
                json!({"id": "r", "tenant": "t1", "ver": 5}),
                json!({"id": "stale", "ver": 3}),
                json!({"id": "nan", "ver": "three"}),
            ],
        );
        assert_eq!(failed(&out), ["nan", "stale"], "{kind}: {out:?}");
        assert!(out["stale"]
            .1
            .as_deref()
            .unwrap()
            .contains("version_conflict_engine_exception"));
        assert!(out["nan"]
            .1
            .as_deref()
            .unwrap()
            .contains("not a non-negative integer"));
        let stored = c.lock().docs[&("i".to_string(), "r".to_string())].clone();
        assert_eq!(
            (stored.routing.as_deref(), stored.version),
            (Some("t1"), Some(5))
        );
        let bulk = mock
            .requests()
            .into_iter()
            .find(|r| r.path() == "/_bulk")
            .unwrap();
        assert!(
            bulk.body.contains("\"version_type\":\"external\""),
            "{}",
            bulk.body
        );
    }
}

#[test]
fn upsert_then_delete_of_one_id_in_one_batch_keeps_order() {
    for kind in KINDS {
        let (c, mock) = cluster();
        let ix = indexer(
            kind,
            json!({"deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
            "idOverrideField": "key"}),
        );
        // Different internal ids, one index id: the delete must land after the upsert.
        let out = run_docs(
            ix.clone(),
            json!({"url": mock.url, "index": "i"}),
            vec![
                json!({"id": "v1", "key": "x", "t": 1}),
                json!({"id": "v2", "key": "x", "deleted": "true"}),
                json!({"id": "w1", "key": "y", "deleted": "true"}),
                json!({"id": "w2", "key": "y", "t": 2}),
            ],
        );
        assert!(failed(&out).is_empty(), "{out:?}");
        assert!(
            source(&c, "i", "x").is_none(),
            "{kind}: upsert then delete leaves nothing"
        );
        assert!(
            source(&c, "i", "y").is_some(),
            "{kind}: delete then upsert leaves the document"
        );
        assert_eq!(c.lock().bulk_calls, 1, "one bulk request for the batch");
    }
}

#[test]
fn retryable_item_rejections_are_sent_again_with_later_actions_on_the_id() {
    for kind in KINDS {
        let (c, mock) = cluster();
        c.lock().reject_once.insert("busy".into());
        let out = run_docs(
            indexer(
                kind,
                json!({"maxRetries": 3, "retryWaitDurationMs": 1,
                "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true", "idOverrideField": "key"}),
            ),
            json!({"url": mock.url, "index": "i"}),
            vec![
                json!({"id": "a", "key": "busy", "t": 1}),
                json!({"id": "b", "key": "calm", "t": 2}),
                json!({"id": "c", "key": "busy", "deleted": "true"}),
            ],
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert!(
            source(&c, "i", "busy").is_none(),
            "the delete still comes after the retried upsert"
        );
        assert!(source(&c, "i", "calm").is_some());
        let bulks: Vec<_> = mock
            .requests()
            .into_iter()
            .filter(|r| r.path() == "/_bulk")
            .collect();
        assert_eq!(bulks.len(), 2);
        assert_eq!(
            bulks[1].body.lines().count(),
            3,
            "retry carries the upsert (2 lines) and the delete: {}",
            bulks[1].body
        );
    }
}

#[test]
fn a_cluster_down_for_a_while_is_retried_until_it_answers() {
    for kind in KINDS {
        // 503s first, then the cluster answers.
        let (c, mock) = cluster();
        let settings = IndexerSettings::from_config(&ComponentConfig::new(
            obj(indexer(
                kind,
                json!({"maxRetries": 10, "retryWaitDurationMs": 5, "retryMaxWaitDurationMs": 20}),
            )),
            "indexer",
        ))
        .unwrap();
        let backend = build_backend(
            &settings,
            &ComponentConfig::new(obj(json!({"url": mock.url, "index": "i"})), kind),
            crate::indexer::Opening::Fresh,
        )
        .unwrap();
        c.lock().unavailable = 3;
        let out = run_with(
            settings,
            backend,
            vec![json!({"id": "a"}), json!({"id": "b"})],
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert_eq!(c.lock().docs.len(), 2);

        // Nothing listening at first (connection refused), then a server comes up.
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let settings = IndexerSettings::from_config(&ComponentConfig::new(
            obj(indexer(
                kind,
                json!({"maxRetries": 50, "retryWaitDurationMs": 20, "retryMaxWaitDurationMs": 40}),
            )),
            "indexer",
        ))
        .unwrap();
        let backend = build_backend(
            &settings,
            &ComponentConfig::new(obj(json!({"url": url, "index": "i"})), kind),
            crate::indexer::Opening::Fresh,
        )
        .unwrap();
        let late: Shared = Arc::default();
        let l2 = late.clone();
        let starter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            Mock::start_on(port, Box::new(move |r| handle(&l2, r)))
        });
        let out = run_with(settings, backend, vec![json!({"id": "late"})]);
        let _server = starter.join().unwrap();
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert!(late
            .lock()
            .docs
            .contains_key(&("i".to_string(), "late".to_string())));
    }
}

#[test]
fn retries_exhausted_fail_every_document_of_the_batch() {
    for kind in KINDS {
        let (c, mock) = cluster();
        c.lock().unavailable = 1000;
        let out = run_docs_unchecked(
            kind,
            &mock.url,
            json!({"maxRetries": 2, "retryWaitDurationMs": 1}),
        );
        assert_eq!(failed(&out), ["a", "b", "c"], "{kind}");
        for (_, msg) in out.values() {
            let msg = msg.as_deref().unwrap();
            assert!(
                msg.contains("failed after 3 attempts") && msg.contains("HTTP 503"),
                "{msg}"
            );
        }
        // Without maxRetries there is one attempt, and a refused connection fails too.
        let out = run_docs_unchecked(
            kind,
            &format!("http://127.0.0.1:{}", free_port()),
            json!({}),
        );
        assert_eq!(failed(&out), ["a", "b", "c"]);
        drop(mock);
    }
}

/// Runs three documents without the connection check (the cluster is down).
fn run_docs_unchecked(kind: &str, url: &str, extra: Value) -> Outcomes {
    let settings =
        IndexerSettings::from_config(&ComponentConfig::new(obj(indexer(kind, extra)), "indexer"))
            .unwrap();
    let backend = build_backend(
        &settings,
        &ComponentConfig::new(obj(json!({"url": url, "index": "i"})), kind),
        crate::indexer::Opening::Fresh,
    )
    .unwrap();
    run_with(
        settings,
        backend,
        vec![json!({"id": "a"}), json!({"id": "b"}), json!({"id": "c"})],
    )
}

#[test]
fn credentials_are_sent() {
    let (_c, mock) = cluster();
    run_docs(
        indexer("elasticsearch", json!({})),
        json!({"url": mock.url, "index": "i", "apiKey": "k3y"}),
        vec![json!({"id": "a"})],
    );
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.header("Authorization") == Some("ApiKey k3y")));
    let (_c, mock) = cluster();
    let with_user = mock.url.replace("http://", "http://admin:pw@");
    run_docs(
        indexer("OpenSearch", json!({})),
        json!({"url": with_user, "index": "i"}),
        vec![json!({"id": "a"})],
    );
    // base64("admin:pw")
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.header("Authorization") == Some("Basic YWRtaW46cHc=")));
}

#[test]
fn bad_blocks_are_rejected_up_front_with_every_error() {
    let e = config_errors(
        json!({"type": "Elasticsearch", "versionType": "sometimes", "routingField": "r"}),
        json!({"url": "localhost:9200", "username": "u", "bogus": 1}),
    );
    assert!(
        e.contains("indexer.versionType: must be external or external_gte"),
        "{e}"
    );
    let e = config_errors(
        json!({"type": "opensearch", "versionType": "external", "versionField": "v"}),
        json!({"url": "localhost:9200", "username": "u", "bogus": 1, "update": true}),
    );
    for part in [
        "opensearch.index: missing required key",
        "opensearch.url: \"localhost:9200\" is not a URL",
        "opensearch.bogus: unknown key",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    let e = config_errors(
        json!({"type": "opensearch"}),
        json!({"url": "http://localhost:9200", "index": "i", "apiKey": "k"}),
    );
    assert!(e.contains("opensearch.apiKey: unknown key"), "{e}");
    let e = config_errors(
        json!({"type": "elasticsearch"}),
        json!({"url": "http://localhost:9200", "index": "i", "apiKey": "k", "username": "u",
            "password": "p"}),
    );
    assert!(
        e.contains("elasticsearch.apiKey: give apiKey or username / password, not both"),
        "{e}"
    );
    // Both blocks document the keys they share; only Elasticsearch's has apiKey.
    let os = lucille_core::catalog::describe("OpenSearchIndexer").unwrap();
    let es = lucille_core::catalog::describe("elasticsearch").unwrap();
    for (doc, server) in [(&os, "OpenSearch"), (&es, "Elasticsearch")] {
        assert!(doc.contains(&format!(
            "  Sends documents to {server} with its `_bulk` API"
        )));
        assert!(
            doc.contains("  url (a string), required: The cluster's URL"),
            "{doc}"
        );
        assert!(
            doc.contains("  acceptInvalidCert (a boolean), default false: "),
            "{doc}"
        );
    }
    assert!(es.contains("  apiKey (a string): ") && !os.contains("apiKey"));
    // Keys that go together are checked once each key is right.
    let e = config_errors(
        json!({"type": "opensearch", "versionType": "external", "versionField": "v"}),
        json!({"url": "http://localhost:9200", "index": "i", "username": "u", "update": true}),
    );
    for part in [
        "opensearch.username: username and password must be set together",
        "opensearch.update: partial updates cannot carry an external version",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    let e = config_errors(
        json!({"type": "opensearch", "versionField": "v"}),
        json!({}),
    );
    assert!(e.contains("must be set together"), "{e}");
}

#[test]
fn partial_updates_use_the_update_action() {
    let (c, mock) = cluster();
    run_docs(
        indexer("opensearch", json!({})),
        json!({"url": mock.url, "index": "i", "update": true}),
        vec![json!({"id": "u", "t": 1})],
    );
    let bulk = mock
        .requests()
        .into_iter()
        .find(|r| r.path() == "/_bulk")
        .unwrap();
    assert!(
        bulk.body
            .starts_with("{\"update\":{\"_index\":\"i\",\"_id\":\"u\"}}\n{\"doc\":{"),
        "{}",
        bulk.body
    );
    assert_eq!(source(&c, "i", "u"), Some(json!({"id": "u", "t": 1})));
}

#[test]
fn generic_indexer_keys_are_read_into_the_settings() {
    let s = IndexerSettings::from_config(&ComponentConfig::new(
        obj(
            json!({"routingField": "r", "versionType": "ExternalGte", "versionField": "v",
            "indexerConnectionTimeout": 2500, "maxRetries": 4, "retryableStatusCodes": [429, -1]}),
        ),
        "indexer",
    ))
    .unwrap();
    assert_eq!(s.routing_field.as_deref(), Some("r"));
    assert_eq!(
        s.version_type,
        Some(super::version_type::VersionType::ExternalGte)
    );
    assert_eq!(
        s.connection_timeout,
        Some(std::time::Duration::from_millis(2500))
    );
    assert_eq!(
        (s.retry.max_retries, s.retry.retryable.clone()),
        (4, vec![429, -1])
    );
    let d = crate::document::Document::from_value(json!({"id": "a", "r": "t9", "v": 7})).unwrap();
    match s.op_for(&d) {
        super::IndexOp::Upsert {
            routing, version, ..
        } => {
            assert_eq!(
                (routing.as_deref(), version.as_deref()),
                (Some("t9"), Some("7"))
            )
        }
        other => panic!("{other:?}"),
    }
    let e = config_errors(
        json!({"indexerConnectionTimeout": 0, "maxRetries": -1}),
        json!({}),
    );
    assert!(
        e.contains("indexerConnectionTimeout: must be a positive")
            && e.contains("maxRetries: must be a positive"),
        "{e}"
    );
}

/// Every backend linked here (this crate's and the core's) reads its block through its options.
#[test]
fn every_backend_checks_its_keys() {
    super::test_backends::assert_every_backend_checks_its_keys();
}

/// A parent with two children, the first with a child of its own (Lucille's `___children`).
fn parent_with_children(id: &str) -> Value {
    json!({"id": id, "cid": format!("{id}-override"), "title": "parent", "secret": "s",
    "___children": [
        {"id": format!("{id}-1"), "title": "one", "secret": "x", "run_id": "r0",
         "___children": [{"id": format!("{id}-1-1"), "title": "grandchild"}]},
        {"id": format!("{id}-2"), "title": "two"}
    ]})
}

/// The `_bulk` request bodies the mock received, each line parsed.
fn bulk_lines(mock: &Mock) -> Vec<Value> {
    mock.requests()
        .iter()
        .filter(|r| r.path() == "/_bulk")
        .flat_map(|r| {
            r.body
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect()
}

#[test]
fn child_documents_field_nests_the_children_as_lucille_does() {
    warnings();
    for kind in KINDS {
        let (c, mock) = cluster();
        let parent = format!("nest-{kind}");
        let out = run_docs(
            indexer(
                kind,
                json!({"idOverrideField": "cid", "blacklist": ["secret"]}),
            ),
            json!({"url": mock.url, "index": "i", "childDocumentsField": "kids"}),
            vec![
                parent_with_children(&parent),
                json!({"id": format!("lone-{kind}"), "title": "no children"}),
            ],
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        // The exact body: the parent's filtered fields, then its children, each filtered the
        // same way (id kept, blacklisted field and run_id dropped, no idOverrideField), without
        // their own children; a document without children gets no such field.
        assert_eq!(
            bulk_lines(&mock),
            [
                json!({"index": {"_index": "i", "_id": format!("{parent}-override")}}),
                json!({"id": format!("{parent}-override"), "cid": format!("{parent}-override"),
                    "title": "parent",
                    "kids": [{"id": format!("{parent}-1"), "title": "one"},
                             {"id": format!("{parent}-2"), "title": "two"}]}),
                json!({"index": {"_index": "i", "_id": format!("lone-{kind}")}}),
                json!({"id": format!("lone-{kind}"), "title": "no children"}),
            ],
            "{kind}"
        );
        assert!(source(&c, "i", &format!("{parent}-override")).unwrap()["kids"].is_array());
        // The grandchild is not indexed, and the indexer says so.
        let said: Vec<String> = warnings()
            .into_iter()
            .filter(|w| w.contains(&format!("{parent:?}")))
            .collect();
        assert_eq!(said.len(), 1, "{kind}: {said:?}");
        assert!(
            said[0].contains(&format!("indexer.type \"{kind}\" indexes one level of child documents: 1 children of children of 1 of the 2 documents in this batch are not indexed")),
            "{}",
            said[0]
        );
    }
}

#[test]
fn children_go_in_partial_updates_too_and_the_id_filter_applies_to_them() {
    for kind in KINDS {
        let (_c, mock) = cluster();
        let parent = format!("upd-{kind}");
        let out = run_docs(
            indexer(kind, json!({"blacklist": ["id", "secret"]})),
            json!({"url": mock.url, "index": "i", "update": true, "childDocumentsField": "kids"}),
            vec![parent_with_children(&parent)],
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert_eq!(
            bulk_lines(&mock),
            [
                json!({"update": {"_index": "i", "_id": parent}}),
                json!({"doc": {"cid": format!("{parent}-override"), "title": "parent",
                    "kids": [{"title": "one"}, {"title": "two"}]}}),
            ],
            "{kind}: id blacklisted for the document and its children alike"
        );
    }
}

#[test]
fn without_child_documents_field_children_are_left_out_with_a_warning() {
    warnings();
    for kind in KINDS {
        let (c, mock) = cluster();
        let parent = format!("unset-{kind}");
        let out = run_docs(
            indexer(kind, json!({})),
            json!({"url": mock.url, "index": "i"}),
            vec![
                json!({"id": format!("plain-{kind}"), "title": "p"}),
                parent_with_children(&parent),
            ],
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert_eq!(
            bulk_lines(&mock)[3],
            json!({"id": parent, "cid": format!("{parent}-override"), "title": "parent", "secret": "s"}),
            "{kind}: the parent is indexed without its children"
        );
        assert_eq!(c.lock().docs.len(), 2, "{kind}: no child became a document");
        let said: Vec<String> = warnings()
            .into_iter()
            .filter(|w| w.contains(&format!("{parent:?}")))
            .collect();
        assert_eq!(
            said,
            [format!("indexer.type \"{kind}\" does not index child documents: 1 of the 2 documents in this batch carry 2 children, indexed without them (the first: {parent:?}); set {kind}.childDocumentsField to nest them under that field")],
            "{kind}"
        );
    }
}

#[test]
fn child_documents_field_must_name_a_document_field() {
    for kind in KINDS {
        for bad in ["", "id", "___children"] {
            let e = config_errors(
                indexer(kind, json!({})),
                json!({"url": "http://localhost:9200", "index": "i", "childDocumentsField": bad}),
            );
            assert!(
                e.contains("childDocumentsField") && e.contains("cannot hold child documents"),
                "{kind} {bad:?}: {e}"
            );
        }
        let ok = config_errors(
            indexer(kind, json!({})),
            json!({"url": "http://localhost:9200", "index": "i", "childDocumentsField": "kids"}),
        );
        assert_eq!(ok, "", "{kind}");
    }
}
