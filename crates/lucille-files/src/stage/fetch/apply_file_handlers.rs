//! ApplyFileHandlers: runs the FileConnector's file handlers (`connector::file`: CSV, JSON /
//! JSONL, XML) on the file a document names; each record becomes a child document.
//!
//! Keys (Lucille's): `fileHandlers` (required, at least one: `csv {…}`, `json {…}`,
//! `jsonl {…}`, `xml {…}` with the FileConnector's handler keys; `json` and `jsonl` serve each
//! other's extension when only one is given; a block's `class` may name Lucille's
//! `CSVFileHandler`, `JsonFileHandler` or `XMLFileHandler` to handle another extension, e.g.
//! `txt { class: "com.kmwllc.lucille.core.fileHandler.CSVFileHandler" }`),
//! `filePathField` (default `file_path`), `fileContentField` (default `file_content`).
//!
//! A document without `filePathField`, or whose path's extension has no handler, is left
//! alone. The records are read from `fileContentField` when the document has it (base64 bytes,
//! as FetchFileContent, FetchUri and Lucille store them; text that is not base64, such as the
//! FileConnector's `contentFormat: auto` content, is read as its UTF-8 bytes), else from the
//! local file at the path. Children are produced as the handler reads them (a bounded queue
//! between a reader thread and the pipeline), so a large file is never held whole as documents.
//!
//! Failures fail the parent (children already emitted stay emitted): a missing file, a file the
//! handler cannot read to the end (a CSV id column missing from the header, malformed XML),
//! and also a record that cannot become a document (a short CSV row, a bad JSON line), which
//! the FileConnector reports as a FAIL of its own and Lucille's handlers log and skip. Lucille's
//! XMLFileHandler is not offered by its ApplyFileHandlers; it is here. Custom Java handler
//! classes are config errors. A path may also be an `s3://`, `gs://` or Azure blob URL, read
//! with the stage's `s3` / `gcp` / `azure` block (Lucille's keys; `files.rs`).

use std::io::{BufRead, BufReader, Cursor};
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use serde_json::{Map, Value};

use super::fetch_file_content::check_field;
use super::files::{with_cloud_blocks, Files};
use crate::accounting::PublishError;
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::connector::file::{
    block_config, build_handler, handler_keys, FileHandler, FileHandlerDescriptor, FileSource,
    HandlerError, RecordSink,
};
use crate::document::Document;
use crate::stage::{Children, Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyFileHandlers",
    spec: ApplyFileHandlersOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Runs the FileConnector's file handlers (CSV, JSON / JSONL, XML) on the file a document
/// names; each record becomes a child document.
#[derive(Options)]
#[options(base = Spec::stage(), extend = with_cloud_blocks)]
struct ApplyFileHandlersOptions {
    /// Handlers by file extension, each with the FileConnector's handler keys: csv { },
    /// json { } / jsonl { }, xml { }; a block's class may name Lucille's CSVFileHandler,
    /// JsonFileHandler or XMLFileHandler to handle another extension.
    file_handlers: Map<String, Value>,
    /// The field holding the file's path or URL; a document without it is left alone.
    #[option(default = "file_path")]
    file_path_field: String,
    /// The field holding the file's bytes (base64, or text), read instead of the file when
    /// the document has it.
    #[option(default = "file_content")]
    file_content_field: String,
}

/// Children waiting between the reader thread and the pipeline.
const QUEUE: usize = 64;

struct ApplyFileHandlers {
    /// By lower-case extension.
    handlers: Vec<(String, Arc<dyn FileHandler>)>,
    path_field: String,
    content_field: String,
    files: Files,
}

/// The registered file handler a block's `class` (Lucille's handler class, whole or its
/// last segment) or, without one, its extension key names.
fn handler_kind(name: &str) -> Option<&'static str> {
    crate::registry::find::<FileHandlerDescriptor>(name).map(|d| d.name)
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ApplyFileHandlersOptions::from_config(config)?;
    if o.file_handlers.is_empty() {
        return Err(config
            .error("fileHandlers", "must name at least one file handler")
            .into());
    }
    let mut errors = Vec::new();
    let mut handlers: Vec<(String, Arc<dyn FileHandler>)> = Vec::new();
    let base = config.key_path("fileHandlers");
    for (ext, block) in o.file_handlers {
        let path = format!("{base}.{ext}");
        let Value::Object(mut map) = block else {
            errors.push(ConfigError::new(path, "must be an object"));
            continue;
        };
        let kind = match map.shift_remove("class") {
            None => match handler_kind(&ext.to_ascii_lowercase()) {
                Some(kind) => kind.to_string(),
                None => {
                    errors.push(ConfigError::new(
                        path,
                        format!(
                            "no handler for {ext:?}: use {}, or give a class \
                             (CSVFileHandler, JsonFileHandler, XMLFileHandler)",
                            handler_keys().join(", ")
                        ),
                    ));
                    continue;
                }
            },
            Some(Value::String(class)) => match handler_kind(&class) {
                Some(kind) => kind.to_string(),
                None => {
                    errors.push(ConfigError::new(
                        format!("{path}.class"),
                        format!(
                            "unknown file handler class {class:?}; use Lucille's CSVFileHandler, \
                             JsonFileHandler or XMLFileHandler (custom Java handlers cannot run \
                             here)"
                        ),
                    ));
                    continue;
                }
            },
            Some(_) => {
                errors.push(ConfigError::new(
                    format!("{path}.class"),
                    "must be a string",
                ));
                continue;
            }
        };
        let block = block_config(config, path, map);
        match build_handler(&kind, &block, "") {
            Ok(h) => handlers.push((ext.to_ascii_lowercase(), h)),
            Err(e) => errors.extend(e.0),
        }
    }
    for (missing, other) in [("json", "jsonl"), ("jsonl", "json")] {
        if !handlers.iter().any(|(e, _)| e == missing) {
            if let Some(h) = handlers
                .iter()
                .find(|(e, _)| e == other)
                .map(|(_, h)| h.clone())
            {
                handlers.push((missing.to_string(), h));
            }
        }
    }
    for (key, value) in [
        ("filePathField", &o.file_path_field),
        ("fileContentField", &o.file_content_field),
    ] {
        if let Err(e) = check_field(config, key, value) {
            errors.push(e);
        }
    }
    let files = Files::new(config, &mut errors);
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(ApplyFileHandlers {
        handlers,
        path_field: o.file_path_field,
        content_field: o.file_content_field,
        files,
    }))
}

/// The bytes of a content field: base64 as stored for bytes, else the text itself.
fn content_bytes(value: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .unwrap_or_else(|_| value.as_bytes().to_vec())
}

/// Sends the handler's documents to the pipeline's side of the queue.
struct QueueSink {
    tx: crossbeam_channel::Sender<Result<Document, StageFailure>>,
}

impl RecordSink for QueueSink {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
        let id = doc.id().to_string();
        // The pipeline stopped reading (the parent failed or was abandoned): stop the handler.
        self.tx.send(Ok(doc)).map_err(|_| PublishError::Stopped(id))
    }

    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError> {
        self.tx
            .send(Err(StageFailure::msg(reason)))
            .map_err(|_| PublishError::Stopped(id))
    }
}

/// Runs `handler` over `input` on a thread of its own; its documents come out lazily.
fn stream(
    handler: Arc<dyn FileHandler>,
    mut input: Box<dyn BufRead + Send>,
    source: FileSource,
) -> Result<Children, StageFailure> {
    let (tx, rx) = crossbeam_channel::bounded(QUEUE);
    std::thread::Builder::new()
        .name("apply-file-handlers".into())
        .spawn(move || {
            let mut sink = QueueSink { tx: tx.clone() };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handler.process(&mut input, &source, &mut sink)
            }));
            let failure = match result {
                Ok(Ok(())) | Ok(Err(HandlerError::Publish(_))) => None,
                Ok(Err(HandlerError::File { reason, .. })) => Some(reason),
                Err(p) => Some(format!(
                    "{}: the file handler panicked: {}",
                    source.path,
                    lucille_panic::message(p.as_ref())
                )),
            };
            if let Some(reason) = failure {
                let _ = tx.send(Err(StageFailure::msg(reason)));
            }
        })
        .map_err(|e| StageFailure::msg(format!("cannot start the file handler thread: {e}")))?;
    // Stop at the first failure: it fails the parent.
    let mut failed = false;
    Ok(Box::new(rx.into_iter().take_while(move |item| {
        let go = !failed;
        failed |= item.is_err();
        go
    })))
}

impl Stage for ApplyFileHandlers {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some(path) = doc.get_string(&self.path_field)? else {
            return Ok(None);
        };
        let name = Path::new(&path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.clone());
        let Some(ext) = crate::connector::file::extension(&name) else {
            return Ok(None);
        };
        let Some(handler) = self
            .handlers
            .iter()
            .find(|(e, _)| *e == ext)
            .map(|(_, h)| h.clone())
        else {
            return Ok(None);
        };
        let input: Box<dyn BufRead + Send> = match doc.get_string(&self.content_field)? {
            Some(content) => Box::new(Cursor::new(content_bytes(&content))),
            None => Box::new(BufReader::with_capacity(
                256 * 1024,
                self.files.open(&path)?,
            )),
        };
        let source = FileSource {
            path,
            name,
            max_bytes: None,
        };
        stream(handler, input, source).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::document::Document;
    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use crate::stage::Stage;

    const CSV: &[u8] = b"number,name\n1,Lucille\n2,Buster\n3,Michael\n4,Lindsay";
    const JSONL: &[u8] = b"{\"name\": \"Lucille\", \"number\": 1, \"id\": \"1\"}\n\
        {\"name\": \"Buster\", \"number\": 2, \"id\": \"2\"}\n\
        {\"name\": \"Michael\", \"number\": 3, \"id\": \"3\"}\n\
        {\"name\": \"Lindsay\", \"number\": 4, \"id\": \"4\"}\n";
    const FAULTY: &[u8] = b"study_id\"\tpatient_id\tgender\n x\t4\tF\n1\tx\tF\n";

    fn all_types(extra: Value) -> Box<dyn Stage> {
        let mut config = json!({"class": "ApplyFileHandlers",
            "fileHandlers": {"csv": {"idField": "number"}, "json": {}}});
        if let (Value::Object(c), Value::Object(e)) = (&mut config, extra) {
            c.extend(e);
        }
        build_stage(config)
    }

    /// Children of one document, every one of which must succeed.
    fn children(stage: &mut Box<dyn Stage>, doc: Value) -> Option<Vec<Document>> {
        let mut doc = Document::from_value(doc).unwrap();
        stage
            .process_document(&mut doc)
            .unwrap()
            .map(|c| c.map(|d| d.unwrap()).collect())
    }

    fn ids(docs: &[Document]) -> Vec<&str> {
        docs.iter().map(|d| d.id()).collect()
    }

    #[test]
    fn csv_and_jsonl_files_by_path() {
        let csv = temp_file("test.csv", CSV);
        let jsonl = temp_file("test.jsonl", JSONL);
        let mut s = all_types(json!({}));
        let docs = children(
            &mut s,
            json!({"id": "c", "file_path": csv.to_str().unwrap()}),
        )
        .unwrap();
        assert_eq!(ids(&docs), ["1", "2", "3", "4"]);
        for d in &docs {
            assert_eq!(d.get("filename"), Some(&json!("test.csv")));
        }
        assert_eq!(docs[3].get("name"), Some(&json!("Lindsay")));
        let docs = children(
            &mut s,
            json!({"id": "j", "file_path": jsonl.to_str().unwrap()}),
        )
        .unwrap();
        assert_eq!(ids(&docs), ["1", "2", "3", "4"]);
        assert_eq!(docs[1].get("name"), Some(&json!("Buster")));
    }

    #[test]
    fn content_field_is_used_before_the_file() {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(CSV);
        let mut s = all_types(json!({}));
        // No such file: the content is read, only the extension of the path matters.
        let docs = children(
            &mut s,
            json!({"id": "c", "file_path": "blahblahblah.csv", "file_content": b64}),
        )
        .unwrap();
        assert_eq!(ids(&docs), ["1", "2", "3", "4"]);
        // A cloud path with the content on the document needs no cloud access.
        let docs = children(
            &mut s,
            json!({"id": "c", "file_path": "s3://bucket/test.csv", "file_content": b64}),
        )
        .unwrap();
        assert_eq!(docs.len(), 4);
        // Text content (the FileConnector's contentFormat auto) is read as it is.
        let text = String::from_utf8(CSV.to_vec()).unwrap();
        let docs = children(
            &mut s,
            json!({"id": "c", "file_path": "x.csv", "file_content": text}),
        )
        .unwrap();
        assert_eq!(docs.len(), 4);
        // Content without a path: nothing to do.
        assert!(children(&mut s, json!({"id": "c", "file_content": b64})).is_none());
        let mut s = all_types(json!({"fileContentField": "alternate_content"}));
        let docs = children(
            &mut s,
            json!({"id": "c", "file_path": "blahblahblah.csv", "alternate_content": b64}),
        )
        .unwrap();
        assert_eq!(ids(&docs), ["1", "2", "3", "4"]);
    }

    #[test]
    fn path_field_and_unhandled_types() {
        let csv = temp_file("test.csv", CSV);
        let faulty = temp_file("faulty.csv", FAULTY);
        let jsonl = temp_file("test.jsonl", JSONL);
        let mut s = all_types(json!({"filePathField": "source"}));
        let docs = children(
            &mut s,
            json!({"id": "c", "file_path": faulty.to_str().unwrap(),
                "source": csv.to_str().unwrap()}),
        )
        .unwrap();
        assert_eq!(ids(&docs), ["1", "2", "3", "4"]);
        let out = process(
            &mut s,
            json!({"id": "c", "file_path": faulty.to_str().unwrap()}),
        );
        assert!(!out.has_children());
        let mut csv_only = build_stage(json!({"class": "ApplyFileHandlers",
            "fileHandlers": {"csv": {"idField": "number"}}}));
        assert!(children(
            &mut csv_only,
            json!({"id": "j", "file_path": jsonl.to_str().unwrap()})
        )
        .is_none());
        let mut json_only = build_stage(json!({"class": "ApplyFileHandlers",
            "fileHandlers": {"json": {}}}));
        assert!(children(
            &mut json_only,
            json!({"id": "c", "file_path": csv.to_str().unwrap(), "alternate_content": "eA=="})
        )
        .is_none());
        // json serves .jsonl too.
        assert_eq!(
            children(
                &mut json_only,
                json!({"id": "j", "file_path": jsonl.to_str().unwrap()})
            )
            .unwrap()
            .len(),
            4
        );
    }

    #[test]
    fn failures_fail_the_parent() {
        let faulty = temp_file("faulty.csv", FAULTY);
        let mut s = all_types(json!({}));
        let err = process_err(
            &mut s,
            json!({"id": "f", "file_path": faulty.to_str().unwrap()}),
        );
        assert!(
            err.contains("faulty.csv") && err.contains("number"),
            "{err}"
        );
        let err = process_err(&mut s, json!({"id": "m", "file_path": "/no/such/test.csv"}));
        assert!(err.contains("/no/such/test.csv"), "{err}");
        let err = process_err(
            &mut s,
            json!({"id": "s", "file_path": "s3://bucket/test.csv"}),
        );
        assert!(err.contains("s3://"), "{err}");
        // A short row: the rows before it were emitted, then the parent fails.
        let short = temp_file("short.csv", b"number,name\n1,a\n2\n3,c\n");
        let mut doc =
            Document::from_value(json!({"id": "p", "file_path": short.to_str().unwrap()})).unwrap();
        let items: Vec<_> = s.process_document(&mut doc).unwrap().unwrap().collect();
        assert_eq!(items.len(), 2, "one child, then the failure");
        assert_eq!(items[0].as_ref().unwrap().id(), "1");
        let err = items[1].as_ref().err().unwrap().to_string();
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn handler_classes_and_xml() {
        let txt = temp_file("secretCSV.txt", CSV);
        let mut s = build_stage(json!({"class": "ApplyFileHandlers", "fileHandlers":
            {"txt": {"class": "com.kmwllc.lucille.core.fileHandler.CSVFileHandler"}}}));
        let docs = children(
            &mut s,
            json!({"id": "t", "file_path": txt.to_str().unwrap()}),
        )
        .unwrap();
        assert_eq!(
            ids(&docs),
            [
                "secretCSV.txt-1",
                "secretCSV.txt-2",
                "secretCSV.txt-3",
                "secretCSV.txt-4"
            ]
        );
        let xml = temp_file(
            "staff.xml",
            b"<company><staff><id>1001</id><name>yong</name></staff>\
              <staff><id>2001</id><name>low</name></staff></company>",
        );
        let mut s = build_stage(json!({"class": "ApplyFileHandlers", "fileHandlers":
            {"xml": {"xmlRootPath": "/company/staff", "xmlIdPath": "/company/staff/id",
                     "encoding": "utf-8", "outputField": "xml"}}}));
        let docs = children(
            &mut s,
            json!({"id": "x", "file_path": xml.to_str().unwrap()}),
        )
        .unwrap();
        assert_eq!(ids(&docs), ["1001", "2001"]);
    }

    #[test]
    fn invalid_configs() {
        assert!(build_err(json!({"class": "ApplyFileHandlers"})).contains("fileHandlers"));
        assert!(
            build_err(json!({"class": "ApplyFileHandlers", "fileHandlers": {}}))
                .contains("at least one")
        );
        let err = build_err(json!({"class": "ApplyFileHandlers", "fileHandlers":
            {"apple": {"class": "com.jakesq24.fileHandler.AppleFileHandler", "sliced": true}}}));
        assert!(err.contains("fileHandlers.apple.class"), "{err}");
        let err = build_err(json!({"class": "ApplyFileHandlers", "fileHandlers": {"pdf": {}}}));
        assert!(err.contains("fileHandlers.pdf"), "{err}");
        let err = build_err(json!({"class": "ApplyFileHandlers",
            "fileHandlers": {"csv": {"idFeild": "number"}}}));
        assert!(err.contains("fileHandlers.csv.idFeild"), "{err}");
        let err = build_err(json!({"class": "ApplyFileHandlers",
            "fileHandlers": {"csv": {}}, "gcp": {"pathToServiceKey": "k"}}));
        assert!(
            err.contains("gcp.pathToServiceKey") && err.contains("service key"),
            "{err}"
        );
    }
}
