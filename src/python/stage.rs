//! Python stages inside the Rust pipeline: `PyStage` calls a `lucille.Stage` instance, taking
//! the GIL only for that call, and `stage_factory` lets configs name Python classes.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyIterator, PyList, PyString};

use super::convert::{map_to_py, py_to_value};
use super::document::PyDocument;
use crate::config::ComponentConfig;
use crate::document::Document;
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
    /// `batchSize` from the stage's config (1: one document at a time).
    batch_size: usize,
    /// The stage defines `process_batch` but not its own `process_document`, so single
    /// documents go through `process_batch([doc])`.
    batch_only: bool,
}

/// Why a Python stage's `batchSize` cannot be used: the message for its `batchSize` key.
#[derive(Debug, thiserror::Error)]
pub enum BatchSettingsError {
    /// Not an integer of at least 1 (the value as Python prints it).
    #[error("batchSize must be an integer of at least 1, found {0}")]
    NotAPositiveInteger(String),
    /// More than one document at a time, for a stage that takes them one by one.
    #[error(
        "batchSize {size} needs a process_batch(self, docs) method, which {class} does not define"
    )]
    NoProcessBatch { size: usize, class: String },
    /// `lucille.stage.Stage` could not be read: the Python error with its traceback.
    #[error("{0}")]
    Python(String),
}

/// The stage's `batchSize` (from `self.config`), checked against its methods.
fn batch_settings(obj: &Bound<'_, PyAny>) -> Result<(usize, bool), BatchSettingsError> {
    let py = obj.py();
    let describe = |e: PyErr| BatchSettingsError::Python(describe_py_err(py, &e));
    let has_batch = obj
        .getattr("process_batch")
        .map(|m| m.is_callable())
        .unwrap_or(false);
    let size = match obj.getattr("config") {
        Ok(cfg) if cfg.is_instance_of::<PyDict>() => {
            match cfg
                .cast::<PyDict>()
                .ok()
                .and_then(|d| d.get_item("batchSize").ok().flatten())
            {
                None => 1,
                Some(v) if v.is_none() => 1,
                Some(v) => {
                    let parsed = v.extract::<i64>().ok().or_else(|| {
                        v.extract::<String>()
                            .ok()
                            .and_then(|t| t.trim().parse().ok())
                    });
                    match parsed
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|n| *n >= 1)
                    {
                        Some(n) => n,
                        None => return Err(BatchSettingsError::NotAPositiveInteger(v.to_string())),
                    }
                }
            }
        }
        _ => 1,
    };
    let class = obj.get_type();
    let class_name = class.name().map(|n| n.to_string()).unwrap_or_default();
    if size > 1 && !has_batch {
        return Err(BatchSettingsError::NoProcessBatch {
            size,
            class: class_name,
        });
    }
    let base = py
        .import("lucille.stage")
        .and_then(|m| m.getattr("Stage"))
        .and_then(|s| s.getattr("process_document"))
        .map_err(describe)?;
    let own = class.getattr("process_document").ok();
    let batch_only = has_batch && own.is_none_or(|f| f.is(&base));
    Ok((size, batch_only))
}

impl PyStage {
    /// Wraps a stage object; the error is the message for its `batchSize` key.
    pub fn new(obj: &Bound<'_, PyAny>) -> Result<Self, BatchSettingsError> {
        let (batch_size, batch_only) = batch_settings(obj)?;
        Ok(PyStage {
            obj: obj.clone().unbind(),
            lent: None,
            batch_size,
            batch_only,
        })
    }

    /// Calls `process_batch(list_of_documents)`: one result per document, children gathered
    /// whole while the documents are with Python. An exception fails every document of the
    /// batch with its message.
    fn call_batch(&self, docs: &mut [Document]) -> Vec<StageResult> {
        Python::attach(|py| {
            let n = docs.len();
            let fail_all = |message: String| -> Vec<StageResult> {
                (0..n)
                    .map(|_| Err(StageFailure::msg(message.clone())))
                    .collect()
            };
            let mut lent: Vec<Py<PyDocument>> = Vec::with_capacity(n);
            for doc in docs.iter_mut() {
                let d = std::mem::replace(doc, Document::placeholder());
                match Py::new(py, PyDocument::new_from(d)) {
                    Ok(obj) => lent.push(obj),
                    Err(e) => {
                        // Nothing was called yet: put back what was lent. (The document that
                        // failed to wrap is lost with the error, so it is reported for all.)
                        for (doc, obj) in docs.iter_mut().zip(&lent) {
                            *doc = reclaim(py, obj);
                        }
                        return fail_all(describe_py_err(py, &e));
                    }
                }
            }
            let results = self.batch_results(py, &lent);
            for (doc, obj) in docs.iter_mut().zip(&lent) {
                *doc = reclaim(py, obj);
            }
            results
        })
    }

    fn batch_results(&self, py: Python<'_>, lent: &[Py<PyDocument>]) -> Vec<StageResult> {
        let n = lent.len();
        let fail_all = |message: String| -> Vec<StageResult> {
            (0..n)
                .map(|_| Err(StageFailure::msg(message.clone())))
                .collect()
        };
        let list = match PyList::new(py, lent.iter().map(|d| d.clone_ref(py))) {
            Ok(l) => l,
            Err(e) => return fail_all(describe_py_err(py, &e)),
        };
        let result = match self.obj.bind(py).call_method1("process_batch", (list,)) {
            Ok(r) => r,
            Err(e) => return fail_all(describe_py_err(py, &e)),
        };
        if result.is_none() {
            return (0..n).map(|_| Ok(None)).collect();
        }
        let entries: Option<Vec<Bound<'_, PyAny>>> = if result.is_instance_of::<PyString>() {
            None
        } else {
            result
                .try_iter()
                .ok()
                .and_then(|it| it.collect::<PyResult<Vec<_>>>().ok())
        };
        let entries = match entries {
            Some(e) if e.len() == n => e,
            other => {
                return fail_all(format!(
                    "process_batch must return None or a list with one entry (None or an \
                     iterable of children) per document: got {} for {n} documents",
                    match other {
                        Some(e) => format!("{} entries", e.len()),
                        None => result
                            .get_type()
                            .name()
                            .map(|t| t.to_string())
                            .unwrap_or_default(),
                    }
                ))
            }
        };
        entries
            .iter()
            .map(|entry| {
                if entry.is_none() {
                    return Ok(None);
                }
                let bad = || {
                    StageFailure::msg(format!(
                        "process_batch returned {} for a document, expected None or an iterable of Documents",
                        entry.get_type().name().map(|t| t.to_string()).unwrap_or_default()
                    ))
                };
                if entry.is_instance_of::<PyDocument>() || entry.is_instance_of::<PyString>() {
                    return Err(bad());
                }
                let iter = entry.try_iter().map_err(|_| bad())?;
                let mut children = Vec::new();
                for item in iter {
                    let item = item.map_err(|e| py_failure(py, &e))?;
                    if lent.iter().any(|d| item.is(d)) {
                        return Err(StageFailure::msg(
                            "process_batch returned an input document as a child; children must be new Documents",
                        ));
                    }
                    let child = item.cast::<PyDocument>().map_err(|_| {
                        StageFailure::msg(format!(
                            "process_batch returned {} as a child, expected a Document",
                            item.get_type().name().map(|t| t.to_string()).unwrap_or_default()
                        ))
                    })?;
                    let mut child = child.borrow_mut();
                    children.push(std::mem::replace(&mut child.inner, Document::placeholder()));
                }
                Ok(Some(crate::stage::children_from(children)))
            })
            .collect()
    }

    fn call_hook(&self, hook: &str) -> Result<(), StageFailure> {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if !shared_turn(obj, hook) {
                return Ok(());
            }
            if obj.hasattr(hook).map_err(|e| py_failure(py, &e))? {
                obj.call_method0(hook).map_err(|e| py_failure(py, &e))?;
            }
            Ok(())
        })
    }
}

/// An object given to `lucille.run(stages=[...])` is shared by every worker thread (the loader
/// gives it a `_lucille_users` count): its `start()` runs for the first thread to start and its
/// `stop()` for the last to stop. Other objects run every hook.
fn shared_turn(obj: &Bound<'_, PyAny>, hook: &str) -> bool {
    let Ok(users) = obj
        .getattr("_lucille_users")
        .and_then(|v| v.extract::<i64>())
    else {
        return true;
    };
    let (next, run) = match hook {
        "start" => (users + 1, users == 0),
        _ => ((users - 1).max(0), users <= 1),
    };
    // Holding the GIL, the read and this write are one step for every worker thread.
    let _ = obj.setattr("_lucille_users", next);
    run
}

/// Makes a component from what the loader found: a class is called with the config dict; an
/// object handed to `lucille.run(...)` is used as it is.
pub fn instantiate<'py>(
    found: &Bound<'py, PyAny>,
    config: impl FnOnce() -> PyResult<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    if found.is_instance_of::<pyo3::types::PyType>() {
        found.call1((config()?,))
    } else {
        Ok(found.clone())
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

    fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// A stage that processes one document at a time takes a worker's whole block, so the
    /// interpreter's lock is taken once per block (see `process_batch`).
    fn takes_blocks(&self) -> bool {
        self.batch_size == 1 && !self.batch_only
    }

    fn process_batch(&mut self, docs: &mut [Document]) -> Vec<StageResult> {
        if !self.takes_blocks() {
            return self.call_batch(docs);
        }
        // A block: `process_document` for each document under one acquisition of the lock.
        // Children are gathered whole before the next document (an eager run holds them
        // anyway), and the parent a generator read is put back at once.
        Python::attach(|py| {
            docs.iter_mut()
                .map(|doc| match self.process_one(py, doc) {
                    Ok(Some(children)) => {
                        let kids: Vec<Result<Document, StageFailure>> = children.collect();
                        if let Some(py_doc) = self.lent.take() {
                            *doc = reclaim(py, &py_doc);
                        }
                        Ok(Some(Box::new(kids.into_iter()) as Children))
                    }
                    other => other,
                })
                .collect()
        })
    }

    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if self.batch_only {
            let mut results = self.call_batch(std::slice::from_mut(doc));
            return results
                .pop()
                .unwrap_or_else(|| Err(StageFailure::msg("process_batch gave no result")));
        }
        Python::attach(|py| self.process_one(py, doc))
    }

    fn children_done(&mut self, parent: &mut Document) {
        if let Some(py_doc) = self.lent.take() {
            Python::attach(|py| *parent = reclaim(py, &py_doc));
        }
    }
}

impl PyStage {
    /// `process_document` on one document, the lock held: the document is lent to Python for
    /// the call (moved, not copied) and moved back; when the call returns children, it stays
    /// lent (`self.lent`) until they are exhausted (`children_done`).
    fn process_one(&mut self, py: Python<'_>, doc: &mut Document) -> StageResult {
        let lent = std::mem::replace(doc, Document::placeholder());
        let py_doc = Py::new(py, PyDocument::new_from(lent)).map_err(|e| py_failure(py, &e))?;
        let result = self
            .obj
            .bind(py)
            .call_method1("process_document", (py_doc.clone_ref(py),));
        let not_iterable = |r: &Bound<'_, PyAny>| {
            StageFailure::msg(format!(
                "process_document must return None or an iterable of Documents, returned {}",
                r.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
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
        let iter = if result.is_instance_of::<PyDocument>() || result.is_instance_of::<PyString>() {
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

/// Converts a Python config mapping to the JSON object a stage config is.
pub fn py_config(obj: &Bound<'_, PyAny>) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    match py_to_value(obj, "config")? {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "a stage config must be a dict",
        )),
    }
}
