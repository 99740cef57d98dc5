//! `PyStageFactory`: how a config's `class: "module:Class"` (or `file.py:Class`) becomes a
//! stage, and the built-in stages that run Python (`stages/`), given to the stage registry
//! when the extension loads.

use pyo3::prelude::*;

use super::stage::{config_dict, describe_py_err, instantiate, name_stage, PyStage};
use crate::config::{ComponentConfig, ConfigError};
use crate::stage::registry::PythonStageFactory;
use crate::stage::Stage;

/// Builds stage instances for `class: "module:Class"` configs.
pub struct PyStageFactory;

fn load_class<'py>(
    py: Python<'py>,
    class: &str,
    config: &ComponentConfig,
) -> Result<Bound<'py, PyAny>, ConfigError> {
    let base = config.base_dir().map(|p| p.to_string_lossy().into_owned());
    py.import("lucille._loader")
        .and_then(|m| m.call_method1("load_stage_class", (class, base)))
        .map_err(|e| {
            config.error(
                "class",
                format!("cannot load Python stage {class:?}: {}", e.value(py)),
            )
        })
}

impl PythonStageFactory for PyStageFactory {
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError> {
        Python::attach(|py| {
            let cls = load_class(py, class, config)?;
            // batchSize is checked here too, as the stage is not instantiated at validation.
            let Some(v) = config.get("batchSize") else {
                return Ok(());
            };
            let size = crate::config::spec::as_i64(v)
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    config.error(
                        "batchSize",
                        format!("batchSize must be an integer of at least 1, found {v}"),
                    )
                })?;
            if size > 1 && !cls.hasattr("process_batch").unwrap_or(false) {
                return Err(config.error(
                    "batchSize",
                    format!(
                        "batchSize {size} needs a process_batch(self, docs) method, which \
                         {class} does not define"
                    ),
                ));
            }
            Ok(())
        })
    }

    fn build(
        &self,
        class: &str,
        name: &str,
        config: &ComponentConfig,
    ) -> Result<Box<dyn Stage>, ConfigError> {
        Python::attach(|py| {
            let cls = load_class(py, class, config)?;
            let fail = |e: PyErr| {
                config.error(
                    "class",
                    format!(
                        "cannot create Python stage {class:?}: {}",
                        describe_py_err(py, &e)
                    ),
                )
            };
            let obj = instantiate(&cls, || config_dict(py, config)).map_err(fail)?;
            name_stage(&obj, name).map_err(fail)?;
            let stage = PyStage::new(&obj).map_err(|e| config.error("batchSize", e.to_string()))?;
            Ok(Box::new(stage) as Box<dyn Stage>)
        })
    }
}
