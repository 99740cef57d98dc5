//! `lucille.Pipeline`, built-in stage handles (`lucille.stages.X(**config)`) and the
//! `StageError` exception, for notebooks and unit tests.

use std::sync::Mutex;

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::config_err;
use super::document::PyDocument;
use super::stage::{name_stage, py_config, PyStage};
use crate::config::ConfigErrors;
use crate::document::Document;
use crate::pipeline::{plan_stage, Output, Pipeline, Run, StagePlan, StageSlot};
use crate::stage::condition::Conditions;
use crate::stage::registry;

pyo3::create_exception!(
    _lucille,
    StageError,
    PyException,
    "A stage failed on a document."
);

/// A validated built-in stage config, made by `lucille.stages.<Name>(**config)`.
#[pyclass(name = "BuiltinStage", module = "lucille._lucille", frozen)]
pub struct PyBuiltinStage {
    class: String,
    config: serde_json::Map<String, serde_json::Value>,
    plan: StagePlan,
}

impl PyBuiltinStage {
    /// The stage's config block, `class` included.
    pub fn config_block(&self) -> serde_json::Map<String, serde_json::Value> {
        self.config.clone()
    }
}

#[pymethods]
impl PyBuiltinStage {
    #[new]
    #[pyo3(signature = (class_name, config = None))]
    fn py_new(class_name: &str, config: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut map = match config {
            Some(c) => py_config(c.as_any())?,
            None => serde_json::Map::new(),
        };
        map.insert("class".into(), class_name.into());
        if registry::is_python_reference(class_name) {
            return Err(PyValueError::new_err(
                "BuiltinStage is for built-in stages; pass a Python stage instance to Pipeline instead",
            ));
        }
        let plan = plan_stage(
            map.clone(),
            0,
            class_name,
            &std::sync::Arc::new(crate::config::PathContext::new(None)),
        )
        .map_err(|e| config_err(ConfigErrors(e)))?
        .ok_or_else(|| {
            PyValueError::new_err(format!("{class_name} is disabled (enabled: false)"))
        })?;
        Ok(PyBuiltinStage {
            class: class_name.to_string(),
            config: map,
            plan,
        })
    }

    #[getter]
    fn class_name(&self) -> &str {
        &self.class
    }

    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        super::convert::map_to_py(py, self.config.iter())
    }

    fn __repr__(&self) -> String {
        format!(
            "{}({})",
            self.class,
            serde_json::Value::Object(self.config.clone())
        )
    }
}

#[pyfunction]
pub fn builtin_stage_names() -> Vec<&'static str> {
    registry::all_builtins().iter().map(|d| d.name).collect()
}

/// The config keys of a built-in stage beyond those every stage takes: (key, required, what
/// its value is), in declaration order; None for an unknown name.
#[pyfunction]
pub fn builtin_stage_keys(name: &str) -> Option<Vec<(&'static str, bool, String)>> {
    let all = registry::all_builtins();
    let descriptor = all.iter().find(|d| d.name == name)?;
    let common: Vec<&str> = crate::config::Spec::stage()
        .properties()
        .iter()
        .map(|p| p.name)
        .collect();
    Some(
        (descriptor.spec)()
            .properties()
            .iter()
            .filter(|p| !common.contains(&p.name))
            .map(|p| (p.name, p.required, p.kind.describe()))
            .collect(),
    )
}

/// The keys every stage takes (`name`, `conditions`, ...).
#[pyfunction]
pub fn common_stage_keys() -> Vec<&'static str> {
    crate::config::Spec::stage()
        .properties()
        .iter()
        .map(|p| p.name)
        .collect()
}

/// Pipeline(stages, name="pipeline"): stages (built-in `lucille.stages.X(...)` or
/// `lucille.Stage` objects) run in order on one document at a time, for notebooks and tests.
#[pyclass(name = "Pipeline", module = "lucille._lucille", frozen)]
pub struct PyPipeline {
    inner: Mutex<Pipeline>,
}

fn lock(p: &Mutex<Pipeline>) -> std::sync::MutexGuard<'_, Pipeline> {
    // A panic while locked is caught inside the pipeline; recover the guard regardless.
    p.lock().unwrap_or_else(|e| e.into_inner())
}

fn stage_error(out: &Output) -> Option<PyErr> {
    out.error
        .as_ref()
        .map(|e| StageError::new_err(e.to_string()))
}

fn start_if_needed(pipeline: &mut Pipeline) -> PyResult<()> {
    pipeline
        .start()
        .map_err(|e| StageError::new_err(e.to_string()))
}

#[pymethods]
impl PyPipeline {
    #[new]
    #[pyo3(signature = (stages, name = "pipeline"))]
    fn py_new(stages: &Bound<'_, PyList>, name: &str) -> PyResult<Self> {
        let mut slots = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (i, item) in stages.iter().enumerate() {
            let default_name = format!("stage_{}", i + 1);
            let slot = if let Ok(builtin) = item.cast::<PyBuiltinStage>() {
                let b = builtin.get();
                let mut plan = b.plan.clone();
                if !b.config.contains_key("name") {
                    plan.name = default_name;
                }
                plan.instantiate()
                    .map_err(|e| PyValueError::new_err(e.to_string()))?
            } else if item.hasattr("process_document")? {
                let configured: Option<String> =
                    item.getattr("name").ok().and_then(|n| n.extract().ok());
                let stage_name = configured.filter(|n| !n.is_empty()).unwrap_or(default_name);
                name_stage(&item, &stage_name)?;
                let conditions = match item.getattr("config") {
                    Ok(cfg) if cfg.is_instance_of::<PyDict>() => {
                        let map = py_config(&cfg)?;
                        let cc = crate::config::ComponentConfig::new(map, stage_name.clone());
                        Conditions::from_stage_config(&cc)
                            .map_err(|e| config_err(ConfigErrors(e)))?
                    }
                    _ => Conditions::default(),
                };
                let stage = PyStage::new(&item)
                    .map_err(|e| PyValueError::new_err(format!("stage {stage_name:?}: {e}")))?;
                StageSlot::new(stage_name, Box::new(stage), conditions)
            } else {
                return Err(PyValueError::new_err(format!(
                    "pipeline item {i} is neither a lucille.stages.* stage nor an object with process_document"
                )));
            };
            if names.contains(&slot.name) {
                return Err(PyValueError::new_err(format!(
                    "duplicate stage name {:?} in pipeline",
                    slot.name
                )));
            }
            names.push(slot.name.clone());
            slots.push(slot);
        }
        Ok(PyPipeline {
            inner: Mutex::new(Pipeline::new(name, slots)),
        })
    }

    /// Builds a pipeline from a config's list of stage blocks (as under `pipelines[i].stages`),
    /// validating all of them at once. `base_dir` is where `valuesPath`, dictionaries and
    /// `file.py:Class` references are resolved (the config file's folder).
    #[staticmethod]
    #[pyo3(signature = (stages, name = "pipeline", base_dir = None))]
    fn from_config(
        py: Python<'_>,
        stages: &Bound<'_, PyList>,
        name: &str,
        base_dir: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let values = stages
            .iter()
            .map(|s| super::convert::py_to_value(&s, "stages"))
            .collect::<PyResult<Vec<_>>>()?;
        let pipeline = py.detach(|| {
            crate::pipeline::PipelinePlan::from_config(
                name,
                &values,
                "stages",
                &std::sync::Arc::new(crate::config::PathContext::new(base_dir)),
            )
            .and_then(|plan| plan.instantiate())
        });
        Ok(PyPipeline {
            inner: Mutex::new(pipeline.map_err(config_err)?),
        })
    }

    /// The stages' names, in order (configured names, else `stage_N`).
    #[getter]
    fn stage_names(&self) -> Vec<String> {
        lock(&self.inner)
            .stage_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// Runs one document through every stage: children first, then the parent (the same
    /// Document object, modified in place). Dropped documents are included. A stage failure
    /// raises `StageError`.
    fn process(&self, py: Python<'_>, doc: Py<PyDocument>) -> PyResult<Vec<Py<PyDocument>>> {
        let input = std::mem::replace(&mut doc.borrow_mut(py).inner, Document::placeholder());
        let outputs: PyResult<Vec<Output>> = py.detach(|| {
            let mut pipeline = lock(&self.inner);
            start_if_needed(&mut pipeline)?;
            Ok(pipeline.process(input).collect())
        });
        let outputs = outputs?;
        let mut result = Vec::with_capacity(outputs.len());
        let mut first_error = None;
        for out in outputs {
            if first_error.is_none() {
                first_error = stage_error(&out);
            }
            if out.is_child {
                result.push(Py::new(py, PyDocument::new_from(out.doc))?);
            } else {
                doc.borrow_mut(py).inner = out.doc;
                result.push(doc.clone_ref(py));
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(result),
        }
    }

    /// The same as `process`, lazily: each document is produced when it is pulled.
    fn process_iter(slf: Py<Self>, py: Python<'_>, doc: Py<PyDocument>) -> PyResult<PyProcessIter> {
        let input = std::mem::replace(&mut doc.borrow_mut(py).inner, Document::placeholder());
        let stages = {
            let mut pipeline = lock(&slf.get().inner);
            start_if_needed(&mut pipeline)?;
            pipeline.stage_count()
        };
        Ok(PyProcessIter {
            pipeline: slf,
            parent: doc,
            run: Mutex::new(Some(Run::new(input, stages))),
        })
    }

    /// Per-stage counters: processed, children, errors, total and mean seconds.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        lock(&self.inner)
            .metrics()
            .iter()
            .map(|m| metrics_dict(py, m))
            .collect()
    }

    /// Calls every stage's stop().
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| lock(&self.inner).stop())
            .map_err(|e| StageError::new_err(e.to_string()))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Py<PyAny>,
        _v: Py<PyAny>,
        _tb: Py<PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __len__(&self) -> usize {
        lock(&self.inner).stage_count()
    }
}

#[pyclass(name = "ProcessIter", module = "lucille._lucille", frozen)]
pub struct PyProcessIter {
    pipeline: Py<PyPipeline>,
    parent: Py<PyDocument>,
    run: Mutex<Option<Run>>,
}

#[pymethods]
impl PyProcessIter {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyDocument>>> {
        let pipeline = self.pipeline.get();
        let next = py.detach(|| {
            let mut run = self.run.lock().unwrap_or_else(|e| e.into_inner());
            let Some(r) = run.as_mut() else {
                return Ok(None);
            };
            let mut p = lock(&pipeline.inner);
            let out = r.next(&mut p);
            if out.is_none() {
                *run = None;
            }
            Ok::<_, PyErr>(out)
        })?;
        let Some(out) = next else {
            return Ok(None);
        };
        if let Some(e) = stage_error(&out) {
            *self.run.lock().unwrap_or_else(|e| e.into_inner()) = None;
            if !out.is_child {
                self.parent.borrow_mut(py).inner = out.doc;
            }
            return Err(e);
        }
        if out.is_child {
            Ok(Some(Py::new(py, PyDocument::new_from(out.doc))?))
        } else {
            self.parent.borrow_mut(py).inner = out.doc;
            Ok(Some(self.parent.clone_ref(py)))
        }
    }
}

/// `lucille doc CLASS`: a stage's, connector's or indexer's options as its options type declares
/// them.
#[pyfunction]
pub fn describe(class_name: &str) -> PyResult<String> {
    crate::catalog::describe(class_name).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// One stage's counters as the dict `Pipeline.metrics()` and `RunResult.stage_metrics` give.
pub fn metrics_dict<'py>(
    py: Python<'py>,
    m: &crate::pipeline::StageMetrics,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &m.name)?;
    d.set_item("processed", m.processed)?;
    d.set_item("children", m.children)?;
    d.set_item("errors", m.errors)?;
    d.set_item("total_seconds", m.total_time().as_secs_f64())?;
    d.set_item("mean_seconds", m.mean_time().as_secs_f64())?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBuiltinStage>()?;
    m.add_class::<PyPipeline>()?;
    m.add_class::<PyProcessIter>()?;
    m.add("StageError", m.py().get_type::<StageError>())?;
    m.add_function(wrap_pyfunction!(builtin_stage_names, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_stage_keys, m)?)?;
    m.add_function(wrap_pyfunction!(common_stage_keys, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    Ok(())
}
