//! Micro-benchmarks of the per-document hot path, each next to its plain reference, on the
//! ~1 KB sample document: parse one record, get / set a field, ledger track + finish, one
//! queue hop, prepare + encode one document for the JSONL sink. Median ns per op of 7 runs.
//!
//!   cargo bench --bench hotpath_bench
//!
//! These keep the wins of bench/standard under watch between whole runs; they are not the
//! standard benchmark (whole `lucille run`s over a corpus), which is the one the goals are on.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lucille::accounting::{Event, EventType, Ledger};
use lucille::document::ObjectParser;
use lucille::indexer::{jsonl::JsonlBackend, Backend, IndexerSettings, Preparer};
use lucille::messaging::{LocalMessenger, PublisherSide, WorkerSide};
use lucille::Document;

const SAMPLE: &str = include_str!("sample_doc.json");
const ITERATIONS: usize = 50_000;
const RUNS: usize = 7;

fn ns_per_op(mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..ITERATIONS {
                f();
            }
            start.elapsed().as_nanos() as f64 / ITERATIONS as f64
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[RUNS / 2]
}

fn main() {
    let text = SAMPLE.trim();
    let bytes = text.as_bytes();
    let doc = Document::from_json_bytes(bytes).expect("sample parses");
    let mut rows: Vec<(&str, f64, &str, f64)> = Vec::new();

    let parser = ObjectParser::new();
    rows.push((
        "parse one record (ObjectParser)",
        ns_per_op(|| {
            black_box(parser.parse(black_box(text)).ok());
        }),
        "serde_json::from_str::<Value>",
        ns_per_op(|| {
            black_box(serde_json::from_str::<serde_json::Value>(black_box(text)).ok());
        }),
    ));

    let mut d = doc.clone();
    rows.push((
        "Document::get_str + set_field",
        ns_per_op(|| {
            let n = d.get_str(black_box("title")).map_or(0, str::len);
            let _ = d.set_field("title_len", n);
        }),
        "serde_json Map get + insert",
        {
            let mut m: serde_json::Map<String, serde_json::Value> =
                doc.clone().into_map().into_iter().collect();
            ns_per_op(|| {
                let n = m
                    .get(black_box("title"))
                    .and_then(|v| v.as_str())
                    .map_or(0, str::len);
                m.insert("title_len".to_string(), n.into());
            })
        },
    ));

    let mut ledger = Ledger::new();
    let run: Arc<str> = Arc::from("run");
    let ids: Vec<String> = (0..1024).map(|i| format!("doc-{i:08}")).collect();
    let mut i = 0;
    rows.push((
        "Ledger track + FINISH",
        ns_per_op(|| {
            let id = &ids[i & 1023];
            i += 1;
            ledger.track(id);
            ledger.handle(&Event::new(id.as_str(), run.clone(), EventType::Finish));
        }),
        "FxHashMap insert + remove",
        {
            let mut m = rustc_hash::FxHashMap::<String, u32>::default();
            ns_per_op(|| {
                let id = &ids[i & 1023];
                i += 1;
                *m.entry(id.clone()).or_default() += 1;
                m.remove(id);
            })
        },
    ));

    let messenger = LocalMessenger::new(1024);
    rows.push((
        "queue hop (LocalMessenger)",
        ns_per_op(|| {
            let _ = messenger.send_for_processing(doc.clone().into());
            black_box(messenger.poll_doc_to_process(Duration::ZERO));
        }),
        "Document::clone alone",
        ns_per_op(|| {
            black_box(doc.clone());
        }),
    ));

    let value = doc.clone().into_value();
    let mut buf = Vec::with_capacity(4096);
    rows.push((
        "document::write::write_value",
        ns_per_op(|| {
            buf.clear();
            lucille::document::write::write_value(&mut buf, black_box(&value));
        }),
        "serde_json::to_writer",
        ns_per_op(|| {
            buf.clear();
            let _ = serde_json::to_writer(&mut buf, black_box(&value));
        }),
    ));

    let dir = std::env::temp_dir().join(format!("lucille-hotpath-{}", std::process::id()));
    let backend = JsonlBackend::open(dir.join("out.jsonl"), false).expect("temp file");
    let preparer = Preparer::new(IndexerSettings::default(), backend.encoder());
    rows.push((
        "prepare + encode for JSONL (clone incl.)",
        ns_per_op(|| {
            black_box(preparer.prepare(doc.clone()));
        }),
        "clone + serde_json::to_vec",
        ns_per_op(|| {
            let d = doc.clone();
            black_box(serde_json::to_vec(d.as_map()).ok());
        }),
    ));
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "\nHot path, {} byte sample document, median ns/op of {RUNS} runs\n",
        bytes.len()
    );
    println!(
        "| {:<42} | {:>8} | {:<34} | {:>8} | {:>6} |",
        "lucille", "ns", "reference", "ns", "ratio"
    );
    println!(
        "|{:-<44}|{:-<10}|{:-<36}|{:-<10}|{:-<8}|",
        "", "", "", "", ""
    );
    for (name, ns, reference, rns) in rows {
        println!(
            "| {name:<42} | {ns:>8.1} | {reference:<34} | {rns:>8.1} | {:>6.2} |",
            ns / rns
        );
    }
}
