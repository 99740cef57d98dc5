//! `worker.processes`: the pipeline runs in worker processes, one per worker thread, so Python
//! stages (which hold their interpreter's GIL) use as many cores as there are processes. The
//! worker thread stays in the run's process and keeps all of the accounting (events, retries,
//! dead letter, timeouts): it hands each document (or batch) to its process and turns what
//! comes back into events exactly as for a pipeline of its own ([`super::engine`]).
//!
//! The process is started by a launcher the host installs (the Python package starts
//! `python -m lucille._worker_process`); a run without one rejects `worker.processes` at
//! validation. The two talk over the process's stdin and stdout in JSON lines (documents are
//! JSON already, and a line needs no framing code):
//!
//! ```text
//! run → process   {"pipeline": NAME, "stages": [STAGE CONFIG...], "paths": PATH CONTEXT}
//! process → run   {"ready": true} | {"error": "why the pipeline could not be built"}
//! run → process   {"docs": [DOC...]}                     one request per document or batch
//! process → run   {"out": [{"doc": DOC, "child": BOOL, "error": ERROR|null}...]}
//! run closes stdin; the process stops its stages and answers {"metrics": [...]}, then exits
//! ```

pub mod remote;
pub mod serve;

use std::process::Command;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::stage::StageError;

/// Makes the command that starts one worker process (its stdin and stdout are then piped).
pub type Launcher = Box<dyn Fn() -> Command + Send + Sync>;

static LAUNCHER: OnceLock<Launcher> = OnceLock::new();

/// Installs how worker processes are started (the Python bindings do, once).
pub fn install_launcher(launcher: Launcher) {
    let _ = LAUNCHER.set(launcher);
}

pub fn launcher() -> Option<&'static Launcher> {
    LAUNCHER.get()
}

/// A stage error as it crosses the pipe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireError {
    pub stage: String,
    pub doc_id: String,
    pub message: String,
    #[serde(default)]
    pub panic: bool,
}

impl WireError {
    pub fn from_error(e: &StageError, doc_id: &str) -> WireError {
        match e {
            StageError::Process {
                stage,
                doc_id,
                message,
            } => WireError {
                stage: stage.clone(),
                doc_id: doc_id.clone(),
                message: message.clone(),
                panic: false,
            },
            StageError::Panic {
                stage,
                doc_id,
                message,
            } => WireError {
                stage: stage.clone(),
                doc_id: doc_id.clone(),
                message: message.clone(),
                panic: true,
            },
            StageError::Lifecycle { stage, .. } => WireError {
                stage: stage.clone(),
                doc_id: doc_id.to_string(),
                message: e.to_string(),
                panic: false,
            },
        }
    }

    pub fn into_error(self) -> StageError {
        if self.panic {
            StageError::Panic {
                stage: self.stage,
                doc_id: self.doc_id,
                message: self.message,
            }
        } else {
            StageError::Process {
                stage: self.stage,
                doc_id: self.doc_id,
                message: self.message,
            }
        }
    }
}

/// One output of the pipeline, as it crosses the pipe.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireOutput {
    pub doc: serde_json::Value,
    pub child: bool,
    pub error: Option<WireError>,
}
