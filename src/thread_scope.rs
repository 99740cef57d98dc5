//! How the runtime's own threads (workers, the indexer) run their bodies.
//!
//! By default a body just runs. The Python bindings install a scope that attaches the thread to
//! the interpreter once for its whole life and detaches (releases the GIL) around the body:
//! every later call into Python from that thread then reuses the thread's one Python thread
//! state instead of creating and destroying one per call (which cost an `mmap` / `munmap` of
//! the frame stack per document, with TLB shootdowns across cores).

use std::sync::OnceLock;

/// Runs a thread body inside whatever per-thread context the scope sets up.
pub type Scope = fn(&mut dyn FnMut());

static SCOPE: OnceLock<Scope> = OnceLock::new();

/// Installs the scope (the first call wins; the Python bindings call it at import).
pub fn install(scope: Scope) {
    let _ = SCOPE.set(scope);
}

/// Runs `body` in the installed scope and returns its result.
pub fn run<T>(body: impl FnOnce() -> T) -> T {
    let Some(scope) = SCOPE.get() else {
        return body();
    };
    let mut body = Some(body);
    let mut out = None;
    scope(&mut || {
        if let Some(b) = body.take() {
            out = Some(b());
        }
    });
    match out {
        Some(v) => v,
        // A scope must call the body exactly once; if one did not, run it here.
        None => match body.take() {
            Some(b) => b(),
            None => unreachable!("the body ran but produced no value"),
        },
    }
}
