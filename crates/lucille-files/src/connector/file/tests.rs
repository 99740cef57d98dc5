use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::accounting::PublisherSettings;
use crate::messaging::{LocalMessenger, WorkerSide};

/// What a handler or the connector produced, in order.
#[derive(Default)]
struct Collect {
    docs: Vec<Document>,
    failures: Vec<(String, String)>,
}

impl RecordSink for Collect {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
        self.docs.push(doc);
        Ok(())
    }
    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError> {
        self.failures.push((id, reason));
        Ok(())
    }
}

impl Collect {
    fn ids(&self) -> Vec<&str> {
        self.docs.iter().map(|d| d.id()).collect()
    }
}

fn data_dir() -> PathBuf {
    crate::test_service::repo_path("tests/data/files")
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "lucille-files-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn copy(&self, names: &[&str]) {
        for n in names {
            std::fs::copy(data_dir().join(n), self.0.join(n)).unwrap();
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn connector(config: Value, base: Option<&Path>) -> Result<FileConnector, ConfigErrors> {
    let mut map = config.as_object().unwrap().clone();
    map.insert("name".into(), json!("files"));
    map.insert("class".into(), json!("FileConnector"));
    FileConnectorOptions::spec().normalize(&mut map);
    // Run from the config's folder (relative paths resolve against the working directory).
    let base = base.map(Path::to_path_buf);
    let paths = crate::config::PathContext::with(base.clone(), base, Vec::new());
    let cc =
        ComponentConfig::new(map.clone(), "connectors[0]").with_paths(std::sync::Arc::new(paths));
    let common = Common {
        name: "files".into(),
        doc_id_prefix: map
            .get("docIdPrefix")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        max_document_bytes: map.get("maxDocumentBytes").and_then(Value::as_u64),
        ..Default::default()
    };
    FileConnector::from_config(&cc, &common)
}

fn run_files(c: &FileConnector) -> Collect {
    let mut sink = Collect::default();
    for f in c.list_files().unwrap() {
        c.read_file(&f, &mut sink).unwrap();
    }
    sink
}

fn csv_handler(config: Value) -> csv::CsvHandler {
    let cc = ComponentConfig::new(config.as_object().unwrap().clone(), "h");
    csv::CsvHandler::from_config(&cc, "").unwrap()
}

fn read_with(
    handler: &dyn FileHandler,
    bytes: &[u8],
    name: &str,
) -> (Collect, Result<(), HandlerError>) {
    let mut sink = Collect::default();
    let source = FileSource {
        path: format!("/data/{name}"),
        name: name.into(),
        max_bytes: None,
    };
    let mut input: &[u8] = bytes;
    let r = handler.process(&mut input, &source, &mut sink);
    (sink, r)
}

// ----- CSV -----

#[test]
fn csv_rows_become_documents_and_a_short_row_fails_with_its_line() {
    let bytes = std::fs::read(data_dir().join("books.csv")).unwrap();
    let (sink, r) = read_with(&csv_handler(json!({})), &bytes, "books.csv");
    r.unwrap();
    assert_eq!(sink.ids(), ["books.csv-1", "books.csv-2", "books.csv-4"]);
    let d = &sink.docs[1];
    assert_eq!(d.get_str("title"), Some("Emma, a novel"));
    assert_eq!(d.get_str("filename"), Some("books.csv"));
    assert_eq!(d.get_str("source"), Some("/data/books.csv"));
    assert_eq!(d.get("csvLineNumber"), Some(&json!(2)));
    assert!(!d.has("id_column_copy"));
    assert_eq!(sink.failures.len(), 1);
    let (id, reason) = &sink.failures[0];
    assert_eq!(id, "/data/books.csv:line4");
    assert_eq!(
        reason,
        "/data/books.csv: line 4: row has 2 columns but the header has 3"
    );
}

#[test]
fn csv_id_fields_separator_lowercase_and_ignored_terms() {
    let text = "ID;Part;Note\n1;a;keep\n2;b;N/A\n";
    let h = csv_handler(json!({
        "idFields": ["ID", "Part"], "separatorChar": ";", "lowercaseFields": true,
        "ignoredTerms": ["N/A"], "docIdPrefix": "p-"
    }));
    let (sink, r) = read_with(&h, text.as_bytes(), "parts.csv");
    r.unwrap();
    assert_eq!(sink.ids(), ["p-1_a", "p-2_b"]);
    assert_eq!(sink.docs[0].get_str("note"), Some("keep"));
    assert!(!sink.docs[1].has("note"));
    let h = csv_handler(json!({"idField": "ID", "docIdFormat": "part-%s", "useTabs": true}));
    let (sink, _) = read_with(&h, b"ID\tx\n7\ty\n", "t.tsv");
    assert_eq!(sink.ids(), ["part-7"]);
}

#[test]
fn csv_latin1_row_fails_and_empty_file_gives_nothing() {
    let bytes = std::fs::read(data_dir().join("latin1.csv")).unwrap();
    let (sink, r) = read_with(&csv_handler(json!({})), &bytes, "latin1.csv");
    r.unwrap();
    assert_eq!(sink.ids(), ["latin1.csv-1", "latin1.csv-3"]);
    assert_eq!(sink.failures.len(), 1);
    assert!(sink.failures[0]
        .1
        .contains("line 3: row is not valid UTF-8"));
    let (sink, r) = read_with(&csv_handler(json!({})), b"", "empty.csv");
    r.unwrap();
    assert!(sink.docs.is_empty() && sink.failures.is_empty());
}

#[test]
fn csv_missing_id_column_fails_the_file_and_bad_config_is_rejected() {
    let (sink, r) = read_with(
        &csv_handler(json!({"idField": "nope"})),
        b"a,b\n1,2\n",
        "x.csv",
    );
    assert!(sink.docs.is_empty());
    match r {
        Err(HandlerError::File { reason, .. }) => assert!(reason.contains("no id column \"nope\"")),
        other => panic!("{other:?}"),
    }
    let cc = ComponentConfig::new(
        json!({"separatorChar": ";;", "bogus": 1})
            .as_object()
            .unwrap()
            .clone(),
        "h",
    );
    let errors = csv::CsvHandler::from_config(&cc, "").err().unwrap();
    assert_eq!(errors.0.len(), 2, "{errors:?}");
}

// ----- JSON lines -----

fn json_handler(config: Value) -> json::JsonHandler {
    let cc = ComponentConfig::new(config.as_object().unwrap().clone(), "h");
    json::JsonHandler::from_config(&cc, "").unwrap()
}

#[test]
fn jsonl_lines_bad_lines_fail_with_line_numbers_blank_lines_skipped() {
    let bytes = std::fs::read(data_dir().join("items.jsonl")).unwrap();
    let (sink, r) = read_with(&json_handler(json!({})), &bytes, "items.jsonl");
    r.unwrap();
    assert_eq!(sink.ids(), ["j1", "j2", "j3"]);
    assert_eq!(sink.docs[1].get("tags"), Some(&json!(["a", "b"])));
    let lines: Vec<&str> = sink.failures.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        lines,
        ["/data/items.jsonl:line4", "/data/items.jsonl:line5"]
    );
    assert!(sink.failures[0]
        .1
        .starts_with("/data/items.jsonl: line 4: invalid JSON"));
    assert!(sink.failures[1].1.contains("no usable id field \"id\""));
}

#[test]
fn jsonl_id_field_prefix_ignore_fields_and_old_run_id() {
    let h =
        json_handler(json!({"idField": "key", "docIdPrefix": "k-", "ignoreFields": ["secret"]}));
    let line = br#"{"key": 42, "id": "old", "secret": "x", "run_id": "r0", "v": 1}"#;
    let (sink, r) = read_with(&h, line, "a.json");
    r.unwrap();
    assert_eq!(sink.ids(), ["k-42"]);
    let d = &sink.docs[0];
    assert!(!d.has("secret"));
    assert_eq!(d.run_id(), None);
    assert_eq!(d.get("v"), Some(&json!(1)));
}

#[test]
fn jsonl_id_read_from_the_first_key_agrees_with_the_whole_line() {
    let text = concat!(
        "{\"id\":\"a\",\"x\":}\n", // broken after the id: FAILs as "a"
        "{\"id\":\"b\",\"v\":1,\"id\":\"c\"}\n", // the last duplicate wins, as parsed
        "{\"id\":\"d\",\"\\u0069d\":\"e\"}\n", // also when the key is escaped
        "{ \"id\" : \"f\\\"q\" }\n", // an escaped id: the full scan reads it
        " {\"id\":\"g\"}\n",
        "{\"idx\":\"h\",\"id\":\"i\"}\n", // the first key only looks like the id
    );
    let (sink, r) = read_with(&json_handler(json!({})), text.as_bytes(), "t.jsonl");
    r.unwrap();
    assert_eq!(sink.ids(), ["c", "e", "f\"q", "g", "i"]);
    for d in &sink.docs {
        assert_eq!(
            d.get_str("id"),
            Some(d.id()),
            "the document's id field is its id"
        );
    }
    assert_eq!(sink.failures.len(), 1, "{:?}", sink.failures);
    assert_eq!(sink.failures[0].0, "a");
    assert!(
        sink.failures[0]
            .1
            .starts_with("/data/t.jsonl: line 1: invalid JSON: expected value"),
        "{}",
        sink.failures[0].1
    );
    // With a prefix and a format, the first-key id is formatted as the scanned one is.
    let h = json_handler(json!({"docIdPrefix": "p-", "docIdFormat": "x%sy"}));
    let (sink, r) = read_with(
        &h,
        b"{\"id\":\"1\",\"v\":2}\n{\"v\":3,\"id\":\"2\"}\n",
        "t.jsonl",
    );
    r.unwrap();
    assert_eq!(sink.ids(), ["p-x1y", "p-x2y"]);
}

#[test]
fn jsonl_huge_line_latin1_and_binary_junk() {
    let big = "x".repeat(1 << 20);
    let mut text = format!("{{\"id\":\"big\",\"body\":\"{big}\"}}\n").into_bytes();
    text.extend_from_slice(b"{\"id\":\"l1\",\"name\":\"caf\xe9\"}\r\n{\"id\":\"ok\"}");
    let (sink, r) = read_with(&json_handler(json!({})), &text, "mixed.jsonl");
    r.unwrap();
    assert_eq!(sink.ids(), ["big", "ok"]);
    assert_eq!(sink.docs[0].get_str("body").map(str::len), Some(1 << 20));
    assert_eq!(sink.failures.len(), 1);
    assert_eq!(sink.failures[0].0, "/data/mixed.jsonl:line2");
    let junk = std::fs::read(data_dir().join("junk.bin")).unwrap();
    let (sink, r) = read_with(&json_handler(json!({})), &junk, "junk.jsonl");
    r.unwrap();
    assert!(sink.docs.is_empty());
    // junk.bin has one \n, so two non-blank "lines", each a failure.
    assert_eq!(sink.failures.len(), 2);
}

// ----- XML -----

fn xml_handler(config: Value) -> Result<xml::XmlHandler, ConfigErrors> {
    let cc = ComponentConfig::new(config.as_object().unwrap().clone(), "h");
    xml::XmlHandler::from_config(&cc, "")
}

#[test]
fn xml_elements_become_documents_with_children_attributes_and_raw_xml() {
    let bytes = std::fs::read(data_dir().join("catalog.xml")).unwrap();
    let h = xml_handler(json!({"xmlRootPath": "/catalog/book", "idField": "isbn"})).unwrap();
    let (sink, r) = read_with(&h, &bytes, "catalog.xml");
    r.unwrap();
    assert_eq!(sink.ids(), ["x1", "x2"]);
    let d = &sink.docs[0];
    assert_eq!(d.get_str("title"), Some("A & B"));
    assert_eq!(d.get("author"), Some(&json!(["Ann", "Bob"])));
    assert_eq!(d.get_str("isbn"), Some("x1"));
    let raw = d.get_str("xml").unwrap();
    assert!(
        raw.starts_with("<book isbn=\"x1\">") && raw.ends_with("</book>"),
        "{raw}"
    );
    assert!(raw.contains("A &amp; B"), "{raw}");
    assert_eq!(sink.docs[1].get_str("title"), Some("C <raw>"));
    assert!(sink.failures.is_empty());

    let h = xml_handler(json!({"xmlRootPath": "/catalog/book", "xmlIdPath": "/catalog/book/title", "xmlField": "raw", "docIdPrefix": "t-"})).unwrap();
    let (sink, _) = read_with(&h, &bytes, "catalog.xml");
    assert_eq!(sink.ids(), ["t-A & B", "t-C <raw>"]);
    assert!(sink.docs[0].has("raw") && !sink.docs[0].has("xml"));
    let h = xml_handler(json!({"xmlRootPath": "/catalog/book"})).unwrap();
    let (sink, _) = read_with(&h, &bytes, "catalog.xml");
    assert_eq!(sink.ids(), ["catalog.xml-1", "catalog.xml-2"]);
}

#[test]
fn malformed_xml_keeps_earlier_documents_and_reports_the_byte_position() {
    let bytes = std::fs::read(data_dir().join("broken.xml")).unwrap();
    let h = xml_handler(json!({"xmlRootPath": "/catalog/book", "idField": "isbn"})).unwrap();
    let (sink, r) = read_with(&h, &bytes, "broken.xml");
    assert_eq!(sink.ids(), ["y1", "y2"]);
    match r {
        Err(HandlerError::File { id, reason }) => {
            assert!(id.starts_with("/data/broken.xml:byte"), "{id}");
            assert!(reason.contains("malformed XML at byte"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Truncated file: the open element is named.
    let (sink, r) = read_with(
        &h,
        b"<catalog><book isbn=\"a\"></book><book isbn=\"b\">",
        "cut.xml",
    );
    assert_eq!(sink.ids(), ["a"]);
    assert!(
        matches!(r, Err(HandlerError::File { reason, .. }) if reason.contains("ends inside <book>"))
    );
}

#[test]
fn xml_empty_id_fails_or_is_skipped_and_bad_config_lists_every_error() {
    let text = b"<r><i><k>1</k></i><i><k> </k></i></r>";
    let h = xml_handler(json!({"xmlRootPath": "/r/i", "xmlIdPath": "/r/i/k"})).unwrap();
    let (sink, r) = read_with(&h, text, "e.xml");
    r.unwrap();
    assert_eq!((sink.ids(), sink.failures.len()), (vec!["1"], 1));
    let h = xml_handler(json!({"xmlRootPath": "/r/i", "xmlIdPath": "/r/i/k", "skipEmptyId": true}))
        .unwrap();
    let (sink, _) = read_with(&h, text, "e.xml");
    assert_eq!((sink.ids(), sink.failures.len()), (vec!["1"], 0));
    // Lucille's xpathIdPath is refused with the block's other key problems...
    let errors =
        xml_handler(json!({"xmlRootPath": "/r/i", "xpathIdPath": "k", "skipEmptyId": "x"}))
            .err()
            .unwrap();
    assert_eq!(errors.0.len(), 2, "{errors:?}");
    assert!(
        errors
            .to_string()
            .contains("h.xpathIdPath: is not supported"),
        "{errors}"
    );
    // ...and the values that cannot go together are reported together.
    let errors = xml_handler(json!({"xmlRootPath": "/r/i", "xmlIdPath": "/other/k", "idField": "k", "encoding": "latin-1"})).err().unwrap();
    assert_eq!(errors.0.len(), 3, "{errors:?}");
}

// ----- Connector: traversal, documents, compression, moving -----

#[test]
fn whole_file_documents_have_lucille_fields_and_md5_ids() {
    let dir = TempDir::new("plain");
    dir.copy(&["notes.txt", "junk.bin"]);
    let c = connector(
        json!({"paths": ["."], "docIdPrefix": "file-"}),
        Some(&dir.0),
    )
    .unwrap();
    let sink = run_files(&c);
    assert_eq!(sink.docs.len(), 2);
    let junk_path = std::path::absolute(dir.0.join("junk.bin")).unwrap();
    let junk_path = junk_path.to_string_lossy();
    let junk = &sink.docs[0];
    assert_eq!(junk.id(), format!("file-{}", md5_hex(&junk_path)));
    assert_eq!(junk.get_str(FILE_PATH), Some(junk_path.as_ref()));
    assert_eq!(junk.get_str(FILE_NAME), Some("junk.bin"));
    assert_eq!(junk.get(SIZE), Some(&json!(12)));
    assert_eq!(junk.get_str(CONTENT), Some("AP/+AQIDgIEKDQDI"));
    assert!(junk.get_str(MODIFIED).unwrap().ends_with('Z'));
    assert_eq!(sink.docs[1].get_str(CONTENT), Some("plain text notes\n"));

    let c = connector(
        json!({"paths": ["."], "fileOptions": {"getFileContent": false}}),
        Some(&dir.0),
    )
    .unwrap();
    let sink = run_files(&c);
    assert!(sink.docs.iter().all(|d| !d.has(CONTENT) && d.has(SIZE)));
    let c = connector(
        json!({"paths": ["notes.txt"], "contentFormat": "base64"}),
        Some(&dir.0),
    )
    .unwrap();
    let sink = run_files(&c);
    assert_eq!(
        sink.docs[0].get_str(CONTENT),
        Some("cGxhaW4gdGV4dCBub3Rlcwo=")
    );
}

#[test]
fn traversal_recurses_globs_filters_and_cutoff() {
    let dir = TempDir::new("walk");
    std::fs::create_dir_all(dir.0.join("a/b")).unwrap();
    for f in ["top.txt", "a/one.csv", "a/b/two.txt", "a/b/skip.log"] {
        std::fs::write(dir.0.join(f), "x").unwrap();
    }
    let names = |c: &FileConnector| -> Vec<String> {
        c.list_files()
            .unwrap()
            .iter()
            .map(|p| {
                Path::new(p.path())
                    .strip_prefix(std::path::absolute(&dir.0).unwrap())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    let c = connector(json!({"paths": "."}), Some(&dir.0)).unwrap();
    assert_eq!(
        names(&c),
        ["a/b/skip.log", "a/b/two.txt", "a/one.csv", "top.txt"]
    );
    let c = connector(json!({"paths": ["a/**/*.txt", "top.txt"]}), Some(&dir.0)).unwrap();
    assert_eq!(names(&c), ["a/b/two.txt", "top.txt"]);
    let c = connector(
        json!({"paths": ["."], "excludes": [".*\\.log"], "includes": [".*/a/.*"]}),
        Some(&dir.0),
    )
    .unwrap();
    assert_eq!(names(&c), ["a/b/two.txt", "a/one.csv"]);
    // Lucille's nested filterOptions; regexes match the whole path.
    let c = connector(
        json!({"pathToStorage": ".", "filterOptions": {"includes": ["txt"]}}),
        Some(&dir.0),
    )
    .unwrap();
    assert!(names(&c).is_empty());
    // Cutoff: age one file past it.
    let old = std::fs::File::options()
        .write(true)
        .open(dir.0.join("top.txt"))
        .unwrap();
    old.set_modified(SystemTime::now() - Duration::from_secs(3 * 86400))
        .unwrap();
    let c = connector(
        json!({"paths": ["."], "modifiedCutoff": "2d"}),
        Some(&dir.0),
    )
    .unwrap();
    assert_eq!(names(&c), ["a/b/skip.log", "a/b/two.txt", "a/one.csv"]);
    let c = connector(
        json!({"paths": ["."], "filterOptions": {"lastModifiedCutoff": 1000}}),
        Some(&dir.0),
    )
    .unwrap();
    assert_eq!(names(&c).len(), 3);
    let c = connector(json!({"paths": ["missing"]}), Some(&dir.0)).unwrap();
    assert!(c.list_files().unwrap_err().0.contains("does not exist"));
}

#[test]
fn bad_config_is_rejected_with_every_error() {
    // The values of the connector's keys first, every problem at once...
    let e = connector(
        json!({"paths": ["."], "modifiedCutoff": "soon", "readerThreads": 0,
               "contentFormat": "pdf", "includs": []}),
        None,
    )
    .err()
    .unwrap();
    let text = e.to_string();
    for needle in [
        "connectors[0].modifiedCutoff: ",
        "soon",
        "connectors[0].readerThreads: must be at least 1",
        "connectors[0].contentFormat: must be one of auto, text, base64",
        "connectors[0].includs: unknown key \"includs\" (did you mean \"includes\"?)",
    ] {
        assert!(text.contains(needle), "{needle} missing from {text}");
    }
    assert_eq!(e.0.len(), 4, "{text}");
    // ...then what they say, with the nested blocks (each problem at its full key path).
    let e = connector(
        json!({"paths": ["."], "includes": ["("],
               "fileHandlers": {"pdf": {}, "csv": {"separatorChar": "ab"}, "jsonl": {"idFeild": "x"}},
               "getFileContent": true, "fileOptions": {"getFileContent": false},
               "filterOptions": {"publishMode": "sometimes", "modifiedCutoff": "1d"},
               "checkpoint": {}, "state": {"runsBeforeExpiration": 2}}),
        None,
    )
    .err()
    .unwrap();
    let text = e.to_string();
    for needle in [
        "connectors[0].includes: invalid regex",
        "connectors[0].fileHandlers.pdf: unknown file handler \"pdf\"; known: csv, json, jsonl, xml, documents",
        "connectors[0].fileHandlers.csv.separatorChar: must be one ASCII character",
        "connectors[0].fileHandlers.jsonl.idFeild: unknown key \"idFeild\" (did you mean \"idField\"?)",
        "connectors[0].fileOptions.getFileContent: is also given as \"getFileContent\" at the top level; give only one",
        "connectors[0].filterOptions.publishMode: must be one of incremental, full",
        "connectors[0].checkpoint.path: missing required key \"path\"",
        "connectors[0].state.runsBeforeExpiration: must be 1 here, found 2",
    ] {
        assert!(text.contains(needle), "{needle} missing from {text}");
    }
    assert_eq!(e.0.len(), 8, "{text}");
}

#[test]
fn lucilles_nested_keys_and_the_checkpoint_settings() {
    let dir = TempDir::new("nested");
    let c = connector(
        json!({"paths": ["."], "filterOptions": {"lastModifiedCutoff": "2d", "includes": [".*x"],
               "lastPublishedCutoff": "6h", "publishMode": "INCREMENTAL", "sendTombstones": true},
               "fileOptions": {"contentFormat": "base64", "handleArchivedFiles": false},
               "state": {"connectionString": "jdbc:sqlite:s.db", "tableName": "t",
                         "performDeletions": false, "jdbcUser": "u"},
               "deletionMarkerField": "gone"}),
        Some(&dir.0),
    )
    .unwrap();
    let s = &c.settings;
    assert_eq!(s.modified_cutoff, Some(Duration::from_secs(2 * 86400)));
    assert_eq!(s.includes.len(), 1);
    assert_eq!(s.content_format, ContentFormat::Base64);
    assert!(!s.handle_archives && s.handle_compressed && s.get_file_content);
    let r = s.resume.as_ref().unwrap();
    assert!(r.incremental && r.emit_deletes && r.keep_vanished);
    assert_eq!(r.published_cutoff, Some(Duration::from_secs(6 * 3600)));
    assert_eq!(r.namespace.as_deref(), Some("t"));
    assert_eq!(
        (r.marker_field.as_str(), r.marker_value.as_str()),
        ("gone", "true")
    );
    assert!(r.path.ends_with("s.db"), "{:?}", r.path);
    // The third name of the modification cutoff, and both names at once.
    let c = connector(
        json!({"paths": ["."], "filterOptions": {"modifiedCutoff": 1000}}),
        Some(&dir.0),
    )
    .unwrap();
    assert_eq!(c.settings.modified_cutoff, Some(Duration::from_secs(1)));
    let e = connector(
        json!({"paths": ["."], "filterOptions": {"modifiedCutoff": 1000, "lastModifiedCutoff": 5}}),
        Some(&dir.0),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("connectors[0].filterOptions.modifiedCutoff") && e.contains("give only one"),
        "{e}"
    );
    // A checkpoint and the flat keys; a key that needs one without it.
    let c = connector(
        json!({"paths": ["."], "checkpoint": {"path": "cp.sqlite"}, "incremental": true}),
        Some(&dir.0),
    )
    .unwrap();
    let r = c.settings.resume.as_ref().unwrap();
    assert!(r.incremental && !r.emit_deletes && r.marker_field == "is_deleted");
    let e = connector(json!({"paths": ["."], "emitDeletes": true}), Some(&dir.0))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("connectors[0].emitDeletes: needs checkpoint"),
        "{e}"
    );
}

#[test]
fn the_options_of_lucilles_single_format_connectors_are_the_defaults() {
    let map = json!({"name": "c", "class": "FileConnector", "paths": ["a.csv"],
                     "moveToErrorFolder": "err"});
    let config = ComponentConfig::new(map.as_object().unwrap().clone(), "connectors[0]");
    assert_eq!(
        FileConnectorOptions::from_config(&config).unwrap(),
        FileConnectorOptions::of_paths(vec!["a.csv".into()], None, Some("err".into()))
    );
}

#[test]
fn lucille_doc_describes_every_key() {
    for spec in [
        FileConnectorOptions::spec(),
        FilterOptions::spec(),
        FileOptions::spec(),
    ] {
        for p in spec.properties() {
            assert!(!p.description.is_empty(), "{} has no description", p.name);
        }
    }
    let doc = crate::config::options::describe("FileConnector", &FileConnectorOptions::spec());
    for line in [
        "  paths (a string or a list of strings), required: Files, folders",
        "  readerThreads (an integer), default 2, at least 1: Threads reading files at once",
        "  s3 (an object): S3 for s3:// paths",
        "  maxDocumentBytes (an integer): a record larger than this many bytes FAILs",
    ] {
        assert!(doc.contains(line), "{line:?} missing from\n{doc}");
    }
}

#[test]
fn handlers_by_extension_gzip_and_zip_entries() {
    let dir = TempDir::new("compressed");
    dir.copy(&["more.jsonl.gz", "bundle.zip"]);
    let c = connector(
        json!({"paths": ["."], "fileHandlers": {"jsonl": {}, "csv": {"idField": "id"}}}),
        Some(&dir.0),
    )
    .unwrap();
    let sink = run_files(&c);
    let zip_path = std::path::absolute(dir.0.join("bundle.zip")).unwrap();
    let zip_path = zip_path.to_string_lossy();
    assert_eq!(sink.ids()[..2], ["z1", "z2"]);
    let readme = &sink.docs[2];
    assert_eq!(readme.id(), md5_hex(&format!("{zip_path}!readme.txt")));
    assert_eq!(readme.get_str(CONTENT), Some("zip text"));
    assert_eq!(readme.get_str(FILE_NAME), Some("readme.txt"));
    assert_eq!(
        sink.docs[0].get_str("source").unwrap(),
        format!("{zip_path}!inner/rows.csv")
    );
    assert_eq!(sink.ids()[3..], ["g1", "g2"]);
    assert_eq!(sink.failures.len(), 1);
    assert!(
        sink.failures[0]
            .1
            .ends_with("more.jsonl.gz: line 3: invalid JSON: expected value at line 1 column 1"),
        "{:?}",
        sink.failures
    );
    // With archive handling off, the zip is one opaque document.
    let c = connector(
        json!({"paths": ["bundle.zip"], "fileOptions": {"handleArchivedFiles": false}}),
        Some(&dir.0),
    )
    .unwrap();
    let sink = run_files(&c);
    assert_eq!(sink.docs.len(), 1);
    assert_eq!(sink.docs[0].get(SIZE), Some(&json!(245)));
}

#[test]
fn move_after_processing_and_to_error_folder() {
    let dir = TempDir::new("move");
    std::fs::create_dir_all(dir.0.join("in")).unwrap();
    std::fs::copy(data_dir().join("catalog.xml"), dir.0.join("in/catalog.xml")).unwrap();
    std::fs::copy(data_dir().join("broken.xml"), dir.0.join("in/broken.xml")).unwrap();
    let c = connector(
        json!({"paths": ["in"], "fileHandlers": {"xml": {"xmlRootPath": "/catalog/book", "idField": "isbn"}},
               "fileOptions": {"moveToAfterProcessing": "done", "moveToErrorFolder": "error"}}),
        Some(&dir.0),
    )
    .unwrap();
    let (p, m) = publisher();
    c.read_all(&c.list_files().unwrap(), &p).unwrap();
    // As the runner does after a connector: what the publisher holds for a block is sent.
    p.flush().unwrap();
    assert!(dir.0.join("done/catalog.xml").exists());
    assert!(dir.0.join("error/broken.xml").exists());
    assert!(!dir.0.join("in/catalog.xml").exists() && !dir.0.join("in/broken.xml").exists());
    assert_eq!(drain(&m).len(), 4);
    assert_eq!(p.counts().published, 5); // four documents and the malformed-XML failure
}

fn publisher() -> (Arc<Publisher>, Arc<LocalMessenger>) {
    let m = Arc::new(LocalMessenger::new(100_000));
    let p = Arc::new(Publisher::new(
        Arc::from("run"),
        m.clone(),
        PublisherSettings::default(),
        Arc::new(AtomicBool::new(false)),
    ));
    (p, m)
}

fn drain(m: &LocalMessenger) -> Vec<Document> {
    let mut out = Vec::new();
    while let Some(d) = m.poll_doc_to_process(Duration::from_millis(1)) {
        out.push(d.into_document().unwrap());
    }
    out
}

#[test]
fn parallel_readers_keep_each_files_order() {
    let dir = TempDir::new("parallel");
    for f in 0..6 {
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(dir.0.join(format!("f{f}.jsonl"))).unwrap(),
        );
        for n in 0..2000 {
            writeln!(w, "{{\"id\":\"f{f}-{n}\",\"n\":{n}}}").unwrap();
        }
    }
    let c = connector(
        json!({"paths": ["."], "readerThreads": 3, "fileHandlers": {"jsonl": {}}}),
        Some(&dir.0),
    )
    .unwrap();
    let (p, m) = publisher();
    c.read_all(&c.list_files().unwrap(), &p).unwrap();
    // As the runner does after a connector: what the publisher holds for a block is sent.
    p.flush().unwrap();
    let docs = drain(&m);
    assert_eq!(docs.len(), 12_000);
    let mut last: HashMap<String, i64> = HashMap::new();
    for d in &docs {
        let (file, _) = d.id().split_once('-').unwrap();
        let n = d.get("n").and_then(Value::as_i64).unwrap();
        let prev = last.insert(file.to_string(), n).unwrap_or(-1);
        assert_eq!(n, prev + 1, "file {file} out of order");
    }
    assert_eq!(p.counts().published, 12_000);
}

#[test]
fn full_run_in_test_mode_counts_every_record_and_failure() {
    use crate::runner::{run, test_history, RunMode, RunOptions};
    let dir = TempDir::new("run");
    dir.copy(&[
        "books.csv",
        "items.jsonl",
        "catalog.xml",
        "broken.xml",
        "empty.csv",
        "notes.txt",
    ]);
    let config = json!({
        "connectors": [{"name": "files", "class": "com.kmwllc.lucille.connector.FileConnector",
            "pipeline": "p", "paths": [dir.0.to_string_lossy()],
            "fileHandlers": {"csv": {}, "jsonl": {}, "xml": {"xmlRootPath": "/catalog/book", "idField": "isbn"}}}],
        "pipelines": [{"name": "p", "stages": []}]
    });
    let opts = RunOptions {
        mode: RunMode::Test,
        ..Default::default()
    };
    let r = run(&config, None, &opts).unwrap();
    let c = &r.connectors[0];
    // books.csv 3 + 1 bad row; items.jsonl 3 + 2 bad lines; catalog.xml 2; broken.xml 2 + 1
    // malformed; notes.txt 1; empty.csv nothing.
    assert_eq!(
        (c.published, c.succeeded, c.failed),
        (15, 11, 4),
        "{}",
        r.summary
    );
    let (docs, events) = test_history(&r);
    let mut ids: Vec<&str> = docs.iter().map(|d| d.id()).collect();
    ids.sort();
    assert_eq!(ids.len(), 11);
    assert!(ids.contains(&"books.csv-4") && ids.contains(&"x2") && ids.contains(&"y2"));
    let fails: Vec<_> = events
        .iter()
        .filter(|e| e.kind == crate::accounting::EventType::Fail)
        .collect();
    assert_eq!(fails.len(), 4);
    assert!(fails.iter().any(|e| e
        .message
        .as_deref()
        .unwrap_or("")
        .contains("items.jsonl: line 4: invalid JSON")));
}

// ----- maxDocumentBytes -----

fn read_max(
    handler: &dyn FileHandler,
    bytes: &[u8],
    name: &str,
    max: u64,
) -> (Collect, Result<(), HandlerError>) {
    let mut sink = Collect::default();
    let source = FileSource {
        path: format!("/data/{name}"),
        name: name.into(),
        max_bytes: Some(max),
    };
    let mut input = std::io::BufReader::with_capacity(64, bytes);
    let r = handler.process(&mut input, &source, &mut sink);
    (sink, r)
}

#[test]
fn a_line_over_the_limit_is_skipped_to_its_end_without_being_held() {
    let big = format!("{{\"id\":\"big\",\"body\":\"{}\"}}", "x".repeat(1 << 20));
    let text = format!("{{\"id\":\"a\"}}\n{big}\r\n{{\"id\":\"b\"}}\r\n{big}");
    let mut input = std::io::BufReader::with_capacity(64, text.as_bytes());
    let mut buf = Vec::new();
    let mut seen = Vec::new();
    loop {
        match read_line_max(&mut input, &mut buf, Some(100)).unwrap() {
            Line::Eof => break,
            Line::Read => seen.push(String::from_utf8(buf.clone()).unwrap()),
            Line::TooLong => seen.push("TOO LONG".into()),
        }
        // Never more than the limit (and a chunk) held, however long the line.
        assert!(buf.capacity() < 1024, "{}", buf.capacity());
    }
    assert_eq!(
        seen,
        ["{\"id\":\"a\"}", "TOO LONG", "{\"id\":\"b\"}", "TOO LONG"]
    );
    // Exactly the limit is allowed, one more byte is not (line endings do not count).
    for (line, want) in [("12345\r\n", Line::Read), ("123456\n", Line::TooLong)] {
        let mut input = line.as_bytes();
        assert_eq!(read_line_max(&mut input, &mut buf, Some(5)).unwrap(), want);
    }
}

#[test]
fn jsonl_record_over_max_document_bytes_fails_with_its_line_and_the_file_goes_on() {
    let big = format!("{{\"id\":\"big\",\"body\":\"{}\"}}", "x".repeat(5000));
    let text = format!("{{\"id\":\"a\"}}\n{big}\n{{\"id\":\"b\"}}\n");
    let (sink, r) = read_max(&json_handler(json!({})), text.as_bytes(), "m.jsonl", 1000);
    r.unwrap();
    assert_eq!(sink.ids(), ["a", "b"]);
    assert_eq!(sink.failures.len(), 1);
    assert_eq!(sink.failures[0].0, "/data/m.jsonl:line2");
    assert!(
        sink.failures[0].1.starts_with(
            "/data/m.jsonl: line 2: the record is larger than maxDocumentBytes (1000)"
        ),
        "{}",
        sink.failures[0].1
    );
}

#[test]
fn csv_row_over_max_document_bytes_fails_with_its_line() {
    let text = format!("id,body\n1,short\n2,{}\n3,fine\n", "y".repeat(3000));
    let (sink, r) = read_max(&csv_handler(json!({})), text.as_bytes(), "m.csv", 1000);
    r.unwrap();
    assert_eq!(sink.ids(), ["m.csv-1", "m.csv-3"]);
    assert_eq!(sink.failures.len(), 1);
    assert_eq!(sink.failures[0].0, "/data/m.csv:line3");
    assert!(
        sink.failures[0]
            .1
            .contains("line 3: the record is larger than maxDocumentBytes (1000)"),
        "{}",
        sink.failures[0].1
    );
}

#[test]
fn xml_element_over_max_document_bytes_fails_at_its_byte_and_the_file_goes_on() {
    let text = format!(
        "<catalog><book><isbn>a</isbn></book><book><isbn>big</isbn><body>{}</body><more>{}</more></book><book><isbn>b</isbn></book></catalog>",
        "z".repeat(800),
        "w".repeat(800)
    );
    let h = xml_handler(json!({"xmlRootPath": "/catalog/book", "idField": "isbn"})).unwrap();
    let (sink, r) = read_max(&h, text.as_bytes(), "m.xml", 500);
    r.unwrap();
    assert_eq!(sink.ids(), ["a", "b"]);
    assert_eq!(sink.failures.len(), 1);
    let start = text.find("<book><isbn>big").unwrap();
    assert_eq!(sink.failures[0].0, format!("/data/m.xml:byte{start}"));
    assert!(
        sink.failures[0]
            .1
            .contains("larger than maxDocumentBytes (500)"),
        "{}",
        sink.failures[0].1
    );
}

#[test]
fn whole_file_over_max_document_bytes_fails_without_being_read() {
    let dir = TempDir::new("maxbytes");
    dir.copy(&["notes.txt", "junk.bin"]);
    // notes.txt has 17 bytes, junk.bin 12.
    let c = connector(
        json!({"paths": ["."], "maxDocumentBytes": 12}),
        Some(&dir.0),
    )
    .unwrap();
    let sink = run_files(&c);
    assert_eq!(sink.docs.len(), 1);
    assert_eq!(sink.docs[0].get_str(FILE_NAME), Some("junk.bin"));
    assert_eq!(sink.failures.len(), 1);
    assert!(
        sink.failures[0]
            .1
            .ends_with("notes.txt: the file is larger than maxDocumentBytes (12); not read"),
        "{}",
        sink.failures[0].1
    );
}

mod cloud;
