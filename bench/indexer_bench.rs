//! Indexer benchmark: N generated documents (id, two text fields, an int) into Tantivy
//!   - through the full runtime: SequenceConnector -> 3 tiny stages that build the fields ->
//!     the tantivy indexer (publisher, accounting, worker pool, indexer thread, batches,
//!     upsert by id);
//!   - directly: Tantivy's own IndexWriter, fed the same documents built inline, into the same
//!     (dynamic) schema, with the same writer memory and threads, one commit at the end.
//!
//! With a Typesense server (`source scripts/services/typesense.sh` exports
//! LUCILLE_TEST_TYPESENSE_URL / _API_KEY), two more rows: the runtime into the typesense
//! indexer, and the same documents posted straight to Typesense's import API in batches of the
//! same size (LUCILLE_BENCH_TYPESENSE_DOCS, default 100,000: a server is slower than a library).
//!
//! `cargo bench --bench indexer_bench -- [DOCS] [RUNS]` (or LUCILLE_BENCH_DOCS /
//! LUCILLE_BENCH_RUNS; defaults 1,000,000 and 3) prints a table of the median docs/s of each
//! and their ratio.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::time::Instant;

use lucille::indexer::tantivy::{self as tv, ALL_FIELD, ID_FIELD, JSON_FIELD, SOURCE_FIELD};
use lucille::runner::{self, RunOptions};
use serde_json::{json, Map, Value};
use tantivy::schema::OwnedValue;
use tantivy::{Index, TantivyDocument};

const WRITER_MB: usize = 256;
const BATCH: usize = 1000;
const BODY: &str = "indexes documents from many sources through a pipeline of stages and \
    batches them into a search engine while accounting for every document it was given";

fn title(id: &str) -> String {
    format!("Document {id} about search")
}

fn body(id: &str) -> String {
    format!("Record {id} {BODY}")
}

/// The same pipeline as `runtime`, its indexer block replaced.
fn pipeline_config(docs: u64, indexer: Value, backend: (&str, Value)) -> Value {
    let mut config = json!({
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": docs, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "Concatenate", "dest": "title", "formatString": "Document {id} about search"},
            {"class": "Concatenate", "dest": "body", "formatString": format!("Record {{id}} {BODY}")},
            {"class": "Length", "fieldMapping": {"title": "n"}}
        ]}],
        "worker": {"threads": 1},
        "indexer": indexer,
        "log": {"seconds": 3600}
    });
    config[backend.0] = backend.1;
    config
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lucille-indexer-bench-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn runtime(docs: u64) -> f64 {
    let dir = scratch("runtime");
    let config = pipeline_config(
        docs,
        json!({"type": "tantivy", "batchSize": BATCH}),
        (
            "tantivy",
            json!({"path": dir.to_str().expect("utf-8 temp dir"), "writerMemoryMb": WRITER_MB}),
        ),
    );
    let started = Instant::now();
    let result = runner::run(&config, None, &RunOptions::default()).expect("valid config");
    let secs = started.elapsed().as_secs_f64();
    assert!(result.ok, "{}", result.summary);
    assert_eq!(result.totals().succeeded, docs);
    check(&dir, docs);
    let _ = std::fs::remove_dir_all(&dir);
    docs as f64 / secs
}

fn direct(docs: u64) -> f64 {
    let dir = scratch("direct");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let schema = tv::build_schema(&[]);
    let field = |n: &str| schema.get_field(n).expect("lucille schema field");
    let (id_f, all_f, json_f, source_f) = (
        field(ID_FIELD),
        field(ALL_FIELD),
        field(JSON_FIELD),
        field(SOURCE_FIELD),
    );
    let started = Instant::now();
    let index = Index::create_in_dir(&dir, schema.clone()).expect("create index");
    let mut writer = tv::writer(&index, WRITER_MB).expect("writer");
    for i in 0..docs {
        let id = i.to_string();
        let mut fields = Map::new();
        fields.insert("title".into(), Value::String(title(&id)));
        fields.insert("body".into(), Value::String(body(&id)));
        fields.insert("n".into(), Value::from(1));
        let mut doc = TantivyDocument::new();
        doc.add_text(id_f, &id);
        doc.add_text(all_f, &id);
        for v in fields.values() {
            if let Value::String(s) = v {
                doc.add_text(all_f, s);
            }
        }
        doc.add_text(source_f, serde_json::to_string(&fields).expect("json"));
        let object: Vec<(String, OwnedValue)> = fields
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => OwnedValue::Str(s),
                    other => OwnedValue::I64(other.as_i64().unwrap_or_default()),
                };
                (k, v)
            })
            .collect();
        doc.add_field_value(json_f, &OwnedValue::Object(object));
        writer.add_document(doc).expect("add");
    }
    writer.commit().expect("commit");
    writer.wait_merging_threads().expect("merge");
    let secs = started.elapsed().as_secs_f64();
    check(&dir, docs);
    let _ = std::fs::remove_dir_all(&dir);
    docs as f64 / secs
}

mod typesense {
    use super::*;
    use lucille::http::{Auth, HttpClient, RetryPolicy};

    pub struct Server {
        pub url: String,
        pub key: String,
        client: HttpClient,
    }

    impl Server {
        pub fn from_env() -> Option<Server> {
            let url = std::env::var("LUCILLE_TEST_TYPESENSE_URL").ok()?;
            let key = std::env::var("LUCILLE_TEST_TYPESENSE_API_KEY").ok()?;
            let client = HttpClient::new(
                "Typesense",
                RetryPolicy::default(),
                None,
                false,
                Auth::Header("X-TYPESENSE-API-KEY", key.clone()),
            );
            Some(Server { url, key, client })
        }

        fn call(&self, method: &str, path: &str, body: Option<&str>) -> String {
            let reply = self
                .client
                .once(method, &format!("{}{path}", self.url), "text/plain", body)
                .expect("Typesense answers");
            assert!(
                reply.ok(),
                "{method} {path}: {} {}",
                reply.status,
                reply.body
            );
            reply.body
        }

        fn count(&self, collection: &str) -> u64 {
            let body = self.call("GET", &format!("/collections/{collection}"), None);
            let v: Value = serde_json::from_str(&body).expect("json");
            v["num_documents"].as_u64().unwrap_or_default()
        }

        fn drop_collection(&self, collection: &str) {
            let _ = self.client.once(
                "DELETE",
                &format!("{}/collections/{collection}", self.url),
                "text/plain",
                None,
            );
        }

        /// The runtime into the typesense indexer.
        pub fn runtime(&self, docs: u64, run: u64) -> f64 {
            let collection = format!("bench_runtime_{}_{run}", std::process::id());
            let config = pipeline_config(
                docs,
                json!({"type": "typesense", "batchSize": BATCH}),
                (
                    "typesense",
                    json!({"url": self.url, "apiKey": self.key, "collection": collection}),
                ),
            );
            let started = Instant::now();
            let result = runner::run(&config, None, &RunOptions::default()).expect("config");
            let secs = started.elapsed().as_secs_f64();
            assert!(result.ok, "{}", result.summary);
            assert_eq!(self.count(&collection), docs);
            self.drop_collection(&collection);
            docs as f64 / secs
        }

        /// The same documents posted to the import API directly, BATCH per request.
        pub fn direct(&self, docs: u64, run: u64) -> f64 {
            let collection = format!("bench_direct_{}_{run}", std::process::id());
            let started = Instant::now();
            let schema = json!({"name": collection, "fields": [{"name": ".*", "type": "auto"}],
                                "enable_nested_fields": true});
            self.call("POST", "/collections", Some(&schema.to_string()));
            let mut body = String::new();
            for i in 0..docs {
                let id = i.to_string();
                let t = title(&id);
                let doc = json!({"id": id, "title": t, "body": body_text(&id), "n": t.len()});
                body.push_str(&doc.to_string());
                body.push('\n');
                if (i + 1) % BATCH as u64 == 0 || i + 1 == docs {
                    let path = format!("/collections/{collection}/documents/import?action=upsert");
                    let reply = self.call("POST", &path, Some(&body));
                    assert!(!reply.contains("\"success\":false"), "{reply}");
                    body.clear();
                }
            }
            let secs = started.elapsed().as_secs_f64();
            assert_eq!(self.count(&collection), docs);
            self.drop_collection(&collection);
            docs as f64 / secs
        }
    }

    fn body_text(id: &str) -> String {
        super::body(id)
    }
}

/// Both sides must have indexed every document, searchably.
fn check(dir: &Path, docs: u64) {
    let hits = tv::search(dir, "id:\"0\"", 1).expect("search");
    assert_eq!(hits.len(), 1, "document 0 indexed");
    assert_eq!(hits[0].doc["title"], json!("Document 0 about search"));
    let index = Index::open_in_dir(dir).expect("open");
    let n: u64 = index.reader().expect("reader").searcher().num_docs();
    assert_eq!(n, docs);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn arg(i: usize, env: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    args.get(i)
        .cloned()
        .or_else(|| std::env::var(env).ok())
        .and_then(|s| s.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() {
    let docs = arg(0, "LUCILLE_BENCH_DOCS", 1_000_000);
    let runs = arg(1, "LUCILLE_BENCH_RUNS", 3).max(1);
    let mut rt = Vec::new();
    let mut dr = Vec::new();
    for run in 1..=runs {
        // Alternate so neither side always runs on a warmer machine.
        dr.push(direct(docs));
        rt.push(runtime(docs));
        eprintln!(
            "run {run}/{runs}: direct {:.0} docs/s, runtime {:.0} docs/s",
            dr[dr.len() - 1],
            rt[rt.len() - 1]
        );
    }
    let (rt, dr) = (median(rt), median(dr));
    println!("\nIndexing {docs} documents (id, title, body, n) into Tantivy, dynamic schema,");
    println!("writer memory {WRITER_MB} MB, commit at end; median of {runs} runs\n");
    println!("| path | docs/s | vs direct |");
    println!("| --- | ---: | ---: |");
    println!("| Tantivy IndexWriter, direct | {dr:.0} | 1.00x |");
    println!(
        "| lucille runtime -> tantivy indexer (batchSize {BATCH}, 1 worker) | {rt:.0} | {:.2}x |",
        rt / dr
    );
    if let Some(server) = typesense::Server::from_env() {
        let n = std::env::var("LUCILLE_BENCH_TYPESENSE_DOCS")
            .ok()
            .and_then(|s| s.replace('_', "").parse().ok())
            .unwrap_or(100_000u64);
        let (mut ts_rt, mut ts_dr) = (Vec::new(), Vec::new());
        for run in 1..=runs {
            ts_dr.push(server.direct(n, run));
            ts_rt.push(server.runtime(n, run));
            eprintln!(
                "typesense run {run}/{runs}: direct {:.0} docs/s, runtime {:.0} docs/s",
                ts_dr[ts_dr.len() - 1],
                ts_rt[ts_rt.len() - 1]
            );
        }
        let (ts_rt, ts_dr) = (median(ts_rt), median(ts_dr));
        println!(
            "| Typesense import API, direct ({n} docs, {BATCH} per request) | {ts_dr:.0} | 1.00x |"
        );
        println!(
            "| lucille runtime -> typesense indexer ({n} docs) | {ts_rt:.0} | {:.2}x |",
            ts_rt / ts_dr
        );
    }
    println!(
        "\ngoal: runtime >= 0.80x direct: {}",
        if rt / dr >= 0.8 { "met" } else { "NOT met" }
    );
}
