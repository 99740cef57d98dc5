use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::accounting::{Event, EventType};
use crate::config::ComponentConfig;
use crate::document::Document;
use crate::indexer::ToIndex;
use crate::messaging::{IndexerSide, LocalMessenger, PublisherSide};
use crate::pipeline::PipelinePlan;
use crate::worker::*;

fn plan(stages: Value) -> PipelinePlan {
    let Value::Array(stages) = stages else {
        panic!()
    };
    PipelinePlan::from_config("main", &stages, "pipelines[0].stages", &Default::default()).unwrap()
}

fn drain_events(m: &LocalMessenger, want: usize) -> Vec<Event> {
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while events.len() < want && Instant::now() < deadline {
        if let Some(e) = m.poll_event(Duration::from_millis(20)) {
            events.push(e);
        }
    }
    events
}

#[test]
fn workers_emit_create_drop_fail_and_index() {
    let m = Arc::new(LocalMessenger::new(100));
    let p = plan(json!([
        {"class": "DropDocument", "conditions": [{"fields": ["kind"], "values": ["drop"]}]},
        {"class": "CopyFields", "fieldMapping": {"a": "id"}, "conditions": [{"fields": ["kind"], "values": ["bad"]}]},
        {"class": "CreateChildrenStage", "numChildren": 2, "conditions": [{"fields": ["kind"], "values": ["kids"]}]}
    ]));
    let pool = WorkerPool::start(
        p,
        WorkerSettings {
            threads: 2,
            ..Default::default()
        },
        m.clone(),
        Arc::from("r"),
        None,
    )
    .unwrap();
    for (id, kind) in [("1", "drop"), ("2", "bad"), ("3", "kids"), ("4", "plain")] {
        let mut d = Document::new(id).unwrap();
        d.set_field("kind", kind).unwrap();
        d.set_field("a", "x").unwrap();
        m.send_for_processing(d.into()).unwrap();
    }
    // 1 DROP, 1 FAIL, 2 CREATE for 3's children; 3, its children and 4 go to the indexer.
    let events = drain_events(&m, 4);
    // Document 4 sends no event: wait for it to reach the indexer queue before stopping (a
    // stop ends workers before documents they have not taken).
    let mut indexed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while indexed.len() < 4 && Instant::now() < deadline {
        if let Some(d) = m.poll_doc_to_index(Duration::from_millis(10)) {
            indexed.push(d.id().to_string());
        }
    }
    let stats = pool.stats.clone();
    let metrics = pool.stop();
    let mut kinds: Vec<_> = events.iter().map(|e| (e.doc_id.clone(), e.kind)).collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(kinds.iter().filter(|k| k.1 == EventType::Create).count(), 2);
    assert!(kinds.contains(&("1".into(), EventType::Drop)));
    assert!(kinds.contains(&("2".into(), EventType::Fail)));
    let fail = events.iter().find(|e| e.kind == EventType::Fail).unwrap();
    assert!(
        fail.message.as_deref().unwrap().contains("reserved"),
        "{fail:?}"
    );
    while let Some(d) = m.poll_doc_to_index(Duration::from_millis(10)) {
        indexed.push(d.id().to_string());
    }
    indexed.sort();
    assert_eq!(indexed.len(), 4, "{indexed:?}");
    assert!(indexed.contains(&"3".to_string()) && indexed.contains(&"4".to_string()));
    assert_eq!(stats.processed.load(Ordering::Relaxed), 4);
    assert_eq!(metrics.len(), 3);
    // Summed over both workers; a stage counts only documents its conditions let in.
    assert_eq!(
        (
            metrics[0].processed,
            metrics[1].processed,
            metrics[2].processed
        ),
        (1, 1, 1)
    );
    assert_eq!(metrics[1].errors, 1);
    assert_eq!(metrics[2].children, 2);
}

#[test]
fn retries_then_dead_letters_a_poison_document() {
    let dir = std::env::temp_dir().join(format!("lucille-dlq-{}", std::process::id()));
    let dl = dir.join("dead.jsonl");
    let m = Arc::new(LocalMessenger::new(10));
    // Fails every time: writing to a reserved field.
    let p = plan(json!([{"class": "CopyFields", "fieldMapping": {"a": "id"}}]));
    let settings = WorkerSettings {
        max_retries: Some(2),
        dead_letter_path: Some(dl.clone()),
        ..Default::default()
    };
    let pool = WorkerPool::start(p, settings, m.clone(), Arc::from("r"), None).unwrap();
    let mut d = Document::new("poison").unwrap();
    d.set_field("a", "x").unwrap();
    m.send_for_processing(d.into()).unwrap();
    let events = drain_events(&m, 1);
    pool.stop();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventType::Fail);
    assert!(events[0]
        .message
        .as_deref()
        .unwrap()
        .contains("after 3 attempts"));
    let text = std::fs::read_to_string(&dl).unwrap();
    let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(line["id"], "poison");
    assert_eq!(line["attempts"], 3);
    assert_eq!(line["document"]["a"], "x");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_stage_error_fails_the_document_and_the_worker_goes_on() {
    let m = Arc::new(LocalMessenger::new(10));
    let p = plan(json!([{"class": "Print", "outputFile": "/proc/definitely/not/writable.json"}]));
    let pool = WorkerPool::start(
        p,
        WorkerSettings::default(),
        m.clone(),
        Arc::from("r"),
        None,
    )
    .unwrap();
    m.send_for_processing(Document::new("a").unwrap().into())
        .unwrap();
    m.send_for_processing(Document::new("b").unwrap().into())
        .unwrap();
    let events = drain_events(&m, 2);
    pool.stop();
    assert_eq!(
        events.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [EventType::Fail, EventType::Fail]
    );
}

/// Builds `{"id": <id>, "raw": <the text>}`, refusing text that says "bad".
struct TextBuilder;

impl crate::record::RecordBuilder for TextBuilder {
    fn build(&self, id: &str, text: &str) -> Result<Document, crate::record::BuildError> {
        if text.contains("bad") {
            return Err(crate::record::BuildError::Invalid(
                "cannot build this one".into(),
            ));
        }
        if text.contains("boom") {
            panic!("builder exploded");
        }
        let mut d = Document::new(id)?;
        d.set_field("raw", text)?;
        Ok(d)
    }
}

#[test]
fn records_are_built_on_the_worker_and_a_failed_build_fails_with_file_and_line() {
    use crate::record::{Record, ToProcess};
    let dir = std::env::temp_dir().join(format!("lucille-rec-{}", uuid::Uuid::new_v4()));
    let dl = dir.join("dead.jsonl");
    let m = Arc::new(LocalMessenger::new(10));
    let settings = WorkerSettings {
        dead_letter_path: Some(dl.clone()),
        ..Default::default()
    };
    let p = plan(json!([{"class": "CopyFields", "fieldMapping": {"raw": "copy"}}]));
    let pool = WorkerPool::start(p, settings, m.clone(), Arc::from("r"), None).unwrap();
    let builder: Arc<dyn crate::record::RecordBuilder> = Arc::new(TextBuilder);
    for (id, text, line) in [("a", "fine", 1), ("b", "bad", 2), ("c", "boom", 3)] {
        m.send_for_processing(ToProcess::Record(Record {
            id: id.into(),
            text: text.into(),
            builder: builder.clone(),
            origin: Arc::from("/data/x.jsonl"),
            line,
            run_id: Some(Arc::from("r")),
        }))
        .unwrap();
    }
    let mut events = drain_events(&m, 2);
    events.sort_by(|x, y| x.doc_id.cmp(&y.doc_id));
    let mut indexed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while indexed.is_empty() && Instant::now() < deadline {
        if let Some(ToIndex::Doc(d)) = m.poll_doc_to_index(Duration::from_millis(20)) {
            indexed.push(d);
        }
    }
    pool.stop();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        (events[0].doc_id.as_str(), events[0].kind),
        ("b", EventType::Fail)
    );
    assert_eq!(
        (events[1].doc_id.as_str(), events[1].kind),
        ("c", EventType::Fail)
    );
    let boom = events[1].message.as_deref().unwrap();
    assert!(
        boom.starts_with("/data/x.jsonl: line 3: building the document panicked")
            && boom.contains("builder exploded"),
        "{boom}"
    );
    assert_eq!(
        events[0].message.as_deref(),
        Some("/data/x.jsonl: line 2: cannot build this one")
    );
    assert_eq!(indexed.len(), 1);
    assert_eq!(indexed[0].id(), "a");
    assert_eq!(
        indexed[0].run_id(),
        Some("r"),
        "the built document carries the run id"
    );
    assert_eq!(
        indexed[0].get_str("copy"),
        Some("fine"),
        "then the pipeline ran"
    );
    let dead: Value = serde_json::from_str(
        std::fs::read_to_string(&dl)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(dead["id"], "b");
    assert_eq!(
        dead["error"],
        "/data/x.jsonl: line 2: cannot build this one"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn timeout_pool(m: &Arc<LocalMessenger>, until: &std::path::Path, threads: usize) -> WorkerPool {
    let p = plan(json!([
        {"class": "TestSleepOn", "field": "id", "value": "slow", "millis": 3_600_000,
         "untilFile": until.to_str().unwrap()},
        {"class": "SetStaticValues", "staticValues": {"done": true}}
    ]));
    WorkerPool::start(
        p,
        WorkerSettings {
            threads,
            max_processing: Some(Duration::from_secs(1)),
            ..Default::default()
        },
        m.clone(),
        Arc::from("r"),
        None,
    )
    .unwrap()
}

#[test]
fn a_stuck_rust_stage_is_timed_out_and_its_late_result_discarded() {
    let dir = std::env::temp_dir().join(format!("lucille-timeout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let release = dir.join("release");
    let _ = std::fs::remove_file(&release);
    let m = Arc::new(LocalMessenger::new(100));
    let pool = timeout_pool(&m, &release, 1);
    for id in ["a", "slow", "b", "c"] {
        m.send_for_processing(Document::new(id).unwrap().into())
            .unwrap();
    }
    // The one worker is stuck on "slow": the supervisor FAILs it and a replacement worker
    // takes "b" and "c".
    let events = drain_events(&m, 1);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].doc_id.as_str(), events[0].kind),
        ("slow", EventType::Fail)
    );
    let message = events[0].message.clone().unwrap_or_default();
    assert!(message.contains("timed out"), "{message}");
    assert!(
        message.contains("worker.maxProcessingSecs (1 s)"),
        "{message}"
    );
    let mut indexed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while indexed.len() < 3 && Instant::now() < deadline {
        if let Some(d) = m.poll_doc_to_index(Duration::from_millis(20)) {
            indexed.push(d.id().to_string());
        }
    }
    indexed.sort();
    assert_eq!(indexed, ["a", "b", "c"]);
    // Let the abandoned thread return and wait until it has ended (it held a messenger
    // handle, as the replacement and the pool's spawner do): it must have sent nothing.
    std::fs::write(&release, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Arc::strong_count(&m) > 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(Arc::strong_count(&m), 3, "the abandoned worker never ended");
    assert!(m.try_poll_event().is_none());
    assert!(m.poll_doc_to_index(Duration::ZERO).is_none());
    assert_eq!(pool.stats.failed.load(Ordering::Relaxed), 1);
    pool.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn max_processing_secs_is_read_and_checked() {
    let ok = ComponentConfig::new(
        json!({"maxProcessingSecs": 5, "exitOnTimeout": false})
            .as_object()
            .unwrap()
            .clone(),
        "worker",
    );
    let s = WorkerSettings::from_config(&ok, None).unwrap();
    assert_eq!(s.max_processing, Some(Duration::from_secs(5)));
    let bad = ComponentConfig::new(
        json!({"maxProcessingSecs": 0}).as_object().unwrap().clone(),
        "worker",
    );
    let e = WorkerSettings::from_config(&bad, None).unwrap_err();
    assert!(e[0].to_string().contains("at least 1"), "{:?}", e);
}

#[test]
fn a_document_past_the_kafka_retry_count_is_failed_without_being_processed() {
    use crate::record::ToProcess;
    let dir = std::env::temp_dir().join(format!("lucille-exh-{}", uuid::Uuid::new_v4()));
    let dl = dir.join("dead.jsonl");
    let m = Arc::new(LocalMessenger::new(10));
    let settings = WorkerSettings {
        dead_letter_path: Some(dl.clone()),
        max_retries: Some(2),
        ..Default::default()
    };
    let p = plan(json!([{"class": "SetStaticValues", "staticValues": {"seen": "yes"}}]));
    let pool = WorkerPool::start(p, settings, m.clone(), Arc::from("r"), None).unwrap();
    let mut doc = Document::new("x").unwrap();
    doc.initialize_run_id("r").unwrap();
    m.send_for_processing(ToProcess::Exhausted {
        doc,
        reason: "started 3 times".into(),
        attempts: 3,
    })
    .unwrap();
    let events = drain_events(&m, 1);
    let indexed = m.poll_doc_to_index(Duration::from_millis(200));
    pool.stop();
    assert_eq!(
        (events[0].doc_id.as_str(), events[0].kind),
        ("x", EventType::Fail)
    );
    assert_eq!(events[0].message.as_deref(), Some("started 3 times"));
    assert!(indexed.is_none(), "not processed, not indexed");
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&dl).unwrap().trim()).unwrap();
    assert_eq!(
        (line["id"].as_str(), line["attempts"].as_u64()),
        (Some("x"), Some(3))
    );
    assert!(line["document"].get("seen").is_none(), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_message_that_is_not_a_document_fails_in_the_run_it_names_and_keeps_its_text() {
    use crate::record::ToProcess;
    let dir = std::env::temp_dir().join(format!("lucille-unr-{}", uuid::Uuid::new_v4()));
    let dl = dir.join("dead.jsonl");
    let m = Arc::new(LocalMessenger::new(10));
    let settings = WorkerSettings {
        dead_letter_path: Some(dl.clone()),
        ..Default::default()
    };
    let p = plan(json!([{"class": "SetStaticValues", "staticValues": {"seen": "yes"}}]));
    let pool = WorkerPool::start(p, settings, m.clone(), Arc::from("r"), None).unwrap();
    for (id, run) in [("named", Some("other-run")), ("anonymous", None)] {
        m.send_for_processing(ToProcess::Unreadable {
            id: id.into(),
            run_id: run.map(Arc::from),
            reason: format!("not a document (expected value) at src[0]@{id}"),
            text: Some("{oops".into()),
        })
        .unwrap();
    }
    m.send_for_processing(Document::new("fine").unwrap().into())
        .unwrap();
    // One worker thread, in order: once "fine" is indexed, both messages were answered for.
    let indexed = m.poll_doc_to_index(Duration::from_secs(5));
    pool.stop();
    let mut events = Vec::new();
    while let Some(e) = m.try_poll_event() {
        events.push(e);
    }
    assert_eq!(indexed.map(|i| i.id().to_string()).as_deref(), Some("fine"));
    // Only the message that names its run is counted there; the other has no run to count it.
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (
            events[0].doc_id.as_str(),
            events[0].kind,
            &*events[0].run_id
        ),
        ("named", EventType::Fail, "other-run")
    );
    assert!(events[0]
        .message
        .as_deref()
        .is_some_and(|m| m.contains("not a document")));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&dl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0]["id"].as_str(), lines[0]["text"].as_str()),
        (Some("named"), Some("{oops"))
    );
    assert_eq!(lines[1]["run_id"], serde_json::Value::Null);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Local queues that record how a pool takes its documents: the largest block asked for, and
/// how many units of work (`done_processing` calls) the documents came in.
struct Blocks {
    inner: LocalMessenger,
    largest_ask: std::sync::atomic::AtomicUsize,
    units: std::sync::atomic::AtomicUsize,
}

impl crate::messaging::Events for Blocks {
    fn send_event(&self, event: Event) -> Result<(), crate::messaging::MessagingError> {
        self.inner.send_event(event)
    }
}

impl crate::messaging::WorkerSide for Blocks {
    fn poll_doc_to_process(&self, timeout: Duration) -> Option<crate::record::ToProcess> {
        crate::messaging::WorkerSide::poll_doc_to_process(&self.inner, timeout)
    }
    fn poll_block(&self, max: usize, timeout: Duration, into: &mut Vec<crate::record::ToProcess>) {
        self.largest_ask.fetch_max(max, Ordering::Relaxed);
        crate::messaging::WorkerSide::poll_block(&self.inner, max, timeout, into)
    }
    fn send_for_indexing(&self, item: ToIndex) -> Result<(), crate::messaging::MessagingError> {
        crate::messaging::WorkerSide::send_for_indexing(&self.inner, item)
    }
    fn done_processing(&self) {
        self.units.fetch_add(1, Ordering::Relaxed);
    }
}

fn take_in_blocks(settings: WorkerSettings, docs: usize) -> (usize, usize, usize) {
    let m = Arc::new(Blocks {
        inner: LocalMessenger::new(docs),
        largest_ask: Default::default(),
        units: Default::default(),
    });
    for i in 0..docs {
        m.inner
            .send_for_processing(Document::new(format!("d{i}")).unwrap().into())
            .unwrap();
    }
    let p = plan(json!([{"class": "SetStaticValues", "staticValues": {"seen": "yes"}}]));
    let pool = WorkerPool::start(p, settings, m.clone(), Arc::from("r"), None).unwrap();
    let mut indexed = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while indexed < docs && Instant::now() < deadline {
        if m.inner
            .poll_doc_to_index(Duration::from_millis(20))
            .is_some()
        {
            indexed += 1;
        }
    }
    pool.stop();
    (
        indexed,
        m.units.load(Ordering::Relaxed),
        m.largest_ask.load(Ordering::Relaxed),
    )
}

#[test]
fn cheap_documents_are_taken_in_blocks_one_unit_of_work_each() {
    let (indexed, units, largest) = take_in_blocks(WorkerSettings::default(), 5000);
    assert_eq!(indexed, 5000);
    assert!(largest > 8, "blocks grew past the first guess: {largest}");
    assert!(
        units < 5000 / 8,
        "{units} units of work for 5000 documents: not per document"
    );
}

#[test]
fn under_a_watchdog_a_worker_takes_one_document_at_a_time() {
    let settings = WorkerSettings {
        max_processing: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let (indexed, units, largest) = take_in_blocks(settings, 200);
    assert_eq!(indexed, 200);
    assert_eq!(
        largest, 1,
        "an abandoned worker must hold no block behind its document"
    );
    assert_eq!(units, 200, "one unit of work per document");
}

#[test]
fn a_stage_that_takes_blocks_gets_each_block_in_one_call_with_per_document_outcomes() {
    let m = Arc::new(LocalMessenger::new(1000));
    // Queued before the worker starts: its blocks are as large as its sizer allows.
    let ids: Vec<String> = (0..100)
        .map(|n| match n {
            5 => "d5kids".to_string(),
            n => format!("d{n}"),
        })
        .collect();
    m.send_block(
        ids.iter()
            .map(|id| Document::new(id.as_str()).unwrap().into())
            .collect(),
    )
    .unwrap();
    let pool = WorkerPool::start(
        plan(json!([{"class": "TestBlocks", "failOn": "d7"}, {"class": "CopyFields", "fieldMapping": {"block": "copied"}}])),
        WorkerSettings {
            threads: 1,
            ..Default::default()
        },
        m.clone(),
        Arc::from("r"),
        None,
    )
    .unwrap();
    let mut indexed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while indexed.len() < 101 && Instant::now() < deadline {
        if let Some(ToIndex::Doc(d)) = m.poll_doc_to_index(Duration::from_millis(20)) {
            indexed.push(d);
        }
    }
    let events = drain_events(&m, 3);
    let metrics = pool.stop();
    // Every document but the failed one, the children first, then their parent.
    let order: Vec<&str> = indexed.iter().map(Document::id).collect();
    let mut want: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| *id != "d7")
        .collect();
    want.splice(5..5, ["d5kids-0", "d5kids-1"]);
    assert_eq!(order, want);
    let mut kinds: Vec<(String, EventType)> =
        events.iter().map(|e| (e.doc_id.clone(), e.kind)).collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        kinds,
        [
            ("d5kids-0".to_string(), EventType::Create),
            ("d5kids-1".to_string(), EventType::Create),
            ("d7".to_string(), EventType::Fail)
        ]
    );
    // One call per block: blocks of several documents, each stamped on all of its documents
    // and run through the next stage too.
    let parents: Vec<&Document> = indexed.iter().filter(|d| !d.id().contains('-')).collect();
    let blocks: std::collections::BTreeSet<i64> = parents
        .iter()
        .map(|d| d.get("block").and_then(Value::as_i64).unwrap())
        .collect();
    assert!(
        blocks.len() < 20,
        "{} blocks for 99 documents",
        blocks.len()
    );
    assert!(parents
        .iter()
        .all(|d| d.get("block_size").and_then(Value::as_i64).unwrap() > 1));
    assert!(parents.iter().all(|d| d.get("copied") == d.get("block")));
    assert_eq!(metrics[0].processed, 100);
    assert_eq!(metrics[1].processed, 101, "99 parents and 2 children");
}
