//! Python indexers (`indexer.class: "module:Class"`, a `lucille.Indexer` subclass): the Rust
//! indexer thread batches as usual and calls the object's `send_batch` / `delete_batch` /
//! `delete_by_field`, taking the GIL only for those calls. Grouping and result mapping live in
//! `indexer::grouped`.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::document::PyDocument;
use super::stage::{config_dict, describe_py_err, instantiate};
use crate::config::{ComponentConfig, ConfigError};
use crate::document::Document;
use crate::indexer::grouped::{BatchSink, Grouped, SinkDoc, SinkReply};
use crate::indexer::{Backend, BackendError, PythonIndexerFactory};

struct PyIndexer {
    obj: Py<PyAny>,
}

/// Reads what a Python call returned: None, a list (one entry per item, None or a reason), or
/// a dict of rejected id -> reason.
fn reply(py: Python<'_>, r: PyResult<Bound<'_, PyAny>>, what: &str) -> SinkReply {
    let value = match r {
        Ok(v) => v,
        Err(e) => return SinkReply::Failed(describe_py_err(py, &e)),
    };
    if value.is_none() {
        return SinkReply::AllOk;
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut out = HashMap::new();
        for (k, v) in d.iter() {
            match (k.extract::<String>(), v.str()) {
                (Ok(k), Ok(v)) => {
                    out.insert(k, v.to_string());
                }
                _ => {
                    return SinkReply::Failed(format!(
                        "{what} returned a dict whose keys are not document ids"
                    ))
                }
            }
        }
        return SinkReply::ById(out);
    }
    match value.try_iter() {
        Ok(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Ok(i) if i.is_none() => out.push(None),
                    Ok(i) => out.push(Some(i.str().map(|s| s.to_string()).unwrap_or_default())),
                    Err(e) => return SinkReply::Failed(describe_py_err(py, &e)),
                }
            }
            SinkReply::PerItem(out)
        }
        Err(_) => SinkReply::Failed(format!(
            "{what} must return None, a list of per-document errors (None for success) or a dict of id -> error"
        )),
    }
}

impl PyIndexer {
    fn hook(&self, name: &str) -> Result<(), BackendError> {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if !obj.hasattr(name).unwrap_or(false) {
                return Ok(());
            }
            obj.call_method0(name)
                .map(|_| ())
                .map_err(|e| BackendError::new(describe_py_err(py, &e)))
        })
    }
}

impl BatchSink for PyIndexer {
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        self.hook("validate_connection")
    }

    fn upsert(&mut self, docs: &[SinkDoc<'_>]) -> SinkReply {
        // Documents are built before taking the GIL.
        let mut built = Vec::with_capacity(docs.len());
        for d in docs {
            let mut map = d.fields.clone();
            map.insert("id".into(), d.id.into());
            // Attached children come with their parent (`doc.children()` in `send_batch`).
            let built_doc = Document::from_fields(map).and_then(|mut doc| {
                for child in d.children {
                    doc.add_child(Document::from_fields(child.clone())?);
                }
                Ok(doc)
            });
            match built_doc {
                Ok(doc) => built.push(doc),
                Err(e) => return SinkReply::Failed(format!("document {:?}: {e}", d.id)),
            }
        }
        Python::attach(|py| {
            let list = built
                .into_iter()
                .map(|d| Py::new(py, PyDocument::new_from(d)))
                .collect::<PyResult<Vec<_>>>()
                .and_then(|v| PyList::new(py, v));
            match list {
                Ok(list) => reply(
                    py,
                    self.obj.bind(py).call_method1("send_batch", (list,)),
                    "send_batch",
                ),
                Err(e) => SinkReply::Failed(describe_py_err(py, &e)),
            }
        })
    }

    fn delete_ids(&mut self, ids: &[&str]) -> SinkReply {
        Python::attach(|py| match PyList::new(py, ids) {
            Ok(list) => reply(
                py,
                self.obj.bind(py).call_method1("delete_batch", (list,)),
                "delete_batch",
            ),
            Err(e) => SinkReply::Failed(describe_py_err(py, &e)),
        })
    }

    fn delete_by_field(&mut self, field: &str, value: &str) -> SinkReply {
        Python::attach(|py| {
            reply(
                py,
                self.obj
                    .bind(py)
                    .call_method1("delete_by_field", (field, value)),
                "delete_by_field",
            )
        })
    }

    fn close(&mut self) -> Result<(), BackendError> {
        self.hook("close")
    }
}

pub struct PyIndexerFactory;

fn load_indexer_class<'py>(
    py: Python<'py>,
    class: &str,
    config: &ComponentConfig,
) -> Result<Bound<'py, PyAny>, ConfigError> {
    if class == crate::indexer::PYTHON_SCRIPT_INDEXER {
        return super::stages::script_class(py, config, "indexer");
    }
    let base = config.base_dir().map(|p| p.to_string_lossy().into_owned());
    py.import("lucille._loader")
        .and_then(|m| m.call_method1("load_indexer_class", (class, base)))
        .map_err(|e| {
            config.error(
                "class",
                format!("cannot load Python indexer {class:?}: {}", e.value(py)),
            )
        })
}

impl PythonIndexerFactory for PyIndexerFactory {
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError> {
        Python::attach(|py| load_indexer_class(py, class, config).map(|_| ()))
    }

    fn build(
        &self,
        class: &str,
        config: &ComponentConfig,
    ) -> Result<Box<dyn Backend>, ConfigError> {
        Python::attach(|py| {
            let cls = load_indexer_class(py, class, config)?;
            let fail = |e: PyErr| {
                config.error(
                    "class",
                    format!(
                        "cannot create Python indexer {class:?}: {}",
                        describe_py_err(py, &e)
                    ),
                )
            };
            let obj = instantiate(&cls, || config_dict(py, config)).map_err(fail)?;
            Ok(Box::new(Grouped(PyIndexer { obj: obj.unbind() })) as Box<dyn Backend>)
        })
    }
}

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::indexer::PYTHON.install(Box::new(PyIndexerFactory));
    Ok(())
}
