//! EmitDocsToDeleteByPrefix against a local server speaking Pinecone's REST shapes (no Pinecone
//! installs here): the control plane's `GET /indexes/{name}` and the data plane's paged
//! `GET /vectors/list`.

use serde_json::{json, Value};

use crate::http::mock::{Mock, Seen};
use crate::stage::testing::{build_err, build_stage, process, process_children, process_err};

/// Ids per namespace; pages of two, as Pinecone pages (by 100).
fn pinecone(control_plane_state: &'static str) -> Mock {
    let ids = |ns: &str| -> Vec<&'static str> {
        match ns {
            "default" => vec!["doc1-0", "doc1-1", "doc1-2", "doc10-0", "doc2-0"],
            "b" => vec!["doc1-0", "doc1-v1-0"],
            _ => vec![],
        }
    };
    Mock::start(Box::new(move |req: &Seen| {
        if req.header("Api-Key") != Some("pk") {
            return (
                401,
                json!({"code": 16, "message": "Invalid API Key"}).to_string(),
            );
        }
        if req.path() == "/indexes/idx" {
            let host = format!("http://{}", req.header("Host").unwrap_or(""));
            return (
                200,
                json!({"name": "idx", "dimension": 3, "host": host,
                       "status": {"ready": true, "state": control_plane_state}})
                .to_string(),
            );
        }
        if req.path() != "/vectors/list" {
            return (404, json!({"message": "Not Found"}).to_string());
        }
        // The test's values need no decoding (letters, digits and '-').
        let q: Vec<(String, String)> = req
            .query()
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let (ns, prefix) = (
            get("namespace").unwrap_or_default(),
            get("prefix").unwrap_or_default(),
        );
        if prefix == "boom" {
            return (400, json!({"code": 3, "message": "bad prefix"}).to_string());
        }
        let matching: Vec<&str> = ids(&ns)
            .into_iter()
            .filter(|id| id.starts_with(&prefix))
            .collect();
        let start: usize = get("paginationToken")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let page: Vec<Value> = matching
            .iter()
            .skip(start)
            .take(2)
            .map(|id| json!({"id": id}))
            .collect();
        let mut answer = json!({"vectors": page, "namespace": ns, "usage": {"readUnits": 1}});
        if start + 2 < matching.len() {
            answer["pagination"] = json!({"next": (start + 2).to_string()});
        }
        (200, answer.to_string())
    }))
}

fn config(mock: &Mock, extra: Value) -> Value {
    let mut c = json!({"class": "com.kmwllc.lucille.pinecone.stage.EmitDocsToDeleteByPrefix",
        "index": "idx", "apiKey": "pk", "host": mock.url,
        "deletionMarkerField": "is_deleted", "deletionMarkerFieldValue": "true"});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn ids(children: &[crate::document::Document]) -> Vec<String> {
    children.iter().map(|c| c.id().to_string()).collect()
}

#[test]
fn a_marked_document_emits_its_prefixed_ids_marked_for_deletion_across_pages() {
    let mock = pinecone("Ready");
    let mut s = build_stage(config(&mock, json!({})));
    s.start().unwrap();
    // Not marked: nothing listed, nothing emitted.
    process(&mut s, json!({"id": "doc1", "is_deleted": "false"}));
    process(&mut s, json!({"id": "doc1"}));
    assert!(mock.requests().is_empty());

    let (doc, children) = process_children(&mut s, json!({"id": "doc1", "is_deleted": "true"}));
    // A prefix, as Pinecone lists: doc10-0 starts with doc1 too (Lucille's behaviour; use
    // addPrefix to narrow it).
    assert_eq!(ids(&children), ["doc1-0", "doc1-1", "doc1-2", "doc10-0"]);
    assert!(children
        .iter()
        .all(|c| c.get_string("is_deleted").unwrap().as_deref() == Some("true")));
    assert!(!doc.is_dropped());
    let seen = mock.requests();
    assert_eq!(seen.len(), 2, "two pages");
    assert!(
        seen[0].query().contains("namespace=default") && seen[0].query().contains("prefix=doc1")
    );
    assert!(seen[1].query().contains("paginationToken=2"));
}

#[test]
fn namespaces_add_prefix_and_drop_original() {
    let mock = pinecone("Ready");
    let mut s = build_stage(config(
        &mock,
        json!({"namespaces": {"default": "emb", "b": "emb_b"}, "addPrefix": "-v1",
               "dropOriginal": true}),
    ));
    s.start().unwrap();
    let (doc, children) = process_children(&mut s, json!({"id": "doc1", "is_deleted": "true"}));
    assert_eq!(ids(&children), ["doc1-v1-0"]);
    assert!(doc.is_dropped());
    // Nothing listed: still dropped, no children.
    let (doc, children) = process_children(&mut s, json!({"id": "none", "is_deleted": "true"}));
    assert!(children.is_empty() && doc.is_dropped());
}

#[test]
fn the_host_comes_from_the_control_plane_and_an_index_not_ready_stops_the_start() {
    let mock = pinecone("Ready");
    let mut c = config(&mock, json!({"controlPlaneUrl": mock.url}));
    c.as_object_mut().unwrap().remove("host");
    let mut s = build_stage(c.clone());
    s.start().unwrap();
    let (_, children) = process_children(&mut s, json!({"id": "doc2", "is_deleted": "true"}));
    assert_eq!(ids(&children), ["doc2-0"]);
    assert_eq!(mock.requests()[0].path(), "/indexes/idx");

    let starting = pinecone("Initializing");
    let mut c = config(&starting, json!({"controlPlaneUrl": starting.url}));
    c.as_object_mut().unwrap().remove("host");
    let e = build_stage(c).start().unwrap_err().to_string();
    assert!(e.contains("its state is Initializing"), "{e}");
}

#[test]
fn a_listing_that_fails_fails_the_document_with_pinecones_message() {
    let mock = pinecone("Ready");
    let mut s = build_stage(config(&mock, json!({})));
    s.start().unwrap();
    let e = process_err(&mut s, json!({"id": "boom", "is_deleted": "true"}));
    assert!(
        e.contains("error listing vectors to delete") && e.contains("HTTP 400: bad prefix"),
        "{e}"
    );
    let mut bad_key = build_stage(config(&mock, json!({"apiKey": "wrong"})));
    bad_key.start().unwrap();
    let e = process_err(&mut bad_key, json!({"id": "doc1", "is_deleted": "true"}));
    assert!(e.contains("HTTP 401: Invalid API Key"), "{e}");
}

#[test]
fn config_errors_name_their_keys() {
    let e = build_err(json!({"class": "EmitDocsToDeleteByPrefix", "index": "i",
        "apiKey": "k", "deletionMarkerField": "d"}));
    assert!(
        e.contains("stage.deletionMarkerFieldValue: missing required key"),
        "{e}"
    );
    let e = build_err(json!({"class": "EmitDocsToDeleteByPrefix", "index": "",
        "apiKey": "k", "deletionMarkerField": "d", "deletionMarkerFieldValue": "y",
        "namespaces": {}}));
    assert!(e.contains("stage.index: must not be empty"), "{e}");
    assert!(e.contains("stage.namespaces: names no namespace"), "{e}");
}
