//! Test support: small local HTTP servers (tiny_http) that stand in for OpenSearch,
//! Elasticsearch and Solr in the indexer tests, plus a driver that pushes documents through
//! the real indexer loop and collects the FINISH / FAIL events.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::*;
use crate::accounting::{Event, EventType};
use crate::messaging::LocalMessenger;

/// A request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or("")
    }
    pub fn query(&self) -> &str {
        self.url.split_once('?').map_or("", |(_, q)| q)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub type Handler = Box<dyn FnMut(&Seen) -> (u16, String) + Send>;

/// A running mock server; stops when dropped.
pub struct Mock {
    pub url: String,
    pub log: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A port nothing listens on (yet).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Mock {
    pub fn start(handler: Handler) -> Mock {
        Self::start_on(0, handler)
    }

    pub fn start_on(port: u16, mut handler: Handler) -> Mock {
        let server = tiny_http::Server::http(("127.0.0.1", port)).unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (s2, l2) = (stop.clone(), log.clone());
        let thread = std::thread::spawn(move || {
            while !s2.load(Ordering::SeqCst) {
                let Ok(Some(mut req)) = server.recv_timeout(Duration::from_millis(20)) else {
                    continue;
                };
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                let seen = Seen {
                    method: req.method().to_string(),
                    url: req.url().to_string(),
                    headers: req
                        .headers()
                        .iter()
                        .map(|h| (h.field.to_string(), h.value.to_string()))
                        .collect(),
                    body,
                };
                let (status, text) = handler(&seen);
                l2.lock().push(seen);
                let header =
                    tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap();
                let _ = req.respond(
                    tiny_http::Response::from_string(text)
                        .with_status_code(status)
                        .with_header(header),
                );
            }
        });
        Mock {
            url: format!("http://127.0.0.1:{port}"),
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().clone()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn obj(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// Each document's terminal event: (type, message).
pub type Outcomes = BTreeMap<String, (EventType, Option<String>)>;

/// Builds the backend from `indexer` and its block as the runner does (validation first),
/// checks the connection, then runs `docs` through the indexer loop in one batch.
pub fn run_docs(indexer: Value, block: Value, docs: Vec<Value>) -> Outcomes {
    let settings = IndexerSettings::from_config(&ComponentConfig::new(obj(indexer), "indexer"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    let config = ComponentConfig::new(obj(block), settings.kind.clone());
    let mut backend = build_backend(&settings, &config, false).unwrap_or_else(|e| panic!("{e:?}"));
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
        Ok(()) => String::new(),
        Err(e) => e
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    }
}
