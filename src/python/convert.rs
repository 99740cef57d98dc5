//! Python objects <-> JSON values, and DocumentError -> Python exceptions.

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
use serde_json::{Map, Number, Value};

use crate::document::{f32_to_value, DocumentError};

use super::document::PyDocument;

/// Deep enough for any real document; stops a self-referencing list from recursing forever.
const MAX_DEPTH: usize = 256;

pyo3::create_exception!(
    _lucille,
    ConfigError,
    PyValueError,
    "The config is invalid; the message lists every problem."
);

/// Every config error in one `lucille.ConfigError` (a `ValueError`).
pub fn config_err(errors: crate::config::ConfigErrors) -> PyErr {
    ConfigError::new_err(errors.to_string().trim_end().to_string())
}

pub fn doc_err(e: DocumentError) -> PyErr {
    if e.is_type_error() {
        PyTypeError::new_err(e.to_string())
    } else {
        PyValueError::new_err(e.to_string())
    }
}

/// Converts a Python value to JSON. `what` names the value in error messages (a field name).
pub fn py_to_value(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    to_value(obj, what, 0)
}

fn to_value(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "value for {what:?} is nested more than {MAX_DEPTH} levels deep"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyValueError::new_err(format!(
            "integer for {what:?} is outside the 64-bit range JSON documents carry"
        )));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return float_value(f.value(), what);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for item in list.iter() {
            out.push(to_value(&item, what, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        let mut out = Vec::with_capacity(tuple.len());
        for item in tuple.iter() {
            out.push(to_value(&item, what, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut out = Map::new();
        for (k, v) in dict.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "keys of a dict stored in {what:?} must be str, found {}",
                    type_name(&k)
                ))
            })?;
            out.insert(key.to_cow()?.into_owned(), to_value(&v, what, depth + 1)?);
        }
        return Ok(Value::Object(out));
    }
    if let Ok(d) = obj.cast::<PyDocument>() {
        return Ok(d.borrow().inner.clone().into_value());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::String(base64_encode(b.as_bytes())));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Value::String(base64_encode(&b.to_vec())));
    }
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        return array_value(arr, what, depth);
    }
    // numpy scalars (np.float32, np.int64, ...) convert through their Python equivalent.
    if obj.hasattr("dtype")? && obj.hasattr("item")? {
        let item = obj.call_method0("item")?;
        if !item.is(obj) {
            return to_value(&item, what, depth + 1);
        }
    }
    Err(PyTypeError::new_err(format!(
        "unsupported value type {} for {what:?}: use str, int, float, bool, None, list, dict, \
         bytes or a 1-D numpy array",
        type_name(obj)
    )))
}

fn float_value(f: f64, what: &str) -> PyResult<Value> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{f} for {what:?} is not a finite number; JSON cannot carry NaN or infinity"
        ))
    })
}

fn array_value(arr: &Bound<'_, PyUntypedArray>, what: &str, depth: usize) -> PyResult<Value> {
    if arr.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "numpy array for {what:?} must be 1-D, found {} dimensions",
            arr.ndim()
        )));
    }
    let dtype = arr.dtype();
    match (dtype.kind(), dtype.itemsize()) {
        // float32 keeps its shortest decimal form so values read back as the same f32.
        (b'f', 4) => {
            let values: Vec<f32> = arr.call_method0("tolist")?.extract()?;
            values
                .into_iter()
                .map(|f| {
                    f32_to_value(f).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "{f} in the array for {what:?} is not a finite number"
                        ))
                    })
                })
                .collect::<PyResult<Vec<_>>>()
                .map(Value::Array)
        }
        (b'f' | b'i' | b'u' | b'b', _) => {
            let list = arr.call_method0("tolist")?;
            to_value(&list, what, depth + 1)
        }
        (kind, _) => Err(PyTypeError::new_err(format!(
            "numpy array for {what:?} must be numeric or boolean, found dtype kind {:?}",
            char::from(kind)
        ))),
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Converts JSON to the natural Python value (dict keeps key order).
pub fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => map_to_py(py, map.iter())?.into_any(),
    })
}

pub fn map_to_py<'py, 'a>(
    py: Python<'py>,
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in entries {
        dict.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(dict)
}
