//! QueryOpensearch and ElasticsearchLookup against local HTTP servers (tiny_http) answering
//! with OpenSearch's and Elasticsearch's request and response shapes (neither installs here).

use serde_json::{json, Value};

use crate::http::mock::{Mock, Seen};
use crate::stage::testing::{build_err, build_stage, process, process_err};

const TEMPLATE: &str = r#"{"source": {"query": {"match_phrase": {"park_name": "{{park_name}}"}}}}"#;

/// A search answer whose max score is the length of the `park_name` parameter.
fn search_answer(seen: &Seen) -> (u16, String) {
    let body: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
    let name = body["params"]["park_name"].as_str().unwrap_or("");
    if name == "boom" {
        return (
            500,
            json!({"error": {"type": "search_phase_execution_exception"}}).to_string(),
        );
    }
    let answer = json!({"took": 1, "timed_out": false,
        "hits": {"total": {"value": 1, "relation": "eq"}, "max_score": name.len() as f64,
                 "hits": [{"_index": "parks", "_id": "1", "_score": 1.0,
                           "_source": {"park_name": name}}]}});
    (200, answer.to_string())
}

fn query_config(url: &str, extra: Value) -> Value {
    let mut c = json!({"class": "com.kmwllc.lucille.stage.QueryOpensearch",
        "opensearch": {"url": url, "index": "parks"}, "searchTemplate": TEMPLATE,
        "requiredParamNames": ["park_name"], "optionalParamNames": ["state"],
        "opensearchResponsePath": "/hits/max_score"});
    // A null in `extra` removes the key.
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

#[test]
fn query_opensearch_runs_the_template_with_the_documents_fields() {
    let mock = Mock::start(Box::new(search_answer));
    let mut s = build_stage(query_config(&mock.url, json!({})));
    let d = process(
        &mut s,
        json!({"id": "1", "park_name": "Yosemite", "state": "CA"}),
    );
    assert_eq!(d.get("response"), Some(&json!(8.0)));
    let seen = mock.requests();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path()),
        ("POST", "/parks/_search/template")
    );
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(
        body["params"],
        json!({"park_name": "Yosemite", "state": "CA"})
    );
    assert_eq!(
        body["source"]["query"]["match_phrase"]["park_name"],
        "{{park_name}}"
    );

    // A missing required field: no query, Lucille's error field.
    let d = process(&mut s, json!({"id": "2", "state": "CA"}));
    assert!(d
        .get_str("queryOpensearchError")
        .unwrap()
        .contains("park_name"));
    assert!(!d.has("response"));
    assert_eq!(mock.requests().len(), 1);

    // An error answer FAILs the document (500 is not retried by default).
    let e = process_err(&mut s, json!({"id": "3", "park_name": "boom"}));
    assert!(e.contains("HTTP 500"), "{e}");

    // A stored template by name, a pointer into an array, another destination; a pointer
    // that finds nothing leaves the destination unset.
    let mut s = build_stage(query_config(
        &mock.url,
        json!({"searchTemplate": null,
        "templateName": "by_name", "opensearchResponsePath": "/hits/hits/0/_source",
        "destinationField": "hit"}),
    ));
    let d = process(&mut s, json!({"id": "4", "park_name": "Zion"}));
    assert_eq!(d.get("hit"), Some(&json!({"park_name": "Zion"})));
    let body: Value = serde_json::from_str(&mock.requests()[2].body).unwrap();
    assert_eq!(
        body,
        json!({"id": "by_name", "params": {"park_name": "Zion"}})
    );
    let mut s = build_stage(query_config(
        &mock.url,
        json!({"opensearchResponsePath": "/a/b/5"}),
    ));
    assert!(!process(&mut s, json!({"id": "5", "park_name": "x"})).has("response"));
}

#[test]
fn query_opensearch_config_errors() {
    let url = "http://127.0.0.1:1";
    for (extra, says) in [
        (json!({"templateName": "t"}), "not both"),
        (json!({"searchTemplate": null}), "give searchTemplate"),
        (json!({"searchTemplate": "{not json"}), "not valid JSON"),
        (json!({"opensearchResponsePath": "hits"}), "JSON pointer"),
        (json!({"opensearch": {"url": url}}), "opensearch.index"),
        (
            json!({"opensearch": {"url": url, "index": "i", "enableCompression": true}}),
            "compression",
        ),
        (
            json!({"opensearch": {"url": "nope", "index": "i"}}),
            "not a URL",
        ),
    ] {
        let e = build_err(query_config(url, extra.clone()));
        assert!(e.contains(says), "{extra}: {e}");
    }
}

/// Elasticsearch: `GET /` answers; `GET /idx/_doc/{id}` finds "a" only.
fn es_answer(seen: &Seen) -> (u16, String) {
    match seen.path() {
        "/" => (
            200,
            json!({"name": "n1", "version": {"number": "8.13.0"}}).to_string(),
        ),
        "/idx/_doc/a" => (
            200,
            json!({"_index": "idx", "_id": "a", "found": true,
            "_source": {"foo": "bar", "num": 3, "gone": null}})
            .to_string(),
        ),
        "/idx/_doc/err" => (503, "{}".to_string()),
        _ => (
            404,
            json!({"_index": "idx", "_id": "x", "found": false}).to_string(),
        ),
    }
}

#[test]
fn elasticsearch_lookup_copies_fields_of_the_indexed_document() {
    let mock = Mock::start(Box::new(es_answer));
    let config = |mode: &str| {
        json!({"class": "ElasticsearchLookup", "elasticsearch": {"url": mock.url, "index": "idx"},
               "source": ["foo", "num", "gone", "absent"], "dest": ["foo", "num_text", "g", "h"],
               "update_mode": mode})
    };
    let mut s = build_stage(config("overwrite"));
    s.start().unwrap();
    let d = process(&mut s, json!({"id": "a", "foo": "old"}));
    assert_eq!(d.get("foo"), Some(&json!("bar")));
    assert_eq!(d.get("num_text"), Some(&json!("3")));
    assert!(!d.has("g") && !d.has("h"));
    let mut s = build_stage(config("append"));
    let d = process(&mut s, json!({"id": "a", "foo": "old"}));
    assert_eq!(d.get("foo"), Some(&json!(["old", "bar"])));
    let mut s = build_stage(config("skip"));
    let d = process(&mut s, json!({"id": "a", "foo": "old"}));
    assert_eq!(d.get("foo"), Some(&json!("old")));
    // Not indexed: unchanged. A 503 (retried, then given up) FAILs the document.
    assert!(!process(&mut s, json!({"id": "b"})).has("foo"));
    let mut c = config("overwrite");
    c["elasticsearch"]["url"] = json!(format!("{}/", mock.url));
    let e = process_err(&mut build_stage(c), json!({"id": "err"}));
    assert!(e.contains("503"), "{e}");
    assert!(mock.requests().iter().any(|r| r.path() == "/"));

    let e = build_err(
        json!({"class": "ElasticsearchLookup", "source": ["a", "b"], "dest": ["c"],
        "elasticsearch": {"url": mock.url, "index": "idx"}}),
    );
    assert!(e.contains("as many fields as source"), "{e}");
    let mut down = build_stage(
        json!({"class": "ElasticsearchLookup", "source": "a", "dest": "b",
        "elasticsearch": {"url": "http://127.0.0.1:1", "index": "idx"}}),
    );
    assert!(down
        .start()
        .unwrap_err()
        .to_string()
        .contains("not reachable"));
}
