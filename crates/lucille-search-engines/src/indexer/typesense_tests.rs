//! Typesense against a real server (`scripts/services/typesense.sh` exports its address).
//! Skipped with a note when `LUCILLE_TEST_TYPESENSE_URL` is unset, unless
//! `LUCILLE_REQUIRE_SERVICES=1`.

use serde_json::{json, Value};

use super::mock_http::*;

fn server() -> Option<(String, String)> {
    let how = "source scripts/services/typesense.sh";
    let url = crate::test_service::test_service("LUCILLE_TEST_TYPESENSE_URL", how)?;
    let key = crate::test_service::test_service("LUCILLE_TEST_TYPESENSE_API_KEY", how)?;
    Some((url, key))
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// The stored document, or None when Typesense answers 404.
fn fetch(url: &str, key: &str, collection: &str, id: &str) -> Option<Value> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut r = agent
        .get(format!("{url}/collections/{collection}/documents/{id}"))
        .header("X-TYPESENSE-API-KEY", key)
        .call()
        .unwrap();
    match r.status().as_u16() {
        200 => Some(serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()),
        404 => None,
        s => panic!("HTTP {s}"),
    }
}

fn indexer(extra: Value) -> Value {
    let mut m = obj(
        json!({"type": "typesense", "batchSize": 1000, "batchTimeout": 60000,
        "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
        "deleteByFieldField": "del_field", "deleteByFieldValue": "del_value"}),
    );
    m.extend(obj(extra));
    Value::Object(m)
}

#[test]
fn typesense_upserts_deletes_and_rejects_per_document() {
    let Some((url, key)) = server() else { return };
    let c = unique("books");
    let other = unique("other");
    let block = json!({"url": url, "apiKey": key, "collection": c});
    let out = run_docs(
        indexer(
            json!({"idOverrideField": "cid", "indexOverrideField": "idx", "blacklist": ["secret"]}),
        ),
        block.clone(),
        vec![
            json!({"id": "a", "n": 1, "author": "ann", "secret": "s", "meta": {"lang": "en"}}),
            json!({"id": "b", "n": 2, "author": "ann"}),
            json!({"id": "c", "n": 3, "author": "bob", "cid": "C-1"}),
            json!({"id": "bad", "n": "not a number"}),
            json!({"id": "o", "n": 4, "idx": other}),
        ],
    );
    assert_eq!(failed(&out), ["bad"], "{out:?}");
    let msg = out["bad"].1.as_deref().unwrap();
    assert!(
        msg.contains("Typesense rejected the document") && msg.contains("n"),
        "{msg}"
    );
    let a = fetch(&url, &key, &c, "a").unwrap();
    assert_eq!((a["id"].as_str(), a["n"].as_i64()), (Some("a"), Some(1)));
    assert!(a.get("secret").is_none(), "blacklisted field not indexed");
    assert_eq!(
        a["meta"],
        json!({"lang": "en"}),
        "object fields index (nested fields on)"
    );
    assert!(fetch(&url, &key, &c, "C-1").is_some(), "id override");
    assert!(fetch(&url, &key, &c, "c").is_none());
    assert!(
        fetch(&url, &key, &other, "o").is_some(),
        "index override names another collection"
    );
    assert!(fetch(&url, &key, &c, "bad").is_none());

    // Deletes: by id, by field, an absent id, and upsert-then-delete of one id in one batch.
    let out = run_docs(
        indexer(json!({"idOverrideField": "key"})),
        block,
        vec![
            json!({"id": "d1", "key": "a", "deleted": "true"}),
            json!({"id": "d2", "deleted": "true", "del_field": "author", "del_value": "bob"}),
            json!({"id": "d3", "key": "never-indexed", "deleted": "true"}),
            json!({"id": "u1", "key": "x", "n": 9}),
            json!({"id": "u2", "key": "x", "deleted": "true"}),
            json!({"id": "u3", "key": "y", "deleted": "true"}),
            json!({"id": "u4", "key": "y", "n": 10}),
        ],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert!(fetch(&url, &key, &c, "a").is_none(), "deleted by id");
    assert!(
        fetch(&url, &key, &c, "C-1").is_none(),
        "deleted by author=bob"
    );
    assert!(fetch(&url, &key, &c, "b").is_some(), "author=ann stays");
    assert!(fetch(&url, &key, &c, "x").is_none(), "upsert then delete");
    assert!(fetch(&url, &key, &c, "y").is_some(), "delete then upsert");
}

#[test]
fn typesense_without_create_collection_fails_the_connection_check() {
    let Some((url, key)) = server() else { return };
    let settings = super::IndexerSettings::from_config(&crate::config::ComponentConfig::new(
        obj(indexer(json!({}))),
        "indexer",
    ))
    .unwrap();
    let block = json!({"url": url, "apiKey": key, "collection": unique("absent"), "createCollection": false});
    let mut backend = super::build_backend(
        &settings,
        &crate::config::ComponentConfig::new(obj(block), "typesense"),
        crate::indexer::Opening::Fresh,
    )
    .unwrap();
    let e = backend.validate_connection().unwrap_err();
    assert!(e.message.contains("does not exist"), "{e}");
    let wrong_key = json!({"url": url, "apiKey": "wrong", "collection": "x"});
    let mut backend = super::build_backend(
        &settings,
        &crate::config::ComponentConfig::new(obj(wrong_key), "typesense"),
        crate::indexer::Opening::Fresh,
    )
    .unwrap();
    assert!(
        backend.validate_connection().is_err(),
        "a wrong API key is caught up front"
    );
}

/// GET `path` (with its query) from the server, as JSON.
fn get_json(url: &str, key: &str, path: &str) -> Value {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut r = agent
        .get(format!("{url}{path}"))
        .header("X-TYPESENSE-API-KEY", key)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
}

#[test]
fn typesense_vector_fields_answer_nearest_neighbour_queries() {
    let Some((url, key)) = server() else { return };
    let c = unique("vectors");
    let block = json!({"url": url, "apiKey": key, "collection": c, "vectorFields": {"v": 3}});
    let out = run_docs(
        indexer(json!({})),
        block,
        vec![
            json!({"id": "east", "v": [1.0, 0.0, 0.0], "label": "east"}),
            json!({"id": "north", "v": [0.0, 1.0, 0.0], "label": "north"}),
            json!({"id": "ne", "v": [0.7, 0.7, 0.0], "label": "northeast"}),
            json!({"id": "short", "v": [1.0, 0.0], "label": "two dimensions"}),
        ],
    );
    assert_eq!(failed(&out), ["short"], "{out:?}");
    let schema = get_json(&url, &key, &format!("/collections/{c}"));
    let v = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "v")
        .unwrap()
        .clone();
    assert_eq!(
        (v["type"].as_str(), v["num_dim"].as_u64()),
        (Some("float[]"), Some(3))
    );
    let found = get_json(
        &url,
        &key,
        &format!(
            "/collections/{c}/documents/search?q=*&vector_query={}",
            crate::http::encode("v:([0.9,0.2,0.0], k:3)")
        ),
    );
    let ids: Vec<&str> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["document"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["east", "ne", "north"], "{found}");
}

/// The block's options, checked without a server: `lucille doc typesense` lists its keys, every
/// problem is reported at once, and the TLS warning comes from what the check read.
#[test]
fn the_typesense_block_is_documented_checked_and_warned_about() {
    let doc = lucille_core::catalog::describe("typesense").unwrap();
    assert!(
        doc.starts_with("typesense (indexer)\n  Sends documents to Typesense"),
        "{doc}"
    );
    for line in [
        "  url (a string), required: The server's URL",
        "  createCollection (a boolean), default true: ",
        "  batchSize (an integer), at least 1: ",
        "  vectorFields (an object): ",
    ] {
        assert!(doc.contains(line), "{line} missing in:\n{doc}");
    }
    let e = config_errors(
        json!({"type": "typesense", "routingField": "r"}),
        json!({"url": "localhost:8108", "batchSize": 0, "vectorFields": {"v": "wide"},
            "colection": "c"}),
    );
    for part in [
        "indexer.routingField: is not supported by the typesense indexer",
        "typesense.url: \"localhost:8108\" is not a URL",
        "typesense.apiKey: missing required key",
        "typesense.batchSize: must be at least 1",
        "typesense.vectorFields.v: must be the vector's number of dimensions",
        "typesense.colection: unknown key \"colection\" (did you mean \"collection\"?)",
    ] {
        assert!(e.contains(part), "{part} missing in {e}");
    }
    let settings = super::IndexerSettings::from_config(&crate::config::ComponentConfig::new(
        obj(json!({"type": "typesense"})),
        "indexer",
    ))
    .unwrap();
    let block = |v: Value| crate::config::ComponentConfig::new(obj(v), "typesense");
    let ok = json!({"url": "https://h:8108", "apiKey": "k", "collection": "c"});
    assert_eq!(super::backend_warning(&settings, &block(ok.clone())), None);
    let mut insecure = ok;
    insecure["acceptInvalidCert"] = json!("true");
    let w = super::backend_warning(&settings, &block(insecure)).unwrap_or_default();
    assert!(
        w.starts_with("typesense.acceptInvalidCert is true: TLS certificates of the typesense server are NOT verified"),
        "{w}"
    );
}
