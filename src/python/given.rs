//! `lucille.run(stages=[...], connector=..., indexer=...)`: Python objects (and built-in stages)
//! joined to a run's config, so a notebook can run a stage defined in a cell, with no module or
//! file. Each object is named for the run as `lucille._loader:given.oN`, which the stage,
//! connector and indexer factories resolve like any `module:Class` and then use as it is; the
//! names are released when the run ends.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyModule};
use serde_json::{Map, Value};

use super::pipeline::PyBuiltinStage;
use super::stage::py_config;

/// The objects of one run, released from the loader's registry on drop.
pub struct Given {
    loader: Py<PyModule>,
    references: Vec<String>,
}

impl Drop for Given {
    fn drop(&mut self) {
        Python::attach(|py| {
            let loader = self.loader.bind(py);
            for r in &self.references {
                let _ = loader.call_method1("release_given", (r.as_str(),));
            }
        });
    }
}

/// The object's `config` attribute when it is a dict (Lucille's base classes keep their config
/// block there), else an empty block.
fn own_config(obj: &Bound<'_, PyAny>) -> PyResult<Map<String, Value>> {
    match obj.getattr("config") {
        Ok(c) if c.is_instance_of::<PyDict>() => py_config(&c),
        _ => Ok(Map::new()),
    }
}

fn own_name(obj: &Bound<'_, PyAny>) -> Option<String> {
    obj.getattr("name")
        .ok()
        .and_then(|n| n.extract::<String>().ok())
        .filter(|n| !n.is_empty())
}

impl Given {
    /// Puts the objects into `config`: `stages` replace the stages of the config's one pipeline
    /// (or make pipeline `main` when it has none), `connector` becomes the run's only connector
    /// and `indexer` the indexer's class, its own `config` keys laid over the `indexer` block.
    pub fn attach(
        py: Python<'_>,
        config: &mut Value,
        stages: Option<&Bound<'_, PyList>>,
        connector: Option<&Bound<'_, PyAny>>,
        indexer: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Given> {
        let mut given = Given {
            loader: py.import("lucille._loader")?.unbind(),
            references: Vec::new(),
        };
        let Value::Object(root) = config else {
            return Err(PyValueError::new_err("the config must be an object"));
        };
        let mut pipeline: Option<String> = None;
        let processes = root
            .get("worker")
            .and_then(|w| w.get("processes"))
            .is_some();
        if let (Some(list), true) = (stages, processes) {
            if list.iter().any(|item| {
                !item.is_instance_of::<PyDict>() && !item.is_instance_of::<PyBuiltinStage>()
            }) {
                return Err(PyValueError::new_err(
                    "stage objects given to lucille.run live in this process and cannot run in \
                     worker processes (worker.processes): name their class in the config as \
                     module:Class or file.py:Class instead",
                ));
            }
        }
        if let Some(list) = stages {
            let blocks = list
                .iter()
                .map(|item| given.stage_block(&item))
                .collect::<PyResult<Vec<Value>>>()?;
            let pipelines = root
                .entry("pipelines")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(list) = pipelines else {
                return Err(PyValueError::new_err(
                    "the config's pipelines must be a list",
                ));
            };
            let had_none = list.is_empty();
            match list.as_mut_slice() {
                [] => list.push(serde_json::json!({ "name": "main", "stages": blocks })),
                [Value::Object(only)] => {
                    only.insert("stages".into(), Value::Array(blocks));
                }
                other => {
                    return Err(PyValueError::new_err(format!(
                        "stages= replaces the stages of the config's one pipeline, but this \
                         config has {} pipelines: name the stages in the config instead",
                        other.len()
                    )))
                }
            }
            pipeline = list
                .first()
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
            if had_none {
                // Connectors of a config without pipelines now feed the one just made.
                if let (Some(Value::Array(connectors)), Some(name)) =
                    (root.get_mut("connectors"), &pipeline)
                {
                    for c in connectors.iter_mut().filter_map(Value::as_object_mut) {
                        c.entry("pipeline")
                            .or_insert_with(|| Value::String(name.clone()));
                    }
                }
            }
        } else if let Some(Value::Array(list)) = root.get("pipelines") {
            if let [only] = list.as_slice() {
                pipeline = only.get("name").and_then(Value::as_str).map(str::to_string);
            }
        }
        if let Some(obj) = connector {
            if !obj.hasattr("execute")? {
                return Err(PyTypeError::new_err(
                    "connector= takes a lucille.Connector (an object with an execute method)",
                ));
            }
            let mut block = own_config(obj)?;
            let name = own_name(obj)
                .or_else(|| {
                    block
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_else(|| {
                    obj.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_else(|_| "connector".into())
                });
            block.insert("name".into(), Value::String(name));
            block.insert("class".into(), given.register(obj)?.into());
            if let (false, Some(p)) = (block.contains_key("pipeline"), &pipeline) {
                block.insert("pipeline".into(), Value::String(p.clone()));
            }
            root.insert(
                "connectors".into(),
                Value::Array(vec![Value::Object(block)]),
            );
        }
        if let Some(obj) = indexer.filter(|o| !o.is_none()) {
            if !obj.hasattr("send_batch")? {
                return Err(PyTypeError::new_err(
                    "indexer= takes a lucille.Indexer (an object with a send_batch method)",
                ));
            }
            let entry = root
                .entry("indexer")
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(block) = entry else {
                return Err(PyValueError::new_err(
                    "the config's indexer must be an object",
                ));
            };
            block.extend(own_config(obj)?);
            block.insert("class".into(), given.register(obj)?.into());
        }
        Ok(given)
    }

    fn register(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<String> {
        let reference: String = self
            .loader
            .bind(obj.py())
            .call_method1("register_given", (obj,))?
            .extract()?;
        self.references.push(reference.clone());
        Ok(reference)
    }

    /// A stage config block: a built-in stage's own, a dict as it is, or a Python stage object
    /// named for the run with its `config` keys (conditions, batchSize, ...) beside it.
    fn stage_block(&mut self, item: &Bound<'_, PyAny>) -> PyResult<Value> {
        if let Ok(builtin) = item.cast::<PyBuiltinStage>() {
            return Ok(Value::Object(builtin.get().config_block()));
        }
        if item.is_instance_of::<PyDict>() {
            return Ok(Value::Object(py_config(item)?));
        }
        if !item.hasattr("process_document")? {
            return Err(PyTypeError::new_err(format!(
                "stages= takes lucille.Stage objects, lucille.stages.* stages or config dicts, \
                 not {}",
                item.get_type().name()?
            )));
        }
        let mut block = own_config(item)?;
        if let Some(name) = own_name(item) {
            block.entry("name").or_insert(Value::String(name));
        }
        block.insert("class".into(), self.register(item)?.into());
        Ok(Value::Object(block))
    }
}
