//! PyO3 bindings: the private `lucille._lucille` module. Conversion and GIL handling only; the
//! behaviour lives in the Rust core.

mod convert;
mod document;
mod indexer;
mod logging;
mod pipeline;
mod run;
mod search;
mod stage;

use pyo3::prelude::*;

/// Documents cross threads (connector -> workers -> indexer); mimalloc frees them without the
/// arena-lock contention glibc malloc showed under perf. Only the extension sets it: the Rust
/// library leaves the allocator to its users.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _lucille(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<document::PyDocument>()?;
    m.add_class::<document::PyUpdateMode>()?;
    pipeline::register(m)?;
    run::register(m)?;
    indexer::register(m)?;
    search::register(m)?;
    logging::install();
    crate::stage::registry::install_python_factory(Box::new(stage::PyStageFactory));
    Ok(())
}
