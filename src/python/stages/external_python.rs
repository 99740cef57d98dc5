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
use crate::config::{ComponentConfig, ConfigErrors, Kind, Spec};
use crate::stage::{Stage, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ExternalPython",
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    Spec::stage()
        .required("scriptPath", Kind::String)
        .optional("functionName", Kind::String)
        .optional("requirementsPath", Kind::String)
        .optional("pythonExecutable", Kind::String)
        .optional("port", Kind::Integer)
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
    let script = find_script(config, "scriptPath", &config.require_string("scriptPath")?)?;
    let function = config
        .string("functionName")?
        .unwrap_or_else(|| "process_document".to_string());
    let requirements = match config.string("requirementsPath")? {
        Some(p) => Some(find_script(config, "requirementsPath", &p)?),
        None => None,
    };
    for ((key, why), noted) in TRANSPORT_KEYS.iter().zip(&TRANSPORT_NOTED) {
        if config.has(key) && !noted.swap(true, Ordering::Relaxed) {
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
