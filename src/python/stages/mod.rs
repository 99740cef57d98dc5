//! Built-in stages that run Python: `EmbeddedPython` and `ExternalPython`. Their keys are
//! validated and their scripts found here; the code runs through `lucille._python_stages` as
//! an ordinary Python stage (`PyStage`), so a Python exception FAILs only its document.
//! They exist only in the Python build, which registers them.

pub mod embedded_python;
pub mod external_python;

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::stage::{config_dict, describe_py_err, PyStage};
use crate::config::{ComponentConfig, ConfigError, Options, Spec};
use crate::stage::Stage;

/// A script path from the config, resolved as every input path is (`config::paths`: the
/// working directory, else beside the config file; `classpath:X` under the resource roots).
/// The error says where it looked.
fn find_script(config: &ComponentConfig, key: &str, given: &str) -> Result<PathBuf, ConfigError> {
    let paths = config.paths();
    let found = paths.resolve_input(given);
    if found.is_file() {
        return Ok(found);
    }
    let looked = if given.starts_with("classpath:") {
        format!("looked under {}", paths.describe_roots())
    } else {
        format!("looked for {}", found.display())
    };
    Err(config.error(key, format!("file {given:?} not found ({looked})")))
}

/// Builds `lucille._python_stages.<class>(config_dict, *args)` as a Python stage. A
/// `StageConfigError` it raises becomes a config error at its key; anything else at `key`.
fn build_python_stage(
    config: &ComponentConfig,
    class: &str,
    key: &str,
    args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>>,
) -> Result<Box<dyn Stage>, ConfigError> {
    Python::attach(|py| {
        let built = (|| -> PyResult<Bound<'_, PyAny>> {
            let module = py.import("lucille._python_stages")?;
            let mut all = vec![config_dict(py, config)?.into_any()];
            all.extend(args(py)?);
            module.getattr(class)?.call1(PyTuple::new(py, all)?)
        })();
        match built {
            Ok(obj) => PyStage::new(&obj)
                .map(|s| Box::new(s) as Box<dyn Stage>)
                .map_err(|e| config.error("batchSize", e.to_string())),
            Err(e) => Err(config_error(py, config, key, &e)),
        }
    })
}

/// A Python exception raised while loading configured code, as a config error: a
/// `StageConfigError` at the key it names, anything else at `key`.
pub fn config_error(py: Python<'_>, config: &ComponentConfig, key: &str, e: &PyErr) -> ConfigError {
    let value = e.value(py);
    let is_config = py
        .import("lucille._python_stages")
        .and_then(|m| m.getattr("StageConfigError"))
        .is_ok_and(|cls| value.is_instance(&cls).unwrap_or(false));
    if is_config {
        let at: String = value
            .getattr("key")
            .and_then(|k| k.extract())
            .unwrap_or_else(|_| key.to_string());
        let message: String = value
            .getattr("message")
            .and_then(|m| m.extract())
            .unwrap_or_else(|_| value.to_string());
        config.error(&at, message)
    } else {
        config.error(
            key,
            format!("cannot load the Python code: {}", describe_py_err(py, e)),
        )
    }
}

/// The code of `script` (inline) or `scriptPath` (a file, resolved as every input path is):
/// exactly one of them. Returns the key it came from, the code and a file name for tracebacks.
pub fn read_script(
    config: &ComponentConfig,
    script: Option<String>,
    script_path: Option<String>,
) -> Result<(&'static str, String, String), ConfigError> {
    match (script, script_path) {
        (Some(script), None) => Ok(("script", script, "<inline>".to_string())),
        (None, Some(path)) => {
            let file = find_script(config, "scriptPath", &path)?;
            let source = std::fs::read_to_string(&file).map_err(|e| {
                config.error("scriptPath", format!("cannot read {}: {e}", file.display()))
            })?;
            Ok(("scriptPath", source, file.display().to_string()))
        }
        (Some(_), Some(_)) => Err(config.error(
            "script",
            "give either script (inline code) or scriptPath (a file), not both",
        )),
        (None, None) => Err(config.error(
            "script",
            "missing the code: give script (inline Python) or scriptPath (a .py file)",
        )),
    }
}

/// The keys of `PythonConnector` / `PythonIndexer` that say where their class is; the rest of
/// their block is the class's own config.
#[derive(Options)]
#[options(base = Spec::new().open())]
struct ScriptClassOptions {
    /// Inline Python code that defines the class.
    script: Option<String>,
    /// A .py file that defines the class.
    script_path: Option<String>,
    /// The class to use when the code defines several.
    class_name: Option<String>,
}

/// `PythonConnector` / `PythonIndexer`: the class (a subclass of `lucille.Connector` or
/// `lucille.Indexer`, `kind`) that the configured script defines, named by `className` when
/// it defines several. The code runs once per distinct script and file name.
pub fn script_class<'py>(
    py: Python<'py>,
    config: &ComponentConfig,
    kind: &str,
) -> Result<Bound<'py, PyAny>, ConfigError> {
    let o = ScriptClassOptions::from_config(config)
        .map_err(|e| ConfigError::joined(config.path(), e))?;
    let (key, source, filename) = read_script(config, o.script, o.script_path)?;
    let class_name = o.class_name;
    py.import("lucille._loader")
        .and_then(|m| {
            m.call_method1(
                "load_script_class",
                (source, filename, key, class_name, kind),
            )
        })
        .map_err(|e| config_error(py, config, key, &e))
}
