//! JSONata expressions over [`serde_json::Value`], backed by the `jsonata-rs` crate (0.3.4).
//!
//! ```ignore
//! // (`ignore`: the module's path depends on the crate it is copied into.)
//! use crate::jsonata::{evaluate, Expression};
//! use serde_json::json;
//! let mut expr = Expression::compile(r#"{"name": $uppercase(name), "total": $sum(items.price)}"#)?;
//! let out = expr.evaluate(&json!({"name": "ada", "items": [{"price": 2}, {"price": 3}]}))?;
//! assert_eq!(out, Some(json!({"name": "ADA", "total": 5})));
//! assert_eq!(evaluate("missing.path", &json!({}))?, None); // undefined
//! ```
//!
//! # What this module adds on top of jsonata-rs
//!
//! * **Supplied functions** (missing from jsonata-rs 0.3.4, implemented here as native
//!   functions registered on every compiled expression): `$average`, `$type`, `$spread`,
//!   `$sift`, `$shuffle`, `$formatBase`, `$formatNumber` (XPath/F&O picture strings with the
//!   optional decimal-format options object), `$formatInteger` and `$parseInteger` (XPath
//!   integer pictures: digit patterns, letters, roman numerals, English words, ordinals),
//!   `$eval` (the expression compiled and evaluated on a JSON copy of its context), `$clone`, `$encodeUrl`, `$encodeUrlComponent`,
//!   `$decodeUrl`, `$decodeUrlComponent`.
//! * **Replaced functions** (jsonata-rs has them, but they expose the arbitrary key order of
//!   its hash-map objects, format numbers differently from JSONata, or mishandle tail calls):
//!   `$keys`, `$each` and `$string` are shadowed by versions that list keys in the order
//!   described below (`$string` also formats numbers like JSONata/JavaScript: 15 significant
//!   digits, `1e+21`); `$map`, `$filter`, `$single` and `$sort` are re-implemented because
//!   jsonata-rs's `$filter`/`$single`/`$sort` ignore the result of a callback whose body is a
//!   single function call (a tail-call thunk: `$filter` drops every item, `$sort` leaves the
//!   order unchanged), and its `$single` panics on non-boolean predicate results.
//!   `$toMillis`, `$fromMillis` and `$now` are replaced to read and write XPath date/time
//!   picture strings (`functions/datetime.rs`; jsonata-rs knows a fixed list of pictures
//!   only, and its `$now` panicked on some time zone arguments); `$now` and `$millis` give
//!   the same instant throughout one evaluation, as in JSONata.
//! * **Not supported by jsonata-rs**:
//!   partial application (`$f(?, 1)`), the parent operator `%`, calling a function literal
//!   where it is written (`function($x){...}(5)`), the `??` and `?:` operators, and function
//!   signatures (`function($x)<n:n>`); the first three are compile errors that say so (where
//!   jsonata-rs would panic), the others fail to parse.
//!
//! The official JSONata test suite runs in `tests/jsonata_suite.rs` (1542 of its 1686 cases
//! pass; see that file for what counts as a pass).
//! * **Signatures**: the arguments of jsonata-rs's builtins are checked against JSONata's
//!   signatures before they run (`functions/signature.rs`), so a wrong type raises T0410,
//!   T0411 or T0412 as in JSONata instead of giving undefined.
//! * Everything else in the JSONata standard library is jsonata-rs's own implementation:
//!   `$length`/`$substring`/`$substringBefore`/`$substringAfter`/`$uppercase`/
//!   `$lowercase`/`$trim`/`$pad`/`$contains`/`$split`/`$join`/`$match`/`$replace`/
//!   `$base64encode`/`$base64decode`, `$number`/`$abs`/`$floor`/`$ceil`/`$round`/`$power`/
//!   `$sqrt`/`$random`, `$sum`/`$max`/`$min`/`$count`, `$boolean`/`$not`/`$exists`,
//!   `$append`/`$reverse`/`$distinct`/`$zip`, `$lookup`/`$merge`/`$error`/`$assert`,
//!   `$reduce`, `$uuid` (`$reduce`, `$replace`,
//!   `$match`, `$contains` and `$split` run behind thin wrappers that only record their
//!   function/regex arguments for freeing, see below). `$shuffle` uses std's random hash
//!   keys, not a cryptographic generator.
//! * **Argument handling made JSONata's** in front of jsonata-rs builtins: `$number` reads
//!   strings with JSONata's rule (also `0x`/`0o`/`0b` integers; too large is D3030), `$pad`
//!   truncates a fractional width, `$contains` with an undefined pattern is undefined, and
//!   `$match`, `$split` and `$contains` accept matcher functions in place of regexes
//!   (`functions/matcher.rs`).
//!
//! # Key order
//!
//! jsonata-rs stores objects in hash maps, so it forgets key order. Without forking it, this
//! module restores a well-defined order when it converts results (and inside `$keys`, `$each`,
//! `$spread` and `$string`). For each object, the first rule that applies wins:
//!
//! 1. an object constructor written in the expression with exactly the same literal keys:
//!    the written order;
//! 2. an object of the input document with exactly the same keys: the document's order;
//! 3. an object constructor whose literal keys include all of the object's keys (e.g. one
//!    whose other values were undefined): the written order;
//! 4. otherwise keys are sorted by first appearance as a key in the input document, then by
//!    first appearance as a literal key in the expression, then by first appearance as a
//!    string value in the input document (group-by keys), then alphabetically (so `$merge`
//!    and transform (`~> | ... |`) results list the input's keys first, new keys after).
//!
//! Computed keys (`{name: value}`, group-by) therefore follow rule 2 or 4. The wildcard and
//! descendant operators (`*`, `**`) still visit values in jsonata-rs's hash order.
//!
//! # Numbers
//!
//! JSONata numbers are doubles. A finite result that is integral and within the `i64` range
//! becomes a JSON integer (`$sum([1,2])` gives `3`), other finite numbers stay floats, and a
//! NaN or infinite result is an [`JsonataError::Evaluate`] error. Input integers beyond 2^53
//! lose precision, as in every JSONata implementation.
//!
//! # Memory, panics and threads
//!
//! A compiled jsonata-rs expression allocates every value into a bump arena that only grows.
//! [`Expression`] owns its arena together with the compiled expression and *recycles* them
//! (drops the arena and recompiles) once the arena exceeds [`ARENA_RECYCLE_BYTES`] after an
//! evaluation, and after any panic inside jsonata-rs (panics are caught and reported as
//! errors). jsonata-rs also re-creates its ~50 built-in function values (each owning a
//! heap-allocated name) on every evaluation and never frees them, and function literals,
//! regex literals and transforms copy parts of the syntax tree to the heap each time they are
//! evaluated. This module frees (see `gc_hook`): the builtins of each evaluation; function,
//! regex and transform values passed to `$map`, `$filter`, `$single`, `$reduce`, `$sort`,
//! `$each`, `$sift`, `$replace`, `$match`, `$contains` and `$split`; and the tail-call thunks
//! returned to `$map`, `$filter`, `$single`, `$sort`, `$each` and `$sift`. So for expressions without
//! function literals, and for those that pass them straight to these functions, the heap cost
//! outside the recycled arena is zero per evaluation (tested with a counting allocator).
//! **Known jsonata-rs leaks that cannot be fixed from outside:** a function literal that is
//! bound to a variable or called directly (`($f := function($x){...}; $f(a))`, about 5.6 KiB
//! per evaluation in the test), a transform (`~> | ... |`, about 1 KiB per evaluation), a
//! regex literal used other than as an argument of the functions above, and tail-call thunks
//! inside `$reduce` callbacks leak a few hundred bytes to a few KiB per evaluation,
//! even across recycling. Tail-recursive JSONata functions never hit the depth limit: use
//! [`Expression::set_time_limit`] to stop runaway ones.
//!
//! Panics inside jsonata-rs are caught and reported as errors; the panic hook is told to stay
//! quiet about them (it still prints every other panic).
//!
//! Results are always converted to owned `serde_json::Value`s before `evaluate` returns, and
//! [`Expression`] is `Send` (not `Sync`), so a pipeline stage can own one per worker thread.
//!
//! Known differences from jsonata-python (tests/jsonata_oracle.rs agrees on the rest of its
//! corpus): `$decodeUrl` keeps `%3D` (as JavaScript's `decodeURI`); `'x' & (1/3)` truncates to
//! 15 digits (jsonata-rs's `&`); `$string(1e20)` is written in full, as JavaScript does;
//! `address.*` returns values in hash order; extra arguments to user-defined functions and to
//! this module's own functions are not rejected; `$sort([true, 1])` raises D3070 as the
//! JavaScript implementation does.

mod functions;
mod order;

use std::cell::{Cell, RefCell};
use std::panic::catch_unwind;
use std::time::Duration;

use bumpalo::Bump;
use jsonata_rs::{FunctionContext, JsonAta, Value};

use order::{KeyOrderer, SourceKeys};

/// Errors from compiling or evaluating a JSONata expression.
#[derive(Debug, thiserror::Error)]
pub enum JsonataError {
    #[error("invalid JSONata expression {expr:?}: {message}")]
    Compile { expr: String, message: String },
    #[error("JSONata expression {expr:?} failed: {message}")]
    Evaluate { expr: String, message: String },
}

/// After an evaluation leaves the arena bigger than this, the arena is dropped and the
/// expression recompiled (a single evaluation may still grow it past this temporarily).
pub const ARENA_RECYCLE_BYTES: usize = 4 << 20;

/// Default limit on jsonata-rs's evaluation depth; deeper recursion fails with error U1001
/// instead of overflowing the stack (which aborts the process). Chosen so that evaluation
/// fits in half of a 2 MiB stack (the default for spawned threads): jsonata-rs needs about
/// 7 KiB of stack per level in debug builds and about 0.5 KiB in release builds. A
/// non-tail-recursive JSONata function uses about 5 levels per call. See
/// [`Expression::set_max_depth`].
pub const DEFAULT_MAX_DEPTH: usize = if cfg!(debug_assertions) { 150 } else { 1000 };

/// Input documents nested deeper than this are rejected: jsonata-rs parses the input
/// recursively (about 18 KiB of stack per level in debug builds, 2.5 KiB in release
/// builds), and a stack overflow would abort the process. Same 2 MiB budget as above.
pub const MAX_INPUT_DEPTH: usize = if cfg!(debug_assertions) { 64 } else { 300 };

/// Evaluation levels the wrapper (the hook call and the two blocks around the expression) adds:
/// added to a depth limit so that the limit means what it means to jsonata-rs.
const WRAPPER_DEPTH: usize = 2;

/// Name of the native function that the wrapped expression calls first (see `gc_hook`).
const HOOK_NAME: &str = "__lucille_jsonata_gc";

self_cell::self_cell!(
    /// The arena and the jsonata-rs expression that borrows it.
    struct Compiled {
        owner: Bump,
        #[not_covariant]
        dependent: JsonAta,
    }
);

/// `Compiled` plus the addresses of the native function values this module allocated in
/// its arena, whose heap parts are freed when the arena is retired.
struct Bundle {
    compiled: Compiled,
    own_natives: Vec<usize>,
}

/// A compiled expression, reusable across many evaluations.
pub struct Expression {
    source: String,
    wrapped: String,
    /// Characters that `wrapped` puts before `source` (to fix positions in error messages).
    prefix_chars: usize,
    keys: SourceKeys,
    bundle: Option<Bundle>,
    /// Builtin function values of the latest evaluation, freed on the next one (`gc_hook`).
    pending_natives: RefCell<Vec<usize>>,
    /// Function/regex/transform values recorded by the wrapped builtins (`gc_hook`).
    disposables: RefCell<Vec<usize>>,
    max_depth: Option<usize>,
    time_limit_ms: Option<usize>,
    recycles: u64,
    evaluations: u64,
}

// SAFETY: `Expression` is not automatically `Send` only because of the jsonata-rs state in
// `bundle`: `JsonAta<'arena>` holds a `&Bump` and a `Frame` (an `Rc<RefCell<..>>`), and the
// arena holds `Value`s with more `&Bump`s and `Rc` clones of frames (in lambdas). Moving the
// whole `Expression` to another thread is sound because:
// * every one of those `&Bump` / `Rc` handles lives inside the bundle (the arena it points
//   into is the self_cell owner, heap-allocated and moved together with the dependent); after
//   `evaluate` returns, nothing outside the bundle refers to it: the result is converted to an
//   owned `serde_json::Value` inside `with_dependent`, and the per-call `Evaluator`,
//   `FunctionContext`s and temporary `Frame` clones of jsonata-rs 0.3.4 are locals of that call;
// * jsonata-rs 0.3.4 keeps no global or thread-local state that refers to the bundle (its only
//   statics are an immutable escape table and the immutable `Undefined`/`true`/`false`
//   constants, shared read-only by all threads and never written: its one in-place mutation,
//   used by transforms, only touches objects; it uses `rand::thread_rng()` and chrono's
//   thread-local caches only transiently inside a call);
// * this module's own thread-local (`SCOPE`) is set only for the duration of one `evaluate`
//   call on the calling thread and reset before it returns (also on panic); the builtin
//   function pointers read by `gc_hook` live in that per-call scope, and the recorded value
//   addresses kept across calls (`pending_natives`, `disposables`) are plain integers that
//   are only turned back into pointers, into this bundle's own arena, on the owning thread;
// * all other fields are plain owned data.
// `Expression` stays `!Sync`: two threads must never evaluate the same bundle concurrently
// (non-atomic `Rc` counts, `RefCell`s, the bump allocator), and `evaluate` takes `&mut self`.
unsafe impl Send for Expression {}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression")
            .field("source", &self.source)
            .field("recycles", &self.recycles)
            .finish_non_exhaustive()
    }
}

impl Expression {
    /// Parses `expr`. Fails with [`JsonataError::Compile`] on a syntax error.
    pub fn compile(expr: &str) -> Result<Self, JsonataError> {
        let compile_err = |message: String| JsonataError::Compile {
            expr: expr.to_string(),
            message,
        };
        // Parse the expression as written first, so syntax errors carry the right positions
        // and nothing can "escape" the wrapper below.
        let checked = quiet_catch_unwind(|| {
            let arena = Bump::new();
            JsonAta::new(expr, &arena)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        match checked {
            Ok(Ok(())) => {}
            Ok(Err(message)) => return Err(compile_err(syntax_error_code(message))),
            Err(panic) => return Err(compile_err(unsupported(&panic_message(panic.as_ref())))),
        }
        if let Some(at) = order::partial_application(expr) {
            return Err(compile_err(format!(
                "S0000 @ {at}: partial application (`?` as an argument) is not supported by \
                 jsonata-rs, the JSONata engine used here: write a function, e.g. \
                 `function($x){{$f($x, 2)}}` for `$f(?, 2)`"
            )));
        }
        // The expression goes in a block of its own after the hook call: after `(` (unlike
        // after `;`) jsonata-rs reads a `/` as the start of a regex literal, so an expression
        // may start with one.
        let prefix = format!("(${HOOK_NAME}();\n(");
        let wrapped = format!("{prefix}{expr}\n))");
        let mut expression = Expression {
            source: expr.to_string(),
            prefix_chars: prefix.chars().count(),
            wrapped,
            keys: SourceKeys::scan(expr),
            bundle: None,
            pending_natives: RefCell::new(Vec::new()),
            disposables: RefCell::new(Vec::new()),
            max_depth: Some(DEFAULT_MAX_DEPTH + WRAPPER_DEPTH),
            time_limit_ms: None,
            recycles: 0,
            evaluations: 0,
        };
        expression.bundle = Some(expression.build().map_err(compile_err)?);
        Ok(expression)
    }

    /// The expression text as given to [`Expression::compile`].
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Limits jsonata-rs's evaluation depth (default [`DEFAULT_MAX_DEPTH`]); `None` removes
    /// the limit, which lets runaway recursion overflow the stack and abort the process.
    pub fn set_max_depth(&mut self, max_depth: Option<usize>) {
        self.max_depth = max_depth.map(|d| d.saturating_add(WRAPPER_DEPTH));
    }

    /// Makes an evaluation fail (error U1001) once it has run longer than `limit`
    /// (checked between evaluation steps). Default: no limit.
    pub fn set_time_limit(&mut self, limit: Option<Duration>) {
        self.time_limit_ms = limit.map(|d| usize::try_from(d.as_millis()).unwrap_or(usize::MAX));
    }

    /// Bytes currently allocated by the arena (0 right after a recycle).
    pub fn arena_allocated_bytes(&self) -> usize {
        self.bundle
            .as_ref()
            .map_or(0, |b| b.compiled.borrow_owner().allocated_bytes())
    }

    /// How many times the arena was dropped and the expression recompiled.
    pub fn recycle_count(&self) -> u64 {
        self.recycles
    }

    /// Evaluates the expression against `input`.
    ///
    /// Returns `Ok(None)` when the JSONata result is undefined (e.g. a path that matches
    /// nothing), and [`JsonataError::Evaluate`] on a JSONata runtime error, a result that
    /// JSON cannot represent (a function, NaN, infinity), or a panic inside jsonata-rs.
    pub fn evaluate(
        &mut self,
        input: &serde_json::Value,
    ) -> Result<Option<serde_json::Value>, JsonataError> {
        self.evaluate_optional(Some(input))
    }

    /// As [`Expression::evaluate`], with `None` for JSONata's undefined input.
    pub fn evaluate_optional(
        &mut self,
        input: Option<&serde_json::Value>,
    ) -> Result<Option<serde_json::Value>, JsonataError> {
        self.evaluate_inner(input)
            .map_err(|message| JsonataError::Evaluate {
                expr: self.source.clone(),
                message,
            })
    }

    fn evaluate_inner(
        &mut self,
        input: Option<&serde_json::Value>,
    ) -> Result<Option<serde_json::Value>, String> {
        if input.is_some_and(|input| exceeds_depth(input, MAX_INPUT_DEPTH)) {
            return Err(format!(
                "input document is nested deeper than {MAX_INPUT_DEPTH} levels"
            ));
        }
        let text = input
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| e.to_string())?;
        let input = input.unwrap_or(&serde_json::Value::Null);
        if self.bundle.is_none() {
            self.bundle = Some(self.build()?);
        }
        let Some(bundle) = self.bundle.as_ref() else {
            return Err("expression is not compiled".to_string());
        };
        self.evaluations += 1;

        let scope = EvalScope {
            orderer: KeyOrderer::new(&self.keys, input),
            pending_natives: &self.pending_natives,
            disposables: &self.disposables,
            previous_disposables: self.disposables.borrow().len(),
            originals: RefCell::new(Vec::new()),
            armed: Cell::new(true),
            // An evaluation inside another (`$eval`) shares its instant.
            now: Cell::new(with_scope(|outer| outer.now_millis())),
        };
        let (max_depth, time_limit) = (self.max_depth, self.time_limit_ms);
        let outcome = {
            let _guard = ScopeGuard::enter(&scope);
            let _depth = functions::BuiltinDepth::enter();
            quiet_catch_unwind(std::panic::AssertUnwindSafe(|| {
                bundle.compiled.with_dependent(|_arena, jsonata| {
                    match jsonata.evaluate_timeboxed(text.as_deref(), max_depth, time_limit) {
                        Ok(value) => to_json(value, &scope.orderer, 0),
                        Err(e) => Err(clean_error_message(&e.to_string(), self.prefix_chars)),
                    }
                })
            }))
        };
        drop(scope);
        match outcome {
            Ok(result) => {
                if self.arena_allocated_bytes() > ARENA_RECYCLE_BYTES {
                    self.retire();
                }
                result
            }
            Err(panic) => {
                let message = format!(
                    "internal error in jsonata-rs: {}",
                    panic_message(panic.as_ref())
                );
                self.retire();
                Err(message)
            }
        }
    }

    /// Compiles the wrapped expression into a fresh arena and registers the native functions.
    fn build(&self) -> Result<Bundle, String> {
        let mut own_natives = Vec::new();
        let built = quiet_catch_unwind(std::panic::AssertUnwindSafe(|| {
            Compiled::try_new(Bump::new(), |arena| {
                let jsonata = JsonAta::new(&self.wrapped, arena).map_err(|e| e.to_string())?;
                let mut register =
                    |binding: &str, name: &str, arity: usize, f: functions::Native| {
                        let value: &Value = Value::nativefn(arena, name, arity, f);
                        own_natives.push(value as *const Value as usize);
                        jsonata.assign_var(binding, value);
                    };
                register(HOOK_NAME, HOOK_NAME, 0, gc_hook);
                for &(name, arity, f) in functions::SUPPLIED {
                    register(name, name, arity, f);
                }
                for &(name, arity, f) in functions::OVERRIDES.iter().chain(functions::WRAPPED) {
                    register(&override_binding(name), name, arity, f);
                }
                Ok(jsonata)
            })
        }));
        match built {
            Ok(Ok(compiled)) => Ok(Bundle {
                compiled,
                own_natives,
            }),
            Ok(Err(message)) => Err(message),
            Err(panic) => Err(panic_message(panic.as_ref())),
        }
    }

    /// Drops the arena and the compiled expression (the next evaluation recompiles), first
    /// freeing the heap memory owned by native function values inside the arena.
    fn retire(&mut self) {
        let Some(bundle) = self.bundle.take() else {
            return;
        };
        self.recycles += 1;
        let mut natives = std::mem::take(self.pending_natives.get_mut());
        natives.extend_from_slice(&bundle.own_natives);
        natives.append(self.disposables.get_mut());
        natives.sort_unstable();
        natives.dedup();
        // Drops the JsonAta (its root frame only holds references to values) and keeps the arena.
        let arena = bundle.compiled.into_owner();
        // SAFETY: `natives` are addresses of distinct (deduplicated), not yet dropped values
        // allocated in `arena` (native functions from `build` or from jsonata-rs's builtin
        // binding, and recorded function/regex/transform values, see `gc_hook`), and the
        // expression that could reach them is gone, so nothing uses them again.
        unsafe { drop_arena_values(&arena, &natives) };
        drop(arena);
    }
}

impl Drop for Expression {
    fn drop(&mut self) {
        self.retire();
    }
}

/// One-shot convenience: compile + evaluate.
pub fn evaluate(
    expr: &str,
    input: &serde_json::Value,
) -> Result<Option<serde_json::Value>, JsonataError> {
    Expression::compile(expr)?.evaluate(input)
}

/// The root-frame variable under which a replacement for builtin `name` is kept.
fn override_binding(name: &str) -> String {
    format!("__lucille_jsonata_{name}")
}

/// The builtins that jsonata-rs 0.3.4 binds anew (as fresh `Value::NativeFn`s, each with a
/// heap `String` name) at the start of every evaluation (`JsonAta::evaluate_timeboxed`).
const JSONATA_RS_BUILTINS: &[&str] = &[
    "abs",
    "append",
    "assert",
    "base64decode",
    "base64encode",
    "boolean",
    "ceil",
    "contains",
    "count",
    "distinct",
    "each",
    "error",
    "exists",
    "fromMillis",
    "toMillis",
    "single",
    "filter",
    "floor",
    "join",
    "keys",
    "length",
    "lookup",
    "lowercase",
    "map",
    "match",
    "max",
    "merge",
    "min",
    "not",
    "now",
    "number",
    "pad",
    "power",
    "random",
    "reduce",
    "replace",
    "reverse",
    "round",
    "sort",
    "split",
    "sqrt",
    "string",
    "substring",
    "substringBefore",
    "substringAfter",
    "sum",
    "trim",
    "uppercase",
    "zip",
    "millis",
    "uuid",
];

/// State shared with the native functions for the duration of one `evaluate` call.
pub(crate) struct EvalScope<'s> {
    pub(crate) orderer: KeyOrderer<'s>,
    pending_natives: &'s RefCell<Vec<usize>>,
    disposables: &'s RefCell<Vec<usize>>,
    /// How many of `disposables` were recorded by earlier evaluations.
    previous_disposables: usize,
    /// `func` pointers of the jsonata-rs builtins in `functions::WRAPPED`, this evaluation.
    originals: RefCell<Vec<*const ()>>,
    /// True until the hook ran for this evaluation (a user calling it again does nothing).
    armed: Cell<bool>,
    /// The evaluation's current time (milliseconds since the epoch), read from the clock on
    /// first use: `$now()`, `$millis()` and the defaults of `$toMillis` all see one instant
    /// per evaluation, as in JSONata.
    now: Cell<Option<i64>>,
}

impl EvalScope<'_> {
    pub(crate) fn original(&self, index: usize) -> Option<*const ()> {
        self.originals
            .borrow()
            .get(index)
            .copied()
            .filter(|p| !p.is_null())
    }

    pub(crate) fn record_disposables(&self, addrs: impl Iterator<Item = usize>) {
        self.disposables.borrow_mut().extend(addrs);
    }

    /// The current time of this evaluation, in milliseconds since the epoch.
    pub(crate) fn now_millis(&self) -> i64 {
        match self.now.get() {
            Some(now) => now,
            None => {
                let now = chrono::Utc::now().timestamp_millis();
                self.now.set(Some(now));
                now
            }
        }
    }
}

thread_local! {
    /// The `EvalScope` of the evaluation running on this thread, or null.
    static SCOPE: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

struct ScopeGuard {
    previous: *const (),
}

impl ScopeGuard {
    fn enter(scope: &EvalScope<'_>) -> Self {
        let ptr = scope as *const EvalScope<'_> as *const ();
        ScopeGuard {
            previous: SCOPE.with(|s| s.replace(ptr)),
        }
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        SCOPE.with(|s| s.set(self.previous));
    }
}

/// Runs `f` with the scope of the evaluation running on this thread, if any.
pub(crate) fn with_scope<R>(f: impl FnOnce(&EvalScope<'_>) -> R) -> Option<R> {
    let ptr = SCOPE.with(|s| s.get());
    if ptr.is_null() {
        return None;
    }
    // SAFETY: a non-null pointer was set by `ScopeGuard::enter` from a live `EvalScope` that
    // outlives the guard, and the guard resets it before that scope is dropped; we are on the
    // thread that set it, inside the `evaluate` call. `f` cannot keep the reference: it is
    // generic over the scope's lifetimes.
    Some(f(unsafe { &*(ptr as *const EvalScope<'_>) }))
}

/// Called first by every evaluation (the expression is compiled as `($hook(); (EXPR))`).
///
/// jsonata-rs re-binds its builtins to freshly allocated `Value::NativeFn`s at the start of
/// every evaluation; the bump arena never drops them, so their heap `String` names would leak
/// (about 1.6 KiB per evaluation). Here the builtins of the *previous* evaluation are no
/// longer reachable (the root frame now points at the new ones, and each evaluation's own
/// bindings live in the wrapper block's frame, so nothing survives from one evaluation to the
/// next), so we drop them in place. We also shadow `$keys`, `$each` and `$string` in the
/// wrapper block's frame with this module's key-order-aware versions.
fn gc_hook<'a>(
    ctx: FunctionContext<'a, '_>,
    _args: &[&'a Value<'a>],
) -> jsonata_rs::Result<&'a Value<'a>> {
    with_scope(|scope| {
        if !scope.armed.replace(false) {
            return;
        }
        let current: Vec<usize> = JSONATA_RS_BUILTINS
            .iter()
            .filter_map(|name| ctx.frame.lookup(name))
            .filter(|v| matches!(v, Value::NativeFn { .. }))
            .map(|v| v as *const Value as usize)
            .collect();
        let mut pending = scope.pending_natives.borrow_mut();
        let stale: Vec<usize> = pending
            .iter()
            .copied()
            .filter(|addr| !current.contains(addr))
            .collect();
        // SAFETY: `stale` holds the builtin values bound by the previous evaluation of this
        // expression in this arena (recorded by the previous call of this hook), each dropped
        // at most once (they leave `pending` now). They are unreachable: the root frame was
        // re-bound to `current` before this evaluation started, and values of the previous
        // evaluation cannot be reached from this one.
        unsafe { drop_arena_values(ctx.arena, &stale) };
        *pending = current;
        drop(pending);

        let mut disposables = scope.disposables.borrow_mut();
        let end = scope.previous_disposables.min(disposables.len());
        let mut previous: Vec<usize> = disposables.drain(..end).collect();
        drop(disposables);
        previous.sort_unstable();
        previous.dedup();
        // SAFETY: function/regex/transform values recorded by earlier evaluations of this
        // expression in this arena (deduplicated, and removed from the list now, so dropped
        // once). Like the builtins above, nothing of an earlier evaluation is reachable from
        // this one (evaluations share only the root frame, whose bindings are builtins,
        // this module's natives and `$`, all re-bound or never pointing at such values).
        unsafe { drop_arena_values(ctx.arena, &previous) };

        let originals = functions::WRAPPED
            .iter()
            .map(|(name, _, _)| match ctx.frame.lookup(name) {
                Some(Value::NativeFn { func, .. }) => *func as *const (),
                _ => std::ptr::null(),
            })
            .collect();
        *scope.originals.borrow_mut() = originals;

        for &(name, _, _) in functions::OVERRIDES.iter().chain(functions::WRAPPED) {
            if let Some(value) = ctx.frame.lookup(&override_binding(name)) {
                ctx.frame.bind(name, value);
            }
        }
    });
    Ok(Value::undefined())
}

/// Drops, in place, the values at `addrs` inside `arena` that own heap memory the arena
/// would never free: native functions (their names), lambdas (syntax-tree copy and frame),
/// regexes and transforms (syntax-tree copies). Other addresses are ignored.
///
/// # Safety
/// Each address must be that of a live, not yet dropped `Value` allocated in `arena`, that
/// nothing will read again; no address may appear twice.
unsafe fn drop_arena_values(arena: &Bump, addrs: &[usize]) {
    if addrs.is_empty() {
        return;
    }
    // SAFETY: the iterator is collected before anything else touches the arena.
    let chunks: Vec<(*mut u8, usize)> = unsafe { arena.iter_allocated_chunks_raw() }.collect();
    let size = std::mem::size_of::<Value<'_>>();
    for &addr in addrs {
        if addr % std::mem::align_of::<Value<'_>>() != 0 {
            continue;
        }
        let Some(&(base, _)) = chunks.iter().find(|&&(base, len)| {
            let start = base as usize;
            addr >= start && addr - start <= len.saturating_sub(size)
        }) else {
            continue;
        };
        // A pointer derived from the chunk itself (not from the shared references jsonata-rs
        // handed out) so that writing through it is allowed.
        // SAFETY: in bounds of the chunk, checked above.
        let ptr = unsafe { base.add(addr - base as usize) }.cast::<Value<'_>>();
        // SAFETY: per the contract, `ptr` points to a live `Value` that nobody uses again.
        unsafe {
            if matches!(
                &*ptr,
                Value::NativeFn { .. }
                    | Value::Lambda { .. }
                    | Value::Regex(_)
                    | Value::Transformer { .. }
            ) {
                std::ptr::drop_in_place(ptr);
            }
        }
    }
}

/// Converts a jsonata-rs result to JSON; `Ok(None)` for undefined.
pub(crate) fn to_json<'a>(
    value: &'a Value<'a>,
    orderer: &KeyOrderer<'_>,
    depth: usize,
) -> Result<Option<serde_json::Value>, String> {
    use serde_json::Value as J;
    if depth > 10_000 {
        return Err("result is nested too deeply".to_string());
    }
    Ok(Some(match value {
        Value::Undefined => return Ok(None),
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Number(n) => J::Number(number_to_json(*n)?),
        Value::String(s) => J::String(s.as_str().to_string()),
        Value::Array(..) | Value::Range(..) => {
            let mut items = Vec::with_capacity(value.len());
            for member in value.members() {
                if let Some(item) = to_json(member, orderer, depth + 1)? {
                    items.push(item);
                }
            }
            J::Array(items)
        }
        Value::Object(map) => {
            let mut keys: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
            orderer.order(&mut keys);
            let mut object = serde_json::Map::with_capacity(keys.len());
            for (key, member) in keys.into_iter().filter_map(|k| Some((k, *map.get(k)?))) {
                if let Some(item) = to_json(member, orderer, depth + 1)? {
                    object.insert(key.to_string(), item);
                }
            }
            J::Object(object)
        }
        Value::Lambda { .. } | Value::NativeFn { .. } | Value::Transformer { .. } => {
            return Err("the result contains a function, which has no JSON representation".into());
        }
        Value::Regex(_) => {
            return Err(
                "the result contains a regular expression, which has no JSON representation".into(),
            );
        }
    }))
}

/// An integral double within the `i64` range becomes an integer, others stay floats.
pub(crate) fn number_to_json(n: f64) -> Result<serde_json::Number, String> {
    // 2^63: the first double above i64::MAX.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !n.is_finite() {
        return Err(format!(
            "the result contains a number that JSON cannot represent ({n})"
        ));
    }
    if n.fract() == 0.0 && (-LIMIT..LIMIT).contains(&n) {
        return Ok(serde_json::Number::from(n as i64));
    }
    serde_json::Number::from_f64(n).ok_or_else(|| format!("invalid number {n}"))
}

/// True when `value` has more than `limit` levels of arrays/objects.
fn exceeds_depth(value: &serde_json::Value, limit: usize) -> bool {
    match value {
        serde_json::Value::Array(items) => {
            limit == 0 || items.iter().any(|v| exceeds_depth(v, limit - 1))
        }
        serde_json::Value::Object(map) => {
            limit == 0 || map.values().any(|v| exceeds_depth(v, limit - 1))
        }
        _ => false,
    }
}

/// Marker that this module's native functions put in front of their own error codes.
pub(crate) const ERROR_MARK: &str = "\u{1}";

/// Makes a jsonata-rs error message refer to the expression as written: strips the marker of
/// this module's errors and shifts positions back by the wrapper's prefix.
fn clean_error_message(message: &str, prefix_chars: usize) -> String {
    let message = match message.find(ERROR_MARK) {
        Some(i) => &message[i + ERROR_MARK.len()..],
        None => message,
    };
    // Messages look like "T0410 @ 25: Argument 1 of function ...".
    let Some(at) = message.find(" @ ") else {
        return message.to_string();
    };
    let rest = &message[at + 3..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[..digits].parse::<usize>() {
        Ok(pos) if pos >= prefix_chars => format!(
            "{} @ {}{}",
            &message[..at],
            pos - prefix_chars,
            &rest[digits..]
        ),
        _ => message.to_string(),
    }
}

/// Gives two jsonata-rs syntax errors the codes JSONata has for them: an expression that
/// ends where an operand is expected (`1=`: jsonata-rs's S0211 for the symbol `(end)`) is
/// S0207, and a `!` not followed by `=` (a token of jsonata-rs, not of JSONata) is S0204.
fn syntax_error_code(message: String) -> String {
    let position = |code: &str| {
        message
            .strip_prefix(code)
            .and_then(|rest| rest.strip_prefix(" @ "))
            .map(|rest| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
    };
    if message.contains("`(end)` cannot be used as a unary operator") {
        if let Some(at) = position("S0211") {
            return format!("S0207 @ {at}: Unexpected end of expression");
        }
    }
    if message.contains("got `!`") || message.contains("symbol `!` cannot") {
        if let Some(at) = position("S0202").or_else(|| position("S0211")) {
            return format!("S0204 @ {at}: Unknown operator: \"!\"");
        }
    }
    message
}

/// The compile error for a panic of jsonata-rs's parser: what it does not support, where the
/// panic says so, and how to write it instead.
fn unsupported(panic: &str) -> String {
    if panic.contains("Parent not yet implemented") {
        "S0000: the parent operator `%` is not supported by jsonata-rs, the JSONata engine \
         used here: bind the parent with a focus variable instead (`Order@$o.Product.{'id': \
         $o.OrderID}`)"
            .to_string()
    } else if panic.contains("unreachable") {
        "S0000: jsonata-rs, the JSONata engine used here, cannot call what is written before \
         these parentheses: a function literal called where it is written \
         (`function($x){$x*$x}(5)`) must be bound to a variable first \
         (`($sq := function($x){$x*$x}; $sq(5))`), and a number or string cannot be called \
         (T1006)"
            .to_string()
    } else {
        format!("internal error in jsonata-rs: {panic}")
    }
}

thread_local! {
    /// Set while this thread runs jsonata-rs code whose panics are caught and reported.
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// `catch_unwind` for calls into jsonata-rs: a panic there is caught and reported as this
/// module's error, so the panic hook (which would print it to stderr like a crash) is told to
/// stay quiet about it. Other panics reach the previous hook as before.
fn quiet_catch_unwind<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> std::thread::Result<R> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET_PANICS.with(|q| q.replace(true));
    let result = catch_unwind(f);
    QUIET_PANICS.with(|q| q.set(was));
    result
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

#[cfg(test)]
mod tests;
