//! `lucille.search(path, query, limit=10, *, vector=None, field=None, hybrid=False, rrf_k=60,
//! snippets=False, offset=0)`: the embedded Tantivy index, read from Python, by text, by a query vector or by
//! both fused; `lucille.embed(model, texts)`: the
//! Embed stage's model, for embedding a query text the way the documents were.

use pyo3::prelude::*;
use pyo3::types::PyList;

#[cfg(not(all(feature = "tantivy", feature = "ai")))]
use super::missing_component;

/// The best `limit` hits for `query` (Tantivy query syntax), each the stored document's
/// fields plus `id` and `score`. With `vector` (and the `vector` field it is compared with,
/// `field`), hits are ranked by cosine similarity instead, among the documents `query`
/// matches (every document when `query` is empty); `score` is then the cosine. With
/// `hybrid=True`, the text ranking of `query` and the vector ranking of every document are
/// fused by reciprocal rank fusion (`score` = the sum of 1 / (rrf_k + rank) over the two), and
/// each hit carries `text_rank` and `vector_rank` (None where absent). `snippets=True` adds
/// `snippets`: {field: HTML fragment with the query's terms in <b>}. `offset` skips that many
/// hits (paging).
#[pyfunction]
#[pyo3(signature = (path, query = "", limit = 10, *, vector = None, field = None, hybrid = false, rrf_k = 60.0, snippets = false, offset = 0))]
#[allow(clippy::too_many_arguments)]
fn search<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    query: &str,
    limit: usize,
    vector: Option<&Bound<'py, PyAny>>,
    field: Option<String>,
    hybrid: bool,
    rrf_k: f64,
    snippets: bool,
    offset: usize,
) -> PyResult<Bound<'py, PyList>> {
    #[cfg(feature = "tantivy")]
    return index::search(
        py,
        path,
        index::Request {
            query,
            limit,
            vector,
            field,
            hybrid,
            rrf_k,
            snippets,
            offset,
        },
    );
    #[cfg(not(feature = "tantivy"))]
    {
        let _ = (
            py, path, query, limit, vector, field, hybrid, rrf_k, snippets, offset,
        );
        Err(missing_component("Tantivy", "tantivy"))
    }
}

/// Embeds `texts` with the model folder `model` as the Embed stage does (same tokenizer,
/// truncation, pooling and normalisation): a float32 array of shape (len(texts), dimensions).
/// A folder that cannot be loaded: ValueError.
#[pyfunction]
#[pyo3(signature = (model, texts, normalize = true))]
fn embed<'py>(
    py: Python<'py>,
    model: std::path::PathBuf,
    texts: Vec<String>,
    normalize: bool,
) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(feature = "ai")]
    return model_embed::embed(py, model, texts, normalize).map(Bound::into_any);
    #[cfg(not(feature = "ai"))]
    {
        let _ = (py, model, texts, normalize);
        Err(missing_component("embedding", "ai"))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(search, m)?)?;
    m.add_function(wrap_pyfunction!(embed, m)?)
}

/// The Tantivy index (the `tantivy` feature).
#[cfg(feature = "tantivy")]
mod index {
    use numpy::{PyArray1, PyArrayMethods};
    use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
    use pyo3::prelude::*;
    use pyo3::types::{PyDict, PyList};

    use super::super::convert::value_to_py;
    use crate::indexer::tantivy::{search_with, SearchError, SearchRequest};

    /// A 1-D numpy float array or a list of numbers as float32s.
    fn floats(vector: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
        match vector.cast::<PyArray1<f32>>() {
            Ok(arr) => Ok(arr.readonly().as_slice()?.to_vec()),
            Err(_) => vector
                .call_method0("tolist")
                .unwrap_or(vector.clone())
                .extract()
                .map_err(|_| {
                    PyTypeError::new_err(
                        "vector must be a 1-D numeric numpy array or a list of numbers",
                    )
                }),
        }
    }

    /// `lucille.search`'s arguments after the path.
    pub struct Request<'a, 'py> {
        pub query: &'a str,
        pub limit: usize,
        pub vector: Option<&'a Bound<'py, PyAny>>,
        pub field: Option<String>,
        pub hybrid: bool,
        pub rrf_k: f64,
        pub snippets: bool,
        pub offset: usize,
    }

    /// `lucille.search` (documented on the Python function above) with Tantivy built in.
    pub fn search<'py>(
        py: Python<'py>,
        path: std::path::PathBuf,
        r: Request<'_, 'py>,
    ) -> PyResult<Bound<'py, PyList>> {
        let vector = r.vector.map(floats).transpose()?;
        let vector = match (&vector, &r.field) {
            (Some(v), Some(f)) => Some((f.as_str(), v.as_slice())),
            (Some(_), None) => {
                return Err(PyValueError::new_err(
                    "vector needs field= (the index's vector field to compare it with)",
                ))
            }
            (None, Some(_)) => {
                return Err(PyValueError::new_err("field= is only used with vector="))
            }
            (None, None) if r.hybrid => {
                return Err(PyValueError::new_err(
                    "hybrid=True needs vector= and field= (the ranking fused with the query's)",
                ))
            }
            (None, None) => None,
        };
        let req = SearchRequest {
            query: r.query,
            limit: r.limit,
            offset: r.offset,
            vector,
            hybrid: r.hybrid,
            rrf_k: r.rrf_k,
            snippets: r.snippets,
        };
        let hits = py
            .detach(|| search_with(&path, &req))
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
            if r.hybrid {
                d.set_item("text_rank", hit.text_rank)?;
                d.set_item("vector_rank", hit.vector_rank)?;
            }
            if let Some(snippets) = &hit.snippets {
                let s = PyDict::new(py);
                for (k, v) in snippets {
                    s.set_item(k, value_to_py(py, v)?)?;
                }
                d.set_item("snippets", s)?;
            }
            out.append(d)?;
        }
        Ok(out)
    }
}

/// The embedding model (the `ai` feature).
#[cfg(feature = "ai")]
mod model_embed {
    use numpy::{PyArray1, PyArray2, PyArrayMethods};
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;

    use lucille_embed::kept_embedder;

    /// Embeds `texts` with the model folder `model` as the Embed stage does (same tokenizer,
    /// truncation, pooling and normalisation): a float32 array of shape (len(texts), dimensions).
    /// A folder that cannot be loaded: ValueError.
    pub fn embed<'py>(
        py: Python<'py>,
        model: std::path::PathBuf,
        texts: Vec<String>,
        normalize: bool,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (vectors, dims) = py
            .detach(|| {
                let embedder = kept_embedder(&model)?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                embedder
                    .embed(&refs, normalize)
                    .map(|v| (v, embedder.dimensions()))
            })
            .map_err(|e| PyValueError::new_err(format!("model {}: {e}", model.display())))?;
        let flat: Vec<f32> = vectors.into_iter().flatten().collect();
        let rows = flat.len() / dims.max(1);
        PyArray1::from_vec(py, flat).reshape([rows, dims])
    }
}
