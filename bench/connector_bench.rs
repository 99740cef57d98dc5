//! FileConnector benchmark: a generated JSON-lines corpus (`LUCILLE_BENCH_LINES`, default
//! 1,000,000 lines of ~1 KB) read four ways, median of 3 runs each:
//! `wc -l`, a plain Rust read-lines + serde_json parse loop, and the full runner
//! (FileConnector -> empty pipeline -> nop indexer) on one file and on the same lines split
//! into four files read by 1 and by 2 `readerThreads`.
//!
//! `cargo bench --bench connector_bench` prints the table. `LUCILLE_BENCH_DIR` keeps the
//! generated files in a folder of your choice (default: a temp folder, removed at the end).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use lucille::runner::{self, RunOptions};
use serde_json::json;

fn generate(path: &Path, first: u64, count: u64) -> u64 {
    let filler = "lorem ipsum dolor sit amet consectetur adipiscing elit ".repeat(16);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("create"));
    for n in first..first + count {
        writeln!(
            w,
            "{{\"id\":\"doc-{n}\",\"title\":\"Document number {n}\",\"n\":{n},\"tags\":[\"a\",\"b\"],\"body\":\"{filler}\"}}"
        )
        .expect("write");
    }
    w.flush().expect("flush");
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time3(mut f: impl FnMut()) -> f64 {
    median(
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn wc(path: &Path, lines: u64) {
    let out = std::process::Command::new("wc")
        .arg("-l")
        .arg(path)
        .output()
        .expect("wc");
    let text = String::from_utf8_lossy(&out.stdout);
    let counted: u64 = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert_eq!(counted, lines);
}

fn read_parse(path: &Path, lines: u64) {
    let mut r = BufReader::with_capacity(256 * 1024, std::fs::File::open(path).expect("open"));
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).expect("read") == 0 {
            break;
        }
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        std::hint::black_box(v);
        n += 1;
    }
    assert_eq!(n, lines);
}

fn run_connector(paths: &[PathBuf], lines: u64, readers: u64) {
    let paths: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let config = json!({
        "connectors": [{"name": "files", "class": "FileConnector", "pipeline": "p",
            "paths": paths, "readerThreads": readers, "fileHandlers": {"jsonl": {}}}],
        "pipelines": [{"name": "p", "stages": []}],
        "worker": {"threads": 2},
        "indexer": {"type": "nop", "batchSize": 1000},
        "log": {"seconds": 3600}
    });
    let result = runner::run(&config, None, &RunOptions::default()).expect("valid config");
    assert!(result.ok, "{}", result.summary);
    assert_eq!(result.totals().succeeded, lines);
}

fn main() {
    let lines: u64 = std::env::var("LUCILLE_BENCH_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let (dir, keep) = match std::env::var("LUCILLE_BENCH_DIR") {
        Ok(d) => (PathBuf::from(d), true),
        Err(_) => (
            std::env::temp_dir().join(format!("lucille-connector-bench-{}", std::process::id())),
            false,
        ),
    };
    std::fs::create_dir_all(&dir).expect("bench dir");
    let one = dir.join("corpus.jsonl");
    let bytes = generate(&one, 0, lines);
    let quarter = lines / 4;
    let parts: Vec<PathBuf> = (0..4)
        .map(|i| {
            let p = dir.join(format!("part-{i}.jsonl"));
            let count = if i == 3 { lines - 3 * quarter } else { quarter };
            generate(&p, i * quarter, count);
            p
        })
        .collect();
    let mb = bytes as f64 / 1e6;
    println!("{lines} lines, {mb:.0} MB; median of 3\n");
    println!("| reader | seconds | docs/s | MB/s |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, secs: f64| {
        println!(
            "| {name} | {secs:.2} | {:.0} | {:.0} |",
            lines as f64 / secs,
            mb / secs
        );
    };
    row("wc -l", time3(|| wc(&one, lines)));
    row(
        "Rust read_until + serde_json::Value",
        time3(|| read_parse(&one, lines)),
    );
    row(
        "FileConnector -> empty pipeline -> nop (1 file)",
        time3(|| run_connector(std::slice::from_ref(&one), lines, 1)),
    );
    for readers in [1, 2] {
        row(
            &format!("FileConnector -> empty pipeline -> nop (4 files, readerThreads {readers})"),
            time3(|| run_connector(&parts, lines, readers)),
        );
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
