//! `lucille.search(path, query, limit=10)`: the embedded Tantivy index, read from Python.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::indexer::tantivy::{search as search_index, SearchError};

use super::convert::value_to_py;

/// The best `limit` hits for `query` (Tantivy query syntax), each the stored document's
/// fields plus `id` and `score`.
#[pyfunction]
#[pyo3(signature = (path, query, limit = 10))]
fn search<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    query: &str,
    limit: usize,
) -> PyResult<Bound<'py, PyList>> {
    let hits = py
        .detach(|| search_index(&path, query, limit))
        .map_err(|e| match e {
            SearchError::Missing(_) => PyFileNotFoundError::new_err(e.to_string()),
            SearchError::Query { .. } => PyValueError::new_err(e.to_string()),
            SearchError::Open { .. } => PyOSError::new_err(e.to_string()),
        })?;
    let out = PyList::empty(py);
    for hit in hits {
        let d = PyDict::new(py);
        for (k, v) in &hit.doc {
            d.set_item(k, value_to_py(py, v)?)?;
        }
        d.set_item("score", hit.score as f64)?;
        out.append(d)?;
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(search, m)?)
}
