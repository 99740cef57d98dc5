//! EmbeddedPython: runs a Python script once per document, in this CPython interpreter.
//!
//! Keys (Lucille's): `script` (inline code) or `scriptPath` (a file; `script_path`, the
//! spelling Lucille's docs use, is an alias) — exactly one. The code is compiled once per
//! stage instance, so a syntax error is a config error at validation, with its line.
//!
//! The script sees `doc`, a live view of the document that is both a dict (`doc["title"]`,
//! `"x" in doc`, `del doc["x"]`, `doc.keys()`) and an object (`doc.title`, `doc.title = ...`),
//! with nested objects and lists as write-through views, and `rawDoc`, the `lucille.Document`
//! (Lucille binds its Java Document there). Its other globals persist from document to
//! document within a stage instance, as in Lucille's GraalPy context.
//!
//! Differences from Lucille: real CPython (any installed package can be imported); Lucille's
//! `s3` / `azure` / `gcp` script locations are not supported (rejected as unknown keys).

use pyo3::types::PyString;

use super::{build_python_stage, read_script};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::stage::{Stage, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "EmbeddedPython",
    spec: EmbeddedPythonOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Runs a Python script once per document (`doc` bound to it), in this CPython interpreter.
#[derive(Options)]
#[options(base = Spec::stage())]
struct EmbeddedPythonOptions {
    /// Inline Python code (give this or scriptPath).
    script: Option<String>,
    /// A .py file with the code (give this or script).
    #[option(alias = "script_path")]
    script_path: Option<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = EmbeddedPythonOptions::from_config(config)?;
    let (key, source, filename) = read_script(config, o.script, o.script_path)?;
    build_python_stage(config, "EmbeddedPython", key, move |py| {
        Ok(vec![
            PyString::new(py, &source).into_any(),
            PyString::new(py, &filename).into_any(),
            PyString::new(py, key).into_any(),
        ])
    })
    .map_err(ConfigErrors::from)
}
