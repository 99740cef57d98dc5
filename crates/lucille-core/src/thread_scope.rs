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

/// `body`, to run in a thread this one starts, inside this thread's current `tracing` span: the
/// new thread's log lines then carry the span's fields (a run's id) as this thread's do.
pub fn in_current_span<T>(body: impl FnOnce() -> T + Send) -> impl FnOnce() -> T + Send {
    let span = tracing::Span::current();
    move || span.in_scope(body)
}

/// Interrupting a runtime thread stuck in Python code (`worker.maxProcessingSecs`). The Python
/// bindings install one that raises `TimeoutError` in the thread (CPython's
/// `PyThreadState_SetAsyncExc`), so the thread itself unwinds out of the stage and FAILs its
/// document; without one (no Python), a stuck thread can only be abandoned.
pub struct Interrupter {
    /// An id of the calling thread, for `raise` and `clear`.
    pub thread_id: fn() -> u64,
    /// Raises a timeout in thread `id`, if `still()` holds once the interpreter is held (the
    /// thread may have moved on meanwhile); true when raised. May block until the
    /// interpreter is free, so call it off any thread that must not wait.
    pub raise: fn(u64, &dyn Fn() -> bool) -> bool,
    /// Withdraws a raise that has not been delivered yet (the thread finished on its own).
    pub clear: fn(u64),
}

static INTERRUPTER: OnceLock<Interrupter> = OnceLock::new();

/// Installs the interrupter (the first call wins; the Python bindings call it at import).
pub fn install_interrupter(i: Interrupter) {
    let _ = INTERRUPTER.set(i);
}

/// The installed interrupter, if any.
pub fn interrupter() -> Option<&'static Interrupter> {
    INTERRUPTER.get()
}
