//! Routes the core's `tracing` events to Python's `logging` (logger "lucille"), so a
//! notebook or script sees the run summary and rate lines through its own logging setup.
//! `LUCILLE_LOG` (e.g. `debug`, `lucille=warn`) sets the level; the default is `info`.

use std::fmt::Write;

use pyo3::prelude::*;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::EnvFilter;

struct PyLogLayer;

#[derive(Default)]
struct Message {
    text: String,
    fields: String,
}

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.text, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.text.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}

fn python_level(level: &Level) -> u32 {
    match *level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        Level::TRACE => 5,
    }
}

impl<S: Subscriber> Layer<S> for PyLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut m = Message::default();
        event.record(&mut m);
        let text = if m.fields.is_empty() {
            m.text
        } else {
            format!("{}{}", m.text, m.fields)
        };
        let level = python_level(event.metadata().level());
        Python::attach(|py| {
            let r = py
                .import("logging")
                .and_then(|l| l.call_method1("getLogger", ("lucille",)))
                .and_then(|logger| logger.call_method1("log", (level, text)));
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

pub fn install() {
    // The ZooKeeper client (SolrCloud discovery) logs each session's start and end at info.
    let filter = EnvFilter::try_from_env("LUCILLE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,zookeeper_client=warn"));
    let subscriber = tracing_subscriber::registry().with(filter).with(PyLogLayer);
    // Already installed (module imported twice): keep the first.
    let _ = tracing::subscriber::set_global_default(subscriber);
}
