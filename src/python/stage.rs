//! Python stages inside the Rust pipeline: `PyStage` calls a `lucille.Stage` instance, taking
//! the GIL only for that call, and `PyStageFactory` lets configs name Python classes.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyIterator, PyString};

use super::convert::{map_to_py, py_to_value};
use super::document::PyDocument;
use crate::config::{ComponentConfig, ConfigError};
use crate::document::Document;
use crate::stage::registry::PythonStageFactory;
use crate::stage::{Children, Stage, StageFailure, StageResult};

/// The Python error with its traceback, as a stage failure message.
pub fn describe_py_err(py: Python<'_>, err: &PyErr) -> String {
    let formatted = (|| -> PyResult<String> {
        let tb = py.import("traceback")?;
        let value = err.value(py);
        let lines = tb.call_method1(
            "format_exception",
            (value.get_type(), value, err.traceback(py)),
        )?;
        let text: Vec<String> = lines.extract()?;
        Ok(text.concat())
    })();
    match formatted {
        Ok(text) => text.trim_end().to_string(),
        Err(_) => err.to_string(),
    }
}

fn py_failure(py: Python<'_>, err: &PyErr) -> StageFailure {
    StageFailure::msg(describe_py_err(py, err))
}

pub struct PyStage {
    obj: Py<PyAny>,
    /// The parent document while its children are being produced: a generator may read it
    /// lazily, so it stays with Python until `children_done`.
    lent: Option<Py<PyDocument>>,
}

impl PyStage {
    pub fn new(obj: Py<PyAny>) -> Self {
        PyStage { obj, lent: None }
    }

    fn call_hook(&self, hook: &str) -> Result<(), StageFailure> {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if obj.hasattr(hook).map_err(|e| py_failure(py, &e))? {
                obj.call_method0(hook).map_err(|e| py_failure(py, &e))?;
            }
            Ok(())
        })
    }
}

/// Takes the document back out of a Python Document object.
fn reclaim(py: Python<'_>, obj: &Py<PyDocument>) -> Document {
    std::mem::replace(&mut obj.borrow_mut(py).inner, Document::placeholder())
}

impl Stage for PyStage {
    fn start(&mut self) -> Result<(), StageFailure> {
        self.call_hook("start")
    }

    fn stop(&mut self) -> Result<(), StageFailure> {
        self.call_hook("stop")
    }

    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        Python::attach(|py| {
            // The document is lent to Python for the call (moved, not copied) and moved back.
            let lent = std::mem::replace(doc, Document::placeholder());
            let py_doc = Py::new(py, PyDocument::new_from(lent)).map_err(|e| py_failure(py, &e))?;
            let result = self
                .obj
                .bind(py)
                .call_method1("process_document", (py_doc.clone_ref(py),));
            let not_iterable =
                |r: &Bound<'_, PyAny>| {
                    StageFailure::msg(format!(
                    "process_document must return None or an iterable of Documents, returned {}",
                    r.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
                };
            let result = match result {
                Ok(r) if !r.is_none() => r,
                other => {
                    *doc = reclaim(py, &py_doc);
                    return match other {
                        Ok(_) => Ok(None),
                        Err(e) => Err(py_failure(py, &e)),
                    };
                }
            };
            let iter =
                if result.is_instance_of::<PyDocument>() || result.is_instance_of::<PyString>() {
                    Err(not_iterable(&result))
                } else {
                    result.try_iter().map_err(|_| not_iterable(&result))
                };
            match iter {
                Ok(iter) => {
                    let run_id = py_doc.borrow(py).inner.run_id().map(str::to_string);
                    let parent = py_doc.clone_ref(py);
                    self.lent = Some(py_doc);
                    Ok(Some(Box::new(PyChildren {
                        iter: Some(iter.unbind()),
                        run_id,
                        parent,
                    }) as Children))
                }
                Err(e) => {
                    *doc = reclaim(py, &py_doc);
                    Err(e)
                }
            }
        })
    }

    fn children_done(&mut self, parent: &mut Document) {
        if let Some(py_doc) = self.lent.take() {
            Python::attach(|py| *parent = reclaim(py, &py_doc));
        }
    }
}

/// Children pulled lazily from a Python iterable (a generator runs only as they are pulled).
struct PyChildren {
    iter: Option<Py<PyIterator>>,
    /// The parent's run id, stamped on children (the parent itself is with Python meanwhile).
    run_id: Option<String>,
    /// The input document, which must not come back as one of its own children.
    parent: Py<PyDocument>,
}

impl Iterator for PyChildren {
    type Item = Result<Document, StageFailure>;

    fn next(&mut self) -> Option<Self::Item> {
        let iter = self.iter.as_ref()?;
        let item = Python::attach(|py| {
            let mut bound = iter.bind(py).clone();
            match bound.next() {
                None => None,
                Some(Err(e)) => Some(Err(py_failure(py, &e))),
                Some(Ok(obj)) if obj.is(&self.parent) => Some(Err(StageFailure::msg(
                    "process_document yielded its own input document; children must be new Documents",
                ))),
                Some(Ok(obj)) => Some(match obj.cast::<PyDocument>() {
                    Ok(child) => {
                        let mut child = child.borrow_mut();
                        let mut doc = std::mem::replace(&mut child.inner, Document::placeholder());
                        if let (None, Some(run_id)) = (doc.run_id(), self.run_id.as_deref()) {
                            // The child has no run id yet, so this cannot fail.
                            let _ = doc.initialize_run_id(run_id);
                        }
                        Ok(doc)
                    }
                    Err(_) => Err(StageFailure::msg(format!(
                        "process_document yielded {}, expected a Document",
                        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ))),
                }),
            }
        });
        if !matches!(item, Some(Ok(_))) {
            self.drop_iter();
        }
        item
    }
}

impl PyChildren {
    fn drop_iter(&mut self) {
        if let Some(it) = self.iter.take() {
            Python::attach(move |_| drop(it));
        }
    }
}

impl Drop for PyChildren {
    fn drop(&mut self) {
        self.drop_iter();
    }
}

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

pub fn config_dict<'py>(py: Python<'py>, config: &ComponentConfig) -> PyResult<Bound<'py, PyDict>> {
    map_to_py(py, config.map().iter())
}

/// Gives a Python stage object its pipeline name (and a config dict if its `__init__` skipped
/// the base class's).
pub fn name_stage(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    obj.setattr("name", name)?;
    if !obj.hasattr("config")? {
        obj.setattr("config", PyDict::new(obj.py()))?;
    }
    Ok(())
}

impl PythonStageFactory for PyStageFactory {
    fn builtins(&self) -> &'static [&'static crate::stage::StageDescriptor] {
        super::stages::descriptors()
    }

    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError> {
        Python::attach(|py| load_class(py, class, config).map(|_| ()))
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
            let dict = config_dict(py, config).map_err(fail)?;
            let obj = cls.call1((dict,)).map_err(fail)?;
            name_stage(&obj, name).map_err(fail)?;
            Ok(Box::new(PyStage::new(obj.unbind())) as Box<dyn Stage>)
        })
    }
}

/// Converts a Python config mapping to the JSON object a stage config is.
pub fn py_config(obj: &Bound<'_, PyAny>) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    match py_to_value(obj, "config")? {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "a stage config must be a dict",
        )),
    }
}
