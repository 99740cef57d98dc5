//! Trace spans in OpenTelemetry's model (`tracing { otlpEndpoint, sampleRatio, serviceName,
//! headers }`), made where the work happens and handed to the exporter `lucille-observe`
//! installs: `run` and `connector` (the runner), `document` (the publisher: from publish to
//! the terminal event), a `stage` span per stage a document passed (the pipeline, on a
//! worker), `index_batch` and `index` (the indexer loop).
//!
//! A run's spans share one trace id. Whether a document is traced is decided from its id
//! alone (`sampleRatio`), and its span's id is derived from the trace id and its id, so every
//! process that handles it (the publisher, a worker, the indexer, in one process or over
//! Kafka) reaches the same answer and its spans join one tree without passing per-document
//! state: all a process needs is the run's trace id, which Kafka messages carry in a W3C
//! `traceparent` header ([`traceparent`], [`accept_traceparent`]).
//!
//! Making a span never blocks: [`emit`] puts it in the exporter's bounded buffer, or counts it
//! in `lucille_traces_dropped_total` when the buffer is full.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::SystemTime;

use crossbeam_channel::Sender;

use crate::document::ids::hex;
use parking_lot::RwLock;

pub type TraceId = [u8; 16];
pub type SpanId = [u8; 8];

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanData {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    /// `run`, `connector`, `document`, `stage`, `index_batch` or `index`.
    pub name: &'static str,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<(&'static str, String)>,
    /// Set on a span whose work failed (also the `lucille.error` attribute).
    pub error: Option<String>,
}

impl SpanData {
    /// A span of `name` under `parent` in `trace_id`, started at `start` and ending now.
    pub fn new(
        name: &'static str,
        trace_id: TraceId,
        span_id: SpanId,
        parent: Option<SpanId>,
        start: SystemTime,
    ) -> Self {
        SpanData {
            trace_id,
            span_id,
            parent,
            name,
            start,
            end: SystemTime::now(),
            attributes: Vec::new(),
            error: None,
        }
    }

    pub fn attr(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.attributes.push((key, value.into()));
        self
    }

    /// Marks the span failed with `error` (and sets `lucille.error`).
    pub fn failed(mut self, error: Option<impl Into<String>>) -> Self {
        if let Some(e) = error {
            let e = e.into();
            self.attributes.push(("lucille.error", e.clone()));
            self.error = Some(e);
        }
        self
    }
}

struct Tracer {
    spans: Sender<SpanData>,
    ratio: f64,
}

static TRACER: OnceLock<Tracer> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The context of a run being traced: its trace id, and its `run` span's id in the process
/// that made the span (a worker or indexer process that learned the trace from a message
/// has only the trace id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunTrace {
    pub trace_id: TraceId,
    pub span_id: Option<SpanId>,
}

/// The runs this process knows the traces of, by run id.
static RUNS: OnceLock<RwLock<HashMap<String, RunTrace>>> = OnceLock::new();
/// Runs a long-lived worker remembers (learned from messages; each a few bytes).
const MAX_RUNS: usize = 4096;

fn runs() -> &'static RwLock<HashMap<String, RunTrace>> {
    RUNS.get_or_init(RwLock::default)
}

/// Makes this process trace (once; later calls are ignored and return false): spans go to
/// `spans`, documents are traced with probability `ratio`, decided by their id.
pub fn install(spans: Sender<SpanData>, ratio: f64) -> bool {
    let installed = TRACER.set(Tracer { spans, ratio }).is_ok();
    if installed {
        ENABLED.store(true, Ordering::Release);
    }
    installed
}

/// Whether this process traces.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Hands a finished span to the exporter; counted as dropped when its buffer is full.
pub fn emit(span: SpanData) {
    if let Some(t) = TRACER.get() {
        if t.spans.try_send(span).is_err() {
            crate::metrics::global().traces_dropped(1);
        }
    }
}

pub fn random_trace_id() -> TraceId {
    loop {
        let id: TraceId = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

pub fn random_span_id() -> SpanId {
    loop {
        let id: SpanId = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}

/// Fixed hashers, the same in every process of a build (sampling and span ids must agree);
/// foldhash's fast one: sampling hashes every document once per process it passes.
fn hash<T: std::hash::Hash>(seed: u64, value: T) -> u64 {
    foldhash::fast::FixedState::with_seed(seed).hash_one(value)
}

/// Whether the document `doc_id` is traced, at `ratio`.
pub fn sampled_at(doc_id: &str, ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    if ratio <= 0.0 {
        return false;
    }
    // The top 53 bits as a fraction in [0, 1).
    let h = hash(0x4c75_6369_6c6c_6553, doc_id) >> 11;
    (h as f64) / ((1u64 << 53) as f64) < ratio
}

/// The id of document `doc_id`'s span in the trace `trace_id`.
pub fn document_span_id(trace_id: &TraceId, doc_id: &str) -> SpanId {
    let h = hash(0x4c75_6369_6c6c_6544, (trace_id, doc_id)).max(1);
    h.to_be_bytes()
}

/// Starts tracing a run: a new trace with its `run` span's id, known to this process's
/// publisher, workers and indexer until [`end_run`].
pub fn start_run(run_id: &str) -> Option<RunTrace> {
    if !enabled() {
        return None;
    }
    let t = RunTrace {
        trace_id: random_trace_id(),
        span_id: Some(random_span_id()),
    };
    runs().write().insert(run_id.to_string(), t);
    Some(t)
}

/// Forgets a run started with [`start_run`].
pub fn end_run(run_id: &str) {
    runs().write().remove(run_id);
}

/// The trace of run `run_id`, when this process knows it.
pub fn run_trace(run_id: &str) -> Option<RunTrace> {
    if !enabled() {
        return None;
    }
    runs().read().get(run_id).copied()
}

/// A traced document's place in its run's trace: what its stage and index spans hang under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocTrace {
    pub trace_id: TraceId,
    pub span_id: SpanId,
}

/// The trace context of document `doc_id` of run `run_id`, when this process traces that run
/// and the document is sampled.
pub fn document(run_id: Option<&str>, doc_id: &str) -> Option<DocTrace> {
    in_run(&run_trace(run_id?)?, doc_id)
}

/// The trace context of document `doc_id` of the traced run `run`, when it is sampled (for a
/// caller that holds its run's trace: no lookup).
pub fn in_run(run: &RunTrace, doc_id: &str) -> Option<DocTrace> {
    let tracer = TRACER.get().filter(|_| enabled())?;
    sampled_at(doc_id, tracer.ratio).then(|| DocTrace {
        trace_id: run.trace_id,
        span_id: document_span_id(&run.trace_id, doc_id),
    })
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The W3C `traceparent` header of a message carrying document `doc_id` of run `run_id`:
/// the run's trace id, the document's span id and whether it is sampled; `None` when the run
/// is not traced here.
pub fn traceparent(run_id: Option<&str>, doc_id: &str) -> Option<String> {
    let tracer = TRACER.get().filter(|_| enabled())?;
    let run = run_trace(run_id?)?;
    let sampled = sampled_at(doc_id, tracer.ratio);
    Some(format!(
        "00-{}-{}-{}",
        hex(&run.trace_id),
        hex(&document_span_id(&run.trace_id, doc_id)),
        if sampled { "01" } else { "00" }
    ))
}

/// Parses a W3C `traceparent` header: (trace id, parent span id, sampled).
pub fn parse_traceparent(header: &str) -> Option<(TraceId, SpanId, bool)> {
    let mut parts = header.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() {
        return None;
    }
    let trace: TraceId = unhex(trace).filter(|t| *t != [0; 16])?;
    let span: SpanId = unhex(span).filter(|s| *s != [0; 8])?;
    let flags: [u8; 1] = unhex(flags)?;
    Some((trace, span, flags[0] & 1 == 1))
}

/// Learns run `run_id`'s trace from a message's `traceparent` header (a worker or indexer
/// process of distributed mode), so the spans this process makes for the run's documents
/// join the run's trace.
pub fn accept_traceparent(run_id: &str, header: &str) {
    if !enabled() {
        return;
    }
    let Some((trace_id, _, _)) = parse_traceparent(header) else {
        return;
    };
    if runs()
        .read()
        .get(run_id)
        .is_some_and(|r| r.trace_id == trace_id)
    {
        return;
    }
    let mut all = runs().write();
    if all.len() >= MAX_RUNS {
        // Forget the runs learned from messages (a run this process started stays).
        all.retain(|_, r| r.span_id.is_some());
    }
    all.entry(run_id.to_string()).or_insert(RunTrace {
        trace_id,
        span_id: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_decided_by_the_id_and_follows_the_ratio() {
        let ids: Vec<String> = (0..20_000).map(|i| format!("doc-{i}")).collect();
        let n = ids.iter().filter(|id| sampled_at(id, 0.1)).count();
        assert!((1_700..2_300).contains(&n), "{n} of 20000 at 0.1");
        assert!(ids.iter().all(|id| sampled_at(id, 1.0)));
        assert!(!ids.iter().any(|id| sampled_at(id, 0.0)));
        // The same answer every time (a replay is sampled alike).
        assert!(ids
            .iter()
            .all(|id| sampled_at(id, 0.1) == sampled_at(id, 0.1)));
    }

    #[test]
    fn traceparent_round_trips_and_bad_headers_are_refused() {
        let trace = random_trace_id();
        let span = document_span_id(&trace, "d1");
        let header = format!("00-{}-{}-01", hex(&trace), hex(&span));
        assert_eq!(parse_traceparent(&header), Some((trace, span, true)));
        assert_eq!(
            document_span_id(&trace, "d1"),
            span,
            "derived alike everywhere"
        );
        assert_ne!(document_span_id(&trace, "d2"), span);
        for bad in [
            "",
            "00-abc-def-01",
            &format!("01-{}-{}-01", hex(&trace), hex(&span)),
            &format!("00-{}-{}-01", hex(&[0; 16]), hex(&span)),
            &format!("00-{}-{}-01-x", hex(&trace), hex(&span)),
            &format!("00-{}-{}-zz", hex(&trace), hex(&span)),
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad:?}");
        }
    }
}
