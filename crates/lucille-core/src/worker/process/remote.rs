//! The run's side: a worker thread's pipeline that lives in a worker process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Deserialize;

use super::WireOutput;
use crate::document::Document;
use crate::pipeline::{Output, PipelinePlan, StageMetrics};
use crate::stage::StageError;

/// How many documents a worker thread hands its process at once when it can: one round trip
/// per document would leave the process idle while the thread sends events.
pub const REMOTE_BATCH: usize = 32;

/// The variable that gives a worker process its `RLIMIT_DATA` in bytes.
pub const MEMORY_LIMIT_ENV: &str = "LUCILLE_WORKER_MEMORY_BYTES";

/// mimalloc (the core's allocator) reserves a 1 GiB address range up front, which
/// `RLIMIT_DATA` counts; without the reservation the limit measures what is allocated.
const MIMALLOC_RESERVE_ENV: &str = "MIMALLOC_ARENA_RESERVE";

/// Both ends of a worker process's pipes, and the process when there is one.
pub struct Conn {
    pub to: Box<dyn Write + Send>,
    pub from: Box<dyn BufRead + Send>,
    pub child: Option<Arc<Mutex<Child>>>,
    /// The process's `worker.maxProcessMemoryBytes`, named when it dies.
    pub memory_limit: Option<u64>,
}

/// Opens a connection to a fresh worker process.
pub type Connect = Arc<dyn Fn() -> std::io::Result<Conn> + Send + Sync>;

/// The worker processes a pool started, so that those its threads left behind (a thread the
/// timeout supervisor abandoned) are ended with the pool.
#[derive(Default)]
pub struct Processes(Mutex<Vec<Arc<Mutex<Child>>>>);

impl Processes {
    /// A [`Connect`] that starts processes with the installed launcher, each told its memory
    /// limit (`worker.maxProcessMemoryBytes`) in [`MEMORY_LIMIT_ENV`], which it sets on itself
    /// at start (`lucille._worker_process`).
    pub fn launcher(self: &Arc<Self>, memory_limit: Option<u64>) -> Option<Connect> {
        let launcher = super::launcher()?;
        let processes = self.clone();
        Some(Arc::new(move || {
            let mut command = launcher();
            if let Some(bytes) = memory_limit {
                command.env(MEMORY_LIMIT_ENV, bytes.to_string());
                command.env(MIMALLOC_RESERVE_ENV, "0");
            }
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()?;
            let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
                let _ = child.kill();
                return Err(std::io::Error::other("the worker process has no pipes"));
            };
            let child = Arc::new(Mutex::new(child));
            processes.0.lock().push(child.clone());
            Ok(Conn {
                to: Box::new(std::io::BufWriter::new(to)),
                from: Box::new(BufReader::new(from)),
                child: Some(child),
                memory_limit,
            })
        }))
    }

    /// Ends every process still running (after the pool's threads are done with them).
    pub fn end_all(&self) {
        for child in self.0.lock().drain(..) {
            let mut c = child.lock();
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// Why a worker process could not run documents (they FAIL with it, and the next call starts
/// a new process).
#[derive(Debug, thiserror::Error)]
pub enum WorkerProcessError {
    #[error("cannot start a worker process: {0}")]
    Start(#[source] std::io::Error),
    #[error("cannot talk to the worker process: {0}")]
    Hello(#[source] std::io::Error),
    #[error("cannot send to the worker process: {0}")]
    Send(#[source] std::io::Error),
    #[error("cannot read from the worker process: {0}")]
    Read(#[source] std::io::Error),
    #[error("the worker process exited")]
    Exited,
    #[error("the worker process answered what is not a reply ({0})")]
    NotAReply(#[source] serde_json::Error),
    #[error("the worker process answered out of turn")]
    OutOfTurn,
    /// The process's own message (a config error, a stage that failed to start).
    #[error("the worker process could not build the pipeline: {0}")]
    Build(String),
    #[error("the worker process sent back a malformed document: {0}")]
    MalformedDocument(#[source] crate::document::DocumentError),
    #[error("no worker process")]
    NoProcess,
    /// A reply that did not come while the process was processing documents.
    #[error("{0} while processing this document")]
    WhileProcessing(Box<WorkerProcessError>),
    /// How the process ended, after the error that showed it.
    #[error("{error} ({how})")]
    Ended {
        error: Box<WorkerProcessError>,
        how: String,
    },
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    ready: bool,
    error: Option<String>,
    out: Option<Vec<WireOutput>>,
    metrics: Option<Vec<StageMetrics>>,
}

pub struct RemotePipeline {
    hello: String,
    stage_names: Vec<String>,
    connect: Connect,
    conn: Option<Conn>,
    metrics: Vec<StageMetrics>,
    /// Whether `metrics` was handed to the process's metrics already.
    metrics_counted: bool,
}

fn read_reply(conn: &mut Conn) -> Result<Reply, WorkerProcessError> {
    let mut line = String::new();
    match conn.from.read_line(&mut line) {
        Ok(0) => Err(WorkerProcessError::Exited),
        Ok(_) => serde_json::from_str(&line).map_err(WorkerProcessError::NotAReply),
        Err(e) => Err(WorkerProcessError::Read(e)),
    }
}

impl RemotePipeline {
    /// Starts a worker process and has it build the plan's pipeline.
    pub fn start(plan: &PipelinePlan, connect: Connect) -> Result<Self, WorkerProcessError> {
        let (stages, paths) = plan.stage_configs();
        let hello = serde_json::json!({ "pipeline": plan.name, "stages": stages, "paths": paths });
        let mut remote = RemotePipeline {
            hello: hello.to_string(),
            stage_names: plan.stages.iter().map(|s| s.name.clone()).collect(),
            connect,
            conn: None,
            metrics: Vec::new(),
            metrics_counted: false,
        };
        remote.connect()?;
        Ok(remote)
    }

    fn connect(&mut self) -> Result<(), WorkerProcessError> {
        let mut conn = (self.connect)().map_err(WorkerProcessError::Start)?;
        let hello = writeln!(conn.to, "{}", self.hello).and_then(|_| conn.to.flush());
        hello.map_err(WorkerProcessError::Hello)?;
        let reply = read_reply(&mut conn);
        match reply {
            Ok(Reply { ready: true, .. }) => {
                self.conn = Some(conn);
                Ok(())
            }
            Ok(Reply { error: Some(e), .. }) => {
                end(conn);
                Err(WorkerProcessError::Build(e))
            }
            Ok(_) => {
                end(conn);
                Err(WorkerProcessError::OutOfTurn)
            }
            Err(e) => {
                end(conn);
                Err(e)
            }
        }
    }

    pub fn batch_size(&self) -> usize {
        REMOTE_BATCH
    }

    /// Runs documents in the worker process. When the process cannot (it died, or the pipe
    /// broke), every document of the call FAILs with the reason and the next call starts a
    /// new process.
    pub fn process(&mut self, docs: Vec<Document>) -> Vec<Output> {
        let result = self.round_trip(&docs);
        match result {
            Ok(outputs) => outputs,
            Err(mut error) => {
                if let Some(conn) = self.conn.take() {
                    let limit = conn.memory_limit;
                    if let Some(status) = end(conn).filter(|s| !s.success()) {
                        error = WorkerProcessError::Ended {
                            error: Box::new(error),
                            how: ended(status, limit),
                        };
                    }
                }
                let message = error.to_string();
                tracing::error!("{message}");
                docs.into_iter()
                    .map(|doc| {
                        let error = StageError::Process {
                            stage: "worker process".into(),
                            doc_id: doc.id().to_string(),
                            message: message.clone(),
                        };
                        Output {
                            doc,
                            is_child: false,
                            error: Some(error),
                            trace: None,
                        }
                    })
                    .collect()
            }
        }
    }

    fn round_trip(&mut self, docs: &[Document]) -> Result<Vec<Output>, WorkerProcessError> {
        if self.conn.is_none() {
            self.connect()?;
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(WorkerProcessError::NoProcess);
        };
        let sent = (|| -> std::io::Result<()> {
            conn.to.write_all(b"{\"docs\":[")?;
            for (i, doc) in docs.iter().enumerate() {
                if i > 0 {
                    conn.to.write_all(b",")?;
                }
                doc.write_json(&mut conn.to)?;
            }
            conn.to.write_all(b"]}\n")?;
            conn.to.flush()
        })();
        sent.map_err(WorkerProcessError::Send)?;
        let reply =
            read_reply(conn).map_err(|e| WorkerProcessError::WhileProcessing(Box::new(e)))?;
        let Some(out) = reply.out else {
            return Err(WorkerProcessError::OutOfTurn);
        };
        out.into_iter()
            .map(|o| {
                let doc =
                    Document::from_value(o.doc).map_err(WorkerProcessError::MalformedDocument)?;
                Ok(Output {
                    doc,
                    is_child: o.child,
                    error: o.error.map(super::WireError::into_error),
                    // A worker process's stages make no spans.
                    trace: None,
                })
            })
            .collect()
    }

    /// Ends the process: it stops its stages and reports their metrics.
    pub fn stop(&mut self) -> Result<(), StageError> {
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        drop(std::mem::replace(&mut conn.to, Box::new(std::io::sink())));
        let reply = read_reply(&mut conn);
        end(conn);
        match reply {
            Ok(Reply {
                metrics: Some(m), ..
            }) => {
                self.metrics = m;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(StageError::Lifecycle {
                stage: "worker process".into(),
                phase: "stop",
                message: e.to_string(),
            }),
        }
    }

    /// The stages' metrics the process reported when it stopped (zeros before that).
    pub fn metrics(&self) -> Vec<StageMetrics> {
        if !self.metrics.is_empty() {
            return self.metrics.clone();
        }
        self.stage_names.iter().map(StageMetrics::named).collect()
    }

    /// The metrics the process reported when it stopped, the first time they are asked for
    /// (empty before it stopped and after that).
    pub fn take_reported_metrics(&mut self) -> Vec<StageMetrics> {
        if self.metrics_counted {
            return Vec::new();
        }
        self.metrics_counted = !self.metrics.is_empty();
        self.metrics.clone()
    }
}

/// Closes a connection; its process, if still running, is ended. Returns how the process
/// ended when it ended on its own (not when it had to be killed here).
fn end(conn: Conn) -> Option<ExitStatus> {
    let Conn {
        to, from, child, ..
    } = conn;
    drop(to);
    drop(from);
    let child = child?;
    let mut c = child.lock();
    if matches!(c.try_wait(), Ok(None)) {
        // Given a moment to exit on its own after its input closed.
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            if let Ok(Some(status)) = c.try_wait() {
                return Some(status);
            }
        }
        let _ = c.kill();
        let _ = c.wait();
        return None;
    }
    c.wait().ok()
}

/// How a worker process that failed its documents ended, for their FAIL reason.
fn ended(status: ExitStatus, memory_limit: Option<u64>) -> String {
    use std::os::unix::process::ExitStatusExt;
    let how = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(6)) => "aborted (SIGABRT)".to_string(),
        (None, Some(9)) => "killed (SIGKILL)".to_string(),
        (None, Some(11)) => "segmentation fault (SIGSEGV)".to_string(),
        (None, Some(sig)) => format!("signal {sig}"),
        (None, None) => "ended".to_string(),
    };
    match memory_limit {
        Some(bytes) => format!(
            "{how}; under worker.maxProcessMemoryBytes ({bytes}) an allocation past the limit \
             outside Python ends the process"
        ),
        None => how,
    }
}

impl Drop for RemotePipeline {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            end(conn);
        }
    }
}
