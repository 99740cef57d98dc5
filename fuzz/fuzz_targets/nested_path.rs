//! Nested paths: the first line is a path, the rest a document (or a fixed one when it is not
//! JSON). Parsing never panics and its text form parses back to the same path; get / set /
//! remove on the document never panic and agree with each other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lucille::document::FieldPath;
use lucille::Document;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path_text, rest) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(path) = FieldPath::parse(path_text) else {
        let _ = Document::with_random_id().get_nested(path_text);
        return;
    };
    let shown = path.to_string();
    let reparsed = FieldPath::parse(&shown).expect("a path's text form must parse");
    assert_eq!(reparsed, path, "round trip of {path_text:?} via {shown:?}");
    let _ = FieldPath::from_segments(path.segments().to_vec());

    let mut doc = Document::from_json(rest).unwrap_or_else(|_| {
        Document::from_json(r#"{"id":"d","a":{"b":[1,{"c":2}]},"l":[[0]],"s":"x"}"#)
            .expect("fixed document")
    });
    let before = doc.get_nested_path(&path).cloned();
    assert_eq!(doc.get_nested(path_text).ok().flatten().cloned(), before);
    let marker = json!({"fuzz": true});
    if doc.set_nested_path(&path, marker.clone()).is_ok() {
        assert_eq!(doc.get_nested_path(&path), Some(&marker), "set then get: {shown}");
        let removed = doc.remove_nested(path_text).expect("path parsed before");
        assert_eq!(removed, Some(marker), "set then remove: {shown}");
    } else {
        let _ = doc.remove_nested(path_text);
    }
    let _ = doc.to_json();
});
