//! Solr against a mock that implements the JSON update handler as Solr does: commands
//! (`add`, `delete` by id or query, repeated keys) applied in order, a bad document rejecting
//! the request with HTTP 400 and Solr's error body (documents before it stay added), commits,
//! the ping handler, and 503s while the node is unavailable.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{json, Value};

use super::mock_http::*;
use super::{build_backend, IndexerSettings};
use crate::config::ComponentConfig;

/// A JSON object read with its repeated keys in order (Solr's update command syntax).
struct Commands(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Commands {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Commands;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of update commands")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Commands, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Commands(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Default)]
struct Solr {
    /// (collection, id) -> document.
    docs: BTreeMap<(String, String), Value>,
    commits: Vec<String>,
    unavailable: usize,
    updates: usize,
}

type Shared = Arc<Mutex<Solr>>;

fn header(status: u16) -> Value {
    json!({"responseHeader": {"status": status, "QTime": 2}})
}

fn handle(s: &Shared, req: &Seen) -> (u16, String) {
    let mut s = s.lock();
    if s.unavailable > 0 {
        s.unavailable -= 1;
        return (
            503,
            json!({"responseHeader": {"status": 503, "QTime": 0},
            "error": {"msg": "no servers hosting shard: shard1", "code": 503}})
            .to_string(),
        );
    }
    let parts: Vec<&str> = req.path().trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["solr", _, "admin", "ping"] => {
            let mut v = header(0);
            v["status"] = json!("OK");
            (200, v.to_string())
        }
        ["solr", collection, "update"] => {
            let collection = collection.to_string();
            if req.query().contains("commit=true") {
                s.commits.push(collection.clone());
            }
            if req.body.trim() == "{\"commit\":{}}" {
                return (200, header(0).to_string());
            }
            s.updates += 1;
            let Commands(commands) = serde_json::from_str(&req.body).unwrap();
            for (name, arg) in commands {
                match name.as_str() {
                    "add" => {
                        let doc = arg["doc"].clone();
                        let id = doc["id"].as_str().unwrap().to_string();
                        if let Some(bad) = doc.get("bad") {
                            let mut v = header(400);
                            v["error"] = json!({
                                "metadata": ["error-class", "org.apache.solr.common.SolrException",
                                    "root-error-class", "java.lang.NumberFormatException"],
                                "msg": format!("ERROR: [doc={id}] Error adding field 'bad'='{}' msg=For input string: \"{}\"",
                                    bad.as_str().unwrap_or(""), bad.as_str().unwrap_or("")),
                                "code": 400});
                            return (400, v.to_string());
                        }
                        s.docs.insert((collection.clone(), id), doc);
                    }
                    "delete" => {
                        if let Some(id) = arg.get("id").and_then(Value::as_str) {
                            s.docs.remove(&(collection.clone(), id.to_string()));
                        } else {
                            let q = arg["query"].as_str().unwrap();
                            let rest = q.strip_prefix("{!term f=").unwrap();
                            let (field, value) = rest.split_once('}').unwrap();
                            s.docs.retain(|(c, _), d| {
                                !(c == &collection
                                    && d.get(field).and_then(Value::as_str) == Some(value))
                            });
                        }
                    }
                    other => panic!("unexpected command {other}"),
                }
            }
            (200, header(0).to_string())
        }
        _ => (
            404,
            format!(
                "<html><body><h2>HTTP ERROR 404 Not Found</h2>{}</body></html>",
                req.url
            ),
        ),
    }
}

fn solr() -> (Shared, Mock) {
    let s: Shared = Arc::default();
    let s2 = s.clone();
    let mock = Mock::start(Box::new(move |r| handle(&s2, r)));
    (s, mock)
}

fn indexer(extra: Value) -> Value {
    let mut m = obj(json!({"type": "Solr", "batchSize": 1000, "batchTimeout": 60000}));
    m.extend(obj(extra));
    Value::Object(m)
}

fn doc(s: &Shared, c: &str, id: &str) -> Option<Value> {
    s.lock().docs.get(&(c.to_string(), id.to_string())).cloned()
}

#[test]
fn adds_deletes_overrides_and_commit() {
    let (s, mock) = solr();
    s.lock().docs.insert(
        ("core1".into(), "old".into()),
        json!({"id": "old", "author": "ann"}),
    );
    s.lock()
        .docs
        .insert(("core1".into(), "gone".into()), json!({"id": "gone"}));
    let out = run_docs(
        indexer(
            json!({"idOverrideField": "cid", "indexOverrideField": "idx", "blacklist": ["secret"],
            "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
            "deleteByFieldField": "del_field", "deleteByFieldValue": "del_value"}),
        ),
        json!({"url": [format!("{}/solr", mock.url)], "defaultCollection": "core1", "commitWithin": 5000}),
        vec![
            json!({"id": "a", "title": "A", "secret": "s"}),
            json!({"id": "b", "cid": "B-1"}),
            json!({"id": "c", "idx": "core2", "title": "C"}),
            json!({"id": "gone", "deleted": "true"}),
            json!({"id": "d", "deleted": "true", "del_field": "author", "del_value": "ann"}),
        ],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert_eq!(
        doc(&s, "core1", "a"),
        Some(json!({"id": "a", "title": "A"})),
        "blacklisted field dropped"
    );
    assert_eq!(
        doc(&s, "core1", "B-1"),
        Some(json!({"id": "B-1", "cid": "B-1"}))
    );
    assert_eq!(
        doc(&s, "core2", "c"),
        Some(json!({"id": "c", "idx": "core2", "title": "C"}))
    );
    assert!(doc(&s, "core1", "gone").is_none() && doc(&s, "core1", "old").is_none());
    let mut commits = s.lock().commits.clone();
    commits.sort();
    assert_eq!(
        commits,
        ["core1", "core2"],
        "every written collection is committed at close"
    );
    assert!(mock
        .requests()
        .iter()
        .any(|r| r.query().contains("commitWithin=5000")));
}

#[test]
fn whitelist_keeps_only_listed_fields_and_the_id() {
    let (s, mock) = solr();
    run_docs(
        indexer(json!({"whitelist": ["title"]})),
        json!({"url": format!("{}/solr/core1", mock.url)}),
        vec![json!({"id": "w", "title": "T", "other": 1})],
    );
    // The URL names the core: requests go to /solr/core1/update.
    assert_eq!(
        doc(&s, "core1", "w"),
        Some(json!({"id": "w", "title": "T"}))
    );
}

#[test]
fn a_rejected_batch_is_retried_per_document_so_only_the_bad_one_fails() {
    let (s, mock) = solr();
    let out = run_docs(
        indexer(json!({})),
        json!({"url": format!("{}/solr", mock.url), "defaultCollection": "c"}),
        vec![
            json!({"id": "ok1"}),
            json!({"id": "bad", "bad": "oops"}),
            json!({"id": "ok2"}),
        ],
    );
    assert_eq!(failed(&out), ["bad"]);
    let msg = out["bad"].1.as_deref().unwrap();
    assert!(
        msg.contains("HTTP 400") && msg.contains("[doc=bad] Error adding field 'bad'='oops'"),
        "{msg}"
    );
    assert!(doc(&s, "c", "ok1").is_some() && doc(&s, "c", "ok2").is_some());
    assert_eq!(
        s.lock().updates,
        4,
        "one batch request, then one per document"
    );
}

#[test]
fn upsert_then_delete_of_one_id_in_one_batch_keeps_order() {
    let (s, mock) = solr();
    let out = run_docs(
        indexer(
            json!({"deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true", "idOverrideField": "key"}),
        ),
        json!({"url": format!("{}/solr", mock.url), "defaultCollection": "c"}),
        vec![
            json!({"id": "v1", "key": "x", "t": 1}),
            json!({"id": "v2", "key": "x", "deleted": "true"}),
            json!({"id": "w1", "key": "y", "deleted": "true"}),
            json!({"id": "w2", "key": "y", "t": 2}),
        ],
    );
    assert!(failed(&out).is_empty());
    assert!(doc(&s, "c", "x").is_none());
    assert!(doc(&s, "c", "y").is_some());
    assert_eq!(
        s.lock().updates,
        1,
        "one update request carries the batch in order"
    );
}

#[test]
fn an_unavailable_node_is_retried_then_exhausted_retries_fail_every_document() {
    let (s, mock) = solr();
    let block = json!({"url": format!("{}/solr", mock.url), "defaultCollection": "c"});
    let settings = IndexerSettings::from_config(&ComponentConfig::new(
        obj(indexer(json!({"maxRetries": 5, "retryWaitDurationMs": 1}))),
        "indexer",
    ))
    .unwrap();
    let mut backend = build_backend(
        &settings,
        &ComponentConfig::new(obj(block.clone()), "solr"),
        crate::indexer::Opening::Fresh,
    )
    .unwrap();
    backend.validate_connection().unwrap();
    s.lock().unavailable = 2;
    let out = run_with(settings, backend, vec![json!({"id": "a"})]);
    assert!(failed(&out).is_empty(), "{out:?}");
    assert!(doc(&s, "c", "a").is_some());

    let settings = IndexerSettings::from_config(&ComponentConfig::new(
        obj(indexer(json!({"maxRetries": 2, "retryWaitDurationMs": 1}))),
        "indexer",
    ))
    .unwrap();
    let backend = build_backend(
        &settings,
        &ComponentConfig::new(obj(block), "solr"),
        crate::indexer::Opening::Fresh,
    )
    .unwrap();
    s.lock().unavailable = 3; // the batch's three attempts; the commit at close then succeeds
    let out = run_with(
        settings,
        backend,
        vec![json!({"id": "p"}), json!({"id": "q"})],
    );
    assert_eq!(failed(&out), ["p", "q"]);
    assert!(out["p"]
        .1
        .as_deref()
        .unwrap()
        .contains("failed after 3 attempts"));
    assert!(doc(&s, "c", "p").is_none());

    // A node that is not there yet: refused connections are retried until it listens.
    let port = free_port();
    let settings = IndexerSettings::from_config(&ComponentConfig::new(
        obj(indexer(
            json!({"maxRetries": 50, "retryWaitDurationMs": 20, "retryMaxWaitDurationMs": 40}),
        )),
        "indexer",
    ))
    .unwrap();
    let block = json!({"url": format!("http://127.0.0.1:{port}/solr"), "defaultCollection": "c"});
    let backend = build_backend(
        &settings,
        &ComponentConfig::new(obj(block), "solr"),
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
    assert!(failed(&out).is_empty(), "{out:?}");
    assert!(doc(&late, "c", "late").is_some());
}

#[test]
fn solr_config_errors_are_reported_together() {
    let e = config_errors(
        indexer(json!({"routingField": "r", "versionType": "external", "versionField": "v"})),
        json!({"url": ["http://ok:8983/solr", "nope"], "zkHosts": ["zk:x"], "zkChroot": "solr", "userName": "u", "commitWithin": 0}),
    );
    for part in [
        "solr.url: \"nope\" is not a URL",
        "solr.zkHosts: \"zk:x\" has no valid port",
        "solr.zkChroot: \"solr\" must start with /",
        "solr.commitWithin: must be a positive",
        "indexer.routingField: is not supported by the solr indexer",
        "indexer.versionType: is not supported by the solr indexer",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    // Keys that go together are checked once each key is right.
    assert!(config_errors(
        indexer(json!({})),
        json!({"url": "http://ok:8983/solr", "userName": "u"})
    )
    .contains("solr.userName: userName and password must be set together"));
    assert_eq!(
        config_errors(
            indexer(json!({})),
            json!({"url": "http://h/solr", "username": "u", "password": "p"})
        ),
        ""
    );
    // SolrCloud through ZooKeeper: a collection is needed (or an index override field); url
    // may stay (Lucille then uses zkHosts); without useCloudClient, zkHosts is unused.
    let cloud = json!({"useCloudClient": true, "zkHosts": "zk1:2181,zk2:2181/solr"});
    assert!(config_errors(indexer(json!({})), cloud.clone())
        .contains("solr.defaultCollection: is needed with zkHosts"));
    assert_eq!(
        config_errors(indexer(json!({"indexOverrideField": "idx"})), cloud),
        ""
    );
    assert_eq!(
        config_errors(
            indexer(json!({})),
            json!({"useCloudClient": true, "zkHosts": ["zk1:2181"], "zkChroot": "/solr",
                "defaultCollection": "c", "url": "http://h:8983/solr"})
        ),
        ""
    );
    assert_eq!(
        config_errors(indexer(json!({})), json!({"zkHosts": ["zk1:2181"]})),
        ""
    );
}

#[test]
fn children_are_sent_as_nested_documents_as_lucille_sends_them() {
    warnings();
    let (s, mock) = solr();
    let out = run_docs(
        indexer(json!({"idOverrideField": "cid", "blacklist": ["secret"]})),
        json!({"url": format!("{}/solr", mock.url), "defaultCollection": "core1"}),
        vec![
            json!({"id": "solr-parent", "cid": "P", "title": "parent", "secret": "s",
            "___children": [
                {"id": "c1", "title": "one", "secret": "x", "run_id": "r0",
                 "___children": [{"id": "g1", "title": "grandchild"}]},
                {"id": "c2", "title": "two", "tags": ["a", "b"]}
            ]}),
            json!({"id": "solr-lone", "title": "no children"}),
        ],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    // The exact update request: the children in the parent's `doc` as `_childDocuments_`,
    // each with its own id and filtered fields (no idOverrideField, no run_id, no children of
    // its own); a document without children has no such key.
    let update = mock
        .requests()
        .into_iter()
        .find(|r| r.path() == "/solr/core1/update" && r.body.contains("\"add\""))
        .unwrap();
    let Commands(commands) = serde_json::from_str(&update.body).unwrap();
    assert_eq!(
        commands,
        [
            (
                "add".to_string(),
                json!({"doc": {"id": "P", "cid": "P", "title": "parent",
                    "_childDocuments_": [{"id": "c1", "title": "one"},
                                         {"id": "c2", "title": "two", "tags": ["a", "b"]}]}})
            ),
            (
                "add".to_string(),
                json!({"doc": {"id": "solr-lone", "title": "no children"}})
            )
        ]
    );
    assert_eq!(
        doc(&s, "core1", "P").unwrap()["_childDocuments_"][1]["id"],
        json!("c2")
    );
    let said: Vec<String> = warnings()
        .into_iter()
        .filter(|w| w.contains("\"solr-parent\""))
        .collect();
    assert_eq!(
        said,
        ["indexer.type \"solr\" indexes one level of child documents: 1 children of children of 1 of the 2 documents in this batch are not indexed (the first such document: \"solr-parent\")"]
    );
}

#[test]
fn child_documents_field_is_not_a_solr_key() {
    let e = config_errors(
        indexer(json!({})),
        json!({"url": "http://localhost:8983/solr", "childDocumentsField": "kids"}),
    );
    assert!(e.contains("solr.childDocumentsField: unknown key"), "{e}");
}
