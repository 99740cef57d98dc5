//! Runtime benchmark: SequenceConnector -> 6 built-in stages -> Nop indexer through the real
//! runner (publisher, worker pool, indexer thread, accounting), plus the ledger alone.
//!
//! `cargo bench --bench runtime_bench -- run DOCS THREADS` prints one JSON line with docs/s
//! and the process's peak RSS; `-- ledger N` times N track + FINISH pairs on the ledger.
//! Run through `python bench/runtime_bench.py`, which starts a fresh process per row so
//! peak RSS is per configuration, and prints the table.

use std::hint::black_box;

// The allocator the Python extension uses too (see src/python/mod.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Instant;

use lucille::accounting::{Event, EventType, Ledger};
use lucille::runner::{self, RunOptions};
use serde_json::json;

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The 6 cheap stages, or (heavy) text work where the stages dominate the per-document cost.
fn stages(heavy: bool) -> serde_json::Value {
    if heavy {
        let body = "Crème brûlée, café au lait and a naïve façade: ".repeat(40);
        json!([
            {"class": "SetStaticValues", "staticValues": {"body": body}},
            {"class": "RemoveDiacritics", "source": "body", "destination": "plain"},
            {"class": "NormalizeText", "source": ["plain"], "dest": ["lower"], "mode": "lowercase"},
            {"class": "ApplyRegex", "source": ["lower"], "dest": ["words"], "regex": "\\b[a-z]{5,}\\b"},
            {"class": "RemoveDuplicateValues", "fieldMapping": {"words": "unique_words"}},
            {"class": "DeleteFields", "fields": ["body", "lower"]}
        ])
    } else {
        json!([
            {"class": "SetStaticValues", "staticValues": {"source": "bench", "title": "  A Title  "}},
            {"class": "CopyFields", "fieldMapping": {"title": "title_copy"}},
            {"class": "TrimWhitespace", "fields": ["title"]},
            {"class": "RenameFields", "fieldMapping": {"title_copy": "raw_title"}},
            {"class": "Length", "fieldMapping": {"raw_title": "raw_title_len"}},
            {"class": "DeleteFields", "fields": ["source"]}
        ])
    }
}

fn run(docs: u64, threads: u64, heavy: bool) {
    let config = json!({
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": docs, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": stages(heavy)}],
        "worker": {"threads": threads},
        "indexer": {"type": "nop", "batchSize": 1000},
        "log": {"seconds": 3600}
    });
    let started = Instant::now();
    let result = runner::run(&config, None, &RunOptions::default()).expect("valid config");
    let secs = started.elapsed().as_secs_f64();
    assert!(result.ok, "{}", result.summary);
    assert_eq!(result.totals().succeeded, docs);
    println!(
        "{{\"heavy\": {heavy}, \"docs\": {docs}, \"threads\": {threads}, \"seconds\": {secs:.3}, \"docs_per_sec\": {:.0}, \"peak_rss_mb\": {:.1}}}",
        docs as f64 / secs,
        peak_rss_mb()
    );
}

fn ledger(n: u64) {
    let ids: Vec<String> = (0..10_000).map(|i| format!("doc-{i}")).collect();
    let run_id: Arc<str> = Arc::from("r");
    let mut ledger = Ledger::new();
    let started = Instant::now();
    for i in 0..n {
        let id = &ids[(i % 10_000) as usize];
        ledger.track(id);
        ledger.handle(&Event::new(id.clone(), run_id.clone(), EventType::Finish));
    }
    black_box(ledger.pending());
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{{\"ledger_pairs\": {n}, \"seconds\": {secs:.3}, \"pairs_per_sec\": {:.0}}}",
        n as f64 / secs
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some(mode @ ("run" | "run-heavy")) => run(
            args.get(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(1_000_000),
            args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1),
            mode == "run-heavy",
        ),
        Some("ledger") => ledger(
            args.get(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(5_000_000),
        ),
        _ => {
            eprintln!("usage: runtime_bench run|run-heavy DOCS THREADS | ledger N");
            std::process::exit(2);
        }
    }
}
