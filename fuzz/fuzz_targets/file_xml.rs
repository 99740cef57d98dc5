//! The XML file handler on arbitrary bytes, under a few configs.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let configs = [
        json!({"xmlRootPath": "/catalog/book", "xmlIdPath": "/catalog/book/id"}),
        json!({"xmlRootPath": "/catalog/book", "idField": "id", "outputField": "raw"}),
        json!({"xmlRootPath": "/a/b/c", "xmlIdPath": "/a/b/c/d/e", "skipEmptyId": true}),
        json!({"xmlRootPath": "/r", "xmlIdPath": "/r/id", "docIdPrefix": "x-", "encoding": "utf-8"}),
    ];
    common::drive("xml", "fuzz.xml", &configs, None, data);
});
