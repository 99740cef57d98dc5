//! Transport faults of the HTTP backends (OpenSearch, Elasticsearch and Solr share
//! `http.rs`; the first two `bulk.rs`) against `FaultServer`, a raw-TCP server that is down
//! at start, goes down mid-run, answers 429 / 503 with and without `Retry-After`, or accepts a
//! request and never answers. Retries stay bounded (`indexer.maxRetries`, backoff, the
//! request timeout), then the affected documents FAIL with the reason; nothing hangs and
//! every document gets exactly one terminal event (`run_with` checks that).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::mock_http::*;
use super::{build_backend, Backend, IndexerSettings};
use crate::accounting::EventType;
use crate::config::ComponentConfig;
use crate::http;

const KINDS: [&str; 3] = ["opensearch", "elasticsearch", "solr"];

/// A healthy cluster's answer: `GET` (root / Solr ping) is fine, a `_bulk` request gets one
/// item per action (an id containing "bad" is rejected alone), a Solr update is accepted.
fn healthy(req: &Seen) -> Fault {
    let ok = |v: Value| Fault::Answer(200, vec![], v.to_string());
    match (req.method.as_str(), req.path()) {
        ("GET", _) => ok(json!({"name": "n", "version": {"number": "2.11.0"},
            "status": "OK", "responseHeader": {"status": 0}})),
        ("POST", "/_bulk") => {
            let mut items = Vec::new();
            let mut errors = false;
            let mut lines = req.body.lines();
            while let Some(line) = lines.next() {
                let meta: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                let Some((action, m)) = meta.as_object().and_then(|o| o.iter().next()) else {
                    continue;
                };
                if action != "delete" {
                    lines.next();
                }
                let id = m["_id"].as_str().unwrap_or_default();
                if id.contains("bad") {
                    errors = true;
                    items.push(json!({action: {"_id": id, "status": 400, "error":
                        {"type": "mapper_parsing_exception", "reason": "failed to parse [n]"}}}));
                } else {
                    items.push(json!({action: {"_id": id, "status": 201, "result": "created"}}));
                }
            }
            ok(json!({"took": 1, "errors": errors, "items": items}))
        }
        ("POST", p) if p.ends_with("/update") => {
            if req.body.contains("\"bad") {
                return Fault::Answer(
                    400,
                    vec![],
                    json!({"error": {"msg": "ERROR: [doc=bad] bad field", "code": 400}})
                        .to_string(),
                );
            }
            ok(json!({"responseHeader": {"status": 0, "QTime": 1}}))
        }
        _ => Fault::Answer(404, vec![], "{}".into()),
    }
}

/// A write (a bulk or update request, not a ping or a commit).
fn is_write(req: &Seen) -> bool {
    req.method == "POST" && !req.url.contains("commit=true")
}

fn block(kind: &str, url: &str) -> Value {
    if kind == "solr" {
        json!({"url": format!("{url}/solr"), "defaultCollection": "c"})
    } else {
        json!({"url": url, "index": "i"})
    }
}

fn settings(kind: &str, extra: Value) -> IndexerSettings {
    let mut m = obj(json!({"type": kind, "batchSize": 2, "batchTimeout": 60000}));
    m.extend(obj(extra));
    IndexerSettings::from_config(&ComponentConfig::new(m, "indexer")).unwrap()
}

fn backend(kind: &str, url: &str, s: &IndexerSettings) -> Box<dyn Backend> {
    build_backend(
        s,
        &ComponentConfig::new(obj(block(kind, url)), kind),
        crate::indexer::Opening::Fresh,
    )
    .unwrap()
}

fn docs(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"id": format!("d{i}"), "n": i}))
        .collect()
}

/// Runs `n` documents in batches of 2 (without the connection check); also returns how the
/// indexer closed (a Solr commit against a dead server fails there).
fn run(kind: &str, url: &str, extra: Value, n: usize) -> (Outcomes, Result<(), String>) {
    let s = settings(kind, extra);
    let b = backend(kind, url, &s);
    run_backend(kind, s, b, n)
}

fn run_backend(
    kind: &str,
    s: IndexerSettings,
    b: Box<dyn Backend>,
    n: usize,
) -> (Outcomes, Result<(), String>) {
    let m = Arc::new(crate::messaging::LocalMessenger::new(1000));
    use crate::messaging::{PublisherSide, WorkerSide};
    // Queued before the indexer starts, so it never idles mid-run.
    for d in docs(n) {
        m.send_for_indexing(crate::document::Document::from_value(d).unwrap().into())
            .unwrap();
    }
    let h = super::IndexerHandle::start(s, b, m.clone(), Arc::from("r"), false).unwrap();
    let closed = h.terminate().map_err(|e| e.message);
    let mut out = Outcomes::new();
    while let Some(e) = m.try_poll_event() {
        assert!(
            out.insert(e.doc_id.clone(), (e.kind, e.message)).is_none(),
            "{kind}: two terminal events for {}",
            e.doc_id
        );
    }
    assert_eq!(out.len(), n, "{kind}: every document ends once: {out:?}");
    (out, closed)
}

fn message<'a>(out: &'a Outcomes, id: &str) -> &'a str {
    out[id].1.as_deref().unwrap_or("")
}

#[test]
fn a_backend_down_at_start_fails_every_document_after_bounded_retries_or_is_waited_for() {
    for kind in KINDS {
        // Never up: two retries, then every document FAILs with the connection error.
        let url = format!("http://127.0.0.1:{}", free_port());
        let (out, _) = run(
            kind,
            &url,
            json!({"maxRetries": 2, "retryWaitDurationMs": 1}),
            3,
        );
        assert_eq!(failed(&out), ["d0", "d1", "d2"], "{kind}");
        let m = message(&out, "d0");
        assert!(m.contains("failed after 3 attempts"), "{kind}: {m}");
        // The connection check of a run names the server and the failure.
        let s = settings(kind, json!({}));
        let e = backend(kind, &url, &s).validate_connection().unwrap_err();
        assert!(e.message.contains("127.0.0.1"), "{kind}: {}", e.message);

        // Up after a while, within the retries: nothing fails.
        let port = free_port();
        let server = FaultServer::start(port, Duration::from_millis(300), Box::new(healthy));
        let (out, closed) = run(
            kind,
            &server.url,
            json!({"maxRetries": 40, "retryWaitDurationMs": 20, "retryMaxWaitDurationMs": 40}),
            3,
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert_eq!(closed, Ok(()));
        assert!(server.requests().iter().any(is_write));
    }
}

#[test]
fn a_backend_that_goes_down_mid_run_fails_the_rest_with_the_reason() {
    for kind in KINDS {
        // The first write is answered, then the server goes away for good.
        let writes = AtomicUsize::new(0);
        let server = FaultServer::start(
            0,
            Duration::ZERO,
            Box::new(move |r| {
                if is_write(r) && writes.fetch_add(1, Ordering::SeqCst) >= 1 {
                    Fault::GoDown(Duration::MAX)
                } else {
                    healthy(r)
                }
            }),
        );
        let (out, closed) = run(
            kind,
            &server.url,
            json!({"maxRetries": 2, "retryWaitDurationMs": 1}),
            6,
        );
        assert_eq!(failed(&out), ["d2", "d3", "d4", "d5"], "{kind}: {out:?}");
        assert_eq!(out["d0"].0, EventType::Finish);
        let m = message(&out, "d5");
        assert!(m.contains("failed after 3 attempts"), "{kind}: {m}");
        if kind == "solr" {
            let e = closed.unwrap_err();
            assert!(e.contains("failed after 3 attempts"), "{e}");
        }

        // Down for a moment mid-run, back within the retries: everything is indexed.
        let writes = AtomicUsize::new(0);
        let server = FaultServer::start(
            0,
            Duration::ZERO,
            Box::new(move |r| {
                if is_write(r) && writes.fetch_add(1, Ordering::SeqCst) == 1 {
                    Fault::GoDown(Duration::from_millis(200))
                } else {
                    healthy(r)
                }
            }),
        );
        let (out, closed) = run(
            kind,
            &server.url,
            json!({"maxRetries": 40, "retryWaitDurationMs": 20, "retryMaxWaitDurationMs": 40}),
            6,
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        assert_eq!(closed, Ok(()));
    }
}

#[test]
fn answers_429_and_503_are_retried_honouring_retry_after_up_to_the_max_wait() {
    for kind in KINDS {
        // 429 asking for 1 s, then 503 without Retry-After, then the answer.
        let writes = AtomicUsize::new(0);
        let server = FaultServer::start(
            0,
            Duration::ZERO,
            Box::new(move |r| {
                if !is_write(r) {
                    return healthy(r);
                }
                match writes.fetch_add(1, Ordering::SeqCst) {
                    0 => Fault::Answer(429, vec![("Retry-After", "1".into())], "{}".into()),
                    1 => Fault::Answer(503, vec![], "{\"error\": \"busy\"}".into()),
                    _ => healthy(r),
                }
            }),
        );
        let retries = lucille_core::metrics::global().indexer_retries(kind);
        let retried_before = retries.get();
        let (out, _) = run(
            kind,
            &server.url,
            json!({"maxRetries": 3, "retryWaitDurationMs": 1, "retryMaxWaitDurationMs": 5000}),
            2,
        );
        let log = server.log.lock().clone();
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
        // lucille_indexer_retries_total counts both (other tests may add theirs meanwhile).
        assert!(retries.get() - retried_before >= 2, "{kind}");
        let times: Vec<_> = log
            .iter()
            .filter(|(_, r)| is_write(r))
            .map(|(t, _)| *t)
            .collect();
        assert_eq!(times.len(), 3, "{kind}");
        assert!(
            times[1] - times[0] >= Duration::from_secs(1),
            "{kind}: the retry came before the Retry-After delay"
        );

        // A server that keeps asking for an hour: the wait is capped at
        // retryMaxWaitDurationMs and the documents FAIL after the retries.
        let server = FaultServer::start(
            0,
            Duration::ZERO,
            Box::new(|r| {
                if is_write(r) {
                    Fault::Answer(429, vec![("Retry-After", "3600".into())], "{}".into())
                } else {
                    healthy(r)
                }
            }),
        );
        let (out, _) = run(
            kind,
            &server.url,
            json!({"maxRetries": 2, "retryWaitDurationMs": 1, "retryMaxWaitDurationMs": 20}),
            2,
        );
        assert_eq!(failed(&out), ["d0", "d1"], "{kind}");
        let m = message(&out, "d0");
        assert!(
            m.contains("failed after 3 attempts") && m.contains("HTTP 429"),
            "{kind}: {m}"
        );
    }
}

#[test]
fn a_server_that_never_answers_times_out_each_attempt_then_fails_the_documents() {
    for kind in KINDS {
        let server = FaultServer::start(
            0,
            Duration::ZERO,
            Box::new(|r| if is_write(r) { Fault::Hang } else { healthy(r) }),
        );
        let (out, _) = run(
            kind,
            &server.url,
            json!({"indexerRequestTimeout": 200, "maxRetries": 1, "retryWaitDurationMs": 1}),
            2,
        );
        assert_eq!(failed(&out), ["d0", "d1"], "{kind}");
        let m = message(&out, "d0");
        assert!(
            m.contains("failed after 2 attempts") && m.to_lowercase().contains("timeout"),
            "{kind}: {m}"
        );
        assert_eq!(server.requests().iter().filter(|r| is_write(r)).count(), 2);

        // A single hung attempt is retried and the documents go through.
        let writes = AtomicUsize::new(0);
        let server = FaultServer::start(
            0,
            Duration::ZERO,
            Box::new(move |r| {
                if is_write(r) && writes.fetch_add(1, Ordering::SeqCst) == 0 {
                    Fault::Hang
                } else {
                    healthy(r)
                }
            }),
        );
        let (out, _) = run(
            kind,
            &server.url,
            json!({"indexerRequestTimeout": 200, "maxRetries": 1, "retryWaitDurationMs": 1}),
            2,
        );
        assert!(failed(&out).is_empty(), "{kind}: {out:?}");
    }
    // Without the key the default applies (a hang is never unbounded).
    let s = settings("opensearch", json!({}));
    assert_eq!(s.request_timeout, None);
    assert!(http::DEFAULT_REQUEST_TIMEOUT < super::watchdog::DEFAULT_INACTIVITY_TIMEOUT);
    let e = super::mock_http::config_errors(json!({"indexerRequestTimeout": 0}), json!({}));
    assert!(
        e.contains("indexerRequestTimeout: must be a positive"),
        "{e}"
    );
}

#[test]
fn documents_rejected_alone_in_a_bulk_fail_alone_with_the_reason() {
    for kind in KINDS {
        let server = FaultServer::start(0, Duration::ZERO, Box::new(healthy));
        let s = settings(kind, json!({}));
        let b = backend(kind, &server.url, &s);
        let out = run_with(
            s,
            b,
            vec![
                json!({"id": "a"}),
                json!({"id": "bad1"}),
                json!({"id": "c"}),
            ],
        );
        assert_eq!(failed(&out), ["bad1"], "{kind}");
        let m = out["bad1"].1.as_deref().unwrap_or("");
        assert!(
            m.contains("failed to parse") || m.contains("bad field"),
            "{kind}: {m}"
        );
    }
}

#[test]
fn retry_after_is_a_floor_capped_by_the_max_wait() {
    let p = http::RetryPolicy {
        max_retries: 3,
        initial_wait: Duration::from_millis(10),
        max_wait: Duration::from_secs(5),
        randomization: 0.0,
        ..Default::default()
    };
    assert_eq!(p.wait_after(1, None), Duration::from_millis(10));
    assert_eq!(
        p.wait_after(1, Some(Duration::from_secs(2))),
        Duration::from_secs(2)
    );
    assert_eq!(
        p.wait_after(1, Some(Duration::from_secs(3600))),
        Duration::from_secs(5)
    );
}

/// A whole run: the cluster takes two batches and then goes down. The run ends (no hang)
/// with the indexed documents counted as succeeded and the rest as failed, in the summary.
#[test]
fn a_run_whose_cluster_goes_down_mid_run_ends_with_the_right_counts() {
    let bulks = AtomicUsize::new(0);
    let server = FaultServer::start(
        0,
        Duration::ZERO,
        Box::new(move |r| {
            if r.path() == "/_bulk" && bulks.fetch_add(1, Ordering::SeqCst) >= 2 {
                Fault::GoDown(Duration::MAX)
            } else {
                healthy(r)
            }
        }),
    );
    let config = json!({
        "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 20}],
        "indexer": {"type": "opensearch", "batchSize": 5, "batchTimeout": 600000,
                    "maxRetries": 2, "retryWaitDurationMs": 1},
        "opensearch": {"url": server.url, "index": "i"},
        "worker": {"threads": 1}
    });
    let r = crate::runner::run(&config, None, &crate::runner::RunOptions::default()).unwrap();
    let c = &r.connectors[0];
    assert_eq!(
        (c.published, c.succeeded, c.failed),
        (20, 10, 10),
        "{}",
        r.summary
    );
    assert!(
        r.summary.contains("10 docs succeeded. 10 docs FAILED."),
        "{}",
        r.summary
    );
}

/// A backend that, like Tantivy, makes documents durable only at a commit; its commit at
/// close fails when `disk_full` (or commits every `every` batches).
struct Committing {
    disk_full: bool,
    every: Option<u64>,
    batches: u64,
    commits: u64,
    /// The send of this batch fails (as Tantivy's when its timed commit fails).
    fail_send_at: Option<u64>,
}

impl Backend for Committing {
    fn send(&mut self, ops: &[super::IndexOp]) -> Result<Vec<Option<String>>, super::BackendError> {
        self.batches += 1;
        if self.fail_send_at == Some(self.batches) {
            return Err(super::BackendError::new(
                "tantivy commit failed: File too large (os error 27)",
            ));
        }
        if self.every.is_some_and(|n| self.batches % n == 0) {
            self.commits += 1;
        }
        Ok(vec![None; ops.len()])
    }
    fn commits(&self) -> Option<u64> {
        Some(self.commits)
    }
    fn close(&mut self) -> Result<(), super::BackendError> {
        self.commit()
    }
    fn commit(&mut self) -> Result<(), super::BackendError> {
        if self.disk_full {
            return Err(super::BackendError::new(
                "tantivy commit failed: File too large (os error 27)",
            ));
        }
        self.commits += 1;
        Ok(())
    }
}

#[test]
fn documents_of_a_committing_backend_finish_only_when_a_commit_succeeds() {
    let s = settings("nop", json!({}));
    // The commit at close fails: nothing accepted since the last commit counts as indexed.
    let b = Committing {
        disk_full: true,
        every: Some(3),
        batches: 0,
        commits: 0,
        fail_send_at: None,
    };
    let (out, closed) = run_backend("committing", s.clone(), Box::new(b), 9);
    assert!(closed.is_err());
    // Batches of 2: the third batch's commit made d0..d5 durable; d6..d8 waited for the
    // commit at close, which failed.
    assert_eq!(failed(&out), ["d6", "d7", "d8"], "{out:?}");
    let m = message(&out, "d8");
    assert!(m.starts_with("not indexed: tantivy commit failed"), "{m}");
    // The commit at close succeeds: everything FINISHes.
    let b = Committing {
        disk_full: false,
        every: None,
        batches: 0,
        commits: 0,
        fail_send_at: None,
    };
    let (out, closed) = run_backend("committing", s, Box::new(b), 7);
    assert!(failed(&out).is_empty() && closed.is_ok(), "{out:?}");
}

/// A send that fails on a committing backend (its commit inside the send failed) loses what
/// the backend held since its last commit: those documents FAIL with the batch's, instead of
/// FINISHing at the next commit, which does not contain them.
#[test]
fn a_failed_send_of_a_committing_backend_fails_what_it_held() {
    let s = settings("nop", json!({}));
    let b = Committing {
        disk_full: false,
        every: None,
        batches: 0,
        commits: 0,
        fail_send_at: Some(3),
    };
    let (out, closed) = run_backend("committing", s, Box::new(b), 9);
    assert!(closed.is_ok());
    // Batches of 2: d0..d3 held, the third batch (d4, d5) fails, d6..d8 commit at close.
    assert_eq!(
        failed(&out),
        ["d0", "d1", "d2", "d3", "d4", "d5"],
        "{out:?}"
    );
    assert!(message(&out, "d0").starts_with("not indexed: tantivy commit failed"));
}

/// The runner waits for every document's terminal event before it stops the indexer, so an
/// idle indexer must commit what it holds rather than wait for the end of the run.
#[test]
fn an_idle_indexer_commits_the_documents_it_holds() {
    let s = settings("nop", json!({"batchTimeout": 5}));
    let m = Arc::new(crate::messaging::LocalMessenger::new(100));
    let b = Committing {
        disk_full: false,
        every: None,
        batches: 0,
        commits: 0,
        fail_send_at: None,
    };
    let h = super::IndexerHandle::start(s, Box::new(b), m.clone(), Arc::from("r"), false).unwrap();
    use crate::messaging::{PublisherSide, WorkerSide};
    for d in docs(3) {
        m.send_for_indexing(crate::document::Document::from_value(d).unwrap().into())
            .unwrap();
    }
    // Not stopped: the events must come anyway.
    let mut events = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while events.len() < 3 && std::time::Instant::now() < deadline {
        match m.try_poll_event() {
            Some(e) => events.push(e),
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    assert_eq!(events.len(), 3, "held documents were never settled");
    assert!(events.iter().all(|e| e.kind == EventType::Finish));
    drop(h);
}
