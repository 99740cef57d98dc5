use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::document::Document;
use crate::indexer::{IndexerHandle, IndexerSettings};
use crate::messaging::{LocalMessenger, PublisherSide, WorkerSide};

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lucille-tantivy-{}",
        crate::document::ids::random_id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn upsert(id: &str, v: Value) -> IndexOp {
    IndexOp::Upsert {
        id: id.into(),
        index: None,
        fields: obj(v).into_iter().collect(),
        children: Default::default(),
        routing: None,
        version: None,
    }
}

fn del(id: &str) -> IndexOp {
    IndexOp::DeleteById {
        id: id.into(),
        index: None,
        routing: None,
        version: None,
    }
}

fn backend(path: &Path, defs: Vec<FieldDef>) -> TantivyBackend {
    let mut b = TantivyBackend::new(path.to_path_buf(), defs, 32, None);
    b.validate_connection().unwrap();
    b
}

fn ids(path: &Path, query: &str) -> Vec<String> {
    let mut v: Vec<String> = search(path, query, 100)
        .unwrap()
        .into_iter()
        .map(|h| h.doc["id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn def(name: &str, kind: &str) -> FieldDef {
    FieldDef {
        name: name.into(),
        kind: kind.into(),
        stored: true,
        fast: false,
    }
}

#[test]
fn dynamic_schema_upserts_and_keeps_the_stored_shape() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![]);
    let doc = json!({"title": "Parse JSON text", "tags": ["a", "b"], "n": 3, "x": 1.5,
                     "when": "2024-01-02T03:04:05Z", "nested": {"k": "deep word"}, "ok": true});
    assert_eq!(
        b.send(&[
            upsert("d1", doc.clone()),
            upsert("d2", json!({"title": "other"}))
        ])
        .unwrap(),
        vec![None, None]
    );
    b.close().unwrap();
    let hits = search(&dir, "parse", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].score > 0.0);
    let mut want = obj(json!({"id": "d1"}));
    want.extend(obj(doc));
    assert_eq!(hits[0].doc, want);
    // Field-qualified queries on fields without a type go to the JSON field.
    assert_eq!(ids(&dir, "title:other"), vec!["d2"]);
    assert_eq!(ids(&dir, "n:3"), vec!["d1"]);
    assert_eq!(ids(&dir, "nested.k:deep"), vec!["d1"]);
    // The catch-all field holds nested strings and list elements too.
    assert_eq!(ids(&dir, "deep AND b"), vec!["d1"]);
    assert_eq!(ids(&dir, "id:\"d2\""), vec!["d2"]);
}

#[test]
fn upsert_replaces_and_deletes_by_id_and_by_field() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![]);
    b.send(&[
        upsert("a", json!({"author": "ann lee", "v": 1})),
        upsert("b", json!({"author": "bob", "v": 1})),
        upsert("c", json!({"author": "ann lee", "v": 1})),
        upsert("d", json!({"author": "dan", "v": 1})),
    ])
    .unwrap();
    b.send(&[upsert("a", json!({"author": "ann lee", "v": 2}))])
        .unwrap();
    b.close().unwrap();
    let hits = search(&dir, "id:a", 10).unwrap();
    assert_eq!(hits.len(), 1, "upsert replaced, no duplicate");
    assert_eq!(hits[0].doc["v"], json!(2));

    let mut b = backend(&dir, vec![]);
    let r = b
        .send(&[
            del("b"),
            IndexOp::DeleteByField {
                field: "author".into(),
                value: "ann lee".into(),
                index: None,
            },
        ])
        .unwrap();
    assert_eq!(r, vec![None, None]);
    b.close().unwrap();
    assert_eq!(ids(&dir, "*"), vec!["d"]);
}

#[test]
fn ops_in_one_batch_keep_their_order() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![]);
    b.send(&[
        upsert("gone", json!({"t": "x"})),
        del("gone"),
        del("back"),
        upsert("back", json!({"t": "y"})),
    ])
    .unwrap();
    b.close().unwrap();
    assert_eq!(ids(&dir, "*"), vec!["back"]);
}

#[test]
fn typed_fields_fail_only_the_bad_document_and_keep_unknown_fields() {
    let dir = tempdir();
    let defs = vec![
        def("title", "text"),
        def("count", "i64"),
        def("tag", "string"),
        def("day", "date"),
    ];
    let mut b = backend(&dir, defs.clone());
    let r = b
        .send(&[
            upsert(
                "ok",
                json!({"title": "Hello world", "count": 5, "tag": "Red Fish",
                                "day": "2024-05-06", "extra": "kept"}),
            ),
            upsert("bad", json!({"title": "Hello", "count": "abc"})),
            upsert("ok2", json!({"title": "Hello again", "count": "7"})),
        ])
        .unwrap();
    assert_eq!(r[0], None);
    assert!(r[1].as_deref().unwrap().contains("\"count\""), "{r:?}");
    assert_eq!(r[2], None);
    b.close().unwrap();
    assert_eq!(ids(&dir, "hello"), vec!["ok", "ok2"]);
    assert_eq!(ids(&dir, "count:[6 TO 10]"), vec!["ok2"]);
    assert_eq!(ids(&dir, "tag:\"Red Fish\""), vec!["ok"]);
    assert_eq!(ids(&dir, "extra:kept"), vec!["ok"]);
    let hit = &search(&dir, "id:ok", 1).unwrap()[0];
    assert_eq!(hit.doc["count"], json!(5));
    assert_eq!(hit.doc["extra"], json!("kept"));
    assert_eq!(hit.doc["day"], json!("2024-05-06T00:00:00Z"));

    // Reopening with the same fields reuses the index; different fields are an error.
    let mut again = backend(&dir, defs);
    again
        .send(&[upsert("ok3", json!({"title": "hello three"}))])
        .unwrap();
    again.close().unwrap();
    assert_eq!(ids(&dir, "hello"), vec!["ok", "ok2", "ok3"]);
    let mut other = TantivyBackend::new(dir.clone(), vec![def("count", "f64")], 32, None);
    let e = other.validate_connection().unwrap_err();
    assert!(e.message.contains("schema differs"), "{e}");
    // Without configured fields an existing typed index is reused as it is.
    let mut dynamic = backend(&dir, vec![]);
    dynamic.send(&[upsert("ok4", json!({"count": 9}))]).unwrap();
    dynamic.close().unwrap();
    assert_eq!(ids(&dir, "count:9"), vec!["ok4"]);
}

#[test]
fn index_override_writes_a_separate_index() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![]);
    let r = b
        .send(&[
            upsert("main", json!({"t": "x"})),
            IndexOp::Upsert {
                id: "side".into(),
                index: Some("books".into()),
                fields: obj(json!({"t": "x"})).into_iter().collect(),
                children: Default::default(),
                routing: None,
                version: None,
            },
            IndexOp::Upsert {
                id: "evil".into(),
                index: Some("../escape".into()),
                fields: obj(json!({"t": "x"})).into_iter().collect(),
                children: Default::default(),
                routing: None,
                version: None,
            },
        ])
        .unwrap();
    assert_eq!(&r[..2], &[None, None]);
    assert!(r[2].as_deref().unwrap().contains("not a usable index name"));
    b.close().unwrap();
    assert_eq!(ids(&dir, "t:x"), vec!["main"]);
    assert_eq!(ids(&dir.join("books"), "t:x"), vec!["side"]);
}

#[test]
fn config_errors_are_listed_together() {
    let c = ComponentConfig::new(
        obj(
            json!({"path": "i", "writerMemoryMb": 3, "bogus": 1, "fields": {
            "a": {"type": "text"}, "b": {"type": "int"}, "id": {"type": "string"},
            "c": {"type": "i64", "fsat": true}}}),
        ),
        "tantivy",
    );
    let settings = IndexerSettings {
        kind: "tantivy".into(),
        ..IndexerSettings::default()
    };
    let errors: Vec<String> = crate::indexer::validate_backend(&settings, &c)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    let all = errors.join("\n");
    // One error per key: the field definitions' problems are one error on `fields`.
    assert_eq!(errors.len(), 3, "{all}");
    for part in [
        "tantivy.bogus: unknown key",
        "fields.b.type",
        "fields.id",
        "fields.c.fsat",
        "tantivy.writerMemoryMb: must be at least 15",
    ] {
        assert!(all.contains(part), "{part} missing from {all}");
    }
    // Checking opens nothing: no index folder is created.
    let dir = tempdir().join("unopened");
    let c = ComponentConfig::new(obj(json!({"path": dir.to_str().unwrap()})), "tantivy");
    crate::indexer::validate_backend(&settings, &c).unwrap();
    let doc = lucille_core::catalog::describe("tantivy").unwrap();
    assert!(
        doc.contains("  writerMemoryMb (an integer), default 128, at least 15: "),
        "{doc}"
    );
    assert!(!dir.exists());
}

#[test]
fn search_errors_are_clear() {
    let dir = tempdir();
    assert!(matches!(
        search(&dir.join("nope"), "x", 1),
        Err(SearchError::Missing(_))
    ));
    let mut b = backend(&dir, vec![]);
    b.send(&[upsert("a", json!({"t": "x"}))]).unwrap();
    b.close().unwrap();
    let e = search(&dir, "title:(unclosed", 1).unwrap_err();
    assert!(
        matches!(
            e,
            SearchError::Query {
                reason: QueryError::Syntax { position: 15 },
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().starts_with(
            "bad query \"title:(unclosed\": syntax error at character 15 (Tantivy's query syntax:"
        ),
        "{e}"
    );
}

/// The whole indexer loop: id override, blacklist and whitelist, per-document FAIL.
#[test]
fn indexer_loop_applies_overrides_and_filters_into_tantivy() {
    for (filter, kept, dropped) in [
        (json!({"blacklist": ["secret"]}), "title", "secret"),
        (
            json!({"whitelist": ["title", "count", "cid"]}),
            "title",
            "secret",
        ),
    ] {
        let dir = tempdir();
        let mut cfg = obj(json!({"type": "tantivy", "idOverrideField": "cid", "batchSize": 2}));
        cfg.extend(obj(filter));
        let settings = IndexerSettings::from_config(&ComponentConfig::new(cfg, "indexer")).unwrap();
        let tcfg = ComponentConfig::new(
            obj(json!({"path": dir.to_str().unwrap(), "fields": {"count": {"type": "i64"}}})),
            "tantivy",
        );
        let mut b = crate::indexer::build_backend(&settings, &tcfg, crate::indexer::Opening::Fresh)
            .unwrap();
        b.validate_connection().unwrap();
        let m = Arc::new(LocalMessenger::new(100));
        let h = IndexerHandle::start(settings, b, m.clone(), Arc::from("r"), false).unwrap();
        for v in [
            json!({"id": "1", "cid": "c1", "title": "first", "secret": "s", "count": 1}),
            json!({"id": "2", "cid": "c2", "title": "second", "count": "nope"}),
            json!({"id": "3", "title": "third", "secret": "s"}),
        ] {
            m.send_for_indexing(Document::from_value(v).unwrap().into())
                .unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
        h.terminate().unwrap();
        let mut events = Vec::new();
        while let Some(e) = m.try_poll_event() {
            events.push((e.doc_id.clone(), format!("{:?}", e.kind)));
        }
        events.sort();
        assert_eq!(
            events,
            vec![
                ("1".to_string(), "Finish".to_string()),
                ("2".to_string(), "Fail".to_string()),
                ("3".to_string(), "Finish".to_string())
            ]
        );
        assert_eq!(ids(&dir, "*"), vec!["3", "c1"]);
        let first = &search(&dir, "id:c1", 1).unwrap()[0].doc;
        assert!(
            first.contains_key(kept) && !first.contains_key(dropped),
            "{first:?}"
        );
    }
}

#[test]
fn writes_are_visible_after_a_commit_only() {
    let count = |dir: &Path| search(dir, "*", 10).unwrap().len();
    // Without commitEverySecs nothing is visible before close().
    let dir = tempdir();
    let mut b = backend(&dir, vec![]);
    b.send(&[upsert("a", json!({"t": "x"}))]).unwrap();
    assert_eq!(count(&dir), 0);
    b.close().unwrap();
    assert_eq!(count(&dir), 1);
    // With it, a batch sent after the interval has passed is committed by that send.
    let dir = tempdir();
    let mut b = TantivyBackend::new(dir.clone(), vec![], 32, Some(Duration::ZERO));
    b.validate_connection().unwrap();
    b.send(&[upsert("a", json!({"t": "x"}))]).unwrap();
    assert_eq!(count(&dir), 1);
    // An id upserted again after a commit still replaces (not duplicates) its document.
    b.send(&[upsert("a", json!({"t": "y"}))]).unwrap();
    b.close().unwrap();
    let hits = search(&dir, "*", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].doc["t"], json!("y"));
}

#[test]
fn vector_fields_rank_by_cosine_and_come_back_as_floats() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![def("v", "vector"), def("kind", "string")]);
    let r = b
        .send(&[
            upsert(
                "east",
                json!({"v": [1.0, 0.0, 0.0], "kind": "a", "t": "east"}),
            ),
            upsert(
                "north",
                json!({"v": [0.0, 1.0, 0.0], "kind": "a", "t": "north"}),
            ),
            upsert(
                "ne",
                json!({"v": [0.7, 0.7, 0.0], "kind": "b", "t": "northeast"}),
            ),
            upsert("novec", json!({"kind": "a"})),
            upsert("short", json!({"v": [1.0, 0.0], "kind": "a"})),
            upsert("bad", json!({"v": ["x"], "kind": "a"})),
        ])
        .unwrap();
    assert_eq!(r[..5], [None, None, None, None, None]);
    assert!(
        r[5].as_deref().unwrap_or("").contains("not a vector"),
        "{r:?}"
    );
    b.close().unwrap();
    let hits = search_vector(&dir, "v", &[0.9, 0.2, 0.0], None, 10).unwrap();
    let order: Vec<&str> = hits.iter().map(|h| h.doc["id"].as_str().unwrap()).collect();
    // Without a vector, or with one of another length, a document is not ranked.
    assert_eq!(order, ["east", "ne", "north"]);
    assert!((hits[0].score - 0.9 / (0.85f32).sqrt()).abs() < 1e-5);
    assert_eq!(hits[0].doc["v"], json!([1.0, 0.0, 0.0]));
    assert_eq!(hits[0].doc["t"], json!("east"));
    // A text query narrows the documents ranked.
    let hits = search_vector(&dir, "v", &[0.9, 0.2, 0.0], Some("kind:a"), 1).unwrap();
    assert_eq!(hits[0].doc["id"], json!("east"));
    assert_eq!(hits.len(), 1);
    let hits = search_vector(&dir, "v", &[1.0, 0.0, 0.0], Some("northeast"), 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].doc["id"], json!("ne"));
    // Not a vector field, or a zero vector: a query error.
    assert!(matches!(
        search_vector(&dir, "kind", &[1.0], None, 10),
        Err(SearchError::Query {
            reason: QueryError::NotAVectorField(f),
            ..
        }) if f == "kind"
    ));
    assert!(matches!(
        search_vector(&dir, "v", &[0.0, 0.0, 0.0], None, 10),
        Err(SearchError::Query {
            reason: QueryError::BadVector,
            ..
        })
    ));
}

/// Every backend linked here (tantivy and the core's) reads its block through its options.
#[test]
fn every_backend_checks_its_keys() {
    crate::indexer::test_backends::assert_every_backend_checks_its_keys();
}

#[test]
fn each_string_is_indexed_once_and_bare_words_search_every_text_path() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![def("summary", "text")]);
    b.send(&[
        upsert(
            "a",
            json!({"title": "Parse JSON quickly", "author": {"name": "Grace Hopper"},
                           "odd.key": "dotted words", "n": 3, "summary": "a typed summary"}),
        ),
        upsert(
            "b",
            json!({"body": "nothing about parsing", "tags": ["hopper", "x"]}),
        ),
    ])
    .unwrap();
    b.close().unwrap();
    let index = Index::open_in_dir(&dir).unwrap();
    assert!(
        index.schema().get_field(ALL_FIELD).is_err(),
        "no second copy of the text"
    );
    let searcher = index.reader().unwrap().searcher();
    let json = index.schema().get_field(JSON_FIELD).unwrap();
    // Tantivy's JSON term layout as `text_paths` reads it: numbers are not text paths.
    assert_eq!(
        text_paths(&searcher, json).unwrap(),
        ["author.name", "body", "odd\\.key", "tags", "title"]
    );
    // Bare words: any text path (nested, dotted, list) or typed text field.
    assert_eq!(ids(&dir, "hopper"), ["a", "b"]);
    assert_eq!(ids(&dir, "dotted"), ["a"]);
    assert_eq!(ids(&dir, "typed"), ["a"]);
    assert_eq!(
        ids(&dir, "\"parse json\""),
        ["a"],
        "phrases keep their positions"
    );
    assert_eq!(ids(&dir, "+hopper -grace"), ["b"]);
    assert_eq!(ids(&dir, "json AND quickly"), ["a"]);
    // Fields by name, as before.
    assert_eq!(ids(&dir, "title:json"), ["a"]);
    assert_eq!(ids(&dir, "author.name:grace"), ["a"]);
    assert_eq!(ids(&dir, "tags:hopper"), ["b"]);
    assert_eq!(ids(&dir, "n:3"), ["a"]);
    assert_eq!(ids(&dir, "*"), ["a", "b"]);
}

#[test]
fn an_index_of_the_old_layout_is_still_written_and_searched_through_all() {
    let dir = tempdir();
    // The layout before each string was tokenized once: `_all` holds every string again.
    let mut sb = Schema::builder();
    sb.add_text_field(ID_FIELD, STRING | STORED | FAST);
    sb.add_text_field(ALL_FIELD, TEXT);
    let json = JsonObjectOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("default")
            .set_index_option(tantivy::schema::IndexRecordOption::WithFreqsAndPositions),
    );
    sb.add_json_field(JSON_FIELD, json);
    sb.add_text_field(SOURCE_FIELD, STORED);
    Index::create_in_dir(&dir, sb.build()).unwrap();
    let mut b = backend(&dir, vec![]);
    b.send(&[upsert(
        "a",
        json!({"title": "Old layout", "author": {"name": "Ada"}}),
    )])
    .unwrap();
    b.close().unwrap();
    assert_eq!(ids(&dir, "ada"), ["a"]);
    assert_eq!(ids(&dir, "a"), ["a"], "the id is in _all too");
    assert_eq!(ids(&dir, "title:layout"), ["a"]);
}

#[test]
fn writer_threads_are_checked_against_the_memory_and_used() {
    let settings = IndexerSettings {
        kind: "tantivy".into(),
        ..IndexerSettings::default()
    };
    let check = |v: Value| {
        let c = ComponentConfig::new(obj(v), "tantivy");
        crate::indexer::validate_backend(&settings, &c)
            .err()
            .map(|e| {
                e.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            })
    };
    let e = check(json!({"path": "i", "writerThreads": 4, "writerMemoryMb": 30})).unwrap();
    assert!(
        e.contains("tantivy.writerThreads: 4 threads need writerMemoryMb of at least 60"),
        "{e}"
    );
    let e = check(json!({"path": "i", "writerThreads": 9})).unwrap();
    assert!(
        e.contains("tantivy.writerThreads: must be between 1 and 8"),
        "{e}"
    );
    assert_eq!(
        check(json!({"path": "i", "writerThreads": 2, "writerMemoryMb": 30})),
        None
    );
    // Used: one thread writes one segment per commit.
    let dir = tempdir();
    let c = ComponentConfig::new(
        obj(json!({"path": dir.to_str().unwrap(), "writerThreads": 1, "writerMemoryMb": 64})),
        "tantivy",
    );
    let mut b = TantivyBackend::from_config(&c).unwrap();
    b.validate_connection().unwrap();
    let ops: Vec<IndexOp> = (0..50)
        .map(|i| upsert(&format!("d{i}"), json!({"t": "x"})))
        .collect();
    b.send(&ops).unwrap();
    b.commit().unwrap();
    let index = Index::open_in_dir(&dir).unwrap();
    assert_eq!(index.searchable_segment_ids().unwrap().len(), 1);
    b.close().unwrap();
    assert_eq!(ids(&dir, "x").len(), 50);
}

/// How many mappings of `file` the process has.
#[cfg(target_os = "linux")]
fn mappings_of(file: &Path) -> usize {
    let file = file.canonicalize().unwrap();
    let file = file.to_str().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.ends_with(file))
        .count()
}

#[test]
#[cfg(target_os = "linux")]
fn the_writer_directory_maps_files_afresh_and_unmaps_what_nobody_holds() {
    use tantivy::directory::Directory as _;
    let dir = tempdir();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let file = dir.join("f.bin");
    std::fs::write(&file, &data).unwrap();
    let d = directory::WriterDirectory::with_limits(
        &dir,
        directory::Limits {
            remap_every: 10_000,
            own_mapping: 50_000,
        },
    )
    .unwrap();
    let h = d.get_file_handle(Path::new("f.bin")).unwrap();
    assert_eq!(h.len(), data.len());
    // 0..4000 and 4000..8000 are read in the mapping made at open; 8000..12000 too (the
    // generation counts the bytes read before it); 12,000 bytes read: the next read maps anew.
    let a = h.read_bytes(0..4000).unwrap();
    let b = h.read_bytes(4000..8000).unwrap();
    let c = h.read_bytes(8000..12000).unwrap();
    let base = a.as_slice().as_ptr();
    assert_eq!(b.as_slice().as_ptr(), base.wrapping_add(4000));
    assert_eq!(c.as_slice().as_ptr(), base.wrapping_add(8000));
    assert_eq!(mappings_of(&file), 1);
    let e = h.read_bytes(12_000..13_000).unwrap();
    assert_ne!(e.as_slice().as_ptr(), base.wrapping_add(12_000));
    assert_eq!(e.as_slice(), &data[12_000..13_000]);
    assert_eq!(
        mappings_of(&file),
        2,
        "the old mapping is still held by a, b and c"
    );
    drop((a, b, c));
    assert_eq!(
        mappings_of(&file),
        1,
        "nobody holds the old mapping: unmapped"
    );
    // A large read has a mapping of its own, gone with its bytes.
    let big = h.read_bytes(100_000..200_000).unwrap();
    assert_eq!(big.as_slice(), &data[100_000..]);
    assert_eq!(mappings_of(&file), 2);
    drop(big);
    assert_eq!(mappings_of(&file), 1);
    assert_eq!(e.as_slice(), &data[12_000..13_000]);
    drop((e, h));
    assert_eq!(mappings_of(&file), 0);
    // Empty files read as empty.
    std::fs::write(dir.join("empty"), b"").unwrap();
    let h = d.get_file_handle(Path::new("empty")).unwrap();
    assert_eq!(h.len(), 0);
    assert!(h.read_bytes(0..0).unwrap().is_empty());
    assert!(matches!(
        d.get_file_handle(Path::new("missing")),
        Err(tantivy::directory::error::OpenReadError::FileDoesNotExist(
            _
        ))
    ));
}

#[test]
fn merges_through_the_writer_directory_keep_every_document() {
    // Every read remaps and every read of 1 KB or more has its own mapping: the merger reads
    // postings, positions, doc stores (stacked whole) and fast fields through both.
    let dir = tempdir();
    let d = directory::WriterDirectory::with_limits(
        &dir,
        directory::Limits {
            remap_every: 1,
            own_mapping: 1024,
        },
    )
    .unwrap();
    let index = Index::create(d, build_schema(&[]), tantivy::IndexSettings::default()).unwrap();
    let layout = Layout::of(index.schema()).unwrap();
    let mut w = writer_with(&index, 15, Some(1)).unwrap();
    w.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    let body = "lorem ipsum dolor sit amet ".repeat(40);
    for seg in 0..4 {
        for i in 0..300 {
            let fields = obj(json!({"n": i, "body": format!("{body} seg{seg} doc{i}")}));
            let id = format!("s{seg}-{i}");
            let doc = layout
                .document_owned(&id, fields.into_iter().collect())
                .unwrap();
            w.add_document(doc).unwrap();
        }
        w.commit().unwrap();
    }
    let segments = index.searchable_segment_ids().unwrap();
    assert_eq!(segments.len(), 4);
    w.merge(&segments).wait().unwrap();
    w.wait_merging_threads().unwrap();
    let reopened = Index::open_in_dir(&dir).unwrap();
    assert_eq!(reopened.searchable_segment_ids().unwrap().len(), 1);
    assert_eq!(ids(&dir, "lorem").len(), 100, "search's limit");
    assert_eq!(ids(&dir, "seg2").len(), 100);
    assert_eq!(ids(&dir, "doc7"), ["s0-7", "s1-7", "s2-7", "s3-7"]);
    let hit = search(&dir, "seg3 AND doc299", 10).unwrap();
    assert_eq!(hit.len(), 1);
    assert_eq!(hit[0].doc["n"], json!(299));
    assert_eq!(
        hit[0].doc["body"].as_str().unwrap(),
        format!("{body} seg3 doc299")
    );
    let searcher = reopened.reader().unwrap().searcher();
    assert_eq!(searcher.num_docs(), 1200);
}

/// Sends `docs` to a fresh backend with one indexing thread, watching its queue: the most
/// units queued at once, and the index's document count at the end.
fn queue_peak(docs: Vec<IndexOp>) -> (usize, u64) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let dir = tempdir();
    let mut b = TantivyBackend::new(dir.clone(), vec![], 15, None).with_writer_threads(Some(1));
    b.validate_connection().unwrap();
    let queue = b.targets[&None].queue.clone();
    let (peak, done) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let watch = {
        let (queue, peak, done) = (queue.clone(), peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(SeqCst) {
                peak.fetch_max(queue.queued.load(SeqCst), SeqCst);
                std::thread::sleep(Duration::from_micros(100));
            }
        })
    };
    for chunk in docs.chunks(500) {
        assert!(b.send(chunk).unwrap().iter().all(Option::is_none));
    }
    b.commit().unwrap();
    assert_eq!(queue.queued.load(SeqCst), 0, "every ticket is given back");
    done.store(true, SeqCst);
    watch.join().unwrap();
    b.close().unwrap();
    let searcher = Index::open_in_dir(&dir)
        .unwrap()
        .reader()
        .unwrap()
        .searcher();
    (peak.load(SeqCst), searcher.num_docs())
}

#[test]
fn the_writer_holds_at_most_max_queued_units_of_documents_and_loses_none() {
    let n = 3 * MAX_QUEUED + 7;
    let small: Vec<IndexOp> = (0..n)
        .map(|i| upsert(&format!("d{i}"), json!({"t": "word", "i": i})))
        .collect();
    let (peak, count) = queue_peak(small);
    assert!(peak <= MAX_QUEUED, "{peak}");
    assert_eq!(count, n as u64);
    // A 41 KB body is ~83 KB of document data (`_source` and `_fields`): 21 units. Under
    // `MAX_QUEUED` the backend adds one more document.
    let body = "lorem ipsum dolor ".repeat(2300);
    let big: Vec<IndexOp> = (0..300)
        .map(|i| upsert(&format!("b{i}"), json!({"body": body, "i": i})))
        .collect();
    let (peak, count) = queue_peak(big);
    assert!(peak < MAX_QUEUED + 21, "{peak}");
    assert_eq!(count, 300);
}

#[test]
fn reciprocal_rank_fusion_sums_one_over_k_plus_rank() {
    let a = |d| tantivy::DocAddress::new(0, d);
    // Text ranks 1, 2, 3 = docs 1, 2, 3; vector ranks 1, 2 = docs 3, 4.
    let text = [(9.0, a(1)), (8.0, a(2)), (7.0, a(3))];
    let vector = [(0.9, a(3)), (0.8, a(4))];
    let fused = fuse(&text, &vector, 60.0);
    let got: Vec<(u32, Option<usize>, Option<usize>)> = fused
        .iter()
        .map(|(_, addr, (t, v))| (addr.doc_id, *t, *v))
        .collect();
    // doc 3: 1/63 + 1/61 beats doc 1's 1/61; doc 4 (1/62) and doc 2 (1/62) tie: smaller first.
    assert_eq!(
        got,
        [
            (3, Some(3), Some(1)),
            (1, Some(1), None),
            (2, Some(2), None),
            (4, None, Some(2)),
        ]
    );
    assert!((fused[0].0 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
    assert!((fused[3].0 - 1.0 / 62.0).abs() < 1e-12);
    // k = 0: rank 1 is worth 1, rank 2 a half.
    let fused = fuse(&text, &vector, 0.0);
    assert!((fused[0].0 - (1.0 + 1.0 / 3.0)).abs() < 1e-12);
}

#[test]
fn hybrid_search_fuses_the_text_and_vector_rankings_and_pages() {
    let dir = tempdir();
    // One indexing thread: one segment, the same in every run.
    let mut b = TantivyBackend::new(dir.clone(), vec![def("v", "vector")], 32, None)
        .with_writer_threads(Some(1));
    b.validate_connection().unwrap();
    // "river" in a, b, c by BM25; vectors nearest to the query: d, b, c, a.
    b.send(&[
        upsert(
            "a",
            json!({"t": "river river river bank", "v": [0.0, 0.0, 1.0]}),
        ),
        upsert(
            "b",
            json!({"t": "river bank of the old town", "v": [0.9, 0.3, 0.0]}),
        ),
        upsert("c", json!({"t": "a river", "v": [0.5, 0.5, 0.0]})),
        upsert("d", json!({"t": "mountain", "v": [1.0, 0.0, 0.0]})),
    ])
    .unwrap();
    b.close().unwrap();
    let q = [1.0f32, 0.1, 0.0];
    let req = SearchRequest {
        vector: Some(("v", &q)),
        hybrid: true,
        ..SearchRequest::text("river", 10)
    };
    let hits = search_with(&dir, &req).unwrap();
    let text_only = search(&dir, "river", 10).unwrap();
    let text_ids: Vec<&str> = text_only
        .iter()
        .map(|h| h.doc["id"].as_str().unwrap())
        .collect();
    let near = search_vector(&dir, "v", &q, None, 10).unwrap();
    let near_ids: Vec<&str> = near.iter().map(|h| h.doc["id"].as_str().unwrap()).collect();
    assert_eq!(text_ids, ["a", "b", "c"]);
    assert_eq!(near_ids, ["d", "b", "c", "a"]);
    // Every hit's ranks are its places in the two rankings, and its score their fusion.
    assert_eq!(hits.len(), 4);
    for h in &hits {
        let id = h.doc["id"].as_str().unwrap();
        let t = text_ids.iter().position(|x| *x == id).map(|p| p + 1);
        let v = near_ids.iter().position(|x| *x == id).map(|p| p + 1);
        assert_eq!((h.text_rank, h.vector_rank), (t, v), "{id}");
        let want = [t, v]
            .iter()
            .flatten()
            .map(|r| 1.0 / (60.0 + *r as f64))
            .sum::<f64>();
        assert!((f64::from(h.score) - want).abs() < 1e-6, "{id}");
    }
    // b, second in both rankings, comes before a (text's first, vector's last); d, first by
    // vector and not in the text ranking, comes last.
    let ids: Vec<&str> = hits.iter().map(|h| h.doc["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["b", "a", "c", "d"]);
    // offset pages through the same order, in every mode.
    for req in [
        req,
        SearchRequest::text("river", 10),
        SearchRequest {
            vector: Some(("v", &q)),
            ..SearchRequest::text("", 10)
        },
    ] {
        let all: Vec<String> = search_with(&dir, &req)
            .unwrap()
            .iter()
            .map(|h| h.doc["id"].as_str().unwrap().to_string())
            .collect();
        let page2: Vec<String> = search_with(
            &dir,
            &SearchRequest {
                offset: 1,
                limit: 2,
                ..req
            },
        )
        .unwrap()
        .iter()
        .map(|h| h.doc["id"].as_str().unwrap().to_string())
        .collect();
        assert_eq!(page2, all[1..3]);
        let past = SearchRequest { offset: 10, ..req };
        assert!(search_with(&dir, &past).unwrap().is_empty());
        // Limits and offsets past any index are answered, not allocated for.
        let huge = SearchRequest {
            limit: usize::MAX,
            ..req
        };
        assert_eq!(search_with(&dir, &huge).unwrap().len(), all.len());
        let huge = SearchRequest {
            offset: usize::MAX,
            ..req
        };
        assert!(search_with(&dir, &huge).unwrap().is_empty());
    }
    // Text-only and vector-only hits carry no ranks.
    assert_eq!(text_only[0].text_rank, None);
    assert_eq!(near[0].vector_rank, None);
    // Hybrid with no vector, a negative k: query errors.
    assert!(matches!(
        search_with(
            &dir,
            &SearchRequest {
                hybrid: true,
                ..SearchRequest::text("river", 10)
            }
        ),
        Err(SearchError::Query {
            reason: QueryError::HybridNeedsVector,
            ..
        })
    ));
    assert!(matches!(
        search_with(&dir, &SearchRequest { rrf_k: -1.0, ..req }),
        Err(SearchError::Query {
            reason: QueryError::BadRrfK(_),
            ..
        })
    ));
}

#[test]
fn snippets_highlight_the_query_terms_in_each_field_that_holds_them() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![def("title", "text"), def("v", "vector")]);
    b.send(&[
        upsert(
            "a",
            json!({
                "title": "Rivers of <Europe> & Asia",
                "body": "The Danube is a river. Long before the river, there was ice.",
                "author": {"name": "Ann River"},
                "tags": ["delta", "river mouth"],
                "year": 2001,
                "v": [1.0, 0.0],
            }),
        ),
        upsert(
            "b",
            json!({"title": "Mountains", "body": "no water here", "v": [0.0, 1.0]}),
        ),
    ])
    .unwrap();
    b.close().unwrap();
    let req = SearchRequest {
        snippets: true,
        ..SearchRequest::text("river OR rivers", 10)
    };
    let hits = search_with(&dir, &req).unwrap();
    assert_eq!(hits.len(), 1);
    let s = hits[0].snippets.as_ref().unwrap();
    assert_eq!(
        s["body"],
        json!("The Danube is a <b>river</b>. Long before the <b>river</b>, there was ice")
    );
    // (The fragment ends with its last word, as Tantivy cuts it.) A typed text field, escaped
    // HTML; nested paths; every string of a list.
    assert_eq!(
        s["title"],
        json!("<b>Rivers</b> of &lt;Europe&gt; &amp; Asia")
    );
    assert_eq!(s["author.name"], json!("Ann <b>River</b>"));
    assert_eq!(s["tags"], json!("delta … <b>river</b> mouth"));
    assert_eq!(s.len(), 4, "{s:?}");
    // A field the query names: only its own terms; without snippets asked, none.
    let hits = search_with(
        &dir,
        &SearchRequest {
            snippets: true,
            ..SearchRequest::text("body:ice", 10)
        },
    )
    .unwrap();
    assert_eq!(
        hits[0].snippets.as_ref().unwrap(),
        &obj(json!({"body": "The Danube is a river. Long before the river, there was <b>ice</b>"}))
    );
    assert_eq!(search(&dir, "ice", 10).unwrap()[0].snippets, None);
    // A vector search with no text query has nothing to highlight: empty snippets.
    let v = [1.0f32, 0.0];
    let hits = search_with(
        &dir,
        &SearchRequest {
            vector: Some(("v", &v)),
            snippets: true,
            ..SearchRequest::text("", 10)
        },
    )
    .unwrap();
    assert_eq!(hits[0].snippets.as_ref().map(Map::len), Some(0));
}

#[test]
fn a_search_page_counts_its_matches_and_the_values_of_a_facet() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![def("kind", "string")]);
    let ops: Vec<IndexOp> = (0..30)
        .map(|i| {
            let kind = ["a", "b", "c"][i % 3];
            let tags = if i % 2 == 0 {
                json!(["even", "n"])
            } else {
                json!(["odd", "n", "n"])
            };
            upsert(
                &format!("d{i}"),
                json!({"t": if i < 25 { "river" } else { "lake" }, "kind": kind,
                       "meta": {"tags": tags, "year": 2000 + (i % 2)}}),
            )
        })
        .collect();
    b.send(&ops).unwrap();
    b.close().unwrap();
    let page = search_page(&dir, "river", 10, 20, true, Some("kind")).unwrap();
    assert_eq!(page.total, 25);
    assert_eq!(page.hits.len(), 5, "hits 21-25 of 25");
    assert!(page.hits.iter().all(|h| h.snippets.is_some()));
    // d0..d24: kind a 9 (0, 3, .. 24), b 8, c 8: most first, ties by value.
    assert_eq!(
        page.facets,
        [(json!("a"), 9), (json!("b"), 8), (json!("c"), 8)]
    );
    // Nested paths and lists: a value counts once per document; numbers stay numbers.
    let page = search_page(&dir, "river", 0, 0, false, Some("meta.tags")).unwrap();
    assert!(page.hits.is_empty());
    assert_eq!(
        page.facets,
        [(json!("n"), 25), (json!("even"), 13), (json!("odd"), 12)]
    );
    let page = search_page(&dir, "lake", 10, 0, false, Some("meta.year")).unwrap();
    assert_eq!(page.total, 5);
    assert_eq!(page.facets, [(json!(2001), 3), (json!(2000), 2)]);
    // An empty query matches every document (the page a search box starts on).
    let page = search_page(&dir, " ", 3, 0, false, Some("kind")).unwrap();
    assert_eq!((page.total, page.hits.len()), (30, 3));
    assert_eq!(
        page.facets,
        [(json!("a"), 10), (json!("b"), 10), (json!("c"), 10)]
    );
    assert_eq!(search(&dir, "", 100).unwrap().len(), 30);
    assert_eq!(document_count(&dir).unwrap(), 30);
    assert!(search_page(&dir, "river", 10, 0, false, Some("nope"))
        .unwrap()
        .facets
        .is_empty());
    // A syntax error says where.
    let e = search_page(&dir, "river AND (lake", 10, 0, false, None).unwrap_err();
    assert!(
        matches!(&e, SearchError::Query { reason: QueryError::Syntax { position }, .. } if *position <= 15),
        "{e}"
    );
}

#[test]
fn a_bare_word_finds_the_document_of_that_id() {
    let dir = tempdir();
    let mut b = backend(&dir, vec![]);
    let ops = vec![
        upsert("json.dumps", json!({"module": "json", "name": "dumps"})),
        upsert("json.loads", json!({"module": "json", "name": "loads"})),
        upsert("pickle.dumps", json!({"module": "pickle", "name": "dumps"})),
    ];
    b.send(&ops).unwrap();
    b.close().unwrap();
    // The tokenizer makes the phrase "json dumps", which no one field holds; the id does.
    let ids = |q: &str| -> Vec<String> {
        search(&dir, q, 10)
            .unwrap()
            .iter()
            .map(|h| h.doc["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(ids("json.dumps"), ["json.dumps"]);
    assert_eq!(ids("pickle.dumps OR json.loads").len(), 2);
    // A word of an id is not the id: the fields answer it.
    assert_eq!(ids("dumps").len(), 2);
}

/// Unit vectors of `dims` random values (a small xorshift: the same every run).
fn random_vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed.max(1);
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    };
    (0..n)
        .map(|_| {
            // A sum of uniforms: close enough to a normal for directions spread over the sphere.
            let v: Vec<f32> = (0..dims)
                .map(|_| (0..4).map(|_| next()).sum::<f32>())
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect()
        })
        .collect()
}

fn code_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lucvec"))
        .collect();
    v.sort();
    v
}

#[test]
fn vector_codes_rank_as_the_exact_scan_does_and_follow_the_segments() {
    let dir = tempdir();
    let dims = 48;
    let vectors = random_vectors(3_000, dims, 7);
    let mut b = backend(&dir, vec![def("v", "vector")]);
    // Three commits: several segments, and deletions in them.
    for (part, chunk) in vectors.chunks(1_000).enumerate() {
        let ops: Vec<IndexOp> = chunk
            .iter()
            .enumerate()
            .map(|(i, v)| upsert(&format!("d{}", part * 1_000 + i), json!({ "v": v })))
            .collect();
        b.send(&ops).unwrap();
        Backend::commit(&mut b).unwrap();
    }
    let deleted: Vec<IndexOp> = (0..3_000)
        .step_by(7)
        .map(|i| del(&format!("d{i}")))
        .collect();
    b.send(&deleted).unwrap();
    b.close().unwrap();

    // Written at close: one file per segment.
    let index = Index::open_in_dir(&dir).unwrap();
    let searcher = index.reader().unwrap().searcher();
    let segments = searcher.segment_readers().len();
    assert_eq!(code_files(&dir).len(), segments);

    let narrowing = vectors::Narrowing {
        min_vectors: 100,
        signs_keep_one_in: 4,
        weighed: 300,
        exact: 50,
        max_depth: 2_000,
    };
    let id_of = |a: tantivy::DocAddress| -> String {
        let d: TantivyDocument = searcher.doc(a).unwrap();
        Layout::of(index.schema()).unwrap().stored(&d)["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let approximate = |q: &[f32]| {
        vectors::narrow(&searcher, &dir, "v", q, 10, &narrowing)
            .unwrap()
            .expect("the approximate path answers");
        cosine_ranking(&searcher, Some((&dir, &narrowing)), "v", q, None, 10).unwrap()
    };
    let queries = random_vectors(20, dims, 99);
    let mut found = 0;
    for q in &queries {
        let exact = cosine_ranking(&searcher, None, "v", q, None, 10).unwrap();
        let approx = approximate(q);
        assert_eq!(approx.len(), 10);
        // Scores are the exact cosine, best first; no deleted document comes back.
        let all = cosine_ranking(&searcher, None, "v", q, None, 3_000).unwrap();
        for (score, address) in &approx {
            let exact_score = all.iter().find(|(_, a)| a == address).map(|(s, _)| *s);
            assert_eq!(Some(*score), exact_score, "{}", id_of(*address));
            let n: usize = id_of(*address)[1..].parse().unwrap();
            assert!(n % 7 != 0, "deleted d{n} ranked");
        }
        assert!(approx.windows(2).all(|w| w[0].0 >= w[1].0));
        found += approx.iter().filter(|h| exact.contains(h)).count();
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    assert!(recall >= 0.9, "recall@10 {recall}");

    // The exact scan reads many values in one pass over the column's dictionary and a few by
    // lookups: both give the same scores.
    let q = &queries[1];
    let all = cosine_ranking(&searcher, None, "v", q, None, 3_000).unwrap();
    let few: std::collections::HashSet<tantivy::DocAddress> =
        all.iter().rev().take(12).map(|(_, a)| *a).collect();
    let mut expected: Vec<(f32, tantivy::DocAddress)> = all
        .iter()
        .filter(|(_, a)| few.contains(a))
        .copied()
        .collect();
    expected.truncate(10);
    assert_eq!(
        cosine_ranking(&searcher, None, "v", q, Some(&few), 10).unwrap(),
        expected
    );

    // Without its files (an index written before them), a search builds them; a damaged one
    // is built again.
    let before = approximate(&queries[0]);
    for f in code_files(&dir) {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    assert_eq!(approximate(&queries[0]), before);
    assert_eq!(code_files(&dir).len(), segments);
    let first = dir.join(&code_files(&dir)[0]);
    std::fs::write(&first, b"LUCVEC01 and nothing else").unwrap();
    vectors::forget_mapped();
    assert_eq!(approximate(&queries[0]), before);
    assert!(std::fs::metadata(&first).unwrap().len() > 100);

    // Files of segments the index no longer has go when the codes are written again.
    let stale = dir.join("0123456789abcdef0123456789abcdef.76.lucvec");
    std::fs::write(&stale, b"old").unwrap();
    vectors::write_all(&dir, &index, &["v".to_string()]).unwrap();
    assert!(!stale.exists());
    assert_eq!(code_files(&dir).len(), segments);
    // Below the narrowing's minimum, the exact scan answers.
    let few = vectors::Narrowing {
        min_vectors: 10_000,
        ..narrowing
    };
    assert!(vectors::narrow(&searcher, &dir, "v", &queries[0], 10, &few)
        .unwrap()
        .is_none());
}
