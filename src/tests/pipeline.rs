use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::config::ConfigErrors;
use crate::document::Document;
use crate::stage::condition::Conditions;
use crate::stage::{Stage, StageError, StageFailure};

use crate::document::ids::child_id;
use crate::pipeline::*;
use crate::stage::condition::{Condition, Operator, Policy};
use crate::stage::StageResult;

/// Appends its tag to the `trail` field of every document it sees.
struct Tag(&'static str);
impl Stage for Tag {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        doc.add_to_field("trail", self.0)?;
        Ok(None)
    }
}

/// Emits `n` children with ids `parentId-1..n`, lazily.
struct Split(usize);
impl Stage for Split {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let parent = doc.id().to_string();
        let n = self.0;
        Ok(Some(Box::new(
            (1..=n).map(move |i| Ok(Document::new(child_id(&parent, i))?)),
        )))
    }
}

struct FailOn(&'static str);
impl Stage for FailOn {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if doc.id() == self.0 {
            return Err(StageFailure::msg("boom"));
        }
        Ok(None)
    }
}

struct PanicOn(&'static str);
impl Stage for PanicOn {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if doc.id() == self.0 {
            panic!("stage exploded");
        }
        Ok(None)
    }
}

struct DropOn(&'static str);
impl Stage for DropOn {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if doc.id() == self.0 {
            doc.set_dropped(true);
        }
        Ok(None)
    }
}

/// Emits two children, then a broken one.
struct BrokenChildren;
impl Stage for BrokenChildren {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let p = doc.id().to_string();
        let items: Vec<Result<Document, StageFailure>> = vec![
            Ok(Document::new(format!("{p}-1"))?),
            Ok(Document::new(format!("{p}-2"))?),
            Err(StageFailure::msg("generator broke")),
            Ok(Document::new(format!("{p}-3"))?),
        ];
        Ok(Some(Box::new(items.into_iter())))
    }
}

fn slot(name: &str, stage: impl Stage + 'static) -> StageSlot {
    StageSlot::new(name, Box::new(stage), Conditions::default())
}

fn run(p: &mut Pipeline, id: &str) -> Vec<Output> {
    p.process(Document::new(id).unwrap()).collect()
}

fn summary(outputs: &[Output]) -> Vec<(String, Vec<String>, bool)> {
    outputs
        .iter()
        .map(|o| {
            (
                o.doc.id().to_string(),
                o.doc.get_string_list("trail").unwrap(),
                o.is_child,
            )
        })
        .collect()
}

fn s(v: &str) -> String {
    v.to_string()
}

#[test]
fn children_come_first_and_flow_only_downstream() {
    // S1 tags, S2 splits into 2, S3 tags, S4 splits into 2, S5 tags.
    let mut p = Pipeline::new(
        "p",
        vec![
            slot("s1", Tag("s1")),
            slot("s2", Split(2)),
            slot("s3", Tag("s3")),
            slot("s4", Split(2)),
            slot("s5", Tag("s5")),
        ],
    );
    let out = run(&mut p, "d");
    let got = summary(&out);
    let expected = vec![
        (s("d-1-1"), vec![s("s5")], true),
        (s("d-1-2"), vec![s("s5")], true),
        (s("d-1"), vec![s("s3"), s("s5")], true),
        (s("d-2-1"), vec![s("s5")], true),
        (s("d-2-2"), vec![s("s5")], true),
        (s("d-2"), vec![s("s3"), s("s5")], true),
        (s("d-1"), vec![s("s5")], true),
        (s("d-2"), vec![s("s5")], true),
        (s("d"), vec![s("s1"), s("s3"), s("s5")], false),
    ];
    // S4's children of d itself (fresh d-1, d-2) see only S5 and come out before d.
    assert_eq!(got, expected);
    let m = p.metrics();
    assert_eq!(m[1].processed, 1);
    assert_eq!(m[1].children, 2);
    assert_eq!(m[3].processed, 3, "S4 saw d-1, d-2 and d");
    assert_eq!(m[3].children, 6);
    assert_eq!(m[4].processed, 9);
    assert!(out.iter().all(|o| o.error.is_none()));
}

#[test]
fn dropped_document_stops_flowing_but_comes_out() {
    let mut p = Pipeline::new(
        "p",
        vec![
            slot("s1", Tag("s1")),
            slot("drop", DropOn("d")),
            slot("s3", Tag("s3")),
        ],
    );
    let out = run(&mut p, "d");
    assert_eq!(out.len(), 1);
    assert!(out[0].doc.is_dropped());
    assert_eq!(out[0].doc.get_string_list("trail").unwrap(), vec!["s1"]);
    assert_eq!(p.metrics()[2].processed, 0);
    let other = run(&mut p, "x");
    assert_eq!(
        other[0].doc.get_string_list("trail").unwrap(),
        vec!["s1", "s3"]
    );
}

#[test]
fn skipped_document_bypasses_later_stages() {
    struct Skip;
    impl Stage for Skip {
        fn process_document(&mut self, doc: &mut Document) -> StageResult {
            doc.set_skipped(true);
            Ok(None)
        }
    }
    let mut p = Pipeline::new("p", vec![slot("skip", Skip), slot("s2", Tag("s2"))]);
    let out = run(&mut p, "d");
    assert!(out[0].doc.is_skipped() && !out[0].doc.has("trail"));
}

#[test]
fn errors_and_panics_fail_only_their_document() {
    let mut p = Pipeline::new(
        "p",
        vec![
            slot("split", Split(3)),
            slot("fail", FailOn("d-2")),
            slot("panic", PanicOn("d-3")),
            slot("tag", Tag("t")),
        ],
    );
    let out = run(&mut p, "d");
    let ids: Vec<_> = out.iter().map(|o| o.doc.id().to_string()).collect();
    assert_eq!(ids, ["d-1", "d-2", "d-3", "d"]);
    assert!(out[0].error.is_none());
    assert_eq!(
        out[1].error,
        Some(StageError::Process {
            stage: "fail".into(),
            doc_id: "d-2".into(),
            message: "boom".into()
        })
    );
    match &out[2].error {
        Some(StageError::Panic {
            stage,
            doc_id,
            message,
        }) => {
            assert_eq!((stage.as_str(), doc_id.as_str()), ("panic", "d-3"));
            assert!(message.contains("stage exploded"));
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
    assert!(
        !out[1].doc.has("trail"),
        "stages after a failure skip the document"
    );
    assert!(out[3].error.is_none() && out[3].doc.has("trail"));
    let m = p.metrics();
    assert_eq!((m[1].errors, m[2].errors), (1, 1));
    // The pipeline goes on working after a panic.
    assert!(run(&mut p, "d-3").iter().any(|o| o.error.is_some()));
    assert!(run(&mut p, "ok").iter().all(|o| o.error.is_none()));
}

#[test]
fn broken_children_iterator_fails_the_parent_and_keeps_emitted_children() {
    let mut p = Pipeline::new(
        "p",
        vec![slot("gen", BrokenChildren), slot("tag", Tag("t"))],
    );
    let out = run(&mut p, "d");
    let ids: Vec<_> = out.iter().map(|o| o.doc.id().to_string()).collect();
    assert_eq!(ids, ["d-1", "d-2", "d"]);
    assert!(out[0].error.is_none() && out[1].error.is_none());
    let err = out[2].error.as_ref().unwrap().to_string();
    assert!(
        err.contains("generator broke") && err.contains("\"gen\"") && err.contains("\"d\""),
        "{err}"
    );
    assert!(!out[2].doc.has("trail"));
}

#[test]
fn conditions_gate_a_stage() {
    let cond = Conditions::new(
        vec![Condition::new(
            vec!["kind".into()],
            Some(vec![Some("a".into())]),
            Operator::Must,
        )],
        Policy::All,
    );
    let mut p = Pipeline::new(
        "p",
        vec![StageSlot::new("only_a", Box::new(Tag("a")), cond)],
    );
    let mut a = Document::new("1").unwrap();
    a.set_field("kind", "a").unwrap();
    let mut b = Document::new("2").unwrap();
    b.set_field("kind", "b").unwrap();
    let out_a: Vec<_> = p.process(a).collect();
    let out_b: Vec<_> = p.process(b).collect();
    assert!(out_a[0].doc.has("trail"));
    assert_eq!(
        out_b[0].doc.to_json(),
        r#"{"id":"2","kind":"b"}"#,
        "passed through untouched"
    );
    assert_eq!(p.metrics()[0].processed, 1);
}

#[test]
fn run_id_is_copied_to_children() {
    let mut p = Pipeline::new("p", vec![slot("split", Split(1))]);
    let mut d = Document::new("d").unwrap();
    d.initialize_run_id("run-7").unwrap();
    let out: Vec<_> = p.process(d).collect();
    assert_eq!(out[0].doc.run_id(), Some("run-7"));
}

#[test]
fn memory_stays_bounded_with_many_children() {
    // Children are counted alive from creation until the consumer drops them.
    let alive = Arc::new(AtomicI64::new(0));
    let peak = Arc::new(AtomicI64::new(0));
    struct Many(Arc<AtomicI64>, Arc<AtomicI64>);
    impl Stage for Many {
        fn process_document(&mut self, doc: &mut Document) -> StageResult {
            let parent = doc.id().to_string();
            let (alive, peak) = (self.0.clone(), self.1.clone());
            Ok(Some(Box::new((1..=200_000).map(move |i| {
                let now = alive.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                Ok(Document::new(child_id(&parent, i))?)
            }))))
        }
    }
    let mut p = Pipeline::new(
        "p",
        vec![
            slot("many", Many(alive.clone(), peak.clone())),
            slot("split", Split(2)),
            slot("tag", Tag("t")),
        ],
    );
    let mut count = 0;
    for out in p.process(Document::new("d").unwrap()) {
        count += 1;
        // A first-level child is released when it (the parent of its own split) comes out.
        if out.is_child && out.doc.id().matches('-').count() == 1 {
            alive.fetch_sub(1, Ordering::SeqCst);
        }
    }
    // Each child, its 2 split children; then d's own 2 split children and d.
    assert_eq!(count, 200_000 * 3 + 3);
    assert!(
        peak.load(Ordering::SeqCst) <= 2,
        "peak live children {}",
        peak.load(Ordering::SeqCst)
    );
}

#[test]
fn empty_pipeline_returns_the_document() {
    let mut p = Pipeline::new("p", vec![]);
    let out = run(&mut p, "d");
    assert_eq!(out.len(), 1);
    assert!(!out[0].is_child);
}

#[test]
fn lifecycle_errors_name_the_stage() {
    struct BadStart;
    impl Stage for BadStart {
        fn start(&mut self) -> Result<(), StageFailure> {
            Err(StageFailure::msg("no model"))
        }
        fn process_document(&mut self, _: &mut Document) -> StageResult {
            Ok(None)
        }
    }
    let mut p = Pipeline::new("p", vec![slot("loader", BadStart)]);
    let err = p.start().unwrap_err().to_string();
    assert_eq!(err, "stage \"loader\" failed to start: no model");
    assert!(p.stop().is_ok());
}

fn stages(v: serde_json::Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a,
        _ => panic!(),
    }
}

#[test]
fn plan_from_config_names_disables_and_reports_all_errors() {
    let plan = PipelinePlan::from_config(
        "main",
        &stages(json!([
            {"class": "CopyFields", "fieldMapping": {"a": "b"}},
            {"class": "SetStaticValues", "staticValues": {"x": 1}, "enabled": false},
            {"name": "drop", "class": "com.kmwllc.lucille.stage.DropDocument",
             "conditions": [{"fields": ["b"], "values": ["zap"]}]}
        ])),
        "pipelines[0].stages",
        &std::sync::Arc::new(crate::config::PathContext::new(None)),
    )
    .unwrap();
    let names: Vec<_> = plan.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["stage_1", "drop"],
        "disabled stage left out; default names by position"
    );
    let mut p = plan.instantiate().unwrap();
    p.start().unwrap();
    let mut d = Document::new("1").unwrap();
    d.set_field("a", "zap").unwrap();
    let out: Vec<_> = p.process(d).collect();
    assert!(out[0].doc.is_dropped());
    let keep: Vec<_> = p.process(Document::new("2").unwrap()).collect();
    assert!(!keep[0].doc.is_dropped());

    let err = PipelinePlan::from_config(
        "main",
        &stages(json!([
            {"class": "CopyFields", "fieldMaping": {"a": "b"}},
            {"class": "NoSuchStage"},
            {"name": "x", "class": "DropDocument"},
            {"name": "x", "class": "DropDocument", "percentage": 3},
            {"class": "SetStaticValues", "staticValues": {"x": 1}, "enabled": false, "bogus": 1},
            "not an object",
            {"class": "DropDocument", "conditions": [{"operator": "must"}]},
            {"class": "mystages:Enrich"}
        ])),
        "pipelines[0].stages",
        &std::sync::Arc::new(crate::config::PathContext::new(None)),
    )
    .err()
    .unwrap();
    let text = err.to_string();
    for expected in [
        "pipelines[0].stages[0].fieldMaping: unknown key",
        "pipelines[0].stages[1].class: unknown stage class \"NoSuchStage\"",
        "pipelines[0].stages[3].percentage: must be between 0.0 and 1.0",
        "pipelines[0].stages[4].bogus: unknown key",
        "pipelines[0].stages[5]: a stage must be an object",
        "pipelines[0].stages[6].conditions[0].fields: missing required key",
        "pipelines[0].stages[7].class: Python stages need the lucille Python package",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let dup = PipelinePlan::from_config(
        "main",
        &stages(
            json!([{"name": "x", "class": "DropDocument"}, {"name": "x", "class": "DropDocument"}]),
        ),
        "p",
        &std::sync::Arc::new(crate::config::PathContext::new(None)),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(dup.contains("duplicate stage name \"x\""), "{dup}");
}

/// Tags documents in batches of `size`, recording each batch's length in `sizes`.
struct BatchTag(usize, Arc<parking_lot::Mutex<Vec<usize>>>);
impl Stage for BatchTag {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        self.process_batch(std::slice::from_mut(doc))
            .pop()
            .unwrap_or(Ok(None))
    }
    fn batch_size(&self) -> usize {
        self.0
    }
    fn process_batch(&mut self, docs: &mut [Document]) -> Vec<StageResult> {
        self.1.lock().push(docs.len());
        docs.iter_mut()
            .map(|d| {
                d.add_to_field("trail", "batch")?;
                Ok(None)
            })
            .collect()
    }
}

#[test]
fn a_batch_run_gives_the_lazy_runs_outputs_in_order() {
    let sizes = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let stages = |sizes: &Arc<parking_lot::Mutex<Vec<usize>>>| {
        vec![
            slot("s1", Tag("s1")),
            slot("split", Split(2)),
            slot("b", BatchTag(3, sizes.clone())),
            slot("fail", FailOn("d2-1")),
            slot("drop", DropOn("d3")),
            slot("s2", Tag("s2")),
        ]
    };
    let ids = ["d1", "d2", "d3"];
    let mut lazy = Pipeline::new("p", stages(&Arc::new(parking_lot::Mutex::new(Vec::new()))));
    let expected: Vec<Output> = ids.iter().flat_map(|id| run(&mut lazy, id)).collect();
    let mut batched = Pipeline::new("p", stages(&sizes));
    assert_eq!(batched.batch_size(), 3);
    let docs = ids.iter().map(|id| Document::new(*id).unwrap()).collect();
    let got = batched.process_batch(docs);
    assert_eq!(summary(&got), summary(&expected));
    let flags = |o: &[Output]| -> Vec<(bool, bool)> {
        o.iter()
            .map(|o| (o.error.is_some(), o.doc.is_dropped()))
            .collect()
    };
    assert_eq!(flags(&got), flags(&expected));
    // 3 parents + 6 children reach the batching stage: batches of 3.
    assert_eq!(*sizes.lock(), vec![3, 3, 3]);
    let m = batched.metrics();
    assert_eq!((m[2].processed, m[1].children, m[3].errors), (9, 6, 1));
}

fn plan(v: serde_json::Value) -> Result<PipelinePlan, ConfigErrors> {
    PipelinePlan::from_config(
        "main",
        &stages(v),
        "pipelines[0].stages",
        &std::sync::Arc::new(crate::config::PathContext::new(None)),
    )
}

/// (id, dropped, title copied from the parent) of every output, in order.
fn chunk_outputs(plan: &PipelinePlan) -> Vec<(String, bool, Option<String>)> {
    let mut p = plan.instantiate().unwrap();
    p.start().unwrap();
    let mut d = Document::new("p").unwrap();
    d.set_field("title", "T").unwrap();
    d.set_field("text", "One sentence. Two sentences.").unwrap();
    p.process(d)
        .map(|o| {
            (
                o.doc.id().to_string(),
                o.doc.is_dropped(),
                o.doc.get_string("parent_title").unwrap(),
            )
        })
        .collect()
}

#[test]
fn chunk_text_then_emit_nested_children_gives_lucilles_result() {
    // Lucille's recipe: the chunks, with the parent's fields copied, and the parent dropped;
    // the stage between them sees the parent only (Lucille's chunks are attached until emitted).
    let recipe = plan(json!([
        {"class": "ChunkText", "source": "text", "dest": "chunk"},
        {"class": "SetStaticValues", "staticValues": {"between": true}},
        {"class": "EmitNestedChildren", "dropParent": true, "fieldsToCopy": {"title": "parent_title"}}
    ]))
    .unwrap();
    let t = Some(s("T"));
    assert_eq!(
        chunk_outputs(&recipe),
        [
            (s("p-1"), false, t.clone()),
            (s("p-2"), false, t),
            (s("p"), true, None)
        ]
    );
    let mut p = recipe.instantiate().unwrap();
    let mut d = Document::new("q").unwrap();
    d.set_field("text", "Only one.").unwrap();
    let out: Vec<_> = p.process(d).collect();
    assert!(
        !out[0].doc.has("between"),
        "the chunk skipped the stage before EmitNestedChildren"
    );
    assert!(out[1].doc.has("between"));

    // Alone, or told not to attach, ChunkText emits its chunks and keeps the parent.
    for config in [
        json!([{"class": "ChunkText", "source": "text"}]),
        json!([{"class": "ChunkText", "source": "text", "attachChildren": false},
               {"class": "EmitNestedChildren", "dropParent": true}]),
    ] {
        let out = chunk_outputs(&plan(config).unwrap());
        let ids: Vec<_> = out.iter().map(|o| (o.0.as_str(), o.1)).collect();
        assert_eq!(ids, [("p-1", false), ("p-2", false), ("p", false)]);
    }

    let err = plan(json!([
        {"class": "ChunkText", "source": "text", "dropParent": true},
        {"name": "emit", "class": "EmitNestedChildren"}
    ]))
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("pipelines[0].stages[0].dropParent: EmitNestedChildren stage \"emit\""),
        "{err}"
    );
}
