//! `lucille.Document`: the Python class over a Rust [`Document`]. The type is here, below the
//! value conversions (which read a `Document` handed to them as a field value); its methods,
//! which use those conversions, are in `methods`.

use pyo3::prelude::*;

use crate::document::Document;

mod methods;

pub use methods::PyUpdateMode;

/// A document: an immutable id and ordered, named fields, each single- or multi-valued.
///
/// Also a mapping of its fields: `d["f"]`, `d["f"] = v`, `"f" in d`, `del d["f"]`, `len(d)`,
/// `iter(d)`. Reserved names (`id`, `run_id`, `___children`, ...) cannot be written.
#[pyclass(name = "Document", module = "lucille._lucille", from_py_object)]
#[derive(Clone)]
pub struct PyDocument {
    pub inner: Document,
}

impl PyDocument {
    pub fn new_from(inner: Document) -> Self {
        PyDocument { inner }
    }
}
