//! Document JSON round trip against a raw serde_json round trip of the same bytes.
//! Run through `python bench/document_bench.py`, which prints the table; alone it prints JSON.

use std::hint::black_box;
use std::time::Instant;

use lucille::Document;

const SAMPLE: &str = include_str!("sample_doc.json");
const ITERATIONS: usize = 100_000;
const RUNS: usize = 7;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

fn time_ns_per_op(mut f: impl FnMut()) -> f64 {
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            f();
        }
        samples.push(start.elapsed().as_nanos() as f64 / ITERATIONS as f64);
    }
    median(samples)
}

fn main() {
    let bytes = SAMPLE.trim().as_bytes();
    // Interleave the two measurements so machine noise hits both alike.
    let mut doc_runs = Vec::new();
    let mut raw_runs = Vec::new();
    let mut edit_runs = Vec::new();
    for _ in 0..3 {
        raw_runs.push(time_ns_per_op(|| {
            let v: serde_json::Value = serde_json::from_slice(black_box(bytes)).unwrap();
            black_box(serde_json::to_string(&v).unwrap());
        }));
        doc_runs.push(time_ns_per_op(|| {
            let d = Document::from_json_bytes(black_box(bytes)).unwrap();
            black_box(d.to_json());
        }));
        edit_runs.push(time_ns_per_op(|| {
            let mut d = Document::from_json_bytes(black_box(bytes)).unwrap();
            d.set_field("processed", true).unwrap();
            d.add_to_field("tags", "bench").unwrap();
            black_box(d.to_json());
        }));
    }
    println!(
        "{{\"bytes\": {}, \"raw_ns\": {:.1}, \"doc_ns\": {:.1}, \"doc_edit_ns\": {:.1}}}",
        bytes.len(),
        median(raw_runs),
        median(doc_runs),
        median(edit_runs)
    );
}
