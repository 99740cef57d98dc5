//! The Weaviate indexer against a local server speaking Weaviate's REST shapes (no Weaviate
//! installs here): `GET /v1/meta`, `POST /v1/batch/objects` with per-object errors,
//! `DELETE /v1/objects/{class}/{uuid}` and `DELETE /v1/batch/objects`.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::mock_http::*;
use super::weaviate::document_uuid;

/// (class, uuid) -> the stored object.
type Store = Arc<Mutex<BTreeMap<(String, String), Value>>>;

/// A Weaviate that refuses objects with a property `bad` (as it refuses a value of the wrong
/// type), answers 429 `throttle` times to the first batches, and needs `Bearer wk`.
fn weaviate(throttle: usize, status_when_throttled: u16) -> (Mock, Store) {
    let store: Store = Arc::new(Mutex::new(BTreeMap::new()));
    let s2 = store.clone();
    let mut throttle = throttle;
    let mock = Mock::start(Box::new(move |req: &Seen| {
        if req.header("Authorization") != Some("Bearer wk") {
            return (
                401,
                json!({"code": 401, "message": "anonymous access not enabled"}).to_string(),
            );
        }
        let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
        let mut st = s2.lock();
        match (req.method.as_str(), req.path()) {
            ("GET", "/v1/meta") => (
                200,
                json!({"hostname": "http://[::]:8080", "version": "1.25.0", "modules": {}})
                    .to_string(),
            ),
            ("POST", "/v1/batch/objects") => {
                if throttle > 0 {
                    throttle -= 1;
                    return (
                        status_when_throttled,
                        json!({"error": [{"message": "rate limited"}]}).to_string(),
                    );
                }
                let Some(objects) = body["objects"].as_array() else {
                    return (
                        422,
                        json!({"error": [{"message": "objects: required"}]}).to_string(),
                    );
                };
                if objects.iter().any(|o| o["class"] == "Missing") {
                    return (
                        422,
                        json!({"error": [{"message": "class \"Missing\" not found in schema"}]})
                            .to_string(),
                    );
                }
                let answer: Vec<Value> = objects
                    .iter()
                    .map(|o| {
                        let mut a = o.clone();
                        if o["properties"].get("bad").is_some() {
                            a["result"] = json!({"errors": {"error": [{"message": "invalid text property 'bad' on class 'Article': not a string, but json.Number"}]}});
                        } else {
                            st.insert((o["class"].as_str().unwrap_or("").into(), o["id"].as_str().unwrap_or("").into()), o.clone());
                            a["result"] = json!({});
                        }
                        a["creationTimeUnix"] = json!(1700000000000u64);
                        a
                    })
                    .collect();
                (200, Value::Array(answer).to_string())
            }
            ("DELETE", "/v1/batch/objects") => {
                let class = body
                    .pointer("/match/class")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let field = body
                    .pointer("/match/where/path/0")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let value = body
                    .pointer("/match/where/valueText")
                    .cloned()
                    .unwrap_or(Value::Null);
                let doomed: Vec<_> = st
                    .iter()
                    .filter(|((c, _), o)| {
                        *c == class && o["properties"].get(&field) == Some(&value)
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in &doomed {
                    st.remove(k);
                }
                (200, json!({"match": body["match"], "output": "minimal", "dryRun": false,
                    "results": {"matches": doomed.len(), "limit": 10000, "successful": doomed.len(), "failed": 0, "objects": null}}).to_string())
            }
            ("DELETE", path) if path.starts_with("/v1/objects/") => {
                let parts: Vec<&str> = path.split('/').collect();
                let key = (parts[3].to_string(), parts[4].to_string());
                match st.remove(&key) {
                    Some(_) => (204, String::new()),
                    None => (404, String::new()),
                }
            }
            _ => (
                404,
                json!({"error": [{"message": "not found"}]}).to_string(),
            ),
        }
    }));
    (mock, store)
}

fn indexer(extra: Value) -> Value {
    let mut m = obj(json!({
        "class": "com.kmwllc.lucille.weaviate.indexer.WeaviateIndexer",
        "batchSize": 1000, "batchTimeout": 60000
    }));
    m.extend(obj(extra));
    Value::Object(m)
}

fn block(mock: &Mock, extra: Value) -> Value {
    let mut m = obj(json!({"host": mock.url, "apiKey": "wk"}));
    m.extend(obj(extra));
    Value::Object(m)
}

fn batches(mock: &Mock) -> Vec<Value> {
    mock.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path() == "/v1/batch/objects")
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

#[test]
fn uuids_match_javas_name_uuid_from_bytes() {
    // Java: UUID.nameUUIDFromBytes("doc1".getBytes()), and Python's uuid.UUID(bytes=md5, version=3).
    assert_eq!(
        document_uuid("doc1"),
        "83e4b178-9306-33d1-8991-40df3827d600"
    );
    assert_eq!(document_uuid("a"), "0cc175b9-c0f1-36a8-b1c3-99e269772661");
    assert_eq!(document_uuid("é"), "66ddcd97-cfde-3bb2-b6fb-8a999b4bc76f");
}

#[test]
fn batches_objects_with_uuids_vectors_and_per_object_errors() {
    let (mock, store) = weaviate(0, 429);
    let out = run_docs(
        indexer(json!({})),
        block(
            &mock,
            json!({"className": "Article", "vectorField": "emb", "idDestinationName": "lucille_id"}),
        ),
        vec![
            json!({"id": "doc1", "title": "T", "emb": [0.5, 1]}),
            json!({"id": "a", "title": "no vector: Weaviate may vectorize it"}),
            json!({"id": "rejected", "bad": 1, "emb": [1, 2]}),
            json!({"id": "not-a-vector", "emb": "x"}),
        ],
    );
    assert_eq!(failed(&out), ["not-a-vector", "rejected"], "{out:?}");
    assert!(out["rejected"]
        .1
        .as_deref()
        .unwrap_or("")
        .contains("invalid text property 'bad'"));
    assert!(out["not-a-vector"]
        .1
        .as_deref()
        .unwrap_or("")
        .contains("is not a vector"));
    let seen = mock.requests();
    assert_eq!(seen[0].path(), "/v1/meta");
    assert_eq!(seen[1].query(), "consistency_level=ALL");
    assert_eq!(
        batches(&mock),
        [json!({"objects": [
            {"class": "Article", "id": "83e4b178-9306-33d1-8991-40df3827d600",
             "properties": {"title": "T", "lucille_id": "doc1"}, "vector": [0.5, 1]},
            {"class": "Article", "id": "0cc175b9-c0f1-36a8-b1c3-99e269772661",
             "properties": {"title": "no vector: Weaviate may vectorize it", "lucille_id": "a"}},
            {"class": "Article", "id": document_uuid("rejected"),
             "properties": {"bad": 1, "lucille_id": "rejected"}, "vector": [1, 2]}
        ]})]
    );
    assert_eq!(store.lock().len(), 2);
}

#[test]
fn deletes_by_id_and_by_field_and_overrides_the_class() {
    let (mock, store) = weaviate(0, 429);
    let out = run_docs(
        indexer(
            json!({"deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
            "deleteByFieldField": "df", "deleteByFieldValue": "dv", "indexOverrideField": "cls",
            "idOverrideField": "wid"}),
        ),
        block(&mock, json!({})),
        vec![
            json!({"id": "a", "author": "ann"}),
            json!({"id": "b", "author": "ann"}),
            json!({"id": "c", "author": "bob"}),
            json!({"id": "o", "author": "ann", "cls": "Other"}),
            // Deletes the object of "a" (idOverrideField), then one that was never there.
            json!({"id": "a-delete", "wid": "a", "deleted": "true"}),
            json!({"id": "never-indexed", "deleted": "true"}),
            json!({"id": "by-author", "deleted": "true", "df": "author", "dv": "ann"}),
        ],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    let deletes: Vec<String> = mock
        .requests()
        .iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.url.clone())
        .collect();
    assert_eq!(
        deletes,
        [
            format!(
                "/v1/objects/Document/{}?consistency_level=ALL",
                document_uuid("a")
            ),
            format!(
                "/v1/objects/Document/{}?consistency_level=ALL",
                document_uuid("never-indexed")
            ),
            "/v1/batch/objects?consistency_level=ALL".to_string(),
        ]
    );
    let by_field: Value = serde_json::from_str(&mock.requests().last().unwrap().body).unwrap();
    assert_eq!(
        by_field,
        json!({"match": {"class": "Document", "where": {"path": ["author"], "operator": "Equal", "valueText": "ann"}}, "output": "minimal"})
    );
    // a, then b (author ann) are gone from Document; c stays, and o lives in class Other.
    let left: Vec<(String, String)> = store.lock().keys().cloned().collect();
    let mut want = vec![
        ("Document".to_string(), document_uuid("c")),
        ("Other".to_string(), document_uuid("o")),
    ];
    want.sort();
    assert_eq!(left, want);
}

#[test]
fn throttling_is_retried_then_a_whole_batch_error_fails_every_document() {
    let (mock, _store) = weaviate(1, 429);
    let retry = json!({"maxRetries": 2, "retryWaitDurationMs": 1, "retryMaxWaitDurationMs": 2});
    let out = run_docs(
        indexer(retry.clone()),
        block(&mock, json!({})),
        vec![json!({"id": "a"}), json!({"id": "b"})],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert_eq!(batches(&mock).len(), 2);

    let (mock, _store) = weaviate(5, 503);
    let out = run_docs(
        indexer(retry),
        block(&mock, json!({})),
        vec![json!({"id": "a"})],
    );
    assert_eq!(failed(&out), ["a"]);
    assert!(
        out["a"]
            .1
            .as_deref()
            .unwrap_or("")
            .contains("after 3 attempts"),
        "{out:?}"
    );

    let (mock, _store) = weaviate(0, 429);
    let out = run_docs(
        indexer(json!({})),
        block(&mock, json!({"className": "Missing"})),
        vec![json!({"id": "a"}), json!({"id": "b"})],
    );
    assert_eq!(failed(&out), ["a", "b"]);
    assert!(
        out["a"].1.as_deref().unwrap_or("").contains("HTTP 422")
            && out["a"]
                .1
                .as_deref()
                .unwrap_or("")
                .contains("not found in schema")
    );
}

#[test]
fn bad_configs_are_config_errors() {
    let class = json!({"class": "WeaviateIndexer"});
    let e = config_errors(class.clone(), json!({"className": "A"}));
    assert!(
        e.contains("weaviate.host") && e.contains("weaviate.apiKey"),
        "{e}"
    );
    let e = config_errors(
        class.clone(),
        json!({"host": "ftp://x", "apiKey": "k", "requestTimeout": -1, "vectorfield": "v"}),
    );
    for part in [
        "weaviate.host",
        "weaviate.requestTimeout",
        "weaviate.vectorfield",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    let e = config_errors(
        json!({"type": "WEAVIATE", "routingField": "r"}),
        json!({"host": "h.weaviate.network", "apiKey": "k"}),
    );
    assert!(e.contains("indexer.routingField"), "{e}");
    assert_eq!(
        config_errors(class, json!({"host": "h.weaviate.network", "apiKey": "k"})),
        ""
    );
}
