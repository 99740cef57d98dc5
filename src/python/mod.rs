//! PyO3 bindings: the private `lucille._lucille` module. Conversion and GIL handling only; the
//! behaviour lives in the Rust core.

mod convert;
mod document;
mod given;
mod indexer;
mod logging;
mod pipeline;
mod process;
mod run;
mod search;
mod service;
mod stage;
mod stage_factory;
mod stages;

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
    service::register(m)?;
    process::register(m)?;
    logging::install();
    crate::stage::registry::PYTHON.install(Box::new(stage_factory::PyStageFactory));
    crate::thread_scope::install(attached_thread);
    crate::thread_scope::install_interrupter(crate::thread_scope::Interrupter {
        thread_id,
        raise: raise_timeout,
        clear: clear_timeout,
    });
    Ok(())
}

/// The Python thread id of the calling thread (what `PyThreadState_SetAsyncExc` takes).
#[allow(clippy::useless_conversion)] // c_ulong is u32 on some platforms
fn thread_id() -> u64 {
    // SAFETY: a plain query of the calling thread's id; it needs no interpreter state.
    u64::from(unsafe { pyo3::ffi::PyThread_get_thread_ident() })
}

/// Raises `TimeoutError` in Python thread `id` (delivered the next time it runs Python
/// bytecode), if `still()` holds with the interpreter held.
fn raise_timeout(id: u64, still: &dyn Fn() -> bool) -> bool {
    Python::attach(|_py| {
        if !still() {
            return false;
        }
        // SAFETY: the interpreter is held (attach); the exception type is a static,
        // immortal object; an unknown id only makes the call return 0.
        let n =
            unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(id as _, pyo3::ffi::PyExc_TimeoutError) };
        n == 1
    })
}

/// Withdraws an undelivered `TimeoutError` from Python thread `id`.
fn clear_timeout(id: u64) {
    Python::attach(|_py| {
        // SAFETY: the interpreter is held; a null exception clears a pending one.
        unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(id as _, std::ptr::null_mut()) };
    });
}

/// The runtime threads' scope: attach the thread to the interpreter once (one Python thread
/// state for the thread's life) and release the GIL around its Rust body; the body's calls
/// into Python then only re-take the GIL.
fn attached_thread(body: &mut dyn FnMut()) {
    /// `detach` wants a `Send` closure, as it may not run where it was made; this one runs
    /// on this very thread, inside the call.
    struct OnThisThread<'a>(&'a mut dyn FnMut());
    // SAFETY: the wrapped closure is called synchronously by `detach` on the current thread
    // and never leaves it.
    unsafe impl Send for OnThisThread<'_> {}
    let body = OnThisThread(body);
    Python::attach(move |py| {
        let body = body;
        py.detach(move || {
            let b = body;
            (b.0)()
        })
    });
}

/// The error of a function whose component this build leaves out (a Cargo feature).
#[allow(dead_code)]
fn missing_component(what: &str, feature: &str) -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err(format!(
        "this build of lucille has no {what} component (the Cargo feature `{feature}`)"
    ))
}
