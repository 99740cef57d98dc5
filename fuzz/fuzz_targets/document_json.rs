//! Document JSON: `from_json_bytes` / `from_json` never panic, agree with the record parser
//! (`ObjectParser`, what JSONL lines go through), and `to_json` round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lucille::document::ObjectParser;
use lucille::Document;

fuzz_target!(|data: &[u8]| {
    let from_bytes = Document::from_json_bytes(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let from_str = Document::from_json(text);
        assert_eq!(from_bytes.is_ok(), from_str.is_ok());
        // The record parser accepts exactly the JSON objects (whatever their fields).
        let fields = ObjectParser::new().parse(text);
        if let (Ok(doc), Ok(fields)) = (&from_str, &fields) {
            assert_eq!(doc.as_map(), fields);
        }
    }
    if let Ok(doc) = from_bytes {
        let json = doc.to_json();
        let again = Document::from_json(&json).expect("to_json output must parse back");
        assert_eq!(again.to_json(), json, "to_json is not a fixed point");
        assert_eq!(again.id(), doc.id());
        let mut written = Vec::new();
        doc.write_json(&mut written).expect("write_json to a Vec");
        assert_eq!(written, json.as_bytes());
        let _ = doc.byte_size();
    }
});
