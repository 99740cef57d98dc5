//! Routes the core's `tracing` events to Python's `logging` (logger "lucille"), so a
//! notebook or script sees the run summary and rate lines through its own logging setup.
//! `LUCILLE_LOG` (e.g. `debug`, `lucille=warn`) sets the level; the default is `info`.
//!
//! Each record also carries the event's parts as `record.lucille` (target, message, fields,
//! and the run id of the run it belongs to): `lucille._logging.JsonFormatter` writes them as
//! one JSON object per line (`log.format: json`).

use std::fmt::Write;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

struct PyLogLayer;

/// A field's value as the event recorded it.
enum Value {
    Str(String),
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    /// Anything else, in its Debug form.
    Debug(String),
}

#[derive(Default)]
struct Message {
    text: String,
    fields: Vec<(&'static str, Value)>,
}

impl Message {
    /// The text line: the message, then ` name=value` per field (values in their Debug form,
    /// strings bare).
    fn line(&self) -> String {
        let mut line = self.text.clone();
        for (name, value) in &self.fields {
            let _ = match value {
                Value::Str(v) | Value::Debug(v) => write!(line, " {name}={v}"),
                Value::Int(v) => write!(line, " {name}={v:?}"),
                Value::UInt(v) => write!(line, " {name}={v:?}"),
                Value::Float(v) => write!(line, " {name}={v:?}"),
                Value::Bool(v) => write!(line, " {name}={v:?}"),
            };
        }
        line
    }
}

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.text, "{value:?}");
        } else {
            self.fields
                .push((field.name(), Value::Debug(format!("{value:?}"))));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.text.push_str(value);
        } else {
            self.fields
                .push((field.name(), Value::Str(value.to_string())));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fields.push((field.name(), Value::Int(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields.push((field.name(), Value::UInt(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.fields.push((field.name(), Value::Float(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fields.push((field.name(), Value::Bool(value)));
    }
}

/// The run id a span was opened with (the runner's `run` span), kept in the span.
struct RunId(String);

fn python_level(level: &Level) -> u32 {
    match *level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        Level::TRACE => 5,
    }
}

/// `record.lucille`: the event's parts, for a structured formatter.
fn parts<'py>(
    py: Python<'py>,
    event: &Event<'_>,
    m: &Message,
    run_id: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let fields = PyDict::new(py);
    let mut run_id = run_id;
    for (name, value) in &m.fields {
        match value {
            Value::Str(v) if *name == "run_id" => run_id = Some(v.clone()),
            Value::Str(v) | Value::Debug(v) => fields.set_item(name, v)?,
            Value::Int(v) => fields.set_item(name, v)?,
            Value::UInt(v) => fields.set_item(name, v)?,
            Value::Float(v) => fields.set_item(name, v)?,
            Value::Bool(v) => fields.set_item(name, v)?,
        }
    }
    let d = PyDict::new(py);
    d.set_item("target", event.metadata().target())?;
    d.set_item("message", &m.text)?;
    d.set_item("run_id", run_id)?;
    d.set_item("fields", fields)?;
    Ok(d)
}

impl<S> Layer<S> for PyLogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut m = Message::default();
        attrs.record(&mut m);
        let run_id = m.fields.into_iter().find_map(|(name, value)| match value {
            Value::Str(v) | Value::Debug(v) if name == "run_id" => Some(v),
            _ => None,
        });
        if let (Some(run_id), Some(span)) = (run_id, ctx.span(id)) {
            span.extensions_mut().insert(RunId(run_id));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut m = Message::default();
        event.record(&mut m);
        let run_id = ctx.event_scope(event).and_then(|scope| {
            scope
                .from_root()
                .find_map(|span| span.extensions().get::<RunId>().map(|r| r.0.clone()))
        });
        let level = python_level(event.metadata().level());
        Python::attach(|py| {
            let r = py
                .import("logging")
                .and_then(|l| l.call_method1("getLogger", ("lucille",)))
                .and_then(|logger| {
                    let extra = PyDict::new(py);
                    extra.set_item("lucille", parts(py, event, &m, run_id)?)?;
                    let kwargs = PyDict::new(py);
                    kwargs.set_item("extra", extra)?;
                    logger.call_method("log", (level, m.line()), Some(&kwargs))
                });
            if let Err(e) = r {
                // A signal that arrives while the main thread runs the logging code raises
                // there; keep it for the run loop rather than lose a Ctrl-C.
                if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
                } else {
                    e.print(py);
                }
            }
        });
    }
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a KeyboardInterrupt was raised inside a logging call since the last check.
pub fn take_interrupt() -> bool {
    INTERRUPTED.swap(false, std::sync::atomic::Ordering::SeqCst)
}

/// `log.format: json` for as long as a run or process goes on: the "lucille" logger writes one
/// JSON object per line to stderr (`lucille._logging.JsonLogs`), and its records no longer
/// reach the handlers above it; dropped, the logger is as it was.
pub struct JsonLogs(Option<Py<PyAny>>);

impl JsonLogs {
    pub fn attach(py: Python<'_>, format: crate::runner::LogFormat) -> PyResult<Self> {
        if format != crate::runner::LogFormat::Json {
            return Ok(JsonLogs(None));
        }
        let handle = py.import("lucille._logging")?.call_method0("attach_json")?;
        Ok(JsonLogs(Some(handle.unbind())))
    }
}

impl Drop for JsonLogs {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            Python::attach(|py| {
                if let Err(e) = handle.bind(py).call_method0("detach") {
                    e.print(py);
                }
            });
        }
    }
}

pub fn install() {
    // The ZooKeeper client (SolrCloud discovery) logs each session's start and end at info.
    let filter = EnvFilter::try_from_env("LUCILLE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,zookeeper_client=warn"));
    let subscriber = tracing_subscriber::registry().with(filter).with(PyLogLayer);
    // Already installed (module imported twice): keep the first.
    let _ = tracing::subscriber::set_global_default(subscriber);
}
