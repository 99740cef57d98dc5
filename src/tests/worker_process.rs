use std::io::BufReader;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::config::PathContext;
use crate::document::Document;
use crate::pipeline::{Output, PipelinePlan};
use crate::worker::process::remote::{Conn, Connect, RemotePipeline};
use crate::worker::process::serve::serve;

fn plan() -> PipelinePlan {
    let stages = vec![
        json!({ "name": "copy", "class": "CopyFields", "fieldMapping": { "a": "b" } }),
        json!({ "name": "kids", "class": "CreateChildrenStage", "numChildren": 2, "dropChild": 2 }),
        json!({ "name": "parse", "class": "ParseJson", "src": "json" }),
    ];
    PipelinePlan::from_config("p", &stages, "stages", &Arc::new(PathContext::new(None)))
        .expect("a valid plan")
}

/// A worker "process" served by threads over real pipes: it passes the first line (the
/// pipeline) and `limit` requests, then its input ends as if it had died.
// std::io::pipe is Rust 1.87; only this test uses it (the crates keep their 1.85 MSRV).
#[allow(clippy::incompatible_msrv)]
fn in_thread(limit: usize, started: Arc<AtomicUsize>) -> Connect {
    Arc::new(move || {
        use std::io::{BufRead, Write};
        let (r_in, w_in) = std::io::pipe()?;
        let (r_mid, mut w_mid) = std::io::pipe()?;
        let (r_out, w_out) = std::io::pipe()?;
        started.fetch_add(1, Ordering::SeqCst);
        std::thread::spawn(move || {
            for line in BufReader::new(r_in)
                .lines()
                .map_while(Result::ok)
                .take(limit.saturating_add(1))
            {
                if writeln!(w_mid, "{line}").is_err() {
                    break;
                }
            }
        });
        std::thread::spawn(move || serve(BufReader::new(r_mid), w_out));
        Ok(Conn {
            to: Box::new(w_in),
            from: Box::new(BufReader::new(r_out)),
            child: None,
            memory_limit: None,
        })
    })
}

fn docs() -> Vec<Document> {
    (0..3)
        .map(|i| {
            let mut d = Document::new(format!("d{i}")).expect("id");
            d.set_field("a", json!(i)).expect("a field");
            // d1's JSON is malformed: ParseJson fails it.
            d.set_field("json", json!(if i == 1 { "{oops" } else { "{\"x\": 1}" }))
                .expect("a field");
            d
        })
        .collect()
}

fn summary(outputs: &[Output]) -> Vec<(String, bool, bool, bool, String)> {
    outputs
        .iter()
        .map(|o| {
            (
                o.doc.id().to_string(),
                o.is_child,
                o.doc.is_dropped(),
                o.error.is_some(),
                o.doc.to_json(),
            )
        })
        .collect()
}

#[test]
fn a_pipeline_in_a_worker_process_gives_what_the_local_one_gives() {
    let mut local = plan().instantiate().expect("pipeline");
    local.start().expect("start");
    let expected: Vec<Output> = docs()
        .into_iter()
        .flat_map(|d| local.process(d).collect::<Vec<_>>())
        .collect();
    // One document per request, then all three in one request.
    let started = Arc::new(AtomicUsize::new(0));
    let mut remote =
        RemotePipeline::start(&plan(), in_thread(usize::MAX, started.clone())).expect("remote");
    let one_by_one: Vec<Output> = docs()
        .into_iter()
        .flat_map(|d| remote.process(vec![d]))
        .collect();
    assert_eq!(summary(&one_by_one), summary(&expected));
    let together = remote.process(docs());
    assert_eq!(summary(&together), summary(&expected));
    // Children first, then their parent; the failure names the stage and the document.
    assert_eq!(expected.len(), 9);
    let failed = together
        .iter()
        .find(|o| o.error.is_some())
        .expect("a failure");
    assert_eq!(failed.doc.id(), "d1");
    assert_eq!(
        failed.error.as_ref().map(|e| e.stage().to_string()),
        Some("parse".to_string())
    );
    remote.stop().expect("stop");
    let metrics = remote.metrics();
    assert_eq!(metrics.len(), 3);
    // 3 documents twice through "copy"; the process reported its own counts.
    assert_eq!(metrics[0].processed, 6);
    assert_eq!(started.load(Ordering::SeqCst), 1);
}

#[test]
fn a_dead_worker_process_fails_its_documents_and_is_replaced() {
    let started = Arc::new(AtomicUsize::new(0));
    let mut remote = RemotePipeline::start(&plan(), in_thread(1, started.clone())).expect("remote");
    let first = remote.process(vec![docs().remove(0)]);
    assert!(first.iter().all(|o| o.error.is_none()));
    // The process served its one request and died: both documents of the next call FAIL,
    // each with the reason, and none is lost.
    let mut two = docs();
    two.truncate(2);
    let failed = remote.process(two);
    assert_eq!(failed.len(), 2);
    for o in &failed {
        let e = o.error.as_ref().expect("failed");
        assert!(e.to_string().contains("worker process"), "{e}");
        assert!(!o.is_child);
    }
    // The next call starts a new process and works.
    let again = remote.process(vec![docs().remove(2)]);
    assert!(
        again.iter().all(|o| o.error.is_none()),
        "{:?}",
        summary(&again)
    );
    assert_eq!(started.load(Ordering::SeqCst), 2);
}

#[test]
fn a_pipeline_the_process_cannot_build_is_an_error_at_start() {
    let stages = vec![json!({ "class": "CopyFields", "fieldMapping": { "a": "b" } })];
    let mut plan =
        PipelinePlan::from_config("p", &stages, "stages", &Arc::new(PathContext::new(None)))
            .expect("plan");
    plan.name = "p".into();
    // A connection whose first line is answered with an error.
    let connect: Connect = Arc::new(|| {
        let (r_out, mut w_out) = std::io::pipe()?;
        use std::io::Write;
        writeln!(w_out, "{}", json!({ "error": "no such module" }))?;
        Ok(Conn {
            to: Box::new(std::io::sink()),
            from: Box::new(BufReader::new(r_out)),
            child: None,
            memory_limit: None,
        })
    });
    let err = RemotePipeline::start(&plan, connect)
        .err()
        .expect("an error")
        .to_string();
    assert!(
        err.contains("could not build the pipeline: no such module"),
        "{err}"
    );
}

#[test]
fn processes_needs_a_launcher_and_agrees_with_threads() {
    use crate::config::ComponentConfig;
    use crate::worker::WorkerSettings;
    let check = |v: serde_json::Value| {
        let map = v.as_object().cloned().unwrap_or_default();
        WorkerSettings::from_config(&ComponentConfig::new(map, "worker"), None)
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    // No launcher in a Rust test: said at validation, with what to do.
    let errors = check(json!({ "processes": 2 }));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("worker.processes") && errors[0].contains("lucille run"));
    let errors = check(json!({ "processes": 2, "threads": 3 }));
    assert!(
        errors.iter().any(|e| e.contains("must agree")),
        "{errors:?}"
    );
    let errors = check(json!({ "processes": 0 }));
    assert!(
        errors.iter().any(|e| e.contains("at least 1")),
        "{errors:?}"
    );
}
