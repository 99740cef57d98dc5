//! Test support for the indexer: a driver that builds a backend as the runner does and pushes
//! documents through the real indexer loop, collecting the FINISH / FAIL events; the mock
//! servers come from `crate::http::mock`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::accounting::{Event, EventType};
use crate::config::ComponentConfig;
use crate::document::Document;
pub use crate::http::mock::*;
use crate::messaging::{LocalMessenger, PublisherSide, WorkerSide};

/// Each document's terminal event: (type, message).
pub type Outcomes = BTreeMap<String, (EventType, Option<String>)>;

/// Builds the backend from `indexer` and its block as the runner does (the block read and
/// checked), checks the connection, then runs `docs` through the indexer loop in one batch.
pub fn run_docs(indexer: Value, block: Value, docs: Vec<Value>) -> Outcomes {
    let settings = IndexerSettings::from_config(&ComponentConfig::new(obj(indexer), "indexer"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    let config = ComponentConfig::new(obj(block), settings.kind.clone());
    let mut backend = build_backend(&settings, &config, crate::indexer::Opening::Fresh)
        .unwrap_or_else(|e| panic!("{e:?}"));
    backend.validate_connection().unwrap();
    run_with(settings, backend, docs)
}

pub fn run_with(
    settings: IndexerSettings,
    backend: Box<dyn Backend>,
    docs: Vec<Value>,
) -> Outcomes {
    let m = Arc::new(LocalMessenger::new(1000));
    let h = IndexerHandle::start(settings, backend, m.clone(), Arc::from("r"), false).unwrap();
    let n = docs.len();
    for d in docs {
        m.send_for_indexing(Document::from_value(d).unwrap().into())
            .unwrap();
    }
    h.terminate().unwrap();
    let mut out = Outcomes::new();
    while let Some(Event {
        doc_id,
        kind,
        message,
        ..
    }) = m.try_poll_event()
    {
        assert!(
            out.insert(doc_id, (kind, message)).is_none(),
            "two events for one document"
        );
    }
    assert_eq!(
        out.len(),
        n,
        "every document gets exactly one event: {out:?}"
    );
    out
}

/// The ids that FAILed.
pub fn failed(out: &Outcomes) -> Vec<&str> {
    out.iter()
        .filter(|(_, (k, _))| *k == EventType::Fail)
        .map(|(id, _)| id.as_str())
        .collect()
}

/// A config errors' text.
pub fn config_errors(indexer: Value, block: Value) -> String {
    let settings =
        match IndexerSettings::from_config(&ComponentConfig::new(obj(indexer), "indexer")) {
            Ok(s) => s,
            Err(e) => {
                return e
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        };
    let config = ComponentConfig::new(obj(block), settings.kind.clone());
    match validate_backend(&settings, &config) {
        Ok(_) => String::new(),
        Err(e) => e
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The WARN and ERROR messages logged in this test process so far, on any thread (the
/// indexer logs on its own thread): a process-wide subscriber, installed on first use, keeps
/// them from the first call on (call it once before what logs). Tests look for their own
/// messages by the document ids they name.
pub fn warnings() -> Vec<String> {
    use std::sync::OnceLock;
    static LOG: OnceLock<Arc<parking_lot::Mutex<Vec<String>>>> = OnceLock::new();
    let log = LOG.get_or_init(|| {
        let log = Arc::default();
        // Another test binary's subscriber cannot be here: each test binary is its own process.
        let _ = tracing::subscriber::set_global_default(Capture(Arc::clone(&log)));
        log
    });
    log.lock().clone()
}

/// Keeps each WARN / ERROR event's message.
struct Capture(Arc<parking_lot::Mutex<Vec<String>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        self.0.lock().push(m.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
