//! `worker.processes`: how the run starts a worker process (this interpreter's executable with
//! `-m lucille._worker_process`, on the run's `sys.path`), and the process's entry point,
//! `_serve_pipeline`, which runs the core's protocol over two file descriptors.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::fd::FromRawFd;
use std::process::Command;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// Installs the launcher: `sys.executable -m lucille._worker_process`, with `PYTHONPATH` set
/// to this interpreter's `sys.path` at launch, so the process imports the same stage modules
/// (including folders the loader added for `module:Class` references).
pub fn install(py: Python<'_>) -> PyResult<()> {
    let executable: String = py.import("sys")?.getattr("executable")?.extract()?;
    crate::worker::process::install_launcher(Box::new(move || {
        let path = Python::attach(|py| -> PyResult<String> {
            let sys_path: Vec<String> = py.import("sys")?.getattr("path")?.extract()?;
            let sep: String = py.import("os")?.getattr("pathsep")?.extract()?;
            Ok(sys_path.join(&sep))
        })
        .unwrap_or_default();
        let mut command = Command::new(&executable);
        command.args(["-m", "lucille._worker_process"]);
        command.env("PYTHONPATH", path);
        command
    }));
    Ok(())
}

/// Serves the worker-process protocol: requests read from `input_fd`, replies written to
/// `output_fd` (both taken over and closed at the end). The GIL is released throughout; the
/// pipeline's Python stages take it for each call.
#[pyfunction]
pub fn _serve_pipeline(py: Python<'_>, input_fd: i32, output_fd: i32) -> PyResult<()> {
    if input_fd < 0 || output_fd < 0 || input_fd == output_fd {
        return Err(PyOSError::new_err(
            "two distinct open file descriptors are needed",
        ));
    }
    // SAFETY: the caller (lucille._worker_process) hands over two open descriptors it owns
    // and no longer uses; each File becomes their only owner and closes it.
    let (input, output) = unsafe { (File::from_raw_fd(input_fd), File::from_raw_fd(output_fd)) };
    py.detach(|| {
        crate::worker::process::serve::serve(BufReader::new(input), BufWriter::new(output))
    })
    .map_err(|e| PyOSError::new_err(format!("worker process: {e}")))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_serve_pipeline, m)?)?;
    install(m.py())
}
