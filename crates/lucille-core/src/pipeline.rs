//! The pipeline: an ordered list of stages run as a pull-based, depth-first chain.
//!
//! `Pipeline::process(doc)` returns a lazy iterator. Pulling it pulls the last stage, which
//! pulls the one before it, down to the input document; a stage's output is its children first,
//! then the parent, and a child made by stage *i* flows only through the stages after *i*.
//! Nothing is processed until it is pulled, and at most one document per stage level is in
//! flight, so memory is bounded by the pipeline's depth however many children a stage yields.
//!
//! The chain is kept as an explicit stack of per-stage levels rather than nested iterator
//! objects, so the same lazy run can be resumed across calls from Python (`process_iter`).
//!
//! A document that is dropped stops being processed (it still comes out, flagged, so the worker
//! can send DROP); a skipped one bypasses the remaining stages. A stage error or panic fails
//! only the document it happened on: the document comes out carrying the error and the stages
//! after skip it. A children iterator that breaks fails its parent.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

use crate::config::{ComponentConfig, ConfigError, ConfigErrors};
use crate::document::Document;
use crate::stage::condition::Conditions;
use crate::stage::registry::{self, StageClass};
use crate::stage::{Children, Stage, StageError, StageFailure};
use lucille_panic::message as panic_message;

/// Counters for one stage, summed over the documents it saw.
// Serializable: a worker process (`worker.processes`) reports its stages' metrics at the end.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StageMetrics {
    pub name: String,
    /// Documents passed to `process_document` (conditions held, not dropped/skipped/failed).
    pub processed: u64,
    pub children: u64,
    pub errors: u64,
    /// Calls into the stage (documents processed and children pulled), and how many of them
    /// were timed, for how long: see [`StageMetrics::total_time`].
    calls: u64,
    timed_calls: u64,
    timed: Duration,
}

/// Every call of a stage is timed up to `TIME_ALL` calls, then one in `TIME_EVERY`: two clock
/// reads per stage per document were ~2.5% of the six-stage benchmark's CPU (perf).
const TIME_ALL: u64 = 1024;
const TIME_EVERY: u64 = 8;

impl StageMetrics {
    /// Zero counts for the named stage.
    pub fn named(name: impl Into<String>) -> Self {
        StageMetrics {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Time spent in the stage: measured exactly over its first 1024 calls, then estimated
    /// from one call in eight, scaled to all of them.
    pub fn total_time(&self) -> Duration {
        if self.timed_calls == 0 || self.timed_calls == self.calls {
            return self.timed;
        }
        self.timed
            .mul_f64(self.calls as f64 / self.timed_calls as f64)
    }

    pub fn mean_time(&self) -> Duration {
        if self.processed == 0 {
            Duration::ZERO
        } else {
            self.total_time().div_f64(self.processed as f64)
        }
    }

    /// Adds another instance's counters (one worker's copy of the same stage).
    pub fn merge(&mut self, other: &StageMetrics) {
        self.processed += other.processed;
        self.children += other.children;
        self.errors += other.errors;
        self.calls += other.calls;
        self.timed_calls += other.timed_calls;
        self.timed += other.timed;
    }

    /// The clock, if this call is one to time.
    fn start_call(&self) -> Option<Instant> {
        (self.calls < TIME_ALL || self.calls % TIME_EVERY == 0).then(Instant::now)
    }

    /// Counts a call; returns its duration when it was timed.
    fn end_call(&mut self, started: Option<Instant>) -> Option<Duration> {
        self.calls += 1;
        let took = started.map(|s| s.elapsed());
        if let Some(took) = took {
            self.timed_calls += 1;
            self.timed += took;
        }
        took
    }
}

/// A stage with what the pipeline wraps around it.
pub struct StageSlot {
    pub name: String,
    /// The registry's class name (`CopyFields`), or a Python stage's `module:Class`: the
    /// `class` label of its metrics.
    class: String,
    stage: Box<dyn Stage>,
    conditions: Conditions,
    metrics: StageMetrics,
    /// The process's metrics for this stage, in a worker of a run (see
    /// [`Pipeline::record_metrics`]).
    live: Option<crate::metrics::StageLive>,
}

impl StageSlot {
    pub fn new(name: impl Into<String>, stage: Box<dyn Stage>, conditions: Conditions) -> Self {
        let name = name.into();
        StageSlot {
            metrics: StageMetrics {
                name: name.clone(),
                ..Default::default()
            },
            class: String::new(),
            name,
            stage,
            conditions,
            live: None,
        }
    }

    /// The class its metrics are labelled with.
    pub fn with_class(mut self, class: impl Into<String>) -> Self {
        self.class = class.into();
        self
    }

    /// Counts documents the stage processed, visible to the next scrape of `/metrics`.
    #[inline]
    fn count_processed(&mut self, n: u64) {
        self.metrics.processed += n;
        if let Some(live) = &self.live {
            live.count(self.metrics.processed, self.metrics.errors);
        }
    }

    /// Counts a document the stage failed on, visible to the next scrape of `/metrics`.
    #[inline]
    fn count_error(&mut self) {
        self.metrics.errors += 1;
        if let Some(live) = &self.live {
            live.count(self.metrics.processed, self.metrics.errors);
        }
    }

    /// Counts a call (its duration observed when it was timed).
    fn end_call(&mut self, started: Option<Instant>) {
        if let (Some(took), Some(live)) = (self.metrics.end_call(started), &self.live) {
            live.observe(took);
        }
    }
}

impl StageSlot {
    /// The wrapped stage (for tests that drive a stage directly).
    pub fn into_stage(self) -> Box<dyn Stage> {
        self.stage
    }
}

/// A document coming out of the pipeline.
#[derive(Debug)]
pub struct Output {
    pub doc: Document,
    /// True for a document a stage generated (the worker sends CREATE for it).
    pub is_child: bool,
    /// Set when a stage failed on this document (the worker sends FAIL).
    pub error: Option<StageError>,
    /// Its place in its run's trace, when it is traced: its stages make `stage` spans.
    pub trace: Option<crate::trace::DocTrace>,
}

#[derive(Default)]
struct Level {
    children: Option<Children>,
    /// The document whose children are being emitted; it follows them.
    parent: Option<Output>,
}

/// One lazy run of a document through a pipeline; see the module comment.
pub struct Run {
    input: Option<Output>,
    levels: Vec<Level>,
}

impl Run {
    pub fn new(doc: Document, stages: usize) -> Self {
        Run::traced(doc, stages, None)
    }

    /// A run whose documents make `stage` spans when `trace` is their run's trace.
    fn traced(doc: Document, stages: usize, run: Option<&crate::trace::RunTrace>) -> Self {
        let trace = run.and_then(|r| crate::trace::in_run(r, doc.id()));
        Run {
            input: Some(Output {
                doc,
                is_child: false,
                error: None,
                trace,
            }),
            levels: (0..stages).map(|_| Level::default()).collect(),
        }
    }

    /// The next output document, or `None` when the run is complete.
    pub fn next(&mut self, pipeline: &mut Pipeline) -> Option<Output> {
        let n = pipeline.stages.len();
        if n == 0 {
            return self.input.take();
        }
        self.pull(pipeline, n - 1)
    }

    /// The next document out of stage `i`.
    fn pull(&mut self, pipeline: &mut Pipeline, i: usize) -> Option<Output> {
        loop {
            if let Some(out) = self.next_child(pipeline, i) {
                return Some(out);
            }
            let input = if i == 0 {
                self.input.take()?
            } else {
                self.pull(pipeline, i - 1)?
            };
            let slot = &mut pipeline.stages[i];
            if input.error.is_some()
                || input.doc.is_dropped()
                || input.doc.is_skipped()
                || !slot.conditions.hold(&input.doc)
            {
                return Some(input);
            }
            let mut input = input;
            let started = slot.metrics.start_call();
            // The id before the call: a stage may hold the document while it makes children.
            let span_start = input.trace.map(|_| {
                let run = input.doc.run_id().unwrap_or_default().to_string();
                (SystemTime::now(), input.doc.id().to_string(), run)
            });
            let result = catch_unwind(AssertUnwindSafe(|| {
                slot.stage.process_document(&mut input.doc)
            }));
            slot.end_call(started);
            slot.count_processed(1);
            if let (Some(t), Some((start, doc_id, run_id))) = (input.trace, span_start) {
                let error = match &result {
                    Ok(Ok(_)) => None,
                    Ok(Err(failure)) => Some(failure.to_string()),
                    Err(payload) => Some(format!("panicked: {}", panic_message(payload.as_ref()))),
                };
                stage_span(slot, (&run_id, &doc_id), t, start, error);
            }
            match result {
                Ok(Ok(None)) => return Some(input),
                Ok(Ok(Some(children))) => {
                    let level = &mut self.levels[i];
                    level.children = Some(children);
                    level.parent = Some(input);
                    // Loop: emit the children, then the parent.
                }
                Ok(Err(failure)) => {
                    slot.count_error();
                    input.error = Some(process_error(&slot.name, input.doc.id(), failure));
                    return Some(input);
                }
                Err(payload) => {
                    slot.count_error();
                    input.error = Some(StageError::Panic {
                        stage: slot.name.clone(),
                        doc_id: input.doc.id().to_string(),
                        message: panic_message(payload.as_ref()),
                    });
                    return Some(input);
                }
            }
        }
    }

    /// The next pending child of stage `i` (or its parent once the children are exhausted).
    fn next_child(&mut self, pipeline: &mut Pipeline, i: usize) -> Option<Output> {
        let level = &mut self.levels[i];
        let children = level.children.as_mut()?;
        let slot = &mut pipeline.stages[i];
        let started = slot.metrics.start_call();
        let next = catch_unwind(AssertUnwindSafe(|| children.next()));
        slot.end_call(started);
        let failure = match next {
            Ok(Some(Ok(mut child))) => {
                slot.metrics.children += 1;
                if let (None, Some(parent)) = (child.run_id(), level.parent.as_ref()) {
                    if let Some(run_id) = parent.doc.run_id() {
                        let run_id = run_id.to_string();
                        // A fresh child has no run id, so this cannot fail.
                        let _ = child.initialize_run_id(&run_id);
                    }
                }
                let trace = pipeline
                    .run_trace(child.run_id())
                    .and_then(|r| crate::trace::in_run(&r, child.id()));
                return Some(Output {
                    doc: child,
                    is_child: true,
                    error: None,
                    trace,
                });
            }
            Ok(None) => None,
            Ok(Some(Err(failure))) => Some(failure.to_string()),
            Err(payload) => Some(format!(
                "panicked while producing children: {}",
                panic_message(payload.as_ref())
            )),
        };
        level.children = None;
        let mut parent = level.parent.take()?;
        let restored = catch_unwind(AssertUnwindSafe(|| {
            slot.stage.children_done(&mut parent.doc)
        }));
        let failure = match restored {
            Ok(()) => failure,
            Err(payload) => failure.or_else(|| {
                Some(format!(
                    "panicked after its children: {}",
                    panic_message(payload.as_ref())
                ))
            }),
        };
        if let Some(message) = failure {
            slot.count_error();
            parent.error = Some(StageError::Process {
                stage: slot.name.clone(),
                doc_id: parent.doc.id().to_string(),
                message,
            });
        }
        Some(parent)
    }
}

/// The `stage` span of a traced document's call of a stage.
fn stage_span(
    slot: &StageSlot,
    (run_id, doc_id): (&str, &str),
    t: crate::trace::DocTrace,
    start: SystemTime,
    error: Option<String>,
) {
    let span = crate::trace::SpanData::new(
        "stage",
        t.trace_id,
        crate::trace::random_span_id(),
        Some(t.span_id),
        start,
    )
    .attr("lucille.run_id", run_id)
    .attr("lucille.doc_id", doc_id)
    .attr("lucille.stage", slot.name.clone())
    .attr("lucille.class", slot.class.clone());
    crate::trace::emit(span.failed(error));
}

/// A stage call that panicked: the panic's message.
struct Panicked(String);

/// When an eager call of a stage started, and the ids of the traced documents in it (by their
/// place in the call), for their `stage` spans.
struct SpanStarts {
    start: SystemTime,
    ids: Vec<Option<(String, String)>>,
}

impl SpanStarts {
    /// Nothing is read (or allocated) unless the pipeline traces.
    fn of<'a>(traced: bool, outputs: impl Iterator<Item = &'a Output>) -> Self {
        if !traced {
            return SpanStarts {
                start: SystemTime::UNIX_EPOCH,
                ids: Vec::new(),
            };
        }
        let ids = outputs
            .map(|o| {
                o.trace.map(|_| {
                    let run = o.doc.run_id().unwrap_or_default().to_string();
                    (run, o.doc.id().to_string())
                })
            })
            .collect();
        SpanStarts {
            start: SystemTime::now(),
            ids,
        }
    }

    /// The span of the `j`th document of the call, with its own outcome.
    fn end(
        &self,
        slot: &StageSlot,
        j: usize,
        trace: Option<crate::trace::DocTrace>,
        result: &Result<crate::stage::StageResult, Panicked>,
    ) {
        let (Some(t), Some(Some((run_id, doc_id)))) = (trace, self.ids.get(j)) else {
            return;
        };
        let error = match result {
            Ok(Ok(_)) => None,
            Ok(Err(failure)) => Some(failure.to_string()),
            Err(Panicked(message)) => Some(format!("panicked: {message}")),
        };
        stage_span(slot, (run_id, doc_id), t, self.start, error);
    }
}

/// Applies one stage's result for a document of an eager batch run: records a failure or
/// panic on it, or gathers its children whole (stamped with its run id). `lent` stages get
/// `children_done` once the children are drained.
fn settle(
    slot: &mut StageSlot,
    out: &mut Output,
    result: Result<crate::stage::StageResult, Panicked>,
    lent: bool,
) -> Vec<Output> {
    let children = match result {
        Ok(Ok(None)) => return Vec::new(),
        Ok(Ok(Some(children))) => children,
        Ok(Err(failure)) => {
            slot.count_error();
            out.error = Some(process_error(&slot.name, out.doc.id(), failure));
            return Vec::new();
        }
        Err(Panicked(message)) => {
            slot.count_error();
            out.error = Some(StageError::Panic {
                stage: slot.name.clone(),
                doc_id: out.doc.id().to_string(),
                message,
            });
            return Vec::new();
        }
    };
    let mut gathered = Vec::new();
    let mut children = children;
    let started = Instant::now();
    let failure = loop {
        match catch_unwind(AssertUnwindSafe(|| children.next())) {
            Ok(Some(Ok(mut child))) => {
                slot.metrics.children += 1;
                if let (None, Some(run_id)) = (child.run_id(), out.doc.run_id()) {
                    let run_id = run_id.to_string();
                    // A fresh child has no run id, so this cannot fail.
                    let _ = child.initialize_run_id(&run_id);
                }
                gathered.push(Output {
                    doc: child,
                    is_child: true,
                    error: None,
                    trace: None,
                });
            }
            Ok(None) => break None,
            Ok(Some(Err(failure))) => break Some(failure.to_string()),
            Err(payload) => {
                break Some(format!(
                    "panicked while producing children: {}",
                    panic_message(payload.as_ref())
                ))
            }
        }
    };
    drop(children);
    let mut failure = failure;
    if lent {
        if let Err(payload) =
            catch_unwind(AssertUnwindSafe(|| slot.stage.children_done(&mut out.doc)))
        {
            failure.get_or_insert_with(|| {
                format!(
                    "panicked after its children: {}",
                    panic_message(payload.as_ref())
                )
            });
        }
    }
    slot.end_call(Some(started));
    if let Some(message) = failure {
        slot.count_error();
        out.error = Some(StageError::Process {
            stage: slot.name.clone(),
            doc_id: out.doc.id().to_string(),
            message,
        });
    }
    gathered
}

fn process_error(stage: &str, doc_id: &str, failure: StageFailure) -> StageError {
    StageError::Process {
        stage: stage.to_string(),
        doc_id: doc_id.to_string(),
        message: failure.to_string(),
    }
}

/// A lazy iterator over one document's outputs.
pub struct Outputs<'p> {
    pipeline: &'p mut Pipeline,
    run: Run,
}

impl Iterator for Outputs<'_> {
    type Item = Output;
    fn next(&mut self) -> Option<Output> {
        self.run.next(self.pipeline)
    }
}

pub struct Pipeline {
    name: String,
    stages: Vec<StageSlot>,
    started: bool,
    /// Whether its documents make `stage` spans (a worker of a traced process).
    traced: bool,
    /// The trace of the run its last document belonged to (a worker sees one run at a time,
    /// or a few in a Kafka worker): looked up again only when the run changes.
    last_run: Option<(String, Option<crate::trace::RunTrace>)>,
}

impl Pipeline {
    pub fn new(name: impl Into<String>, stages: Vec<StageSlot>) -> Self {
        Pipeline {
            name: name.into(),
            stages,
            started: false,
            traced: false,
            last_run: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn stage_names(&self) -> Vec<&str> {
        self.stages.iter().map(|s| s.name.as_str()).collect()
    }

    /// Starts every stage (once); a failure names the stage.
    pub fn start(&mut self) -> Result<(), StageError> {
        if self.started {
            return Ok(());
        }
        for slot in &mut self.stages {
            lifecycle(slot, "start", |s| s.start())?;
        }
        self.started = true;
        Ok(())
    }

    /// Stops every stage, even after one fails; returns the first failure.
    pub fn stop(&mut self) -> Result<(), StageError> {
        let mut first = None;
        for slot in &mut self.stages {
            if let Err(e) = lifecycle(slot, "stop", |s| s.stop()) {
                first.get_or_insert(e);
            }
        }
        self.started = false;
        first.map_or(Ok(()), Err)
    }

    /// Runs a document through the pipeline lazily (starting the stages if needed is the
    /// caller's job: see [`Pipeline::start`]).
    pub fn process(&mut self, doc: Document) -> Outputs<'_> {
        let trace = self.run_trace(doc.run_id());
        let run = Run::traced(doc, self.stages.len(), trace.as_ref());
        Outputs {
            pipeline: self,
            run,
        }
    }

    /// The largest batch any stage takes (1 when no stage batches).
    pub fn batch_size(&self) -> usize {
        self.stages
            .iter()
            .map(|s| s.stage.batch_size())
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Whether a stage wants whole blocks ([`Stage::takes_blocks`]): the worker then runs each
    /// block through [`Pipeline::process_batch`].
    pub fn takes_blocks(&self) -> bool {
        self.stages.iter().any(|s| s.stage.takes_blocks())
    }

    /// Runs several input documents through the pipeline together, so that a stage with a
    /// batch size above 1 gets them through `process_batch` (see [`Stage::batch_size`]), and
    /// a stage that takes blocks ([`Stage::takes_blocks`]) gets all of them in one call.
    ///
    /// Unlike [`Pipeline::process`] this is eager: stage by stage over the whole batch, each
    /// stage's children gathered before the next stage runs (a batching stage needs several
    /// documents at once, which the lazy one-document chain never holds). The outputs come in
    /// the lazy run's order: per input, children before their parent, depth first; a child
    /// made by stage *i* goes only through the stages after *i*. Drops, skips, conditions,
    /// failures and metrics are handled per document as in the lazy run.
    pub fn process_batch(&mut self, docs: Vec<Document>) -> Vec<Output> {
        // Each item with the index of the first stage it still has to go through.
        let mut items: Vec<(usize, Output)> = docs
            .into_iter()
            .map(|doc| {
                let trace = self.doc_trace(&doc);
                (
                    0,
                    Output {
                        doc,
                        is_child: false,
                        error: None,
                        trace,
                    },
                )
            })
            .collect();
        for i in 0..self.stages.len() {
            let slot = &mut self.stages[i];
            let eligible: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, (from, out))| {
                    *from <= i
                        && out.error.is_none()
                        && !out.doc.is_dropped()
                        && !out.doc.is_skipped()
                        && slot.conditions.hold(&out.doc)
                })
                .map(|(k, _)| k)
                .collect();
            if eligible.is_empty() {
                continue;
            }
            let mut children: Vec<Vec<Output>> = (0..items.len()).map(|_| Vec::new()).collect();
            let batch = match slot.stage.batch_size() {
                1 if slot.stage.takes_blocks() => eligible.len(),
                n => n,
            };
            if batch > 1 {
                for chunk in eligible.chunks(batch) {
                    // The traced documents' ids before the call: each gets a `stage` span for
                    // the call its document was in.
                    let spans = SpanStarts::of(self.traced, chunk.iter().map(|&k| &items[k].1));
                    let mut docs: Vec<Document> = chunk
                        .iter()
                        .map(|&k| std::mem::replace(&mut items[k].1.doc, Document::placeholder()))
                        .collect();
                    let started = Instant::now();
                    let results =
                        catch_unwind(AssertUnwindSafe(|| slot.stage.process_batch(&mut docs)));
                    slot.end_call(Some(started));
                    slot.count_processed(chunk.len() as u64);
                    let results: Vec<Result<crate::stage::StageResult, Panicked>> = match results {
                        Ok(r) if r.len() == chunk.len() => r.into_iter().map(Ok).collect(),
                        Ok(r) => {
                            let message = format!(
                                "process_batch returned {} results for {} documents",
                                r.len(),
                                chunk.len()
                            );
                            chunk
                                .iter()
                                .map(|_| Ok(Err(StageFailure::msg(message.clone()))))
                                .collect()
                        }
                        Err(payload) => {
                            let message = panic_message(payload.as_ref());
                            chunk
                                .iter()
                                .map(|_| Err(Panicked(message.clone())))
                                .collect()
                        }
                    };
                    for (j, ((&k, doc), result)) in chunk.iter().zip(docs).zip(results).enumerate()
                    {
                        items[k].1.doc = doc;
                        spans.end(slot, j, items[k].1.trace, &result);
                        children[k] = settle(slot, &mut items[k].1, result, false);
                    }
                }
            } else {
                for &k in &eligible {
                    let out = &mut items[k].1;
                    let spans = SpanStarts::of(self.traced, std::iter::once(&*out));
                    let started = Instant::now();
                    let result = catch_unwind(AssertUnwindSafe(|| {
                        slot.stage.process_document(&mut out.doc)
                    }))
                    .map_err(|payload| Panicked(panic_message(payload.as_ref())));
                    slot.end_call(Some(started));
                    slot.count_processed(1);
                    spans.end(slot, 0, out.trace, &result);
                    children[k] = settle(slot, out, result, true);
                }
            }
            if children.iter().all(Vec::is_empty) {
                continue;
            }
            let mut next = Vec::with_capacity(items.len());
            for (item, kids) in items.into_iter().zip(children) {
                for mut child in kids {
                    child.trace = self.doc_trace(&child.doc);
                    next.push((i + 1, child));
                }
                next.push(item);
            }
            items = next;
        }
        items.into_iter().map(|(_, out)| out).collect()
    }

    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    pub fn metrics(&self) -> Vec<StageMetrics> {
        self.stages.iter().map(|s| s.metrics.clone()).collect()
    }

    /// A document's place in its run's trace, when it is traced.
    fn doc_trace(&mut self, doc: &Document) -> Option<crate::trace::DocTrace> {
        self.run_trace(doc.run_id())
            .and_then(|r| crate::trace::in_run(&r, doc.id()))
    }

    /// The trace of run `run_id` when this pipeline traces and the process knows it.
    fn run_trace(&mut self, run_id: Option<&str>) -> Option<crate::trace::RunTrace> {
        if !self.traced {
            return None;
        }
        let run_id = run_id?;
        match &self.last_run {
            Some((id, t)) if id == run_id => *t,
            _ => {
                let t = crate::trace::run_trace(run_id);
                // A Kafka worker learns a run's trace from its messages: not cached until known.
                if t.is_some() {
                    self.last_run = Some((run_id.to_string(), t));
                }
                t
            }
        }
    }

    /// Makes the stages count in the process's metrics (`lucille_stage_*`), from the next
    /// flush on; a worker of a run calls it once.
    pub fn record_metrics(&mut self) {
        self.traced = crate::trace::enabled();
        let metrics = crate::metrics::global();
        for slot in &mut self.stages {
            slot.live = Some(metrics.stage(&self.name, &slot.name, &slot.class));
        }
    }

    /// Adds what the stages did since the last flush to the process's metrics.
    pub fn flush_metrics(&mut self) {
        for slot in &mut self.stages {
            if let Some(live) = &mut slot.live {
                live.flush(slot.metrics.processed, slot.metrics.errors);
            }
        }
    }
}

fn lifecycle(
    slot: &mut StageSlot,
    phase: &'static str,
    f: impl FnOnce(&mut dyn Stage) -> Result<(), StageFailure>,
) -> Result<(), StageError> {
    let name = slot.name.clone();
    match catch_unwind(AssertUnwindSafe(|| f(slot.stage.as_mut()))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(StageError::Lifecycle {
            stage: name,
            phase,
            message: e.to_string(),
        }),
        Err(payload) => Err(StageError::Lifecycle {
            stage: name,
            phase,
            message: format!("panicked: {}", panic_message(payload.as_ref())),
        }),
    }
}

/// A validated stage config from which any number of instances can be built.
#[derive(Clone)]
pub struct StagePlan {
    pub name: String,
    class: PlanClass,
    config: ComponentConfig,
    conditions: Conditions,
}

#[derive(Clone)]
enum PlanClass {
    Builtin(&'static crate::stage::StageDescriptor),
    Python(String),
}

impl StagePlan {
    /// The built-in stage it plans, by its registered name (`None` for a Python stage).
    pub fn builtin(&self) -> Option<&'static str> {
        match self.class {
            PlanClass::Builtin(d) => Some(d.name),
            PlanClass::Python(_) => None,
        }
    }

    /// Its class as its metrics name it: the registered name of a built-in stage, a Python
    /// stage's `module:Class`.
    pub fn class_name(&self) -> &str {
        match &self.class {
            PlanClass::Builtin(d) => d.name,
            PlanClass::Python(class) => class,
        }
    }

    /// Its config block.
    pub fn config(&self) -> &ComponentConfig {
        &self.config
    }

    /// Replaces its config block (by a [`PlanRule`]).
    pub fn set_config(&mut self, config: ComponentConfig) {
        self.config = config;
    }

    pub fn instantiate(&self) -> Result<StageSlot, ConfigErrors> {
        let stage = match &self.class {
            PlanClass::Builtin(d) => (d.build)(&self.config)?,
            PlanClass::Python(class) => {
                registry::PYTHON
                    .get(&self.config)?
                    .build(class, &self.name, &self.config)?
            }
        };
        Ok(
            StageSlot::new(self.name.clone(), stage, self.conditions.clone())
                .with_class(self.class_name()),
        )
    }
}

/// A validated pipeline config: instantiate once per worker thread.
#[derive(Clone)]
pub struct PipelinePlan {
    pub name: String,
    pub stages: Vec<StagePlan>,
}

impl PipelinePlan {
    /// The stage configs this plan was made from (each with its name) and their path
    /// context: what [`PipelinePlan::from_config`] takes to make the same plan again, in a
    /// worker process.
    pub fn stage_configs(&self) -> (Vec<Value>, Option<crate::config::PathContext>) {
        let configs = self
            .stages
            .iter()
            .map(|s| {
                let mut map = s.config.map().clone();
                map.insert("name".into(), Value::String(s.name.clone()));
                Value::Object(map)
            })
            .collect();
        let paths = self.stages.first().map(|s| (**s.config.paths()).clone());
        (configs, paths)
    }

    /// Validates every stage config of a pipeline (`stages` is the list under
    /// `pipelines[i].stages`), building one instance of each to catch what a spec cannot
    /// (bad regexes, unreadable files). Every error is returned at once.
    pub fn from_config(
        name: &str,
        stages: &[Value],
        path: &str,
        paths: &std::sync::Arc<crate::config::PathContext>,
    ) -> Result<Self, ConfigErrors> {
        let mut errors = Vec::new();
        let mut plans = Vec::new();
        let mut seen_names: Vec<String> = Vec::new();
        for (i, raw) in stages.iter().enumerate() {
            let stage_path = format!("{path}[{i}]");
            let Value::Object(map) = raw else {
                errors.push(ConfigError::new(stage_path, "a stage must be an object"));
                continue;
            };
            match plan_stage(map.clone(), i, &stage_path, paths) {
                Ok(Some(plan)) => {
                    if seen_names.contains(&plan.name) {
                        errors.push(ConfigError::new(
                            format!("{stage_path}.name"),
                            format!("duplicate stage name {:?} in pipeline {name:?}", plan.name),
                        ));
                    }
                    seen_names.push(plan.name.clone());
                    plans.push(plan);
                }
                Ok(None) => {}
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() {
            errors = apply_plan_rules(&mut plans);
        }
        if errors.is_empty() {
            Ok(PipelinePlan {
                name: name.to_string(),
                stages: plans,
            })
        } else {
            Err(ConfigErrors(errors))
        }
    }

    pub fn instantiate(&self) -> Result<Pipeline, ConfigErrors> {
        let mut slots = Vec::with_capacity(self.stages.len());
        let mut errors = Vec::new();
        for plan in &self.stages {
            match plan.instantiate() {
                Ok(slot) => slots.push(slot),
                Err(e) => errors.extend(e.0),
            }
        }
        if errors.is_empty() {
            Ok(Pipeline::new(self.name.clone(), slots))
        } else {
            Err(ConfigErrors(errors))
        }
    }
}

/// A rule a stage adds to planning: given the whole pipeline's stages it may adjust a
/// stage's config (Lucille recipes that span stages), reporting problems as config errors
/// with the others. A stage's file submits its rule with `inventory::submit!`; planning
/// applies every registered rule, in name order, once the stages are valid.
pub struct PlanRule {
    pub name: &'static str,
    pub apply: fn(&mut [StagePlan]) -> Vec<ConfigError>,
}

inventory::collect!(PlanRule);

impl crate::registry::Descriptor for PlanRule {
    const PACKAGES: &'static [&'static str] = &[];

    fn name(&self) -> &'static str {
        self.name
    }
}

fn apply_plan_rules(plans: &mut [StagePlan]) -> Vec<ConfigError> {
    crate::registry::all::<PlanRule>()
        .into_iter()
        .flat_map(|rule| (rule.apply)(plans))
        .collect()
}

/// Validates one stage config. `Ok(None)` for a stage with `enabled: false` (validated, then
/// left out).
pub fn plan_stage(
    mut map: Map<String, Value>,
    index: usize,
    path: &str,
    paths: &std::sync::Arc<crate::config::PathContext>,
) -> Result<Option<StagePlan>, Vec<ConfigError>> {
    let base = ComponentConfig::new(map.clone(), path).with_paths(paths.clone());
    let class = match base.require_string("class") {
        Ok(c) => c,
        Err(e) => return Err(vec![e]),
    };
    let name = match base.string("name") {
        Ok(Some(n)) if !n.is_empty() => n,
        Ok(_) => format!("stage_{}", index + 1),
        Err(e) => return Err(vec![e]),
    };
    let resolved =
        registry::resolve(&class).map_err(|e| vec![base.error("class", e.to_string())])?;
    let mut errors = Vec::new();
    let plan_class = match resolved {
        StageClass::Builtin(d) => {
            // Older key names become current ones; the keys themselves are checked by the
            // stage's options type when the instance below is built.
            (d.spec)().normalize(&mut map);
            PlanClass::Builtin(d)
        }
        StageClass::Python(class) => {
            if let Err(e) = registry::PYTHON
                .get(&base)
                .and_then(|f| f.check(&class, &base))
            {
                errors.push(e);
            }
            PlanClass::Python(class)
        }
    };
    let config = ComponentConfig::new(map, path).with_paths(paths.clone());
    let conditions = match Conditions::from_stage_config(&config) {
        Ok(c) => c,
        Err(mut e) => {
            errors.append(&mut e);
            Conditions::default()
        }
    };
    let enabled = match config.bool_or("enabled", true) {
        Ok(b) => b,
        Err(e) => {
            errors.push(e);
            true
        }
    };
    let plan = StagePlan {
        name,
        class: plan_class,
        config,
        conditions,
    };
    // One instance built now: its options type checks the block (every problem at once), and
    // constructor-time problems are reported with the rest.
    if let PlanClass::Builtin(_) = plan.class {
        if let Err(e) = plan.instantiate() {
            errors.extend(e.0);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(enabled.then_some(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_time_is_measured_on_every_call_then_on_one_in_eight_scaled_to_all() {
        let mut m = StageMetrics::default();
        for _ in 0..TIME_ALL + 80 {
            let started = m.start_call();
            m.end_call(started);
        }
        assert_eq!(m.calls, TIME_ALL + 80);
        assert_eq!(
            m.timed_calls,
            TIME_ALL + 10,
            "every call up to TIME_ALL, then 1 in 8"
        );
        // Each timed call as one second: the total counts the untimed calls at the same rate.
        m.timed = Duration::from_secs(m.timed_calls);
        assert_eq!(m.total_time().as_secs_f64().round(), (TIME_ALL + 80) as f64);
        m.processed = 2;
        assert_eq!(
            m.mean_time().as_secs_f64().round(),
            ((TIME_ALL + 80) / 2) as f64
        );
        // Merged copies (one per worker) scale over their summed calls.
        let mut sum = StageMetrics::default();
        sum.merge(&m);
        sum.merge(&m);
        assert_eq!(
            sum.total_time().as_secs_f64().round(),
            (2 * (TIME_ALL + 80)) as f64
        );
    }
}
