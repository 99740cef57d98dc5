//! JSONata expressions over [`serde_json::Value`], backed by the `jsonata-rs` crate (0.3.4, in
//! our fork `third_party/jsonata-rs`: see its PATCHES.md).
//!
//! ```
//! use lucille_jsonata::{evaluate, Expression};
//! use serde_json::json;
//! # fn main() -> Result<(), lucille_jsonata::JsonataError> {
//! let mut expr = Expression::compile(r#"{"name": $uppercase(name), "total": $sum(items.price)}"#)?;
//! let out = expr.evaluate(&json!({"name": "ada", "items": [{"price": 2}, {"price": 3}]}))?;
//! assert_eq!(out, Some(json!({"name": "ADA", "total": 5})));
//! assert_eq!(evaluate("missing.path", &json!({}))?, None); // undefined
//! # Ok(())
//! # }
//! ```
//!
//! # What this crate adds on top of jsonata-rs
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
//! * **Added to jsonata-rs** (our fork, see its PATCHES.md): the `??` and `?:` operators,
//!   partial application (`$f(?, 1)`), signatures on function literals
//!   (`function($x)<n:n>{...}`) and the parent operator `%`.
//!
//! The official JSONata test suite runs in `tests/jsonata_suite.rs` (1684 of its 1686 cases
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
//!   `$reduce`, `$uuid`. `$shuffle` uses std's random hash keys, not a cryptographic
//!   generator.
//! * **Argument handling made JSONata's** in front of jsonata-rs builtins: `$number` reads
//!   strings with JSONata's rule (also `0x`/`0o`/`0b` integers; too large is D3030), `$pad`
//!   truncates a fractional width, `$contains` with an undefined pattern is undefined, and
//!   `$match`, `$split` and `$contains` accept matcher functions in place of regexes
//!   (`functions/matcher.rs`).
//!
//! # Key order
//!
//! jsonata-rs stores objects in hash maps, so it forgets key order (our fork keeps them). This
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
//! [`Expression`] owns its arena together with the expression's syntax tree and the compiled
//! expression, and *recycles* them (drops them and recompiles) once the arena exceeds
//! [`ARENA_RECYCLE_BYTES`] after an evaluation, and after any panic inside jsonata-rs (panics
//! are caught and reported as errors). The arena never runs `Drop`, so no value in it may own
//! memory outside it: jsonata-rs 0.3.4's function, regex and transform values owned heap
//! copies of parts of the syntax tree, its builtins heap names and its frames `Rc` cycles, all
//! leaked on every evaluation. Our fork (`third_party/jsonata-rs`, see its PATCHES.md) makes
//! them borrow from the syntax tree (kept beside the arena, for as long as the arena) or live
//! in the arena, so an evaluation costs nothing on the heap outside the recycled arena, with
//! any expression (tests/jsonata_heap.rs counts it with a counting allocator).
//! Tail-recursive JSONata functions never hit the depth limit: use
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
use jsonata_rs::{Ast, FunctionContext, JsonAta, Value};

use order::{KeyOrderer, SourceKeys};

/// Errors from compiling or evaluating a JSONata expression.
#[derive(Debug, thiserror::Error)]
pub enum JsonataError {
    #[error("invalid JSONata expression {expr:?}: {message}")]
    Compile { expr: String, message: String },
    #[error("JSONata expression {expr:?} failed: {message}")]
    Evaluate { expr: String, message: String },
}

/// Why the wrapped expression could not be compiled into a fresh arena.
#[derive(Debug, thiserror::Error)]
enum BuildError {
    /// jsonata-rs rejected the wrapped expression.
    #[error(transparent)]
    Parse(#[from] jsonata_rs::Error),
    /// jsonata-rs panicked; the panic's message.
    #[error("{0}")]
    Panic(String),
}

/// Why one evaluation failed (the message of [`JsonataError::Evaluate`]).
#[derive(Debug, thiserror::Error)]
enum EvalError {
    /// The input document is nested deeper than the limit.
    #[error("input document is nested deeper than {limit} levels")]
    InputTooDeep { limit: usize },
    /// Recompiling the expression (after a recycle) failed.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The expression has no compiled form (not expected after a successful build).
    #[error("expression is not compiled")]
    NotCompiled,
    /// A JSONata runtime error: jsonata-rs's message, with positions in the expression as
    /// written and this crate's marker removed.
    #[error("{0}")]
    Jsonata(String),
    /// The result has no JSON representation.
    #[error(transparent)]
    Result(#[from] ToJsonError),
    /// jsonata-rs panicked; the panic's message.
    #[error("internal error in jsonata-rs: {0}")]
    Panic(String),
}

/// Why a jsonata-rs value cannot be converted to JSON.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ToJsonError {
    /// Arrays and objects nested more than [`MAX_RESULT_DEPTH`] levels deep.
    #[error("result is nested too deeply")]
    TooDeep,
    /// A function (lambda, native function, transformer).
    #[error("the result contains a function, which has no JSON representation")]
    Function,
    /// A regular expression.
    #[error("the result contains a regular expression, which has no JSON representation")]
    Regex,
    /// NaN or an infinity.
    #[error("the result contains a number that JSON cannot represent ({0})")]
    NotFinite(f64),
    /// A finite number serde_json refuses (not expected).
    #[error("invalid number {0}")]
    InvalidNumber(f64),
    /// A value to convert outside of any evaluation (`$eval`, `$clone`).
    #[error("no evaluation is running")]
    NoEvaluation,
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

/// Input documents nested deeper than this are rejected: jsonata-rs converts the input, and
/// evaluates over it (e.g. `**`), recursively, and a stack overflow would abort the process.
/// Same 2 MiB budget as above, set when jsonata-rs 0.3.4 parsed the input as JSON text (about
/// 18 KiB of stack per level in debug builds, 2.5 KiB in release builds); our fork converts the
/// `serde_json` value directly, which takes less.
pub const MAX_INPUT_DEPTH: usize = if cfg!(debug_assertions) { 64 } else { 300 };

/// Results nested deeper than this are an error (only values built by the expression can be:
/// inputs are limited to [`MAX_INPUT_DEPTH`]). Converting a result, and dropping the converted
/// `serde_json::Value`, recurse on its depth: 10 000 levels (the limit before) overflowed a
/// 2 MiB stack in a debug build, which aborts the process.
pub const MAX_RESULT_DEPTH: usize = if cfg!(debug_assertions) { 500 } else { 2000 };

/// Evaluation levels the wrapper (the hook call and the two blocks around the expression) adds:
/// added to a depth limit so that the limit means what it means to jsonata-rs.
const WRAPPER_DEPTH: usize = 2;

/// Name of the native function that the wrapped expression calls first (see `start_hook`).
const HOOK_NAME: &str = "__lucille_jsonata_start";

/// The syntax tree and the arena of one compiled expression: the values that an evaluation
/// allocates in the arena borrow from the tree (function literals, regexes, transforms), so
/// the two are kept, and dropped, together.
struct TreeAndArena {
    ast: Ast,
    arena: Bump,
}

self_cell::self_cell!(
    /// The syntax tree and arena, and the jsonata-rs expression that borrows them.
    struct Compiled {
        owner: TreeAndArena,
        #[not_covariant]
        dependent: JsonAta,
    }
);

/// A compiled expression, reusable across many evaluations.
pub struct Expression {
    source: String,
    wrapped: String,
    /// Characters that `wrapped` puts before `source` (to fix positions in error messages).
    prefix_chars: usize,
    keys: SourceKeys,
    compiled: Option<Compiled>,
    max_depth: Option<usize>,
    time_limit_ms: Option<usize>,
    recycles: u64,
    evaluations: u64,
}

// SAFETY: `Expression` is not automatically `Send` only because of the jsonata-rs state in
// `compiled`: `JsonAta<'arena>` holds a `&Bump` and a `Frame` (a reference to arena-allocated
// bindings in a `RefCell`), and the arena holds `Value`s with more such references (in
// lambdas). Moving the whole `Expression` to another thread is sound because:
// * every one of those references points into the self_cell owner (the syntax tree and the
//   arena, heap-allocated and moved together with the dependent); after `evaluate` returns,
//   nothing outside `compiled` refers to it: the result is converted to an owned
//   `serde_json::Value` inside `with_dependent`, and the per-call `Evaluator` and
//   `FunctionContext`s of jsonata-rs are locals of that call;
// * jsonata-rs (our fork, third_party/jsonata-rs) keeps no global or thread-local state that
//   refers to `compiled` (its only statics are an immutable escape table, the immutable
//   `Undefined`/`true`/`false` constants and the syntax tree of its function-chaining lambda
//   (a `OnceLock`), shared read-only by all threads and never written: its one in-place mutation,
//   used by transforms, only touches objects; it uses `rand::thread_rng()` and chrono's
//   thread-local caches only transiently inside a call);
// * this module's own thread-local (`SCOPE`) is set only for the duration of one `evaluate`
//   call on the calling thread and reset before it returns (also on panic); the builtin
//   function pointers read by `start_hook` live in that per-call scope;
// * all other fields are plain owned data.
// `Expression` stays `!Sync`: two threads must never evaluate the same expression concurrently
// (`RefCell`s, the bump allocator), and `evaluate` takes `&mut self`.
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
        let checked = quiet_catch_unwind(|| jsonata_rs::parse(expr).map(|_| ()));
        match checked {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(compile_err(syntax_error_code(e.to_string()))),
            Err(panic) => {
                return Err(compile_err(format!(
                    "internal error in jsonata-rs: {}",
                    lucille_panic::message(panic.as_ref())
                )))
            }
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
            compiled: None,
            max_depth: Some(DEFAULT_MAX_DEPTH + WRAPPER_DEPTH),
            time_limit_ms: None,
            recycles: 0,
            evaluations: 0,
        };
        expression.compiled = Some(expression.build().map_err(|e| compile_err(e.to_string()))?);
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
        self.compiled
            .as_ref()
            .map_or(0, |c| c.borrow_owner().arena.allocated_bytes())
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
            .map_err(|e| JsonataError::Evaluate {
                expr: self.source.clone(),
                message: e.to_string(),
            })
    }

    fn evaluate_inner(
        &mut self,
        input: Option<&serde_json::Value>,
    ) -> Result<Option<serde_json::Value>, EvalError> {
        if input.is_some_and(|input| exceeds_depth(input, MAX_INPUT_DEPTH)) {
            return Err(EvalError::InputTooDeep {
                limit: MAX_INPUT_DEPTH,
            });
        }
        if self.compiled.is_none() {
            self.compiled = Some(self.build()?);
        }
        let Some(compiled) = self.compiled.as_ref() else {
            return Err(EvalError::NotCompiled);
        };
        self.evaluations += 1;

        let scope = EvalScope {
            orderer: KeyOrderer::new(&self.keys, input.unwrap_or(&serde_json::Value::Null)),
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
                compiled.with_dependent(|_owner, jsonata| {
                    match jsonata.evaluate_json_timeboxed(input, max_depth, time_limit) {
                        Ok(value) => to_json(value, &scope.orderer, 0).map_err(EvalError::from),
                        Err(e) => Err(EvalError::Jsonata(clean_error_message(
                            &e.to_string(),
                            self.prefix_chars,
                        ))),
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
                let error = EvalError::Panic(lucille_panic::message(panic.as_ref()));
                self.retire();
                Err(error)
            }
        }
    }

    /// Compiles the wrapped expression into a fresh arena and registers the native functions.
    fn build(&self) -> Result<Compiled, BuildError> {
        let built = quiet_catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ast = jsonata_rs::parse(&self.wrapped)?;
            let owner = TreeAndArena {
                ast,
                arena: Bump::new(),
            };
            Ok::<_, BuildError>(Compiled::new(owner, |owner| {
                let arena = &owner.arena;
                let jsonata = JsonAta::with_ast(&owner.ast, arena);
                let register = |binding: &str, name: &str, arity: usize, f: functions::Native| {
                    jsonata.assign_var(binding, Value::nativefn(arena, name, arity, f));
                };
                register(HOOK_NAME, HOOK_NAME, 0, start_hook);
                // Tests need a panic inside an evaluation; the fork no longer has a known one.
                #[cfg(test)]
                register(
                    "__lucille_test_panic",
                    "__lucille_test_panic",
                    0,
                    test_panic,
                );
                for &(name, arity, f) in functions::SUPPLIED {
                    register(name, name, arity, f);
                }
                for &(name, arity, f) in functions::OVERRIDES.iter().chain(functions::WRAPPED) {
                    register(&override_binding(name), name, arity, f);
                }
                jsonata
            }))
        }));
        match built {
            Ok(result) => result,
            Err(panic) => Err(BuildError::Panic(lucille_panic::message(panic.as_ref()))),
        }
    }

    /// Drops the arena and the compiled expression (the next evaluation recompiles). Nothing
    /// in the arena owns memory outside it (see "Memory, panics and threads").
    fn retire(&mut self) {
        if self.compiled.take().is_some() {
            self.recycles += 1;
        }
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

/// State shared with the native functions for the duration of one `evaluate` call.
pub(crate) struct EvalScope<'s> {
    pub(crate) orderer: KeyOrderer<'s>,
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
/// Reads the function pointers of the jsonata-rs builtins that `functions::WRAPPED` wraps
/// (jsonata-rs binds its builtins anew at the start of every evaluation), and binds this
/// module's versions of builtins (`functions::OVERRIDES` and the wrappers, e.g. the
/// key-order-aware `$keys`, `$each` and `$string`) over them in the wrapper block's frame.
fn start_hook<'a>(
    ctx: FunctionContext<'a, '_>,
    _args: &[&'a Value<'a>],
) -> jsonata_rs::Result<&'a Value<'a>> {
    with_scope(|scope| {
        if !scope.armed.replace(false) {
            return;
        }
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

/// A native function that panics, for the tests of panic recovery.
#[cfg(test)]
fn test_panic<'a>(
    _ctx: FunctionContext<'a, '_>,
    _args: &[&'a Value<'a>],
) -> jsonata_rs::Result<&'a Value<'a>> {
    panic!("a panic for the tests")
}

/// Converts a jsonata-rs result to JSON; `Ok(None)` for undefined.
pub(crate) fn to_json<'a>(
    value: &'a Value<'a>,
    orderer: &KeyOrderer<'_>,
    depth: usize,
) -> Result<Option<serde_json::Value>, ToJsonError> {
    use serde_json::Value as J;
    if depth > MAX_RESULT_DEPTH {
        return Err(ToJsonError::TooDeep);
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
            return Err(ToJsonError::Function);
        }
        Value::Regex(_) => {
            return Err(ToJsonError::Regex);
        }
    }))
}

/// An integral double within the `i64` range becomes an integer, others stay floats.
pub(crate) fn number_to_json(n: f64) -> Result<serde_json::Number, ToJsonError> {
    // 2^63: the first double above i64::MAX.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !n.is_finite() {
        return Err(ToJsonError::NotFinite(n));
    }
    if n.fract() == 0.0 && (-LIMIT..LIMIT).contains(&n) {
        return Ok(serde_json::Number::from(n as i64));
    }
    serde_json::Number::from_f64(n).ok_or(ToJsonError::InvalidNumber(n))
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

#[cfg(test)]
mod tests;
