//! ExternalPython: calls a function of a Python script once per document.
//!
//! Keys (Lucille's): `scriptPath` (required), `functionName` (default `process_document`),
//! `requirementsPath` (a requirements.txt: each requirement must be installed in this Python,
//! else a config error names the missing ones), `pythonExecutable` and `port`.
//!
//! Lucille runs the function in a separate Python process over Py4J, in a venv it builds
//! from `requirementsPath`. Here it runs in-process, in the interpreter that runs lucille, so
//! `pythonExecutable` and `port` have nothing to choose: they are accepted for Lucille
//! configs and an info line says once that they do not apply. Lucille's restriction of
//! scripts to a few folders (a guard for its gateway) does not apply either.
//!
//! The function gets the document as a dict (`id`, `run_id`, fields) and returns `None`
//! (unchanged) or the document's new fields as a dict or a JSON object string: each returned
//! field is set, fields it leaves out are removed, reserved fields in it are ignored — as
//! Lucille applies the response.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::types::PyString;

use super::{build_python_stage, find_script};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::stage::{Stage, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ExternalPython",
    spec: ExternalPythonOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Calls a function of a Python script once per document, with the document as a dict.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ExternalPythonOptions {
    /// The .py file that defines the function.
    script_path: String,
    /// The function called per document.
    #[option(default = "process_document".to_string())]
    function_name: String,
    /// A requirements.txt: each requirement must be installed in this Python.
    requirements_path: Option<String>,
    /// Lucille's Python for its subprocess; accepted, no effect here (the function runs in the
    /// Python that runs lucille).
    python_executable: Option<String>,
    /// Lucille's Py4J gateway port; accepted, no effect here (the call is in-process).
    port: Option<i64>,
}

/// Keys for Lucille's Py4J subprocess, with why each has no effect in-process.
const TRANSPORT_KEYS: [(&str, &str); 2] = [
    (
        "pythonExecutable",
        "the function runs in the Python that runs lucille",
    ),
    ("port", "the function is called in-process, with no gateway"),
];

static TRANSPORT_NOTED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ExternalPythonOptions::from_config(config)?;
    let script = find_script(config, "scriptPath", &o.script_path)?;
    let function = o.function_name;
    let requirements = match o.requirements_path {
        Some(p) => Some(find_script(config, "requirementsPath", &p)?),
        None => None,
    };
    let given = [o.python_executable.is_some(), o.port.is_some()];
    for (((key, why), noted), given) in TRANSPORT_KEYS.iter().zip(&TRANSPORT_NOTED).zip(given) {
        if given && !noted.swap(true, Ordering::Relaxed) {
            tracing::info!(
                "ExternalPython {}: does not apply here ({why}); accepted for Lucille configs",
                config.key_path(key)
            );
        }
    }
    build_python_stage(config, "ExternalPython", "scriptPath", move |py| {
        Ok(vec![
            PyString::new(py, &script.display().to_string()).into_any(),
            PyString::new(py, &function).into_any(),
            match requirements {
                Some(r) => PyString::new(py, &r.display().to_string()).into_any(),
                None => py.None().into_bound(py),
            },
        ])
    })
    .map_err(ConfigErrors::from)
}
