use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::accounting::EventType;
use crate::runner::*;

fn test_opts() -> RunOptions {
    RunOptions {
        mode: RunMode::Test,
        ..Default::default()
    }
}

#[test]
fn sequence_through_a_pipeline_in_test_mode() {
    let config = json!({
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 50, "pipeline": "main", "docIdPrefix": "d-"}],
        "pipelines": [{"name": "main", "stages": [
            {"class": "SetStaticValues", "staticValues": {"kind": "x"}},
            {"class": "DropDocument", "conditions": [{"fields": ["id"], "values": ["d-7"]}]},
            {"class": "CreateChildrenStage", "numChildren": 2, "conditions": [{"fields": ["id"], "values": ["d-3"]}]}
        ]}],
        "worker": {"threads": 2}
    });
    let r = run(&config, None, &test_opts()).unwrap();
    assert!(r.ok, "{}", r.summary);
    let c = &r.connectors[0];
    assert_eq!(
        (c.published, c.succeeded, c.failed, c.dropped),
        (50, 51, 0, 1)
    );
    let (docs, events) = test_history(&r);
    assert_eq!(docs.len(), 51);
    assert!(docs.iter().all(|d| d.run_id() == Some(r.run_id.as_str())));
    // Children are made after SetStaticValues ran, so only parents carry its field.
    assert!(docs
        .iter()
        .all(|d| d.id().contains("_child") || d.get_str("kind") == Some("x")));
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind == EventType::Create)
            .count(),
        2
    );
    assert!(r.summary.starts_with("RUN SUMMARY: Success. 1/1 connectors complete. All published docs succeeded.\nseq: complete. 51 docs succeeded. 0 docs failed. 1 docs dropped."), "{}", r.summary);
}

#[test]
fn local_mode_writes_jsonl_and_appends_across_connectors() {
    let dir = std::env::temp_dir().join(format!("lucille-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("out.jsonl"), "stale line\n").unwrap();
    let config = json!({
        "connectors": [
            {"name": "a", "class": "SequenceConnector", "numDocs": 3, "pipeline": "p"},
            {"name": "b", "class": "com.kmwllc.lucille.connector.SequenceConnector", "numDocs": 2, "startWith": 10}
        ],
        "pipelines": [{"name": "p", "stages": [{"class": "SetStaticValues", "staticValues": {"s": 1}}]}],
        "indexer": {"type": "jsonl", "batchSize": 2},
        "jsonl": {"path": dir.join("out.jsonl")}
    });
    let r = run(&config, Some(&dir), &RunOptions::default()).unwrap();
    assert!(r.ok, "{}", r.summary);
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        ids,
        ["0", "1", "2", "10", "11"],
        "the first connector truncates, the second appends"
    );
    assert!(!text.contains("run_id"), "reserved fields are not indexed");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_config_error_is_listed_before_anything_runs() {
    let config = json!({
        "connectors": [
            {"name": "a", "class": "SequenceConnector", "pipeline": "missing"},
            {"class": "NoSuchConnector", "name": "b"},
            {"name": "a", "class": "SequenceConnector", "numDocs": 1}
        ],
        "pipelines": [{"name": "p", "stages": [{"class": "CopyFields"}]}],
        "indexer": {"type": "elastic-ish", "batchSize": 0},
        "worker": {"threads": 0, "bogus": true},
        "publisher": {"queueCapacity": "lots"}
    });
    let text = plan(&config, None).err().unwrap().to_string();
    for part in [
        "connectors[0].numDocs: missing required key",
        "connectors[1].class: unknown connector class \"NoSuchConnector\"",
        "connectors[2].name: duplicate connector name \"a\"",
        "pipelines[0].stages[0].fieldMapping",
        "indexer.batchSize: must be at least 1",
        "worker.threads: must be at least 1",
        "worker.bogus: unknown key",
        "publisher.queueCapacity: must be an integer",
    ] {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }
    let missing_pipeline = plan(&json!({"connectors": [{"name": "a", "class": "SequenceConnector", "numDocs": 1, "pipeline": "nope"}]}), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        missing_pipeline.contains("connectors[0].pipeline: no pipeline named \"nope\""),
        "{missing_pipeline}"
    );
    let unknown_type = plan(
        &json!({"connectors": [], "indexer": {"type": "elastic-ish"}}),
        None,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        unknown_type.contains("unknown indexer type \"elastic-ish\""),
        "{unknown_type}"
    );
}

#[test]
fn a_failed_connector_skips_the_rest() {
    let config = json!({
        "connectors": [
            {"name": "first", "class": "SequenceConnector", "numDocs": 2},
            {"name": "bad", "class": "SequenceConnector", "numDocs": 5, "pipeline": "p"},
            {"name": "never", "class": "SequenceConnector", "numDocs": 1}
        ],
        "pipelines": [{"name": "p", "stages": [{"class": "CreateChildrenStage", "numChildren": 1}]}],
        "indexer": {"type": "jsonl"},
        "jsonl": {"path": "/proc/not/writable/out.jsonl"}
    });
    let r = run(&config, None, &RunOptions::default()).unwrap();
    assert!(!r.ok);
    assert!(
        matches!(r.connectors[0].status, ConnectorStatus::Failed(_)),
        "{}",
        r.summary
    );
    assert_eq!(r.connectors[1].status, ConnectorStatus::Skipped);
    assert!(
        r.summary.contains("first: ERROR. indexer:"),
        "{}",
        r.summary
    );
    assert!(
        r.summary.contains("bad: skipped.") && r.summary.contains("never: skipped."),
        "{}",
        r.summary
    );
}

#[test]
fn connector_timeout_fails_the_connector_not_the_process() {
    let config = json!({
        "connectors": [{"name": "slow", "class": "SequenceConnector", "numDocs": 1000000}],
        "runner": {"connectorTimeout": 50},
        "publisher": {"queueCapacity": 10}
    });
    let r = run(&config, None, &test_opts()).unwrap();
    assert!(!r.ok);
    assert_eq!(
        r.connectors[0].status,
        ConnectorStatus::Failed("Connector timeout.".into())
    );
}

#[test]
fn stop_flag_ends_the_run_gracefully_with_everything_accounted() {
    let opts = test_opts();
    let stop = opts.stop.clone();
    let config = json!({
        "connectors": [{"name": "big", "class": "SequenceConnector", "numDocs": 100000000}, {"name": "next", "class": "SequenceConnector", "numDocs": 1}],
        "publisher": {"queueCapacity": 100}
    });
    let handle = std::thread::spawn(move || run(&config, None, &opts).unwrap());
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let r = handle.join().unwrap();
    let c = &r.connectors[0];
    assert!(matches!(c.status, ConnectorStatus::Failed(_)));
    assert!(c.published > 0);
    assert_eq!(
        c.published,
        c.succeeded + c.failed + c.dropped,
        "nothing published is left unaccounted"
    );
    assert_eq!(r.connectors[1].status, ConnectorStatus::Skipped);
}

/// 10,000 seeded cases by default (`LUCILLE_ACCOUNTING_CASES` to change). A random pipeline
/// per case: drops, children at several stages (some dropped), generators failing midway, stage
/// errors, panics, slow stages; a backend that is fine, rejects single documents, or (`test-faulty`)
/// fails whole batches, panics, answers with too few results, is slow; and in a few cases
/// (1 in 2,000) a stage that never returns under `worker.maxProcessingSecs: 1`. In every case
/// every published document and child gets exactly one terminal event, the counts match the
/// summary, and the run completes within a bounded wait. Most cases are small (under 40
/// documents, a nop-like backend) so that 10,000 of them stay within CI time.
#[test]
fn randomized_accounting_is_exact() {
    let cases: u64 = std::env::var("LUCILLE_ACCOUNTING_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let started = Instant::now();
    // Cases run PARALLEL at a time: a run spends most of its few tens of milliseconds waiting
    // on its threads' polls, so this is what fits 10,000 cases in CI time on two cores.
    const PARALLEL: usize = 24;
    let next = std::sync::atomic::AtomicU64::new(0);
    let timeouts = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= cases {
                    break;
                }
                accounting_case(seed, &timeouts);
            });
        }
    });
    eprintln!(
        "randomized_accounting_is_exact: {cases} cases ({} with a stage past maxProcessingSecs) in {:.1} s",
        timeouts.load(Ordering::SeqCst),
        started.elapsed().as_secs_f64()
    );
}

/// One case of [`randomized_accounting_is_exact`]: panics on a broken rule.
fn accounting_case(seed: u64, timeouts: &std::sync::atomic::AtomicU64) {
    {
        let mut rng = StdRng::seed_from_u64(seed);
        let stuck = seed % 2000 == 1999;
        let num_docs = if stuck {
            rng.random_range(1..8u32)
        } else {
            rng.random_range(0..40u32)
        };
        let mut stages = vec![
            json!({"class": "AddRandomInt", "fieldName": "r", "rangeStart": 0, "rangeEnd": 10}),
        ];
        for _ in 0..rng.random_range(1..6) {
            let when = |v: u32| json!([{"fields": ["r"], "values": [v]}]);
            let pick = rng.random_range(0..8);
            let v = rng.random_range(0..10u32);
            stages.push(match pick {
                0 => json!({"class": "DropDocument", "conditions": when(v)}),
                1 => json!({"class": "CreateChildrenStage", "numChildren": rng.random_range(1..4), "conditions": when(v)}),
                2 => json!({"class": "CreateChildrenStage", "numChildren": 3, "failAfter": 1, "conditions": when(v)}),
                3 => json!({"class": "CopyFields", "fieldMapping": {"r": "id"}, "conditions": when(v)}),
                4 => json!({"class": "TestPanicOn", "field": "r", "value": v.to_string()}),
                5 => json!({"class": "CreateChildrenStage", "numChildren": 3, "dropChild": rng.random_range(1..4), "dropParent": rng.random_bool(0.3), "conditions": when(v)}),
                6 => json!({"class": "TestSleepOn", "field": "r", "value": v.to_string(), "millis": 1}),
                _ => json!({"class": "SetStaticValues", "staticValues": {"s": v}}),
            });
        }
        let mut worker = json!({"threads": rng.random_range(1..3)});
        if stuck {
            // A stage that never returns (an hour) on one value of r: each such document FAILs
            // after 1 s and its thread is replaced.
            let v = rng.random_range(0..10u32);
            stages.push(json!({"class": "TestSleepOn", "field": "r", "value": v.to_string(), "millis": 3_600_000}));
            worker["maxProcessingSecs"] = json!(1);
            timeouts.fetch_add(1, Ordering::SeqCst);
        }
        let backend = ["nop", "test-reject", "test-faulty"][rng.random_range(0..3)];
        let config = json!({
            "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": num_docs, "pipeline": "p"}],
            "pipelines": [{"name": "p", "stages": stages}],
            "worker": worker,
            "indexer": {"type": backend,
                        "batchSize": rng.random_range(1..8), "batchTimeout": rng.random_range(1..20)},
            "publisher": {"queueCapacity": rng.random_range(1..20)},
            "runner": {"connectorTimeout": 60000}
        });
        // Local mode with the real (test) backend, recording every event; a bounded wait.
        let opts = RunOptions {
            record_history: true,
            ..Default::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(run(&config, None, &opts));
        });
        let r = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(r) => r.unwrap_or_else(|e| panic!("seed {seed}: {e}")),
            Err(_) => panic!("seed {seed}: the run did not end within 120 s"),
        };
        assert!(r.ok, "seed {seed}: {}", r.summary);
        let c = &r.connectors[0];
        let (_, events) = test_history(&r);
        // Every tracked document: the published ones and every CREATE.
        let mut tracked: HashMap<String, i64> = HashMap::new();
        for i in 0..num_docs {
            *tracked.entry(i.to_string()).or_default() += 1;
        }
        let mut terminal: HashMap<String, i64> = HashMap::new();
        for e in &events {
            match e.kind {
                EventType::Create => *tracked.entry(e.doc_id.clone()).or_default() += 1,
                _ => *terminal.entry(e.doc_id.clone()).or_default() += 1,
            }
        }
        assert_eq!(
            tracked, terminal,
            "seed {seed}: each tracked document ends exactly once"
        );
        let count = |k: EventType| events.iter().filter(|e| e.kind == k).count() as u64;
        assert_eq!(
            (c.succeeded, c.failed, c.dropped),
            (
                count(EventType::Finish),
                count(EventType::Fail),
                count(EventType::Drop)
            ),
            "seed {seed}"
        );
        assert_eq!(c.published, u64::from(num_docs));
        assert!(
            r.summary.contains(&format!(
                "c: complete. {} docs succeeded. {} docs {}. {} docs dropped.",
                c.succeeded,
                c.failed,
                if c.failed > 0 { "FAILED" } else { "failed" },
                c.dropped
            )),
            "seed {seed}: {}",
            r.summary
        );
    }
}

#[test]
fn environment_overrides_follow_typesafe_naming() {
    let vars = [
        ("CONFIG_FORCE_worker_threads", "4"),
        ("CONFIG_FORCE_my___key", "x"),
        ("CONFIG_FORCE_a__b_c", "y"),
        ("CONFIG_FORCE_", "ignored"),
        ("OTHER_worker_threads", "9"),
    ];
    let got = env_overrides(
        vars.iter()
            .map(|(k, v)| (std::ffi::OsString::from(k), std::ffi::OsString::from(v))),
    );
    assert_eq!(
        got,
        vec![
            ("a-b.c".to_string(), "y".to_string()),
            ("my_key".to_string(), "x".to_string()),
            ("worker.threads".to_string(), "4".to_string())
        ]
    );
}

#[test]
fn a_wedged_indexer_fails_the_run_and_every_waiting_document() {
    // The backend's first call never returns; the queues are tiny so workers and the
    // connector block behind it. The watchdog must end the run, FAIL what waited, and name
    // the documents stuck in the hung call. A long batchTimeout: the first batch is always a
    // full one of 10 (a short one flushed part-filled batches on a loaded machine).
    let config = json!({
        "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 200}],
        "indexer": {"type": "test-wedge", "batchSize": 10, "batchTimeout": 60000, "inactivityTimeout": 300},
        "publisher": {"queueCapacity": 4},
        "worker": {"threads": 1}
    });
    let r = run(&config, None, &RunOptions::default()).unwrap();
    assert!(!r.ok, "{}", r.summary);
    let c = &r.connectors[0];
    let ConnectorStatus::Failed(message) = &c.status else {
        panic!("expected a failed connector: {}", r.summary)
    };
    assert!(message.contains("the indexer is wedged"), "{message}");
    assert!(
        message.contains("10 documents did not reach a terminal event"),
        "{message}"
    );
    assert_eq!(c.succeeded, 0);
    // Every published document is either FAILed or one of the 10 in the hung call.
    assert_eq!(c.failed + 10, c.published, "{}", r.summary);
    assert!(c.published >= 10 && c.published < 200, "{}", r.summary);
}

/// The connector's counts add up: every published document ended, or is among those the
/// failure message says did not reach a terminal event.
fn pending_in(message: &str) -> u64 {
    message
        .split("; ")
        .find_map(|part| part.strip_suffix(" documents did not reach a terminal event"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Runs a config whose (only) connector must fail; returns it and its failure message.
fn failed_connector(config: &Value) -> (ConnectorResult, String) {
    let r = run(config, None, &RunOptions::default()).unwrap();
    assert!(!r.ok, "{}", r.summary);
    let c = r.connectors.into_iter().next().expect("one connector");
    let ConnectorStatus::Failed(message) = &c.status else {
        panic!("expected a failed connector: {}", r.summary)
    };
    let message = message.clone();
    (c, message)
}

#[test]
fn a_dead_worker_thread_fails_the_run_and_says_which() {
    // Stage panics are caught per document; a fault in the worker's own loop ends its thread.
    // Nothing else would notice: the other worker goes on, but the dead one's document never
    // ends, so without looking at the threads the run would wait for ever.
    crate::fault_point::arm("worker", "dead-worker-7");
    let config = json!({
        "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 400, "docIdPrefix": "dead-worker-"}],
        "publisher": {"queueCapacity": 8},
        "worker": {"threads": 2}
    });
    let (c, message) = failed_connector(&config);
    assert!(
        message.contains("worker thread lucille-worker-")
            && message.contains("died (panicked: fault point worker hit by dead-worker-7)"),
        "{message}"
    );
    let pending = pending_in(&message);
    assert!(pending >= 1, "{message}");
    assert_eq!(
        c.succeeded + c.failed + c.dropped + pending,
        c.published,
        "{message}"
    );
}

#[test]
fn a_dead_indexer_thread_fails_the_run_and_every_waiting_document() {
    crate::fault_point::arm("indexer", "dead-indexer-5");
    let config = json!({
        "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 400, "docIdPrefix": "dead-indexer-"}],
        "indexer": {"type": "nop", "batchSize": 10},
        "publisher": {"queueCapacity": 4},
        "worker": {"threads": 1}
    });
    let (c, message) = failed_connector(&config);
    assert!(
        message.contains(
            "the indexer thread died (panicked: fault point indexer hit by dead-indexer-5)"
        ),
        "{message}"
    );
    // What waited for the indexer was FAILed (the drain), what its batch held is reported.
    let pending = pending_in(&message);
    assert!(c.failed > 0, "{message}");
    assert_eq!(c.succeeded + c.failed + pending, c.published, "{message}");
    assert!(c.published < 400, "the connector was stopped: {message}");
}

#[test]
fn a_slow_but_moving_indexer_is_not_wedged() {
    let config = json!({
        "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 30}],
        "indexer": {"type": "test-reject", "batchSize": 1, "inactivityTimeout": 1},
        "publisher": {"queueCapacity": 2}
    });
    let r = run(&config, None, &RunOptions::default()).unwrap();
    // Rejections are per document; the run itself completes.
    assert!(r.ok, "{}", r.summary);
    assert_eq!((r.connectors[0].succeeded, r.connectors[0].failed), (27, 3));
}

#[test]
fn a_document_past_max_processing_secs_fails_and_the_run_goes_on() {
    let config = json!({
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 20, "pipeline": "main", "docIdPrefix": "d-"}],
        "pipelines": [{"name": "main", "stages": [
            {"class": "TestSleepOn", "field": "id", "value": "d-5", "millis": 3_600_000},
            {"class": "SetStaticValues", "staticValues": {"kind": "x"}}
        ]}],
        "worker": {"threads": 2, "maxProcessingSecs": 1}
    });
    let r = run(&config, None, &test_opts()).unwrap();
    let c = &r.connectors[0];
    assert_eq!(
        (c.published, c.succeeded, c.failed, c.dropped),
        (20, 19, 1, 0),
        "{}",
        r.summary
    );
    let (docs, events) = test_history(&r);
    assert_eq!(docs.len(), 19);
    assert!(docs.iter().all(|d| d.id() != "d-5"));
    let terminal: Vec<_> = events.iter().filter(|e| e.doc_id == "d-5").collect();
    assert_eq!(terminal.len(), 1, "{terminal:?}");
    assert_eq!(terminal[0].kind, EventType::Fail);
    let message = terminal[0].message.as_deref().unwrap_or_default();
    assert!(message.contains("worker.maxProcessingSecs"), "{message}");
}

#[test]
fn a_forced_stop_ends_now_and_reports_documents_in_flight() {
    let opts = test_opts();
    let (stop, force) = (opts.stop.clone(), opts.force.clone());
    let config = json!({
        "connectors": [{"name": "big", "class": "SequenceConnector", "numDocs": 1000, "docIdPrefix": "d-", "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "TestSleepOn", "field": "id", "value": "d-3", "millis": 3_600_000}
        ]}],
        "publisher": {"queueCapacity": 10}
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&config, None, &opts).unwrap());
    });
    // A graceful stop would wait for d-3 (an hour); a forced one does not.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));
    force.store(true, Ordering::SeqCst);
    let r = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the forced stop did not end the run");
    let c = &r.connectors[0];
    let ConnectorStatus::Failed(message) = &c.status else {
        panic!("{:?}", c.status)
    };
    assert!(message.starts_with("forced stop"), "{message}");
    let in_flight: u64 = message
        .split("; ")
        .find_map(|part| part.strip_suffix(" documents in flight (published, not finished)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no in-flight count in {message:?}"));
    assert!(in_flight >= 1, "d-3 at least is in flight");
    assert_eq!(
        c.published,
        c.succeeded + c.failed + c.dropped + in_flight,
        "every published document is finished or reported in flight"
    );
    assert_eq!(c.in_flight, in_flight);
    assert!(
        r.summary.starts_with(
            "RUN SUMMARY: Failure. 0/1 connectors complete. Some docs did not finish.\n"
        ),
        "{}",
        r.summary
    );
}

#[test]
fn each_config_error_is_reported_once() {
    let config = json!({
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": "ParseDate", "source": 5}]}],
        "worker": {"threads": "two"},
        "publisher": {"queueCapacity": "many"}
    });
    let Err(errors) = plan(&config, None) else {
        panic!("accepted")
    };
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "pipelines[0].stages[0].source",
            "pipelines[0].stages[0].dest",
            "worker.threads",
            "publisher.queueCapacity"
        ],
        "{errors}"
    );
}

#[test]
fn skip_unchanged_errors_name_the_connector_and_say_what_to_do() {
    let config = |indexer: Value| {
        let mut c = json!({"connectors": [
            {"name": "a", "class": "SequenceConnector", "numDocs": 1, "skipUnchanged": true}
        ]});
        c.as_object_mut()
            .unwrap()
            .extend(indexer.as_object().unwrap().clone());
        c
    };
    let replaced = plan(
        &config(json!({"indexer": {"type": "jsonl"}, "jsonl": {"path": "out.jsonl"}})),
        None,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        replaced.contains("connectors[0].skipUnchanged: the jsonl indexer replaces ")
            && replaced.contains("out.jsonl at each run")
            && replaced.contains("set jsonl.append: true (or remove skipUnchanged)"),
        "{replaced}"
    );
    let nowhere = plan(&config(json!({"indexer": {"type": "nop"}})), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        nowhere
            .contains("connectors[0].skipUnchanged: the nop indexer keeps nothing on this machine")
            && nowhere
                .contains("set skipUnchangedPath (a file, e.g. \"state/a.unchanged.sqlite\")"),
        "{nowhere}"
    );
}

/// Each top-level block is read by a function of its own; all of them report into one list, in
/// one call, each problem once at its key path (the pipeline that failed to plan is not reported
/// again as missing where the connector and the worker name it).
#[test]
fn errors_from_every_block_are_reported_together_each_once() {
    let config = json!({
        "runner": {"stallWarningSecs": -1},
        "pipelines": [{"name": "p", "stages": [{"class": "CopyFields"}]}],
        "connectors": [
            {"name": "a", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p",
             "skipUnchanged": true},
            {"name": "a", "class": "SequenceConnector", "numDocs": 1}
        ],
        "indexer": {"type": "jsonl"},
        "jsonl": {"path": "out.jsonl", "bogus": 1},
        "log": {"seconds": "often"},
        "metrics": {"host": "0.0.0.0"},
        "tracing": {"otlpEndpoint": "ftp://collector"},
        "worker": {"threads": 0, "pipeline": "p"},
        "publisher": {"queueCapacity": 0},
        "kafka": {"bootstrapServers": "localhost:9092", "sourceTopic": "not a topic"}
    });
    let Err(errors) = plan(&config, None) else {
        panic!("accepted")
    };
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "pipelines[0].stages[0].fieldMapping",
            "connectors[1].name",
            "jsonl.bogus",
            "connectors[0].skipUnchanged",
            "log.seconds",
            "metrics.port",
            "tracing.otlpEndpoint",
            "worker.threads",
            "publisher.queueCapacity",
            "kafka.sourceTopic",
            "runner.stallWarningSecs",
        ],
        "{errors}"
    );
}
