//! `lucille.Document`'s methods and `lucille.UpdateMode`: conversions around the Rust Document.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use super::PyDocument;
use crate::document::{Document, UpdateMode};
use crate::python::convert::{doc_err, map_to_py, py_to_value, value_to_py};
use lucille_jsonata::Expression;

/// How `update` / `rename_field` treat an existing field: OVERWRITE, APPEND or SKIP.
#[pyclass(
    name = "UpdateMode",
    module = "lucille._lucille",
    eq,
    eq_int,
    frozen,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum PyUpdateMode {
    OVERWRITE,
    APPEND,
    SKIP,
}

impl From<PyUpdateMode> for UpdateMode {
    fn from(m: PyUpdateMode) -> Self {
        match m {
            PyUpdateMode::OVERWRITE => UpdateMode::Overwrite,
            PyUpdateMode::APPEND => UpdateMode::Append,
            PyUpdateMode::SKIP => UpdateMode::Skip,
        }
    }
}

/// Accepts `UpdateMode.X` or its name as a string ("append", any case).
fn update_mode(obj: &Bound<'_, PyAny>) -> PyResult<UpdateMode> {
    if let Ok(m) = obj.extract::<PyUpdateMode>() {
        return Ok(m.into());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_cow()?;
        return UpdateMode::parse(&text).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown update mode {text:?}: use OVERWRITE, APPEND or SKIP"
            ))
        });
    }
    Err(PyTypeError::new_err("mode must be an UpdateMode or a str"))
}

fn compile(expr: &str) -> PyResult<Expression> {
    Expression::compile(expr).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl PyDocument {
    /// Document(id, fields=None): a new document with a non-empty id and optional initial
    /// fields (a dict); reserved names (`id`, `run_id`, ...) in `fields` raise ValueError.
    #[new]
    #[pyo3(signature = (id, fields = None))]
    fn py_new(id: &str, fields: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut inner = Document::new(id).map_err(doc_err)?;
        if let Some(fields) = fields {
            for (k, v) in fields.iter() {
                let name: String = k
                    .extract()
                    .map_err(|_| PyTypeError::new_err("field names must be str"))?;
                let value = py_to_value(&v, &name)?;
                inner.set_field(&name, value).map_err(doc_err)?;
            }
        }
        Ok(PyDocument { inner })
    }

    /// Parses a document from its JSON text (`id` required; `___children` accepted);
    /// bad JSON raises ValueError.
    #[staticmethod]
    fn from_json(json: &str) -> PyResult<Self> {
        Document::from_json(json)
            .map(Self::new_from)
            .map_err(doc_err)
    }

    /// Builds a document from a dict with an `id` key and its fields.
    #[staticmethod]
    fn from_dict(data: &Bound<'_, PyDict>) -> PyResult<Self> {
        let value = py_to_value(data.as_any(), "document")?;
        Document::from_value(value)
            .map(Self::new_from)
            .map_err(doc_err)
    }

    /// The document's id (immutable).
    #[getter]
    fn id(&self) -> &str {
        self.inner.id()
    }

    /// The run id a Publisher stamped on the document, or None.
    #[getter]
    fn run_id(&self) -> Option<&str> {
        self.inner.run_id()
    }

    /// Sets a field to a value (str, int, float, bool, None, list, dict, 1-D numpy
    /// array), replacing any previous value.
    fn set_field(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = py_to_value(value, name)?;
        self.inner.set_field(name, v).map_err(doc_err)
    }

    /// Appends a value to a field, turning a single value into a list (the field
    /// becomes multi-valued).
    fn add_to_field(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = py_to_value(value, name)?;
        self.inner.add_to_field(name, v).map_err(doc_err)
    }

    /// Sets the field if it is absent, else appends the value.
    fn set_or_add(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = py_to_value(value, name)?;
        self.inner.set_or_add(name, v).map_err(doc_err)
    }

    /// update(name, mode, *values): writes values with an UpdateMode (OVERWRITE, APPEND
    /// or SKIP, or its name as a string).
    #[pyo3(signature = (name, mode, *values))]
    fn update(
        &mut self,
        name: &str,
        mode: &Bound<'_, PyAny>,
        values: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        let mode = update_mode(mode)?;
        let values = values
            .iter()
            .map(|v| py_to_value(&v, name))
            .collect::<PyResult<Vec<_>>>()?;
        self.inner.update(name, mode, values).map_err(doc_err)
    }

    /// The field's first value as a Python object, or None if absent.
    fn get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.get_first(name) {
            Some(v) => value_to_py(py, v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// The field's first value as a str (converted as JSON text: True -> "true"), or
    /// None if absent.
    fn get_string(&self, name: &str) -> PyResult<Option<String>> {
        self.inner.get_as::<String>(name).map_err(doc_err)
    }

    /// The field's first value as an int, or None if absent; TypeError if it is not a
    /// number or numeric string.
    fn get_int(&self, name: &str) -> PyResult<Option<i128>> {
        self.inner.get_as::<i128>(name).map_err(doc_err)
    }

    /// The field's first value as a float, or None if absent.
    fn get_float(&self, name: &str) -> PyResult<Option<f64>> {
        self.inner.get_as::<f64>(name).map_err(doc_err)
    }

    /// The field's first value as a bool, or None if absent.
    fn get_bool(&self, name: &str) -> PyResult<Option<bool>> {
        self.inner.get_as::<bool>(name).map_err(doc_err)
    }

    /// The field's first value decoded from base64 as bytes, or None if absent.
    fn get_bytes<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        Ok(self
            .inner
            .get_bytes(name)
            .map_err(doc_err)?
            .map(|b| PyBytes::new(py, &b)))
    }

    /// All of the field's values as a list ([] if absent, [v] if single-valued).
    fn get_list<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for v in self.inner.values(name) {
            list.append(value_to_py(py, v)?)?;
        }
        Ok(list)
    }

    /// True if the field exists (even with a null value).
    fn has(&self, name: &str) -> bool {
        self.inner.has(name)
    }

    /// True if the field exists and its value is not null.
    fn has_non_null(&self, name: &str) -> bool {
        self.inner.has_non_null(name)
    }

    /// True if the field holds a list of values.
    fn is_multivalued(&self, name: &str) -> bool {
        self.inner.is_multivalued(name)
    }

    /// Removes the field (nothing happens if it is absent).
    fn remove_field(&mut self, name: &str) -> PyResult<()> {
        self.inner.remove_field(name).map(|_| ()).map_err(doc_err)
    }

    /// Removes and returns the value at `index` of a multi-valued field.
    fn remove_from_array<'py>(
        &mut self,
        py: Python<'py>,
        name: &str,
        index: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let removed = self.inner.remove_from_array(name, index).map_err(doc_err)?;
        value_to_py(py, &removed)
    }

    /// Removes repeated values of a multi-valued field, keeping the first of
    /// each; with `target`, writes the result there instead.
    #[pyo3(signature = (name, target = None))]
    fn remove_duplicate_values(&mut self, name: &str, target: Option<&str>) -> PyResult<()> {
        self.inner
            .remove_duplicate_values(name, target)
            .map_err(doc_err)
    }

    /// Renames a field; `mode` (default OVERWRITE) says what happens when `new`
    /// already exists.
    #[pyo3(signature = (old, new, mode = None))]
    fn rename_field(
        &mut self,
        old: &str,
        new: &str,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let mode = match mode {
            Some(m) => update_mode(m)?,
            None => UpdateMode::Overwrite,
        };
        self.inner
            .rename_field(old, new, mode)
            .map(|_| ())
            .map_err(doc_err)
    }

    /// Merges every field of another Document into this one (set if absent, else
    /// append).
    fn set_or_add_all(&mut self, other: PyRef<'_, PyDocument>) {
        self.inner.set_or_add_all(&other.inner);
    }

    /// The value at a nested path such as "a.b[0].c", or None if absent.
    fn get_nested<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.get_nested(path).map_err(doc_err)? {
            Some(v) => value_to_py(py, v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Sets the value at a nested path, creating objects and lists as needed.
    fn set_nested(&mut self, path: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = py_to_value(value, path)?;
        self.inner.set_nested(path, v).map_err(doc_err)
    }

    /// Removes the value at a nested path.
    fn remove_nested(&mut self, path: &str) -> PyResult<()> {
        self.inner.remove_nested(path).map(|_| ()).map_err(doc_err)
    }

    /// The field names in insertion order, reserved fields excluded.
    fn field_names(&self) -> Vec<String> {
        self.inner.field_names().map(str::to_string).collect()
    }

    /// Attaches a copy of a child document (kept in `___children`).
    fn add_child(&mut self, child: PyRef<'_, PyDocument>) {
        self.inner.add_child(child.inner.clone());
    }

    /// Copies of the attached child documents.
    fn children(&self) -> Vec<PyDocument> {
        self.inner
            .children()
            .into_iter()
            .map(PyDocument::new_from)
            .collect()
    }

    /// True if the document has attached children.
    fn has_children(&self) -> bool {
        self.inner.has_children()
    }

    /// Marks the document dropped: later stages skip it and it is not indexed (DROP).
    fn drop(&mut self) {
        self.inner.set_dropped(true);
    }

    /// True if the document was dropped.
    fn is_dropped(&self) -> bool {
        self.inner.is_dropped()
    }

    /// Marks the document skipped: the remaining stages pass it by; it is still indexed.
    fn skip(&mut self) {
        self.inner.set_skipped(true);
    }

    /// True if the document was skipped.
    fn is_skipped(&self) -> bool {
        self.inner.is_skipped()
    }

    /// Evaluates a JSONata expression over the document's JSON and returns the result
    /// (None when undefined).
    fn evaluate<'py>(&self, py: Python<'py>, jsonata: &str) -> PyResult<Bound<'py, PyAny>> {
        let mut expr = compile(jsonata)?;
        match self.inner.evaluate(&mut expr).map_err(doc_err)? {
            Some(v) => value_to_py(py, &v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Replaces the non-reserved fields with the object a JSONata expression returns;
    /// id, run_id and children are kept (ValueError if the result changes them or is not an object).
    fn transform(&mut self, jsonata: &str) -> PyResult<()> {
        let mut expr = compile(jsonata)?;
        self.inner.transform(&mut expr).map_err(doc_err)
    }

    /// Stores a 1-D float vector (numpy array or list of numbers) as float32 values.
    fn set_vector(&mut self, name: &str, vector: &Bound<'_, PyAny>) -> PyResult<()> {
        let values: Vec<f32> = match vector.cast::<PyArray1<f32>>() {
            Ok(arr) => arr.readonly().as_slice()?.to_vec(),
            Err(_) => vector
                .call_method0("tolist")
                .unwrap_or(vector.clone())
                .extract()
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                    "vector for {name:?} must be a 1-D numeric numpy array or a list of numbers"
                ))
                })?,
        };
        self.inner.set_vector(name, &values).map_err(doc_err)
    }

    /// The field as a float32 numpy array, or None if absent.
    fn get_vector<'py>(
        &self,
        py: Python<'py>,
        name: &str,
    ) -> PyResult<Option<Bound<'py, PyArray1<f32>>>> {
        Ok(self
            .inner
            .get_vector(name)
            .map_err(doc_err)?
            .map(|v| PyArray1::from_vec(py, v)))
    }

    /// The document as compact JSON text, reserved fields included.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// The document as a dict: `id`, `run_id` if set, and the fields.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        map_to_py(py, self.inner.as_map().iter())
    }

    /// A deep copy of the document.
    fn copy(&self) -> Self {
        self.clone()
    }

    fn __copy__(&self) -> Self {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        self.clone()
    }

    /// Pickles through JSON.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let from_json = slf.get_type().getattr("from_json")?;
        Ok((from_json, (slf.borrow().inner.to_json(),)))
    }

    fn __eq__(&self, other: PyRef<'_, PyDocument>) -> bool {
        self.inner == other.inner
    }

    fn __repr__(&self) -> String {
        let mut fields = String::new();
        for (i, (k, v)) in self.inner.fields().enumerate() {
            if fields.len() > 60 {
                let rest = self.inner.field_count() - i;
                fields.push_str(&format!(", ... (+{rest} fields)"));
                break;
            }
            if i > 0 {
                fields.push_str(", ");
            }
            let mut text = v.to_string();
            if text.chars().count() > 30 {
                text = text.chars().take(27).collect::<String>() + "...";
            }
            fields.push_str(&format!("{k:?}: {text}"));
        }
        let id = Value::String(self.inner.id().to_string()).to_string();
        if fields.is_empty() {
            format!("Document({id})")
        } else {
            format!("Document({id}, {{{fields}}})")
        }
    }

    /// The document as an HTML table, for notebooks (fields escaped, long values folded).
    fn _repr_html_(slf: &Bound<'_, Self>) -> PyResult<String> {
        slf.py()
            .import("lucille._notebook")?
            .call_method1("document_html", (slf,))?
            .extract()
    }

    fn __len__(&self) -> usize {
        self.inner.field_count()
    }

    /// Membership over the mapping view: reserved fields are not part of it.
    fn __contains__(&self, name: &str) -> bool {
        self.inner.has(name) && !crate::document::is_reserved(name)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let names = PyList::new(py, self.inner.field_names())?;
        Ok(names.try_iter()?.into_any())
    }

    fn __getitem__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.get(name) {
            Some(v) if !crate::document::is_reserved(name) => value_to_py(py, v),
            _ => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    fn __setitem__(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_field(name, value)
    }

    fn __delitem__(&mut self, name: &str) -> PyResult<()> {
        match self.inner.remove_field(name).map_err(doc_err)? {
            Some(_) => Ok(()),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }
}
