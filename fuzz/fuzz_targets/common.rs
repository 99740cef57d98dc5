//! Shared by the file handler targets: drive a handler over in-memory bytes, building every
//! record (as a worker would) and checking what comes out.

use std::io::BufReader;

use lucille::accounting::PublishError;
use lucille::config::ComponentConfig;
use lucille::connector::file::{build_handler, FileSource, HandlerError, RecordSink};
use lucille::record::Record;
use lucille::Document;
use serde_json::Value;

/// Checks a record's id against its text, for the config block in use.
pub type RecordCheck = fn(config: usize, id: &str, text: &str);

struct Check {
    published: usize,
    config: usize,
    check_record: Option<RecordCheck>,
}

impl RecordSink for Check {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
        assert!(!doc.id().is_empty(), "published a document without an id");
        let json = doc.to_json();
        Document::from_json(&json).expect("a published document's JSON parses back");
        self.published += 1;
        Ok(())
    }
    fn publish_record(&mut self, record: Record) -> Result<(), PublishError> {
        if let Some(check) = self.check_record {
            check(self.config, &record.id, &record.text);
        }
        match record.build() {
            Ok(doc) => self.publish(doc),
            Err(e) => self.fail(e.id, e.reason),
        }
    }
    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError> {
        // `Record::build` turns a panicking builder into a failure: still a bug.
        assert!(!reason.contains("panicked"), "record {id}: {reason}");
        Ok(())
    }
}

/// Reads `data` with the handler `kind` built from the `configs[data[0] % len]` block; bit 7
/// of the first byte sets a small `maxDocumentBytes`, bit 6 a 1-byte read buffer (records
/// split across reads).
pub fn drive(
    kind: &str,
    file_name: &str,
    configs: &[Value],
    check_record: Option<RecordCheck>,
    data: &[u8],
) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let config_index = usize::from(selector & 0x3f) % configs.len();
    let Value::Object(map) = &configs[config_index] else {
        panic!("configs are objects");
    };
    let config = ComponentConfig::new(map.clone(), "connectors[0].fileHandlers.x");
    let handler = match build_handler(kind, &config, "") {
        Ok(h) => h,
        Err(errors) => panic!("fixed config rejected: {errors:?}"),
    };
    let source = FileSource {
        path: format!("/fuzz/{file_name}"),
        name: file_name.to_string(),
        max_bytes: (selector & 0x80 != 0).then_some(64),
    };
    let mut sink = Check {
        published: 0,
        config: config_index,
        check_record,
    };
    let result = if selector & 0x40 != 0 {
        let mut input = BufReader::with_capacity(1, bytes);
        handler.process(&mut input, &source, &mut sink)
    } else {
        let mut input: &[u8] = bytes;
        handler.process(&mut input, &source, &mut sink)
    };
    match result {
        Ok(()) | Err(HandlerError::File { .. }) => {}
        Err(HandlerError::Publish(e)) => panic!("the sink never refuses: {e}"),
    }
}
