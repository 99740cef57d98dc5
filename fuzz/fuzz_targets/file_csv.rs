//! The CSV file handler on arbitrary bytes, under a few configs.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let configs = [
        json!({}),
        json!({"idField": "id", "lineNumberField": "line", "filenameField": "file", "filePathField": "path"}),
        json!({"useTabs": true, "lowercaseFields": true, "ignoredTerms": ["null", "N/A"]}),
        json!({"separatorChar": ";", "quoteChar": "'", "escapeChar": "\\", "docIdPrefix": "p-"}),
        json!({"idFields": ["a", "b"], "docIdFormat": "%s/%s", "interpretQuotes": false}),
        json!({"ignoreEscapeChar": true, "idField": "name"}),
    ];
    common::drive("csv", "fuzz.csv", &configs, None, data);
});
