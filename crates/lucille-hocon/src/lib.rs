//! HOCON (Human-Optimized Config Object Notation) parser.
//!
//! Follows the HOCON specification (lightbend/config `HOCON.md`) and the
//! behaviour of Typesafe Config: comments, optional root braces, path keys,
//! quoted/unquoted/triple-quoted strings, value/array/object concatenation,
//! object merging, substitutions (`${a}`, `${?a}`, self-references, `+=`,
//! environment fallback), and `include` of `.conf`, `.json` and `.properties`
//! files. The result is a fully resolved [`serde_json::Value`] object whose key
//! order is the order of first definition.
//!
//! ```
//! use lucille_hocon::{parse_str, ParseOptions};
//! # fn main() -> Result<(), lucille_hocon::HoconError> {
//! let opts = ParseOptions::with_env(Default::default());
//! let v = parse_str("a.b = 1\nc = ${a.b} items", None, &opts)?;
//! assert_eq!(v["a"]["b"], 1);
//! assert_eq!(v["c"], "1 items");
//! # Ok(())
//! # }
//! ```
//!
//! Written by hand: the HOCON crates on crates.io get optional substitution over an earlier
//! value wrong or panic on it, and Lucille users' configs rely on Typesafe Config's exact merge
//! and substitution rules (the conformance test runs Typesafe's own test resources).
//!
//! Behaviour notes:
//! * Numbers: integers become `i64` (or `u64` when larger); numbers with `.`,
//!   `e` or `E` become `f64`. Like Typesafe, an integer too large for `u64` is
//!   kept as the string it was written as; so is a non-finite float such as
//!   `1e999` (JSON has no infinity).
//! * Environment fallback: a substitution not found in the config is looked
//!   up in `ParseOptions::env` under its full path string (`${a.b}` -> `a.b`;
//!   inside an included file the unprefixed path). A variable set to the empty
//!   string counts as unset (HOCON spec). A value in the config, even `null`,
//!   hides the environment.
//! * Self-references (`a = ${a} [x]`, `a += x`) look back to the earlier value
//!   of the field; with no earlier value `${?a}` is undefined and `${a}` is a
//!   cycle error (as in Typesafe Config).
//! * Delayed merges (`item1 = ${defaults}` then `item1.b = …`) resolve as in
//!   Typesafe: a value first resolved while a field looks back past itself keeps
//!   that result (Typesafe memoizes per value), and object fields are resolved in
//!   Typesafe's order (its `HashMap` iteration order; the output keeps definition
//!   order), which decides the few configs whose result depends on it.
//! * A `null` substitution inside a string is `"null"`, as a written `null` is.
//! * `+=` inside a list, and an include inside a list whose file has
//!   substitutions, are errors (a limitation Typesafe shares: they cannot be
//!   resolved correctly).
//! * `${?x}` undefined: an object field is not created (or keeps its earlier
//!   value), an array element is dropped, and in a concatenation it counts as
//!   empty. A concatenation of only undefined optionals creates no field.
//! * Includes: `include "f"`, `include file("f")`, `include required(...)`.
//!   Relative names resolve against the including file's folder (never the
//!   working directory). A name without a known extension loads `f.properties`,
//!   `f.json` and `f.conf` (merged in that order). `include url("file:…")` reads
//!   the local file the URL names (exactly that file, no extension guessing, as
//!   Typesafe does; a relative `file:` URL is relative to the including file's
//!   folder, like `file()`). `url()` with another scheme (`http:` …) and
//!   `classpath()` are rejected with an error.
//! * Limits (errors, never crashes): nesting of about 100 levels, 50 levels
//!   of nested includes and 1000 included files, substitution chains of about
//!   200 steps, and at most 1,000,000 values copied by substitutions. Parsing
//!   runs on a helper thread with a 32 MiB stack so the limits hold whatever
//!   the caller's stack size.
//!
//! The module only refers to its own submodules (via `super::`), so it can be
//! mounted anywhere in a crate.

mod lexer;
mod node;
mod parser;
mod properties;
mod render;
mod resolve;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use render::render_hocon;

/// Options for [`parse_file`] / [`parse_str`].
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// Environment used for `${?X}`/`${X}` fallbacks; default: the process
    /// environment (`std::env::vars_os()`, skipping non-UTF-8 entries).
    /// A variable set to the empty string counts as unset.
    pub env: HashMap<String, String>,
    /// Applied after the file is parsed and before resolution, like Typesafe's
    /// system-property overrides: `("worker.threads", "4")`. The key is a path
    /// expression; the value text is parsed as a HOCON value (so `"4"` is a
    /// number, `"[1,2]"` a list, `"abc"` a string, `"${x}"` a substitution).
    /// Text that is not exactly one HOCON value (e.g. `http://host:8983/solr`)
    /// is used as a literal string.
    pub overrides: Vec<(String, String)>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            // vars_os: std::env::vars() panics on non-UTF-8 variables; skip those
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            overrides: Vec::new(),
        }
    }
}

impl ParseOptions {
    /// Options with an explicit environment (no process environment) and no overrides.
    pub fn with_env(env: HashMap<String, String>) -> Self {
        ParseOptions {
            env,
            overrides: Vec::new(),
        }
    }

    /// Add an override (builder style).
    pub fn with_override(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.overrides.push((key.into(), value.into()));
        self
    }
}

/// Errors from parsing or resolving HOCON. Positions are 1-based; `file` is the
/// path of the file (or `<string>`, or `<override KEY>` for override values).
#[derive(Debug, thiserror::Error)]
pub enum HoconError {
    /// Malformed input.
    #[error("{file}:{line}:{col}: {message}")]
    Syntax {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
    /// A failing include statement (missing required file, cycle, unsupported kind).
    #[error("{file}:{line}:{col}: include {target:?}: {message}")]
    Include {
        file: String,
        line: usize,
        col: usize,
        target: String,
        message: String,
    },
    /// `${path}` found neither in the config nor in the environment.
    #[error(
        "{file}:{line}:{col}: could not resolve substitution ${{{path}}}: not set in the config or the environment (use ${{?{path}}} to make it optional)"
    )]
    UnresolvedSubstitution {
        path: String,
        file: String,
        line: usize,
        col: usize,
    },
    /// Substitutions that refer to each other in a cycle.
    #[error("{file}:{line}:{col}: substitution ${{{path}}} is part of a cycle: {chain}")]
    Cycle {
        path: String,
        chain: String,
        file: String,
        line: usize,
        col: usize,
    },
    /// Type errors found while building values, e.g. concatenating an object
    /// with a string, or `+=` on a non-array.
    #[error("{file}:{line}:{col}: {message}")]
    Type {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
    /// An override key that is not a valid path expression.
    #[error("invalid override key {key:?}: {message}")]
    Override { key: String, message: String },
    /// Failure of the parser itself (a bug, or no thread could be started).
    #[error("internal error: {message}")]
    Internal { message: String },
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl HoconError {
    /// `(file, line, column)` of the error, when it has one.
    pub fn location(&self) -> Option<(&str, usize, usize)> {
        match self {
            HoconError::Syntax {
                file, line, col, ..
            }
            | HoconError::Include {
                file, line, col, ..
            }
            | HoconError::UnresolvedSubstitution {
                file, line, col, ..
            }
            | HoconError::Cycle {
                file, line, col, ..
            }
            | HoconError::Type {
                file, line, col, ..
            } => Some((file.as_str(), *line, *col)),
            HoconError::Override { .. } | HoconError::Io { .. } | HoconError::Internal { .. } => {
                None
            }
        }
    }
}

/// Parse and resolve a HOCON file. Includes are relative to the file's folder.
/// `.properties` files are read as Java properties; anything else as HOCON
/// (which includes JSON).
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<serde_json::Value, HoconError> {
    with_big_stack(|| parse_file_inner(path, opts))
}

fn parse_file_inner(path: &Path, opts: &ParseOptions) -> Result<serde_json::Value, HoconError> {
    let bytes = std::fs::read(path).map_err(|e| HoconError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut ctx = parser::ParseCtx::default();
    ctx.push_file(path);
    let root = parser::parse_bytes(bytes, path, &mut ctx)?;
    finish(root, opts, &mut ctx)
}

/// Parse and resolve HOCON text. Relative includes are resolved against
/// `base_dir` (an error if it is `None`). Errors name the file `<string>`.
pub fn parse_str(
    text: &str,
    base_dir: Option<&Path>,
    opts: &ParseOptions,
) -> Result<serde_json::Value, HoconError> {
    parse_str_named(text, "<string>", base_dir, opts)
}

/// Like [`parse_str`], with `name` used as the file name in error messages.
pub fn parse_str_named(
    text: &str,
    name: &str,
    base_dir: Option<&Path>,
    opts: &ParseOptions,
) -> Result<serde_json::Value, HoconError> {
    with_big_stack(|| {
        let mut ctx = parser::ParseCtx::default();
        let root = parser::parse_document(text, name, base_dir, &mut ctx)?;
        finish(root, opts, &mut ctx)
    })
}

/// Stack for the parse/resolve thread. Parsing and resolution are recursive;
/// their depth is bounded (see `parser::MAX_NESTING`, `resolve::MAX_DEPTH`),
/// and running them on a thread with a known stack keeps those bounds safe
/// whatever the caller's stack size is. Only touched pages are committed.
const STACK_SIZE: usize = 32 * 1024 * 1024;

fn with_big_stack<F>(work: F) -> Result<serde_json::Value, HoconError>
where
    F: FnOnce() -> Result<serde_json::Value, HoconError> + Send,
{
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("hocon-parse".into())
            .stack_size(STACK_SIZE)
            .spawn_scoped(scope, work);
        match spawned {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err(HoconError::Internal {
                    message: "the HOCON parser panicked (this is a bug)".into(),
                })
            }),
            // could not create a thread: report it rather than risk the caller's stack
            Err(e) => Err(HoconError::Internal {
                message: format!("cannot start the parser thread: {e}"),
            }),
        }
    })
}

fn finish(
    mut root: node::OMap<node::Node>,
    opts: &ParseOptions,
    ctx: &mut parser::ParseCtx,
) -> Result<serde_json::Value, HoconError> {
    let mut indexed = Vec::new();
    for (key, value) in &opts.overrides {
        let file = format!("<override {key}>");
        let path = parser::parse_path_expr(key, &file).map_err(|e| HoconError::Override {
            key: key.clone(),
            message: e.to_string(),
        })?;
        if path.iter().any(|p| is_index(p)) {
            // Into a list by position: applied to the resolved config, where the list is known.
            indexed.push((key, path, value));
            continue;
        }
        let node = parser::parse_override_value(value, &file, ctx)
            .unwrap_or_else(|| node::Node::Str(value.clone()));
        node::merge_field(&mut root, &path, node);
    }
    let resolved = resolve::resolve_root(root, &opts.env)?;
    let mut json = resolve::to_json(resolve::RVal::Obj(resolved));
    for (key, path, value) in indexed {
        set_indexed(&mut json, key, &path, override_value(value, &opts.env))?;
    }
    Ok(json)
}

fn is_index(segment: &str) -> bool {
    !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit())
}

/// An override's value as HOCON reads it (`10` a number, `[a, b]` a list), else the text.
fn override_value(text: &str, env: &HashMap<String, String>) -> serde_json::Value {
    let opts = ParseOptions::with_env(env.clone());
    let mut ctx = parser::ParseCtx::default();
    parser::parse_document(&format!("v = {text}"), "<override>", None, &mut ctx)
        .and_then(|root| finish(root, &opts, &mut ctx))
        .ok()
        .and_then(|mut v| v.as_object_mut().and_then(|m| m.remove("v")))
        .unwrap_or_else(|| serde_json::Value::String(text.to_string()))
}

/// `--set connectors.0.numDocs=10`: a number segment indexes the list found there (as the
/// README's examples use it; Typesafe Config would replace the list with an object `{"0": …}`,
/// which no config means). Elsewhere the path makes objects as an override does.
fn set_indexed(
    node: &mut serde_json::Value,
    key: &str,
    path: &[String],
    value: serde_json::Value,
) -> Result<(), HoconError> {
    use serde_json::Value;
    let Some((segment, rest)) = path.split_first() else {
        *node = value;
        return Ok(());
    };
    match node {
        Value::Array(list) if is_index(segment) => {
            let n = list.len();
            let slot = segment
                .parse::<usize>()
                .ok()
                .and_then(|k| list.get_mut(k))
                .ok_or_else(|| HoconError::Override {
                    key: key.to_string(),
                    message: format!("index {segment} is past the end of the list ({n} items)"),
                })?;
            set_indexed(slot, key, rest, value)
        }
        other => {
            if !other.is_object() {
                *other = Value::Object(serde_json::Map::new());
            }
            match other {
                Value::Object(map) => {
                    let slot = map.entry(segment.clone()).or_insert(Value::Null);
                    set_indexed(slot, key, rest, value)
                }
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests;
