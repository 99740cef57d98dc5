//! The JSON-lines file handler (`fileHandlers.json` / `jsonl`) on arbitrary bytes: each line
//! is scanned for its id on the "connector" side and built into its document through the
//! record path (`record`, `document::parse`), as a worker does.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use lucille::document::ids::id_text;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let configs = [
        json!({}),
        json!({"idField": "key", "docIdPrefix": "p-"}),
        json!({"idFields": ["a", "b"], "docIdFormat": "%s-%s"}),
        json!({"ignoreFields": ["x", "run_id"], "idField": "id"}),
        json!({"idFields": ["id", "n"]}),
    ];
    common::drive("jsonl", "fuzz.jsonl", &configs, Some(id_matches_parse), data);
});

/// The id read on the connector side (a fast path on the first key, or a scan) is the one a
/// full parse of the line gives (the last of duplicate keys), for the one-id-field configs.
fn id_matches_parse(config: usize, id: &str, text: &str) {
    let (field, prefix) = match config {
        0 => ("id", ""),
        1 => ("key", "p-"),
        3 => ("id", ""),
        _ => return,
    };
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) else {
        return; // not JSON: the worker FAILs the line under whatever id was read
    };
    let expected = map.get(field).and_then(id_text).map(|v| format!("{prefix}{v}"));
    assert_eq!(Some(id), expected.as_deref(), "line {text:?}");
}
