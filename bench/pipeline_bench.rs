//! A 6-stage pipeline of built-in stages run over the ~1 KB sample document.
//! Run through `python bench/pipeline_bench.py`, which prints the table; alone it prints JSON.
//!
//! Each iteration clones a parsed Document (the pipeline consumes its input) and pulls every
//! output. The clone is timed on its own in the same round and subtracted: `pipeline_ns` is
//! the median over rounds of (clone + pipeline) - clone. `parse_pipeline_ns` parses the JSON
//! bytes instead of cloning, the Rust twin of the Python rows that parse the sample each time;
//! `parse_net_ns` is its median of (parse + pipeline) - parse.

// The allocator the Python extension uses too (see src/python/mod.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::time::Instant;

use lucille::pipeline::{Pipeline, PipelinePlan};
use lucille::Document;
use serde_json::{json, Value};

const SAMPLE: &str = include_str!("sample_doc.json");
const ITERATIONS: usize = 50_000;
const ROUNDS: usize = 7;

/// The same six stages as `STAGES` in bench/pipeline_bench.py.
fn stage_configs() -> Vec<Value> {
    vec![
        json!({"class": "CopyFields", "name": "copy",
               "fieldMapping": {"title": "title_display", "brand": "brand_facet"}}),
        json!({"class": "RenameFields", "name": "rename",
               "fieldMapping": {"review_count": "reviews", "stock_count": "stock"}}),
        json!({"class": "SetStaticValues", "name": "static",
               "staticValues": {"source": "catalog", "indexed": true}}),
        json!({"class": "TrimWhitespace", "name": "trim",
               "fields": ["title", "brand", "description"]}),
        json!({"class": "Concatenate", "name": "concat",
               "dest": "label", "formatString": "{brand}: {title} [{sku}]"}),
        json!({"class": "Length", "name": "length",
               "fieldMapping": {"categories": "category_count", "tags": "tag_count"}}),
    ]
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

/// Mean ns per call of `f` over one batch of `ITERATIONS` calls.
fn batch_ns(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..ITERATIONS {
        f();
    }
    start.elapsed().as_nanos() as f64 / ITERATIONS as f64
}

fn run(pipeline: &mut Pipeline, doc: Document) {
    for out in pipeline.process(doc) {
        black_box(out);
    }
}

fn check(pipeline: &mut Pipeline, doc: &Document) {
    let outs: Vec<_> = pipeline.process(doc.clone()).collect();
    assert_eq!(outs.len(), 1);
    let out = &outs[0];
    assert!(out.error.is_none(), "{:?}", out.error);
    let d = &out.doc;
    assert_eq!(
        d.get("label"),
        Some(&json!(
            "Acme Audio: Wireless Noise-Cancelling Over-Ear Headphones [KX-2231-BLK]"
        ))
    );
    assert_eq!(d.get("reviews"), Some(&json!(8812)));
    assert!(!d.has("review_count"));
    assert_eq!(d.get("category_count"), Some(&json!(4)));
    assert_eq!(d.get("tag_count"), Some(&json!(4)));
    assert_eq!(d.get("indexed"), Some(&json!(true)));
    assert_eq!(d.get("brand_facet"), Some(&json!("Acme Audio")));
}

fn main() {
    let bytes = SAMPLE.trim().as_bytes();
    let plan = PipelinePlan::from_config("bench", &stage_configs(), "stages", &Default::default())
        .unwrap();
    let mut pipeline = plan.instantiate().unwrap();
    pipeline.start().unwrap();
    let doc = Document::from_json_bytes(bytes).unwrap();
    check(&mut pipeline, &doc);

    // Interleave the measurements so machine noise hits them alike.
    let mut clone_runs = Vec::new();
    let mut total_runs = Vec::new();
    let mut net_runs = Vec::new();
    let mut parse_runs = Vec::new();
    let mut parse_total_runs = Vec::new();
    let mut parse_net_runs = Vec::new();
    for _ in 0..ROUNDS {
        let clone = batch_ns(|| {
            black_box(black_box(&doc).clone());
        });
        let total = batch_ns(|| run(&mut pipeline, black_box(&doc).clone()));
        let parse = batch_ns(|| {
            black_box(Document::from_json_bytes(black_box(bytes)).unwrap());
        });
        let parse_total = batch_ns(|| {
            run(
                &mut pipeline,
                Document::from_json_bytes(black_box(bytes)).unwrap(),
            )
        });
        clone_runs.push(clone);
        total_runs.push(total);
        net_runs.push(total - clone);
        parse_runs.push(parse);
        parse_total_runs.push(parse_total);
        parse_net_runs.push(parse_total - parse);
    }
    println!(
        "{{\"bytes\": {}, \"stages\": {}, \"rounds\": {}, \"clone_ns\": {:.1}, \
         \"clone_pipeline_ns\": {:.1}, \"pipeline_ns\": {:.1}, \"parse_ns\": {:.1}, \
         \"parse_pipeline_ns\": {:.1}, \"parse_net_ns\": {:.1}}}",
        bytes.len(),
        pipeline.stage_count(),
        ROUNDS,
        median(clone_runs),
        median(total_runs),
        median(net_runs),
        median(parse_runs),
        median(parse_total_runs),
        median(parse_net_runs)
    );
}
