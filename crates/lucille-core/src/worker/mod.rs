//! The worker pool: `worker.threads` threads, each with its own pipeline instance,
//! pull documents from the source queue, run them through the pipeline, send CREATE for every
//! child, FAIL for what a stage failed on, DROP for what was dropped, and hand everything else
//! to the indexer.
//!
//! `worker.maxRetries`: a document whose processing fails is run again from a fresh copy up
//! to that many more times; when it still fails it is FAILed and written to the dead-letter
//! file (`worker.deadLetterPath`, default `{pipeline}_fail.jsonl`), so a poison document stops
//! being retried and is never silently lost. Children an earlier attempt already emitted are
//! emitted again by the retry (ids are deterministic, so the index sees an upsert; the
//! accounting tracks each emission). Every FAIL is written to the dead-letter file when one is
//! configured, with the document as it entered the pipeline (a child as its stage emitted
//! it), so a replay (`DeadLetterConnector`) processes it again from the start.

pub mod engine;
pub mod meter;
pub mod process;
pub mod watch;

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::json;

use crate::accounting::EventType;
use crate::config::{ComponentConfig, ConfigError, Options};
use crate::document::Document;
use crate::event::Event;
use crate::indexer::{Preparer, ToIndex};
use crate::messaging::WorkerSide;
use crate::pipeline::{PipelinePlan, StageMetrics};
use crate::record::ToProcess;
use engine::Engine;
use meter::Meter;
use process::remote::{Connect, Processes, RemotePipeline};
use watch::{Abandoned, Observed, Slot, Verdict};

// Short, so an idle worker notices the stop flag quickly; the poll blocks, it does not spin.
const POLL: Duration = Duration::from_millis(10);
/// How often a worker adds its stages' counts and timings to the process's metrics.
const METRICS_FLUSH: Duration = Duration::from_secs(1);

/// How long a worker whose pipeline has a batching stage waits to fill a batch after its
/// first document before running what it has.
const BATCH_FILL: Duration = Duration::from_millis(100);

/// How many documents a worker thread takes at once (a block: one unit of work for the
/// messenger, see `WorkerSide::poll_block`): as many as its pipeline processes in about
/// [`BlockSizer::TARGET`], from a moving average of the time per document, between 1 and
/// [`BlockSizer::MAX`]. Cheap stages get large blocks (what a messenger does per unit of work
/// is then paid rarely); slow stages get blocks of one or two, so a document never waits long
/// behind others taken with it while another thread is idle.
#[derive(Debug)]
struct BlockSizer {
    /// Seconds per document, exponentially averaged over blocks.
    per_doc: f64,
}

impl Default for BlockSizer {
    fn default() -> Self {
        // Unknown at first: blocks of 8 until the first block was timed.
        BlockSizer {
            per_doc: Self::TARGET.as_secs_f64() / 8.0,
        }
    }
}

impl BlockSizer {
    const TARGET: Duration = Duration::from_millis(2);
    const MAX: usize = 256;

    fn size(&self) -> usize {
        let n = Self::TARGET.as_secs_f64() / self.per_doc.max(1e-9);
        (n as usize).clamp(1, Self::MAX)
    }

    fn observe(&mut self, docs: usize, took: Duration) {
        if docs == 0 {
            return;
        }
        let sample = took.as_secs_f64() / docs as f64;
        self.per_doc = 0.7 * self.per_doc + 0.3 * sample;
    }
}

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub threads: usize,
    pub max_retries: Option<u32>,
    pub dead_letter_path: Option<PathBuf>,
    pub enable_heartbeat: bool,
    pub heartbeat_path: PathBuf,
    pub log_interval: Duration,
    /// `worker.maxProcessingSecs`: a document whose stages run longer FAILs with a timeout
    /// reason and its worker is interrupted or replaced (see [`watch`]).
    pub max_processing: Option<Duration>,
    /// `worker.exitOnTimeout`: end the process (exit code 1) on such a timeout, as Lucille
    /// does, for a supervisor (Kubernetes, systemd) to restart it.
    pub exit_on_timeout: bool,
    /// `worker.processes`: the pipeline runs in this many worker processes, one per worker
    /// thread (see [`process`]).
    pub processes: Option<usize>,
    /// `worker.maxProcessMemoryBytes`: the data-segment limit (`RLIMIT_DATA`: heap and private
    /// writable mappings) of each worker process. A Python stage that allocates past it gets a
    /// `MemoryError` (its document FAILs); native code that does ends its process, whose
    /// document FAILs and whose thread starts a new one. Needs `processes`.
    pub max_process_memory: Option<u64>,
    /// `worker.pipeline`: the pipeline a worker process serves by default.
    pub pipeline: Option<String>,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            threads: 1,
            max_retries: None,
            dead_letter_path: None,
            enable_heartbeat: false,
            heartbeat_path: PathBuf::from("heartbeat.log"),
            log_interval: Duration::from_secs(30),
            max_processing: None,
            exit_on_timeout: false,
            processes: None,
            max_process_memory: None,
            pipeline: None,
        }
    }
}

/// The smallest `worker.maxProcessMemoryBytes`: a worker process takes about 70 MB to start
/// its interpreter and the core before any stage is loaded.
pub const MIN_PROCESS_MEMORY_BYTES: u64 = 128 << 20;

/// The `worker { }` block: worker threads (or processes), retries, dead letters, heartbeat and
/// per-document time limits.
#[derive(Options)]
struct WorkerOptions {
    /// Worker threads per pipeline (each runs its own instances of the stages).
    #[option(min = 1)]
    threads: Option<usize>,
    /// Distributed mode: how many times a document is retried before it is failed.
    max_retries: Option<usize>,
    /// A JSON-lines file that every FAILed document is appended to, with its error.
    dead_letter_path: Option<String>,
    /// Write a heartbeat line to `heartbeatPath` while the worker is alive.
    #[option(default)]
    enable_heartbeat: bool,
    /// The heartbeat file (default heartbeat.log).
    heartbeat_path: Option<String>,
    /// A document whose stages run longer than this many seconds FAILs with a timeout and its
    /// worker is replaced.
    #[option(min = 1)]
    max_processing_secs: Option<usize>,
    /// End the process (exit code 1) on such a timeout, for a supervisor to restart it.
    #[option(default)]
    exit_on_timeout: bool,
    /// Run the pipeline in this many worker processes (Python stages on several cores).
    #[option(min = 1)]
    processes: Option<usize>,
    /// The memory limit of each worker process, in bytes (needs processes).
    max_process_memory_bytes: Option<usize>,
    /// The pipeline a `lucille worker` process serves when --pipeline is not given.
    pipeline: Option<String>,
}

impl WorkerSettings {
    /// Reads `worker { }` and `log.seconds`.
    pub fn from_config(
        worker: &ComponentConfig,
        log_seconds: Option<u64>,
    ) -> Result<Self, Vec<ConfigError>> {
        let o = WorkerOptions::from_config(worker)?;
        let mut errors = Vec::new();
        let mut s = WorkerSettings {
            threads: o.threads.unwrap_or(1),
            max_retries: o.max_retries.map(|v| u32::try_from(v).unwrap_or(u32::MAX)),
            dead_letter_path: o.dead_letter_path.map(|p| worker.resolve_output_path(&p)),
            enable_heartbeat: o.enable_heartbeat,
            max_processing: o.max_processing_secs.map(|n| Duration::from_secs(n as u64)),
            exit_on_timeout: o.exit_on_timeout,
            pipeline: o.pipeline,
            ..WorkerSettings::default()
        };
        if let Some(p) = o.heartbeat_path {
            s.heartbeat_path = worker.resolve_output_path(&p);
        }
        match o.processes {
            Some(n) if o.threads.is_some_and(|t| t != n) => errors.push(worker.error(
                "processes",
                format!(
                    "each worker thread drives one worker process, so threads ({}) and \
                     processes ({n}) must agree: give only processes",
                    s.threads
                ),
            )),
            Some(_) if process::launcher().is_none() => errors.push(worker.error(
                "processes",
                "worker processes are started by the Python package: run this config with \
                 `lucille run` or lucille.run(), or remove processes",
            )),
            Some(n) => {
                s.processes = Some(n);
                s.threads = n;
            }
            None => {}
        }
        match o.max_process_memory_bytes {
            Some(n) if (n as u64) < MIN_PROCESS_MEMORY_BYTES => errors.push(worker.error(
                "maxProcessMemoryBytes",
                format!(
                    "must be at least {MIN_PROCESS_MEMORY_BYTES} (128 MiB): a worker process \
                     takes about 70 MB to start before its stages are loaded"
                ),
            )),
            Some(_) if o.processes.is_none() => errors.push(worker.error(
                "maxProcessMemoryBytes",
                "limits the memory of worker processes: set worker.processes too (threads \
                 share the run's process, whose memory cannot be limited per stage)",
            )),
            v => s.max_process_memory = v.map(|n| n as u64),
        }
        if let Some(secs) = log_seconds {
            s.log_interval = Duration::from_secs(secs.max(1));
        }
        if errors.is_empty() {
            Ok(s)
        } else {
            Err(errors)
        }
    }
}

/// Shared counters of a pool, for logs, progress lines and the heartbeat.
#[derive(Debug, Default)]
pub struct PoolStats {
    pub processed: AtomicU64,
    pub latency_ns: AtomicU64,
    pub failed: AtomicU64,
    pub meter: Meter,
}

impl PoolStats {
    pub fn mean_latency_ms(&self) -> f64 {
        let n = self.processed.load(Ordering::Relaxed);
        if n == 0 {
            0.0
        } else {
            self.latency_ns.load(Ordering::Relaxed) as f64 / n as f64 / 1e6
        }
    }
}

/// Why a worker thread has no pipeline to run: every document it takes FAILs with this.
#[derive(Debug, thiserror::Error)]
enum NoPipeline {
    #[error("pipeline {pipeline:?}: {source}")]
    Process {
        pipeline: String,
        source: process::remote::WorkerProcessError,
    },
    #[error("the worker could not build pipeline {pipeline:?}: {}", source.to_string().trim_end())]
    Build {
        pipeline: String,
        source: crate::config::ConfigErrors,
    },
    #[error("the worker could not start pipeline {pipeline:?}: {source}")]
    Start {
        pipeline: String,
        source: crate::stage::StageError,
    },
}

/// A FAILed document as the dead-letter file and the `{pipeline}_fail` topic keep it.
fn dead_letter_line(
    doc: &Document,
    pipeline: &str,
    error: &str,
    attempts: u32,
) -> serde_json::Value {
    json!({
        "id": doc.id(), "run_id": doc.run_id(), "pipeline": pipeline,
        "error": error, "attempts": attempts, "document": doc.as_map(),
    })
}

/// The dead-letter file: one JSON line per FAILed document or record.
pub struct DeadLetter {
    path: PathBuf,
    out: Mutex<Option<BufWriter<std::fs::File>>>,
}

impl DeadLetter {
    fn write(&self, doc: &Document, pipeline: &str, error: &str, attempts: u32) {
        self.append(doc.id(), &dead_letter_line(doc, pipeline, error, attempts));
    }

    /// A record the connector could not turn into a document (`Publisher::publish_failed`):
    /// its id and the reason (file and position); there is no document to keep.
    pub fn write_record(&self, id: &str, run_id: &str, pipeline: &str, error: &str) {
        let line = json!({
            "id": id, "run_id": run_id, "pipeline": pipeline,
            "error": error, "attempts": 0, "document": null,
        });
        self.append(id, &line);
    }

    fn append(&self, id: &str, line: &serde_json::Value) {
        let mut out = self.out.lock();
        if out.is_none() {
            // A folder that cannot be made fails the open below, which says so.
            let _ = crate::config::paths::create_parent_folder(&self.path);
            match OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
            {
                Ok(f) => *out = Some(BufWriter::new(f)),
                Err(e) => {
                    tracing::error!("cannot open dead-letter file {}: {e}", self.path.display());
                    return;
                }
            }
        }
        if let Some(w) = out.as_mut() {
            let r = serde_json::to_writer(&mut *w, line)
                .map_err(std::io::Error::other)
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush());
            if let Err(e) = r {
                tracing::error!(doc_id = id, "writing to the dead-letter file failed: {e}");
            }
        }
    }
}

pub struct WorkerPool {
    running: Arc<AtomicBool>,
    /// The live workers; the supervisor swaps an abandoned one for its replacement.
    threads: Arc<Mutex<Vec<Live>>>,
    /// Runs the supervisor and the rate log while set (cleared after the workers stopped).
    supervising: Arc<AtomicBool>,
    logger: Option<JoinHandle<()>>,
    pub stats: Arc<PoolStats>,
    dead_letter: Option<Arc<DeadLetter>>,
    /// Worker processes started for `worker.processes`, ended with the pool.
    processes: Arc<Processes>,
    /// How a worker thread died while the pool ran, once seen (see [`WorkerPool::dead_worker`]).
    died: Mutex<Option<String>>,
}

/// A live worker thread and, under `worker.maxProcessingSecs`, what the supervisor watches.
struct Live {
    handle: JoinHandle<Vec<StageMetrics>>,
    slot: Option<Arc<Slot>>,
    observed: Observed,
}

/// Everything needed to start a worker (at the start, and to replace an abandoned one).
struct Spawner {
    plan: PipelinePlan,
    settings: WorkerSettings,
    messenger: Arc<dyn WorkerSide>,
    run_id: Arc<str>,
    running: Arc<AtomicBool>,
    stats: Arc<PoolStats>,
    dead_letter: Option<Arc<DeadLetter>>,
    preparer: Option<Preparer>,
    started: AtomicU64,
    /// Under `worker.processes`: how a worker thread starts its process.
    connect: Option<Connect>,
}

impl Spawner {
    fn spawn(&self) -> std::io::Result<Live> {
        let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = self
            .settings
            .max_processing
            .map(|_| Arc::new(Slot::default()));
        let ctx = WorkerContext {
            plan: self.plan.clone(),
            settings: self.settings.clone(),
            messenger: self.messenger.clone(),
            run_id: self.run_id.clone(),
            running: self.running.clone(),
            stats: self.stats.clone(),
            dead_letter: self.dead_letter.clone(),
            preparer: self.preparer.clone(),
            outbox: (self.messenger.batches_outputs() && slot.is_none())
                .then(|| std::cell::RefCell::new(Outbox::default())),
            watch: slot.clone(),
            connect: self.connect.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("lucille-worker-{n}"))
            .spawn(crate::thread_scope::in_current_span(move || {
                crate::thread_scope::run(move || ctx.run())
            }))?;
        Ok(Live {
            handle,
            slot,
            observed: Observed::default(),
        })
    }

    /// FAILs documents the supervisor took from a worker that ran past the limit.
    fn fail_timed_out(&self, ids: &[String], limit: Duration) {
        let reason = format!(
            "timed out: processing took longer than worker.maxProcessingSecs ({} s); the \
             worker thread was abandoned and replaced",
            limit.as_secs()
        );
        for id in ids {
            tracing::error!(doc_id = id.as_str(), "Document FAILED: {reason}");
            self.stats.failed.fetch_add(1, Ordering::Relaxed);
            if let Some(dl) = &self.dead_letter {
                dl.write_record(id, &self.run_id, &self.plan.name, &reason);
            }
            crate::messaging::send_event(
                self.messenger.as_ref(),
                id,
                &self.run_id,
                EventType::Fail,
                Some(reason.clone()),
            );
        }
    }
}

struct WorkerContext {
    plan: PipelinePlan,
    settings: WorkerSettings,
    messenger: Arc<dyn WorkerSide>,
    run_id: Arc<str>,
    running: Arc<AtomicBool>,
    stats: Arc<PoolStats>,
    dead_letter: Option<Arc<DeadLetter>>,
    /// Turns finished documents into index operations here, in parallel, instead of on the
    /// single indexer thread (`None`: documents travel whole, as test mode records them).
    preparer: Option<Preparer>,
    /// Under `worker.maxProcessingSecs`, the state the supervisor observes.
    watch: Option<Arc<Slot>>,
    connect: Option<Connect>,
    /// A block's events and outputs, handed over together once the block is done, when the
    /// messenger takes them so (`WorkerSide::batches_outputs`) and no watchdog may abandon
    /// this thread in the middle of a block (`None`: each is sent at once).
    outbox: Option<std::cell::RefCell<Outbox>>,
}

/// What a worker thread gathered while it processed a block.
#[derive(Default)]
struct Outbox {
    events: Vec<Event>,
    ops: Vec<ToIndex>,
}

impl WorkerPool {
    pub fn start(
        plan: PipelinePlan,
        settings: WorkerSettings,
        messenger: Arc<dyn WorkerSide>,
        run_id: Arc<str>,
        preparer: Option<Preparer>,
    ) -> std::io::Result<Self> {
        let running = Arc::new(AtomicBool::new(true));
        let stats = Arc::new(PoolStats::default());
        let dead_letter_path = settings.dead_letter_path.clone().or_else(|| {
            settings
                .max_retries
                .map(|_| PathBuf::from(format!("{}_fail.jsonl", plan.name)))
        });
        let dead_letter = dead_letter_path.map(|path| {
            Arc::new(DeadLetter {
                path,
                out: Mutex::new(None),
            })
        });
        let processes = Arc::new(Processes::default());
        let connect = settings
            .processes
            .and_then(|_| processes.launcher(settings.max_process_memory));
        let spawner = Arc::new(Spawner {
            plan,
            settings: settings.clone(),
            messenger,
            run_id,
            running: running.clone(),
            stats: stats.clone(),
            dead_letter: dead_letter.clone(),
            preparer,
            started: AtomicU64::new(0),
            connect,
        });
        let mut live = Vec::with_capacity(settings.threads);
        for _ in 0..settings.threads {
            match spawner.spawn() {
                Ok(l) => live.push(l),
                Err(e) => {
                    running.store(false, Ordering::SeqCst);
                    for l in live {
                        let _ = l.handle.join();
                    }
                    return Err(e);
                }
            }
        }
        let threads = Arc::new(Mutex::new(live));
        let supervising = Arc::new(AtomicBool::new(true));
        let logger = {
            let (supervising, stats, threads) =
                (supervising.clone(), stats.clone(), threads.clone());
            Some(
                std::thread::Builder::new()
                    .name("lucille-worker-pool".into())
                    .spawn(crate::thread_scope::in_current_span(move || {
                        log_loop(&supervising, &stats, &spawner, &threads)
                    }))?,
            )
        };
        Ok(WorkerPool {
            running,
            threads,
            supervising,
            logger,
            stats,
            dead_letter,
            processes,
            died: Mutex::new(None),
        })
    }

    /// A worker thread that ended while the pool runs, observed rather than inferred from a
    /// timer: its name and how it ended, or `None` while every worker lives. Stage panics are
    /// caught per document, so only a fault in the worker's own loop ends one; the document it
    /// held then has no terminal event, and the runner fails the run saying so. The thread is
    /// joined (it has ended) and the answer kept.
    pub fn dead_worker(&self) -> Option<String> {
        let mut died = self.died.lock();
        if died.is_none() && self.running.load(Ordering::SeqCst) {
            let mut threads = self.threads.lock();
            if let Some(i) = threads.iter().position(|l| l.handle.is_finished()) {
                let live = threads.swap_remove(i);
                let name = live.handle.thread().name().unwrap_or("?").to_string();
                let how = match live.handle.join() {
                    Err(p) => format!("panicked: {}", lucille_panic::message(p.as_ref())),
                    Ok(_) => "returned while the run went on".to_string(),
                };
                *died = Some(format!("worker thread {name} died ({how})"));
            }
        }
        died.clone()
    }

    /// The dead-letter file, when one is configured, for FAILs that never reach a worker.
    pub fn dead_letter(&self) -> Option<Arc<DeadLetter>> {
        self.dead_letter.clone()
    }

    /// Stops the workers after their current document and returns the summed stage metrics.
    /// The supervisor keeps watching until they are done, so a worker stuck past
    /// `worker.maxProcessingSecs` is abandoned rather than waited for.
    pub fn stop(mut self) -> Vec<StageMetrics> {
        let mut totals: Vec<StageMetrics> = Vec::new();
        for t in self.stop_threads() {
            if let Ok(metrics) = t.join() {
                if totals.is_empty() {
                    totals = metrics;
                } else {
                    for (t, m) in totals.iter_mut().zip(&metrics) {
                        t.merge(m);
                    }
                }
            }
        }
        totals
    }

    /// A forced stop: tells the workers to stop, waits at most `grace` for them and leaves any
    /// still busy behind (detached; whatever they send later is not counted). Returns the
    /// stage metrics of those that ended.
    pub fn abandon(mut self, grace: Duration) -> Vec<StageMetrics> {
        self.running.store(false, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        while !self.threads.lock().iter().all(|l| l.handle.is_finished())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.supervising.store(false, Ordering::SeqCst);
        if let Some(l) = self.logger.take() {
            // Woken now rather than at the end of its 100 ms tick: a run ends without waiting.
            l.thread().unpark();
            let _ = l.join();
        }
        let mut totals: Vec<StageMetrics> = Vec::new();
        for live in self.threads.lock().drain(..) {
            if !live.handle.is_finished() {
                tracing::warn!("forced stop: leaving a busy worker thread behind");
                continue;
            }
            if let Ok(metrics) = live.handle.join() {
                if totals.is_empty() {
                    totals = metrics;
                } else {
                    for (t, m) in totals.iter_mut().zip(&metrics) {
                        t.merge(m);
                    }
                }
            }
        }
        totals
    }

    /// Tells the workers to stop, waits until every live one has ended (the supervisor may
    /// still abandon and replace one meanwhile), stops the supervisor and returns their
    /// handles, all finished.
    fn stop_threads(&mut self) -> Vec<JoinHandle<Vec<StageMetrics>>> {
        self.running.store(false, Ordering::SeqCst);
        while !self.threads.lock().iter().all(|l| l.handle.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.supervising.store(false, Ordering::SeqCst);
        if let Some(l) = self.logger.take() {
            // Woken now rather than at the end of its 100 ms tick: a run ends without waiting.
            l.thread().unpark();
            let _ = l.join();
        }
        self.threads.lock().drain(..).map(|l| l.handle).collect()
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        if self.logger.is_some() {
            for t in self.stop_threads() {
                let _ = t.join();
            }
        }
        self.processes.end_all();
    }
}

/// The pool's own thread: the supervisor of `worker.maxProcessingSecs` (every tick), the
/// meter, the rate log and the heartbeat.
fn log_loop(
    supervising: &AtomicBool,
    stats: &PoolStats,
    spawner: &Spawner,
    threads: &Mutex<Vec<Live>>,
) {
    let settings = &spawner.settings;
    let mut last_log = Instant::now();
    let mut last_tick = Instant::now();
    let mut last_watch = Instant::now();
    while supervising.load(Ordering::SeqCst) {
        // Parked, not slept: stopping the pool unparks it (a spurious wake-up only ticks early).
        std::thread::park_timeout(Duration::from_millis(100));
        if !supervising.load(Ordering::SeqCst) {
            break;
        }
        if let Some(limit) = settings.max_processing {
            let now = Instant::now();
            supervise(spawner, threads, limit, now - last_watch);
            last_watch = now;
        }
        if last_tick.elapsed() >= meter::TICK {
            stats.meter.tick();
            last_tick = Instant::now();
        }
        if last_log.elapsed() >= settings.log_interval {
            last_log = Instant::now();
            let n = stats.processed.load(Ordering::Relaxed);
            tracing::info!(
                "{n} docs processed. One minute rate: {:.2} docs/sec. Mean pipeline latency: {:.2} ms/doc.",
                stats.meter.one_minute_rate(),
                stats.mean_latency_ms()
            );
            if settings.enable_heartbeat {
                write_heartbeat(&settings.heartbeat_path, n);
            }
        }
    }
}

/// One supervisor tick: interrupts, or abandons and replaces, workers whose document has been
/// in stage code longer than `limit`.
fn supervise(spawner: &Spawner, threads: &Mutex<Vec<Live>>, limit: Duration, tick: Duration) {
    let interrupter = crate::thread_scope::interrupter();
    let mut threads = threads.lock();
    let mut i = 0;
    while i < threads.len() {
        let live = &mut threads[i];
        let Some(slot) = live.slot.clone() else {
            i += 1;
            continue;
        };
        let thread_id = slot.thread_id.load(Ordering::Relaxed);
        let can_interrupt = interrupter.is_some() && thread_id != 0;
        match live
            .observed
            .observe(slot.word(), tick, limit, can_interrupt)
        {
            Verdict::Fine => {}
            Verdict::Interrupt { seq, word } => {
                exit_if_asked(spawner);
                tracing::warn!(
                    "a document has run longer than worker.maxProcessingSecs ({} s); \
                     interrupting its worker",
                    limit.as_secs()
                );
                slot.request_interrupt(seq);
                if let Some(int) = interrupter {
                    // Raising waits for the interpreter: never on the supervisor's thread.
                    let s2 = slot.clone();
                    let raised = std::thread::Builder::new()
                        .name("lucille-interrupt".into())
                        .spawn(move || (int.raise)(thread_id, &|| s2.word() == word));
                    if let Err(e) = raised {
                        tracing::error!("cannot start the interrupting thread: {e}");
                    }
                }
            }
            Verdict::Abandon { word } => {
                if let Some(ids) = slot.abandon(word) {
                    exit_if_asked(spawner);
                    spawner.fail_timed_out(&ids, limit);
                    // Detach the stuck thread (its handle is dropped, never joined) and
                    // start its replacement while the pool is still running.
                    threads.swap_remove(i);
                    if spawner.running.load(Ordering::SeqCst) {
                        match spawner.spawn() {
                            Ok(l) => threads.push(l),
                            Err(e) => tracing::error!("cannot start a replacement worker: {e}"),
                        }
                    }
                    continue;
                }
            }
        }
        i += 1;
    }
}

/// `worker.exitOnTimeout`: a timeout ends the process, as in Lucille.
fn exit_if_asked(spawner: &Spawner) {
    if spawner.settings.exit_on_timeout {
        tracing::error!(
            "a document ran longer than worker.maxProcessingSecs and worker.exitOnTimeout is \
             set: exiting"
        );
        std::process::exit(1);
    }
}

fn write_heartbeat(path: &std::path::Path, processed: u64) {
    let line = format!(
        "{} heartbeat: {processed} docs processed\n",
        chrono::Utc::now().to_rfc3339()
    );
    let r = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = r {
        tracing::warn!("cannot write heartbeat to {}: {e}", path.display());
    }
}

impl WorkerContext {
    fn event(&self, id: &str, kind: EventType, message: Option<String>) {
        self.send_event_in(id, self.run_id.clone(), kind, message);
    }

    fn send_event_in(&self, id: &str, run: Arc<str>, kind: EventType, message: Option<String>) {
        match &self.outbox {
            Some(out) => {
                let mut e = Event::new(id, run, kind);
                e.message = message;
                out.borrow_mut().events.push(e);
            }
            None => crate::messaging::send_event(self.messenger.as_ref(), id, &run, kind, message),
        }
    }

    /// Hands over what this thread gathered (events first), before it tells the messenger
    /// the block is done or waits for more.
    fn send_gathered(&self) {
        if let Some(out) = &self.outbox {
            let mut out = out.borrow_mut();
            let Outbox { events, ops } = &mut *out;
            if !events.is_empty() || !ops.is_empty() {
                self.messenger.send_outputs(events, ops);
            }
        }
    }

    /// An event for a document in hand, for the document's own run: in a Kafka worker one
    /// batch may hold documents (and their children) of several runs.
    fn event_of(&self, doc: &Document, kind: EventType, message: Option<String>) {
        self.event_in(doc.id(), doc.run_id(), kind, message);
    }

    fn event_in(&self, id: &str, run: Option<&str>, kind: EventType, message: Option<String>) {
        match run {
            Some(r) if r != &*self.run_id => self.send_event_in(id, Arc::from(r), kind, message),
            _ => self.event(id, kind, message),
        }
    }

    fn fail(&self, doc: &Document, message: String, attempts: u32) {
        tracing::error!(doc_id = doc.id(), "Document FAILED: {message}");
        self.stats.failed.fetch_add(1, Ordering::Relaxed);
        if let Some(dl) = &self.dead_letter {
            dl.write(doc, &self.plan.name, &message, attempts);
        }
        self.messenger.send_failed(
            doc.id(),
            &dead_letter_line(doc, &self.plan.name, &message, attempts),
        );
        self.event_of(doc, EventType::Fail, Some(message));
    }

    /// A record that could not be built into a document: FAILed with its reason (file and
    /// line) and written to the dead-letter file, as the connector's own failed records are.
    fn fail_record(&self, id: &str, reason: String) {
        tracing::error!(doc_id = id, "Record FAILED: {reason}");
        self.stats.failed.fetch_add(1, Ordering::Relaxed);
        if let Some(dl) = &self.dead_letter {
            dl.write_record(id, &self.run_id, &self.plan.name, &reason);
        }
        self.event(id, EventType::Fail, Some(reason));
    }

    /// Leaves stage code to emit events (see [`watch`]); `Err` when the supervisor took the
    /// document: the caller must send nothing more and end the thread.
    fn enter_send(&self) -> Result<(), Abandoned> {
        match &self.watch {
            Some(w) => w.enter_send(),
            None => Ok(()),
        }
    }

    fn leave_send(&self) {
        if let Some(w) = &self.watch {
            // What the messenger holds back goes out before stage code resumes, where the
            // supervisor may abandon this thread.
            self.messenger.flush();
            w.leave_send();
        }
    }

    fn begin<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        if let Some(w) = &self.watch {
            w.begin(ids);
        }
    }

    /// The document(s) begun last are done: withdraws an interrupt that may still be pending.
    fn end(&self) -> Result<(), Abandoned> {
        if let Some(w) = &self.watch {
            let seq = w.seq();
            w.end()?;
            w.clear_interrupt(seq);
        }
        Ok(())
    }

    /// Whether the supervisor interrupted the current document for running too long.
    fn timed_out(&self) -> bool {
        self.watch.as_ref().is_some_and(|w| w.interrupted())
    }

    fn run(self) -> Vec<StageMetrics> {
        if let (Some(w), Some(i)) = (&self.watch, crate::thread_scope::interrupter()) {
            w.thread_id.store((i.thread_id)(), Ordering::Relaxed);
        }
        let name = || self.plan.name.clone();
        let mut pipeline = match &self.connect {
            Some(connect) => RemotePipeline::start(&self.plan, connect.clone())
                .map(Engine::Remote)
                .map_err(|source| NoPipeline::Process {
                    pipeline: name(),
                    source,
                }),
            None => self
                .plan
                .instantiate()
                .map(Engine::Local)
                .map_err(|source| NoPipeline::Build {
                    pipeline: name(),
                    source,
                }),
        };
        if let Ok(p) = &mut pipeline {
            if let Err(source) = p.start() {
                pipeline = Err(NoPipeline::Start {
                    pipeline: name(),
                    source,
                });
            }
        }
        if let Err(message) = &pipeline {
            tracing::error!("{message}; every document this worker takes will FAIL");
        }
        if let Ok(p) = &mut pipeline {
            p.record_metrics();
        }
        let batch = pipeline.as_ref().map_or(1, |p| p.batch_size());
        let blocks = pipeline.as_ref().is_ok_and(|p| p.takes_blocks());
        let mut flushed = Instant::now();
        let mut block: Vec<ToProcess> = Vec::new();
        let mut sizer = BlockSizer::default();
        while self.running.load(Ordering::SeqCst) {
            if let (Ok(p), true) = (&mut pipeline, flushed.elapsed() >= METRICS_FLUSH) {
                p.flush_metrics(&self.plan);
                flushed = Instant::now();
            }
            // Under a watchdog one document at a time: an abandoned thread must hold nothing
            // that no one answers for.
            let max = match () {
                _ if self.watch.is_some() => 1,
                _ if batch > 1 => batch,
                _ => sizer.size(),
            };
            self.messenger.poll_block(max, POLL, &mut block);
            if block.is_empty() {
                continue;
            }
            let taken = block.len();
            let started = Instant::now();
            let docs: Vec<Document> = block.drain(..).filter_map(|i| self.take(i)).collect();
            let done = match &mut pipeline {
                Ok(_) if docs.is_empty() => Ok(()),
                Ok(p) if batch > 1 => {
                    #[cfg(any(test, feature = "testing"))]
                    crate::fault_point::hit("worker", docs[0].id());
                    let docs = self.fill_batch(docs, batch);
                    self.process_batch(p, docs)
                }
                // A stage takes whole blocks: the block as taken, run eagerly.
                Ok(p) if blocks => {
                    #[cfg(any(test, feature = "testing"))]
                    for doc in &docs {
                        crate::fault_point::hit("worker", doc.id());
                    }
                    self.process_batch(p, docs)
                }
                Ok(p) => docs.into_iter().try_for_each(|doc| {
                    #[cfg(any(test, feature = "testing"))]
                    crate::fault_point::hit("worker", doc.id());
                    self.process(p, doc)
                }),
                Err(no_pipeline) => {
                    let message = no_pipeline.to_string();
                    for doc in &docs {
                        self.fail(doc, message.clone(), 1);
                    }
                    Ok(())
                }
            };
            self.send_gathered();
            self.messenger.done_processing();
            sizer.observe(taken, started.elapsed());
            if done.is_err() {
                // The supervisor FAILed this thread's document and replaced it: whatever the
                // late result was, it is discarded, and the thread ends here.
                tracing::warn!("an abandoned worker came back; its late result is discarded");
                return Vec::new();
            }
        }
        match pipeline {
            Ok(mut p) => {
                if let Err(e) = p.stop() {
                    tracing::error!("{e}");
                }
                p.flush_metrics(&self.plan);
                p.metrics()
            }
            Err(_) => Vec::new(),
        }
    }

    /// The document a queue item carries; a record that cannot be built, or a document past
    /// `worker.maxRetries` in a Kafka worker, is FAILed here.
    fn take(&self, item: ToProcess) -> Option<Document> {
        match item {
            ToProcess::Doc(doc) => Some(doc),
            ToProcess::Record(record) => match record.build() {
                Ok(doc) => Some(doc),
                Err(e) => {
                    self.fail_record(&e.id, e.reason);
                    None
                }
            },
            ToProcess::Exhausted {
                doc,
                reason,
                attempts,
            } => {
                self.fail(&doc, reason, attempts);
                None
            }
            ToProcess::Unreadable {
                id,
                run_id,
                reason,
                text,
            } => {
                self.fail_unreadable(&id, run_id.as_deref(), reason, text);
                None
            }
        }
    }

    /// A message that is not a document: FAILed with its reason, its text kept in the
    /// dead-letter output (the file and the messenger's, `{pipeline}_fail` on Kafka). Its FAIL
    /// event goes to the run it names; a message that names none was published by no run, so
    /// no run counts it.
    fn fail_unreadable(&self, id: &str, run: Option<&str>, reason: String, text: Option<String>) {
        tracing::error!(doc_id = id, "Message FAILED: {reason}");
        self.stats.failed.fetch_add(1, Ordering::Relaxed);
        let line = json!({
            "id": id, "run_id": run, "pipeline": self.plan.name, "error": reason,
            "attempts": 0, "document": null, "text": text,
        });
        if let Some(dl) = &self.dead_letter {
            dl.append(id, &line);
        }
        self.messenger.send_failed(id, &line);
        if let Some(run) = run {
            self.event_in(id, Some(run), EventType::Fail, Some(reason));
        }
    }

    /// Takes up to `size` documents, `docs` included, waiting at most [`BATCH_FILL`] for
    /// the rest, so a slow source still gets its documents processed.
    fn fill_batch(&self, mut docs: Vec<Document>, size: usize) -> Vec<Document> {
        let deadline = Instant::now() + BATCH_FILL;
        while docs.len() < size && self.running.load(Ordering::SeqCst) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            if let Some(item) = self.messenger.poll_doc_to_process(left.min(POLL)) {
                docs.extend(self.take(item));
            }
        }
        docs
    }

    /// Runs documents through the pipeline together, for stages that take batches
    /// (`Pipeline::process_batch`); events as in [`WorkerContext::process`]. A document the
    /// batch failed is retried on its own, as the per-document path would.
    fn process_batch(&self, pipeline: &mut Engine, docs: Vec<Document>) -> Result<(), Abandoned> {
        let started = Instant::now();
        let n = docs.len();
        let max_retries = self.settings.max_retries.unwrap_or(0);
        // Copies for retries, and for the dead-letter file, which keeps a document as it
        // entered the pipeline (what a replay must process again), not as a stage left it.
        let keep = max_retries > 0 || self.dead_letter.is_some();
        let mut originals = keep.then(|| docs.clone()).map(Vec::into_iter);
        let mut retries = Vec::new();
        self.begin(docs.iter().map(Document::id));
        // Outputs come per input, children before their parent: a child's root is the input
        // of the next parent out (its CREATE names it, as in `attempts`).
        let roots: Vec<String> = docs.iter().map(|d| d.id().to_string()).collect();
        let mut parents_out = 0usize;
        let outputs = pipeline.process_batch(docs);
        self.enter_send()?;
        let timed_out = self.timed_out();
        for out in outputs {
            let original = match (&mut originals, out.is_child) {
                (Some(o), false) => o.next(),
                _ => None,
            };
            if out.is_child {
                let root = roots.get(parents_out).cloned();
                self.event_of(&out.doc, EventType::Create, root);
            } else {
                parents_out += 1;
            }
            match (out.error, original) {
                (Some(e), Some(fresh)) if max_retries > 0 && !out.is_child && !timed_out => {
                    tracing::warn!(doc_id = fresh.id(), "attempt 1 failed ({e}); retrying");
                    retries.push(fresh);
                }
                (Some(e), original) => {
                    let reason = if timed_out {
                        self.timeout_reason(&e.to_string())
                    } else {
                        e.to_string()
                    };
                    self.fail(original.as_ref().unwrap_or(&out.doc), reason, 1);
                }
                (None, _) => self.index_or_drop(out.doc),
            }
        }
        self.end()?;
        for fresh in retries {
            self.begin([fresh.id()]);
            self.attempts(pipeline, fresh, 2)?;
            self.end()?;
        }
        self.stats.processed.fetch_add(n as u64, Ordering::Relaxed);
        self.stats.meter.mark(n as u64);
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.stats.latency_ns.fetch_add(ns, Ordering::Relaxed);
        Ok(())
    }

    /// The FAIL reason of a document whose stage was interrupted for running too long.
    fn timeout_reason(&self, error: &str) -> String {
        format!(
            "timed out: processing took longer than worker.maxProcessingSecs ({} s) and was \
             interrupted ({error})",
            self.settings.max_processing.unwrap_or_default().as_secs()
        )
    }

    /// DROP for a dropped document, else hands it to the indexer.
    fn index_or_drop(&self, doc: Document) {
        if doc.is_dropped() {
            self.event_of(&doc, EventType::Drop, None);
            return;
        }
        // Only a run other than the pool's is kept (one allocation in a Kafka worker, none locally).
        let run = doc
            .run_id()
            .filter(|r| *r != &*self.run_id)
            .map(str::to_string);
        let item = match &self.preparer {
            Some(p) => ToIndex::Op(p.prepare(doc)),
            None => ToIndex::Doc(doc),
        };
        if let Some(out) = &self.outbox {
            out.borrow_mut().ops.push(item);
            return;
        }
        let id = item.id().to_string();
        if let Err(e) = self.messenger.send_for_indexing(item) {
            self.event_in(
                &id,
                run.as_deref(),
                EventType::Fail,
                Some(format!("could not send for indexing: {e}")),
            );
        }
    }

    fn process(&self, pipeline: &mut Engine, doc: Document) -> Result<(), Abandoned> {
        let started = Instant::now();
        self.begin([doc.id()]);
        self.attempts(pipeline, doc, 1)?;
        self.end()?;
        self.stats.processed.fetch_add(1, Ordering::Relaxed);
        self.stats.meter.mark(1);
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.stats.latency_ns.fetch_add(ns, Ordering::Relaxed);
        Ok(())
    }

    /// Runs one document, from attempt `first`, retrying up to `worker.maxRetries` attempts
    /// in all; FAILs it when the last one fails. A child's events are sent in `SEND`, then
    /// stage code resumes; the parent (last out) keeps `SEND` to the end, so its terminal
    /// event and a supervisor's timeout can never both be sent.
    fn attempts(&self, pipeline: &mut Engine, doc: Document, first: u32) -> Result<(), Abandoned> {
        let max_retries = self.settings.max_retries.unwrap_or(0);
        // For retries, and for the dead-letter file (the document as it entered the pipeline).
        let original = (max_retries > 0 || self.dead_letter.is_some()).then(|| doc.clone());
        let mut doc = doc;
        let mut attempt = first;
        loop {
            let mut parent_failure = None;
            // A child's CREATE names the root of its tree (how skipUnchanged waits for a
            // whole tree before recording its root).
            let root = doc.id().to_string();
            for out in pipeline.process(doc) {
                self.enter_send()?;
                if out.is_child {
                    self.event_of(&out.doc, EventType::Create, Some(root.clone()));
                }
                match out.error {
                    Some(e) if !out.is_child => parent_failure = Some((out.doc, e.to_string())),
                    Some(e) => self.fail(&out.doc, e.to_string(), attempt),
                    None => self.index_or_drop(out.doc),
                }
                if out.is_child {
                    self.leave_send();
                }
            }
            self.enter_send()?;
            let timed_out = self.timed_out();
            match (parent_failure, &original) {
                (Some(_), Some(fresh)) if attempt <= max_retries && !timed_out => {
                    tracing::warn!(doc_id = fresh.id(), "attempt {attempt} failed; retrying");
                    attempt += 1;
                    doc = fresh.clone();
                    self.leave_send();
                }
                (Some((failed, message)), _) => {
                    let message = if timed_out {
                        self.timeout_reason(&message)
                    } else if attempt > 1 {
                        format!("{message} (after {attempt} attempts)")
                    } else {
                        message
                    };
                    self.fail(original.as_ref().unwrap_or(&failed), message, attempt);
                    break;
                }
                (None, _) => break,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_grow_for_cheap_documents_and_shrink_to_one_for_slow_ones() {
        let mut s = BlockSizer::default();
        assert_eq!(s.size(), 8, "unknown cost: a small block first");
        for _ in 0..20 {
            s.observe(s.size(), Duration::from_micros(5) * s.size() as u32);
        }
        assert_eq!(
            s.size(),
            BlockSizer::MAX,
            "5 µs a document: the largest block"
        );
        for _ in 0..20 {
            s.observe(s.size(), Duration::from_millis(5) * s.size() as u32);
        }
        assert_eq!(s.size(), 1, "5 ms a document: one at a time");
        s.observe(0, Duration::from_secs(1));
        assert_eq!(s.size(), 1, "an empty block changes nothing");
    }
}
