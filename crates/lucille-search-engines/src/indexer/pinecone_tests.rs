//! The Pinecone indexer against a local server speaking Pinecone's REST shapes (no Pinecone
//! installs here): the data plane (`/describe_index_stats`, `/vectors/upsert`, `/vectors/update`,
//! `/vectors/delete`) and the control plane's `GET /indexes/{name}`.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::mock_http::*;

/// (namespace, id) -> the stored record.
type Store = Arc<Mutex<BTreeMap<(String, String), Value>>>;

struct Behaviour {
    dimension: Option<u64>,
    /// Answers to give before behaving: (path, status, body), first match used and removed.
    scripted: Vec<(&'static str, u16, Value)>,
    /// Claim fewer vectors upserted than sent.
    short_count: bool,
}

fn pinecone(b: Behaviour) -> (Mock, Store) {
    let store: Store = Arc::new(Mutex::new(BTreeMap::new()));
    let s2 = store.clone();
    let mut b = b;
    let mock = Mock::start(Box::new(move |req: &Seen| {
        if req.header("Api-Key") != Some("pk-secret") {
            return (
                401,
                json!({"code": 16, "message": "Invalid API Key", "details": []}).to_string(),
            );
        }
        if let Some(k) = b.scripted.iter().position(|(p, _, _)| *p == req.path()) {
            let (_, status, body) = b.scripted.remove(k);
            return (status, body.to_string());
        }
        let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
        match (req.method.as_str(), req.path()) {
            ("POST", "/describe_index_stats") => {
                let mut v = json!({"namespaces": {}, "indexFullness": 0.0, "totalVectorCount": 0});
                if let Some(d) = b.dimension {
                    v["dimension"] = json!(d);
                }
                (200, v.to_string())
            }
            ("POST", "/vectors/upsert") => {
                let ns = body["namespace"].as_str().unwrap_or("").to_string();
                let vectors = body["vectors"].as_array().cloned().unwrap_or_default();
                for v in &vectors {
                    let meta_len = v.get("metadata").map_or(0, |m| m.to_string().len());
                    if meta_len > 200 {
                        return (400, json!({"code": 3, "message": format!("Metadata size is {meta_len} bytes, which exceeds the limit of 200 bytes per vector"), "details": []}).to_string());
                    }
                }
                let mut st = s2.lock();
                for v in &vectors {
                    st.insert(
                        (ns.clone(), v["id"].as_str().unwrap_or("").to_string()),
                        v.clone(),
                    );
                }
                let n = vectors.len() - usize::from(b.short_count);
                (200, json!({ "upsertedCount": n }).to_string())
            }
            ("POST", "/vectors/update") => {
                let ns = body["namespace"].as_str().unwrap_or("").to_string();
                let id = body["id"].as_str().unwrap_or("").to_string();
                let mut st = s2.lock();
                if let Some(rec) = st.get_mut(&(ns, id)) {
                    rec["values"] = body["values"].clone();
                }
                (200, "{}".into())
            }
            ("POST", "/vectors/delete") => {
                let ns = body["namespace"].as_str().unwrap_or("").to_string();
                let mut st = s2.lock();
                for id in body["ids"].as_array().cloned().unwrap_or_default() {
                    st.remove(&(ns.clone(), id.as_str().unwrap_or("").to_string()));
                }
                (200, "{}".into())
            }
            _ => (404, json!({"message": "Not Found"}).to_string()),
        }
    }));
    (mock, store)
}

fn plain() -> Behaviour {
    Behaviour {
        dimension: Some(3),
        scripted: Vec::new(),
        short_count: false,
    }
}

fn indexer(extra: Value) -> Value {
    let mut m = obj(json!({
        "class": "com.kmwllc.lucille.pinecone.indexer.PineconeIndexer",
        "batchSize": 1000, "batchTimeout": 60000
    }));
    m.extend(obj(extra));
    Value::Object(m)
}

fn block(mock: &Mock, extra: Value) -> Value {
    let mut m = obj(json!({"index": "idx", "apiKey": "pk-secret", "host": mock.url}));
    m.extend(obj(extra));
    Value::Object(m)
}

fn bodies(mock: &Mock, path: &str) -> Vec<Value> {
    mock.requests()
        .iter()
        .filter(|r| r.path() == path)
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

#[test]
fn upserts_vectors_with_metadata_to_the_default_namespace() {
    let (mock, store) = pinecone(plain());
    let out = run_docs(
        indexer(json!({})),
        block(
            &mock,
            json!({"defaultEmbeddingField": "emb", "metadataFields": ["title", "n", "tags", "absent"]}),
        ),
        vec![
            json!({"id": "a", "emb": [0.5, 0.25, 1], "title": "A", "n": 3, "tags": ["x", 1], "other": "not sent"}),
            json!({"id": "b", "emb": [1, 2, 3]}),
            json!({"id": "no-vector", "title": "C"}),
            json!({"id": "not-a-vector", "emb": "x"}),
            json!({"id": "short", "emb": [1, 2]}),
        ],
    );
    assert_eq!(
        failed(&out),
        ["no-vector", "not-a-vector", "short"],
        "{out:?}"
    );
    let reason = |id: &str| out[id].1.clone().unwrap_or_default();
    assert!(
        reason("no-vector").contains("has no field \"emb\""),
        "{out:?}"
    );
    assert!(
        reason("not-a-vector").contains("is not a vector"),
        "{out:?}"
    );
    assert!(
        reason("short").contains("2 dimensions; the Pinecone index has 3"),
        "{out:?}"
    );
    // The connection check asked for the index's stats; one upsert carried the two good vectors.
    assert_eq!(bodies(&mock, "/describe_index_stats"), [json!({})]);
    assert_eq!(
        bodies(&mock, "/vectors/upsert"),
        [json!({"namespace": "default", "vectors": [
            {"id": "a", "values": [0.5, 0.25, 1], "metadata": {"title": "A", "n": "3", "tags": ["x", "1"]}},
            {"id": "b", "values": [1, 2, 3]}
        ]})]
    );
    assert_eq!(store.lock().len(), 2);
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.header("Api-Key") == Some("pk-secret")));
}

#[test]
fn namespaces_get_their_own_vectors_and_deletes_go_to_every_namespace() {
    let (mock, store) = pinecone(plain());
    store.lock().insert(("n1".into(), "b".into()), json!({}));
    store.lock().insert(("n2".into(), "b".into()), json!({}));
    let out = run_docs(
        indexer(
            json!({"deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
            "idOverrideField": "pid"}),
        ),
        block(&mock, json!({"namespaces": {"n1": "v1", "n2": "v2"}})),
        vec![
            json!({"id": "a", "v1": [1, 0, 0], "v2": [0, 1, 0]}),
            json!({"id": "b", "deleted": "true"}),
            // c1 and c2 are the same Pinecone id: the later delete wins, and both FINISH.
            json!({"id": "c1", "pid": "c", "v1": [1, 1, 1], "v2": [2, 2, 2]}),
            json!({"id": "c2", "pid": "c", "deleted": "true"}),
            json!({"id": "half", "v1": [1, 1, 1]}),
        ],
    );
    assert_eq!(failed(&out), ["half"], "{out:?}");
    assert!(out["half"].1.as_deref().unwrap_or("").contains("\"v2\""));
    assert_eq!(
        bodies(&mock, "/vectors/delete"),
        [
            json!({"ids": ["b", "c"], "namespace": "n1"}),
            json!({"ids": ["b", "c"], "namespace": "n2"})
        ]
    );
    assert_eq!(
        bodies(&mock, "/vectors/upsert"),
        [
            json!({"namespace": "n1", "vectors": [{"id": "a", "values": [1, 0, 0]}]}),
            json!({"namespace": "n2", "vectors": [{"id": "a", "values": [0, 1, 0]}]})
        ]
    );
    let keys: Vec<(String, String)> = store.lock().keys().cloned().collect();
    assert_eq!(keys, [("n1".into(), "a".into()), ("n2".into(), "a".into())]);
}

#[test]
fn a_refused_batch_is_retried_one_vector_at_a_time_so_only_the_bad_one_fails() {
    let (mock, store) = pinecone(plain());
    let big = "x".repeat(300);
    let out = run_docs(
        indexer(json!({})),
        block(
            &mock,
            json!({"defaultEmbeddingField": "e", "metadataFields": ["body"]}),
        ),
        vec![
            json!({"id": "a", "e": [1, 2, 3], "body": "ok"}),
            json!({"id": "big", "e": [1, 2, 3], "body": big}),
            json!({"id": "c", "e": [1, 2, 3]}),
        ],
    );
    assert_eq!(failed(&out), ["big"], "{out:?}");
    let msg = out["big"].1.as_deref().unwrap_or("");
    assert!(
        msg.contains("HTTP 400") && msg.contains("exceeds the limit"),
        "{msg}"
    );
    // The batch, then a, big, c alone.
    assert_eq!(bodies(&mock, "/vectors/upsert").len(), 4);
    assert_eq!(store.lock().len(), 2);
}

#[test]
fn a_429_is_retried_and_a_server_that_stays_down_fails_the_batch() {
    let (mock, _store) = pinecone(Behaviour {
        scripted: vec![(
            "/vectors/upsert",
            429,
            json!({"code": 8, "message": "Too many requests"}),
        )],
        ..plain()
    });
    let retry = json!({"maxRetries": 2, "retryWaitDurationMs": 1, "retryMaxWaitDurationMs": 2});
    let out = run_docs(
        indexer(retry.clone()),
        block(&mock, json!({"defaultEmbeddingField": "e"})),
        vec![json!({"id": "a", "e": [1, 2, 3]})],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert_eq!(bodies(&mock, "/vectors/upsert").len(), 2);

    let down = Behaviour {
        scripted: (0..3)
            .map(|_| ("/vectors/upsert", 503, json!({"message": "unavailable"})))
            .collect(),
        ..plain()
    };
    let (mock, _store) = pinecone(down);
    let out = run_docs(
        indexer(retry),
        block(&mock, json!({"defaultEmbeddingField": "e"})),
        vec![
            json!({"id": "a", "e": [1, 2, 3]}),
            json!({"id": "b", "e": [1, 2, 3]}),
        ],
    );
    assert_eq!(failed(&out), ["a", "b"]);
    assert!(
        out["a"]
            .1
            .as_deref()
            .unwrap_or("")
            .contains("after 3 attempts"),
        "{out:?}"
    );
}

#[test]
fn a_short_upserted_count_fails_the_request() {
    let (mock, _store) = pinecone(Behaviour {
        short_count: true,
        ..plain()
    });
    let out = run_docs(
        indexer(json!({})),
        block(&mock, json!({"defaultEmbeddingField": "e"})),
        vec![
            json!({"id": "a", "e": [1, 2, 3]}),
            json!({"id": "b", "e": [1, 2, 3]}),
        ],
    );
    assert_eq!(failed(&out), ["a", "b"]);
    assert!(out["a"]
        .1
        .as_deref()
        .unwrap_or("")
        .contains("upserted 1 of 2"));
}

#[test]
fn update_mode_updates_each_vector_and_its_metadata() {
    let (mock, _store) = pinecone(plain());
    let out = run_docs(
        indexer(json!({})),
        block(
            &mock,
            json!({"defaultEmbeddingField": "e", "mode": "UPDATE", "metadataFields": ["t"]}),
        ),
        vec![
            json!({"id": "a", "e": [1, 2, 3], "t": "x"}),
            json!({"id": "b", "e": [3, 2, 1]}),
        ],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert!(bodies(&mock, "/vectors/upsert").is_empty());
    assert_eq!(
        bodies(&mock, "/vectors/update"),
        [
            json!({"id": "a", "values": [1, 2, 3], "setMetadata": {"t": "x"}, "namespace": "default"}),
            json!({"id": "b", "values": [3, 2, 1], "namespace": "default"})
        ]
    );
}

#[test]
fn without_a_host_the_control_plane_names_it() {
    let (data, _store) = pinecone(plain());
    let host = data.url.clone();
    let control = Mock::start(Box::new(move |req: &Seen| {
        assert_eq!(req.header("Api-Key"), Some("pk-secret"));
        match req.path() {
            "/indexes/idx" => (
                200,
                json!({"name": "idx", "dimension": 3, "metric": "cosine", "host": host,
                    "status": {"ready": true, "state": "Ready"}})
                .to_string(),
            ),
            "/indexes/starting" => (
                200,
                json!({"name": "starting", "dimension": 3, "host": "x.svc.pinecone.io",
                    "status": {"ready": false, "state": "Initializing"}})
                .to_string(),
            ),
            _ => (404, json!({"error": {"code": "NOT_FOUND", "message": "Resource idx2 not found"}, "status": 404}).to_string()),
        }
    }));
    let out = run_docs(
        indexer(json!({})),
        json!({"index": "idx", "apiKey": "pk-secret", "controlPlaneUrl": control.url,
            "defaultEmbeddingField": "e"}),
        vec![
            json!({"id": "a", "e": [1, 2, 3]}),
            json!({"id": "b", "e": [1, 2]}),
        ],
    );
    assert_eq!(failed(&out), ["b"], "{out:?}");
    assert_eq!(bodies(&data, "/vectors/upsert").len(), 1);
    assert!(bodies(&data, "/describe_index_stats").is_empty());

    for (index, expected) in [
        ("starting", "state is Initializing"),
        ("idx2", "Resource idx2 not found"),
    ] {
        let settings = super::IndexerSettings::from_config(&crate::config::ComponentConfig::new(
            obj(indexer(json!({}))),
            "indexer",
        ))
        .unwrap();
        let config = crate::config::ComponentConfig::new(
            obj(
                json!({"index": index, "apiKey": "pk-secret", "controlPlaneUrl": control.url,
                "defaultEmbeddingField": "e"}),
            ),
            "pinecone",
        );
        let mut backend =
            super::build_backend(&settings, &config, crate::indexer::Opening::Fresh).unwrap();
        let e = backend.validate_connection().unwrap_err();
        assert!(e.message.contains(expected), "{e}");
    }
}

#[test]
fn a_wrong_api_key_fails_the_connection_check() {
    let (mock, _store) = pinecone(plain());
    let settings = super::IndexerSettings::from_config(&crate::config::ComponentConfig::new(
        obj(indexer(json!({}))),
        "indexer",
    ))
    .unwrap();
    let config = crate::config::ComponentConfig::new(
        obj(
            json!({"index": "idx", "apiKey": "wrong", "host": mock.url, "defaultEmbeddingField": "e"}),
        ),
        "pinecone",
    );
    let mut backend =
        super::build_backend(&settings, &config, crate::indexer::Opening::Fresh).unwrap();
    let e = backend.validate_connection().unwrap_err();
    assert!(
        e.message.contains("HTTP 401") && e.message.contains("Invalid API Key"),
        "{e}"
    );
    assert!(!e.message.contains("wrong"), "the key is not echoed: {e}");
}

#[test]
fn bad_configs_are_config_errors() {
    let class = json!({"class": "PineconeIndexer"});
    let e = config_errors(class.clone(), json!({"defaultEmbeddingField": "e"}));
    assert!(
        e.contains("pinecone.index") && e.contains("pinecone.apiKey"),
        "{e}"
    );
    let e = config_errors(class.clone(), json!({"index": "i", "apiKey": "k"}));
    assert!(e.contains("pinecone.defaultEmbeddingField"), "{e}");
    let e = config_errors(
        class.clone(),
        json!({"index": "i", "apiKey": "k", "namespaces": {}}),
    );
    assert!(
        e.contains("pinecone.namespaces: must map at least one"),
        "{e}"
    );
    let e = config_errors(
        class.clone(),
        json!({"index": "i", "apiKey": "k", "defaultEmbeddingField": "e", "mode": "insert",
            "namespace": "x", "requestTimeout": 0, "host": "ftp://h"}),
    );
    for part in [
        "pinecone.mode",
        "pinecone.namespace",
        "pinecone.requestTimeout",
        "pinecone.host",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    let e = config_errors(
        json!({"type": "Pinecone", "batchSize": 1001, "deletionMarkerField": "d",
            "deletionMarkerFieldValue": "t", "deleteByFieldField": "f", "deleteByFieldValue": "v"}),
        json!({"index": "i", "apiKey": "k", "defaultEmbeddingField": "e"}),
    );
    assert!(
        e.contains("indexer.batchSize") && e.contains("at most 1000"),
        "{e}"
    );
    assert!(e.contains("indexer.deleteByFieldField"), "{e}");
    // Deletes alone need no vector field.
    let ok = config_errors(
        json!({"type": "pinecone", "deletionMarkerField": "d", "deletionMarkerFieldValue": "t"}),
        json!({"index": "i", "apiKey": "k"}),
    );
    assert_eq!(ok, "");
}

#[test]
fn lucille_class_names_resolve() {
    for class in [
        "com.kmwllc.lucille.pinecone.indexer.PineconeIndexer",
        "PineconeIndexer",
    ] {
        assert_eq!(super::lucille_indexer_type(class), Some("pinecone"));
    }
    assert_eq!(
        super::lucille_indexer_type("com.kmwllc.lucille.weaviate.indexer.WeaviateIndexer"),
        Some("weaviate")
    );
    assert_eq!(
        super::lucille_indexer_type("com.kmwllc.lucille.indexer.PineconeIndexer"),
        None
    );
}

#[test]
fn the_vector_backends_retry_429_and_5xx_three_times_by_default() {
    let settings = |v: Value| {
        super::IndexerSettings::from_config(&crate::config::ComponentConfig::new(obj(v), "indexer"))
            .unwrap()
    };
    let p = super::pinecone::retry_policy(&settings(json!({"type": "pinecone"})));
    assert_eq!(p.max_retries, 3);
    assert!(p.retries(Some(429)) && p.retries(Some(500)) && p.retries(None));
    assert!(!p.retries(Some(400)) && !p.retries(Some(401)));
    let p = super::pinecone::retry_policy(&settings(
        json!({"type": "pinecone", "maxRetries": 1, "retryableStatusCodes": [503]}),
    ));
    assert_eq!(p.max_retries, 1);
    assert!(!p.retries(Some(429)));
}
