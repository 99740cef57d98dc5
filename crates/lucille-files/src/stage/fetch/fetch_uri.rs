//! FetchUri: an HTTP GET of the URL in `source`; the answer's bytes go to `dest`.
//!
//! Keys (Lucille's): `source`, `dest` (required); `statusSuffix` (default `status_code`),
//! `sizeSuffix` (default `size`), `errorSuffix` (default `error`): the status code, the number
//! of bytes read and any error go to `{source}_{suffix}`; `maxSize` (bytes read at most, the
//! rest of the answer is dropped; default 2^31-1); `headers` (an object of header names and
//! values sent with every request); `connectTimeout`, `socketTimeout` (each wait for data from
//! the server), `connectionRequestTimeout` (milliseconds, default 60000 each); `maxRetries`
//! (default 0), `initialExpiryMs` (default 100), `maxExpiryMs` (default 10000): a request that
//! gets no answer, or an answer whose status is in `statusCodeRetryList` (codes such as `429`,
//! or wildcards `50x` / `5xx`), is sent again after min(initial * 2^(n-1), max) ms.
//!
//! A document whose `source` is absent or empty is left alone. The answer is stored whatever
//! its status (a 404 page is stored with status 404); redirects are followed. A URL that is not
//! http(s), a request that fails without an answer, or a status in `statusCodeRetryList` once
//! the retries are spent, sets only the error field: the document goes on, as in Lucille.
//! The bytes are stored as base64 text (Lucille's form of `byte[]`).
//!
//! `200`, `20x` and `2xx` in `statusCodeRetryList` are config errors (Lucille fails at start);
//! other success codes are retried with a warning, as in Lucille.
//!
//! Entries of `statusCodeRetryList` that are not status codes (`802`, `4x0`, `badCode`) are left
//! out with a warning naming them, as Lucille does.
//!
//! Differences from Lucille: the client (the HTTP indexers'
//! `ureq` agent) opens a connection rather than waiting for a pooled one, so
//! `connectionRequestTimeout` has nothing to bound; it is checked and otherwise unused. The
//! error field holds our message, not a Java exception class name.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;
use crate::http::{Auth, BytesReply, HttpClient, RequestError, RetryPolicy, NO_STATUS};
use crate::stage::{Stage, StageDescriptor, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "FetchUri",
    spec: FetchUriOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// An HTTP GET of the URL in `source`: the answer's bytes go to `dest` (base64), its status,
/// size and any error to `{source}_{suffix}` fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct FetchUriOptions {
    /// The field holding the URL; a document without it (or with an empty one) is left alone.
    source: String,
    /// The field that gets the answer's bytes, as base64.
    dest: String,
    /// The number of bytes read goes to `{source}_{sizeSuffix}`.
    #[option(default = "size")]
    size_suffix: String,
    /// The answer's status code goes to `{source}_{statusSuffix}`.
    #[option(default = "status_code")]
    status_suffix: String,
    /// A request's error goes to `{source}_{errorSuffix}`.
    #[option(default = "error")]
    error_suffix: String,
    /// Bytes read at most; the rest of the answer is dropped.
    #[option(default = 2147483647, min = 0)]
    max_size: i64,
    /// Times a request without an answer, or with a status in statusCodeRetryList, is sent
    /// again.
    #[option(default = 0, min = 0)]
    max_retries: i64,
    /// Milliseconds before the first retry; each next one waits twice as long.
    #[option(default = 100, min = 0)]
    initial_expiry_ms: i64,
    /// Milliseconds a retry waits at most.
    #[option(default = 10000, min = 0)]
    max_expiry_ms: i64,
    /// Lucille's wait for a pooled connection, in milliseconds: checked, but there is no pool
    /// here (a connection is opened per request), so it bounds nothing.
    #[option(default = 60000, min = 0)]
    connection_request_timeout: i64,
    /// Milliseconds to wait for a connection.
    #[option(default = 60000, min = 0)]
    connect_timeout: i64,
    /// Milliseconds to wait for each piece of data from the server.
    #[option(default = 60000, min = 0)]
    socket_timeout: i64,
    /// Statuses whose answers are retried: codes such as 429, or wildcards 50x / 5xx.
    status_code_retry_list: Option<Vec<String>>,
    /// Header names and values sent with every request.
    headers: Option<Map<String, Value>>,
}

struct FetchUri {
    source: String,
    dest: String,
    status_field: String,
    size_field: String,
    error_field: String,
    max_size: u64,
    headers: Vec<(String, String)>,
    read_timeout: Duration,
    client: HttpClient,
}

/// A `statusCodeRetryList` entry that covers 200 (`200`, `20x`, `2xx`): retrying a success
/// would always spend every retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry:?} covers 200, a success status; retrying it would always spend every retry")]
pub(crate) struct RetriesSuccess {
    /// The entry as given.
    pub entry: String,
}

/// `statusCodeRetryList` entries as status codes: `503`, `50x` (500-509), `5xx` (500-599);
/// `None` for an entry that is no status code (left out, as Lucille does).
pub(crate) fn status_codes(entry: &str) -> Result<Option<Vec<i64>>, RetriesSuccess> {
    let lower = entry.trim().to_ascii_lowercase();
    let b = lower.as_bytes();
    let valid = b.len() == 3
        && (b'1'..=b'5').contains(&b[0])
        && ((b[1] == b'x' && b[2] == b'x')
            || (b[1].is_ascii_digit() && (b[2].is_ascii_digit() || b[2] == b'x')));
    if !valid {
        return Ok(None);
    }
    if b[0] == b'2' {
        if matches!(lower.as_str(), "200" | "20x" | "2xx") {
            return Err(RetriesSuccess {
                entry: entry.to_string(),
            });
        }
        tracing::warn!(
            "FetchUri: statusCodeRetryList has {entry:?}, a success status; it is retried"
        );
    }
    let digit = |c: u8| i64::from(c - b'0');
    let hundreds = digit(b[0]) * 100;
    Ok(Some(match (b[1], b[2]) {
        (b'x', _) => (hundreds..hundreds + 100).collect(),
        (tens, b'x') => {
            let base = hundreds + digit(tens) * 10;
            (base..base + 10).collect()
        }
        (tens, ones) => vec![hundreds + digit(tens) * 10 + digit(ones)],
    }))
}

/// The `headers` object as (name, value) pairs, each checked.
fn header_list(
    config: &ComponentConfig,
    map: &Map<String, Value>,
    errors: &mut Vec<ConfigError>,
) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(map.len());
    for (name, value) in map {
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                errors.push(config.error(
                    &format!("headers.{name}"),
                    "must be a string, number or boolean",
                ));
                continue;
            }
        };
        if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            errors.push(config.error(&format!("headers.{name}"), "is not a valid header name"));
            continue;
        }
        if ureq::http::HeaderValue::from_str(&value).is_err() {
            errors.push(config.error(
                &format!("headers.{name}"),
                "is not a valid header value (no control characters)",
            ));
            continue;
        }
        out.push((name.clone(), value));
    }
    out
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = FetchUriOptions::from_config(config)?;
    let mut errors = Vec::new();
    let (source, dest) = (o.source, o.dest);
    for (key, value) in [("source", &source), ("dest", &dest)] {
        if value.is_empty() || crate::document::is_reserved(value) {
            errors.push(config.error(key, format!("{value:?} cannot be used: reserved or empty")));
        }
    }
    let status_field = format!("{source}_{}", o.status_suffix);
    let size_field = format!("{source}_{}", o.size_suffix);
    let error_field = format!("{source}_{}", o.error_suffix);
    // Not negative: checked by their `min`.
    let max_size = o.max_size.unsigned_abs();
    let max_retries = o.max_retries.unsigned_abs();
    let initial = o.initial_expiry_ms.unsigned_abs();
    let max_wait = o.max_expiry_ms.unsigned_abs();
    let connect = o.connect_timeout.unsigned_abs();
    let socket = o.socket_timeout.unsigned_abs();
    if o.connection_request_timeout != 60000 {
        tracing::info!(
            "{}: requests open their own connection here (no pool to wait for), so it bounds \
             nothing",
            config.key_path("connectionRequestTimeout")
        );
    }
    let mut retryable = vec![NO_STATUS];
    let mut ignored = Vec::new();
    for entry in o.status_code_retry_list.unwrap_or_default() {
        match status_codes(&entry) {
            Ok(Some(codes)) => retryable.extend(codes),
            Ok(None) => ignored.push(entry),
            Err(e) => errors.push(config.error("statusCodeRetryList", e.to_string())),
        }
    }
    if !ignored.is_empty() {
        tracing::warn!(
            "{}.statusCodeRetryList: {ignored:?} are not status codes (100-599) or \
             wildcards such as \"50x\" or \"5xx\"; they are left out (remove them)",
            config.path()
        );
    }
    let headers = match &o.headers {
        Some(map) => header_list(config, map, &mut errors),
        None => Vec::new(),
    };
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let retry = RetryPolicy {
        max_retries: u32::try_from(max_retries).unwrap_or(u32::MAX),
        initial_wait: Duration::from_millis(initial),
        max_wait: Duration::from_millis(max_wait),
        randomization: 0.0,
        retryable,
        counter: None,
    };
    let client = HttpClient::new(
        "FetchUri",
        retry,
        Some(Duration::from_millis(connect)),
        false,
        Auth::None,
    );
    Ok(Box::new(FetchUri {
        source,
        dest,
        status_field,
        size_field,
        error_field,
        max_size,
        headers,
        read_timeout: Duration::from_millis(socket),
        client,
    }))
}

/// A document's URL that is not fetched.
#[derive(Debug, thiserror::Error)]
enum UrlError {
    #[error("{url:?} is not a valid URL: {source}")]
    Invalid {
        url: String,
        source: ureq::http::uri::InvalidUri,
    },
    #[error("{url:?}: the {scheme}:// scheme is not fetched (http and https are)")]
    Scheme { url: String, scheme: String },
    #[error("{0:?} is not an absolute URL (no http:// or https://)")]
    Relative(String),
    #[error("{0:?} has no host")]
    NoHost(String),
}

/// Checks the URL is an absolute http(s) URL with a host.
fn check_url(url: &str) -> Result<(), UrlError> {
    let uri: ureq::http::Uri = url.parse().map_err(|source| UrlError::Invalid {
        url: url.to_string(),
        source,
    })?;
    match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {}
        Some(s) => {
            return Err(UrlError::Scheme {
                url: url.to_string(),
                scheme: s.to_string(),
            })
        }
        None => return Err(UrlError::Relative(url.to_string())),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(UrlError::NoHost(url.to_string()));
    }
    Ok(())
}

/// Why a document's URL gives no answer to store (the message goes to the error field).
#[derive(Debug, thiserror::Error)]
enum FetchError {
    /// The URL is not fetched.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The request got no answer, and that is not retried.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The answer's status is in statusCodeRetryList, and the retries are spent.
    #[error("GET {url}: HTTP {status} is in statusCodeRetryList{}", tries(.attempts))]
    ListedStatus {
        url: String,
        status: u16,
        attempts: u32,
    },
    /// No answer, retried until the retries are spent.
    #[error("GET {url} failed{}: {source}", tries(.attempts))]
    NoAnswer {
        url: String,
        attempts: u32,
        #[source]
        source: RequestError,
    },
}

/// " after N attempts" when the request was sent more than once.
fn tries(attempts: &u32) -> String {
    if *attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}

impl FetchUri {
    /// The GET with Lucille's retries: the final answer, or why there is none.
    fn fetch(&self, url: &str) -> Result<BytesReply, FetchError> {
        let policy = &self.client.retry;
        let mut attempt = 0u32;
        loop {
            let result =
                self.client
                    .get_bytes(url, &self.headers, self.max_size, Some(self.read_timeout));
            let status = result.as_ref().ok().map(|r| r.status);
            let listed = policy
                .retryable
                .contains(&status.map_or(NO_STATUS, i64::from));
            if !listed {
                return Ok(result?);
            }
            if attempt >= policy.max_retries {
                let attempts = attempt.saturating_add(1);
                return Err(match result {
                    Ok(r) => FetchError::ListedStatus {
                        url: url.to_string(),
                        status: r.status,
                        attempts,
                    },
                    Err(source) => FetchError::NoAnswer {
                        url: url.to_string(),
                        attempts,
                        source,
                    },
                });
            }
            attempt += 1;
            let wait = policy.wait(attempt);
            tracing::info!(
                "FetchUri: GET {url} {}; retry {attempt}/{} in {} ms",
                status.map_or("got no answer".to_string(), |s| format!("answered {s}")),
                policy.max_retries,
                wait.as_millis()
            );
            std::thread::sleep(wait);
        }
    }
}

impl Stage for FetchUri {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let url = match doc.get_string(&self.source)? {
            Some(u) if !u.is_empty() => u,
            _ => return Ok(None),
        };
        let reply = check_url(&url)
            .map_err(FetchError::from)
            .and_then(|()| self.fetch(&url));
        match reply {
            Ok(reply) => {
                doc.set_bytes(&self.dest, &reply.body)?;
                doc.set_field(&self.status_field, reply.status)?;
                doc.set_field(&self.size_field, reply.body.len() as u64)?;
            }
            Err(e) => doc.set_field(&self.error_field, e.to_string())?,
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use serde_json::{json, Value};

    use crate::stage::testing::{build_err, build_stage, process};

    /// A local server: `/ok` (200), `/missing` (404), `/redirect` (302 to `/ok`), `/slow`
    /// (answers after 2 s), `/flaky` (503 on the first request, then 200), `/headers` (echoes
    /// the request's headers). Stops when dropped.
    struct Server {
        url: String,
        server: Arc<tiny_http::Server>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.server.unblock();
        }
    }

    fn server() -> Server {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let s = server.clone();
        let flaky = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let flaky = flaky.clone();
                std::thread::spawn(move || {
                    let (status, body, location) = match req.url() {
                        "/ok" => (200, "exampleresponse".to_string(), None),
                        "/missing" => (404, "no such page".to_string(), None),
                        "/redirect" => (302, String::new(), Some("/ok")),
                        "/slow" => {
                            std::thread::sleep(std::time::Duration::from_secs(2));
                            (200, "late".to_string(), None)
                        }
                        "/flaky" if flaky.fetch_add(1, Ordering::SeqCst) == 0 => {
                            (503, "busy".to_string(), None)
                        }
                        "/flaky" => (200, "recovered".to_string(), None),
                        "/headers" => {
                            let mut seen: Vec<String> = req
                                .headers()
                                .iter()
                                .filter(|h| h.field.as_str().as_str().starts_with("x-"))
                                .map(|h| format!("{}={}", h.field, h.value))
                                .collect();
                            seen.sort();
                            (200, seen.join(";"), None)
                        }
                        _ => (500, "unexpected".to_string(), None),
                    };
                    let mut response =
                        tiny_http::Response::from_string(body).with_status_code(status);
                    if let Some(l) = location {
                        response = response
                            .with_header(tiny_http::Header::from_bytes("Location", l).unwrap());
                    }
                    let _ = req.respond(response);
                });
            }
        });
        Server {
            url: format!("http://127.0.0.1:{port}"),
            server,
        }
    }

    fn fetch(extra: Value, url: &str) -> crate::document::Document {
        let mut config = json!({"class": "FetchUri", "source": "url", "dest": "url_data"});
        if let (Value::Object(c), Value::Object(e)) = (&mut config, extra) {
            c.extend(e);
        }
        let mut s = build_stage(config);
        process(&mut s, json!({"id": "d", "name": "Jane Doe", "url": url}))
    }

    #[test]
    fn ok_with_every_optional_key() {
        let srv = server();
        let out = fetch(
            json!({"sizeSuffix": "length", "statusSuffix": "code", "errorSuffix": "error_msg",
                "maxSize": 200, "maxRetries": 0, "initialExpiryMs": 500, "maxExpiryMs": 5000,
                "connectionRequestTimeout": 10000, "connectTimeout": 10000,
                "socketTimeout": 10000, "statusCodeRetryList": ["206", "30x", "429", "5XX"]}),
            &format!("{}/ok", srv.url),
        );
        assert_eq!(
            out.get_bytes("url_data").unwrap(),
            Some(b"exampleresponse".to_vec())
        );
        assert_eq!(out.get("url_data"), Some(&json!("ZXhhbXBsZXJlc3BvbnNl")));
        assert_eq!(out.get("url_code"), Some(&json!(200)));
        assert_eq!(out.get("url_length"), Some(&json!(15)));
        assert!(!out.has("url_error_msg"));
        assert_eq!(out.get("name"), Some(&json!("Jane Doe")));
    }

    #[test]
    fn max_size_truncates() {
        let srv = server();
        let out = fetch(json!({"maxSize": 14}), &format!("{}/ok", srv.url));
        assert_eq!(
            out.get_bytes("url_data").unwrap(),
            Some(b"examplerespons".to_vec())
        );
        assert_eq!(out.get("url_status_code"), Some(&json!(200)));
        assert_eq!(out.get("url_size"), Some(&json!(14)));
    }

    #[test]
    fn not_found_is_stored_with_its_status_and_redirects_are_followed() {
        let srv = server();
        let out = fetch(json!({}), &format!("{}/missing", srv.url));
        assert_eq!(
            out.get_bytes("url_data").unwrap(),
            Some(b"no such page".to_vec())
        );
        assert_eq!(out.get("url_status_code"), Some(&json!(404)));
        assert!(!out.has("url_error"));
        let out = fetch(json!({}), &format!("{}/redirect", srv.url));
        assert_eq!(
            out.get_bytes("url_data").unwrap(),
            Some(b"exampleresponse".to_vec())
        );
        assert_eq!(out.get("url_status_code"), Some(&json!(200)));
    }

    #[test]
    fn timeouts_and_refused_connections_set_the_error_field() {
        let srv = server();
        let out = fetch(json!({"socketTimeout": 200}), &format!("{}/slow", srv.url));
        assert!(!out.has("url_data") && !out.has("url_status_code"));
        let err = out.get_string("url_error").unwrap().unwrap();
        assert!(
            err.contains("/slow") && err.to_lowercase().contains("timeout"),
            "{err}"
        );
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let out = fetch(
            json!({"errorSuffix": "error_msg"}),
            &format!("http://127.0.0.1:{port}/x"),
        );
        assert!(out.has("url_error_msg") && !out.has("url_data"));
    }

    #[test]
    fn listed_statuses_are_retried_then_reported() {
        let srv = server();
        let out = fetch(
            json!({"maxRetries": 2, "initialExpiryMs": 1, "statusCodeRetryList": ["5xx"]}),
            &format!("{}/flaky", srv.url),
        );
        assert_eq!(
            out.get_bytes("url_data").unwrap(),
            Some(b"recovered".to_vec())
        );
        assert_eq!(out.get("url_status_code"), Some(&json!(200)));
        // Without retries a listed status is an error, as Lucille's interceptor makes it.
        let out = fetch(
            json!({"statusCodeRetryList": ["404"]}),
            &format!("{}/missing", srv.url),
        );
        assert!(!out.has("url_data"));
        let err = out.get_string("url_error").unwrap().unwrap();
        assert!(
            err.contains("404") && err.contains("statusCodeRetryList"),
            "{err}"
        );
    }

    #[test]
    fn headers_are_sent() {
        let srv = server();
        let out = fetch(
            json!({"headers": {"x-header1-name": "header1-value", "x-header2-name": 2}}),
            &format!("{}/headers", srv.url),
        );
        assert_eq!(
            out.get_bytes("url_data").unwrap(),
            Some(b"x-header1-name=header1-value;x-header2-name=2".to_vec())
        );
    }

    #[test]
    fn malformed_and_empty_urls() {
        let out = fetch(json!({"errorSuffix": "error_msg"}), "abcdef");
        assert!(!out.has("url_data") && !out.has("url_status_code") && !out.has("url_size"));
        let err = out.get_string("url_error_msg").unwrap().unwrap();
        assert!(err.contains("abcdef"), "{err}");
        let out = fetch(json!({}), "ftp://example.com/x");
        assert!(out
            .get_string("url_error")
            .unwrap()
            .unwrap()
            .contains("ftp"));
        let out = fetch(json!({}), "");
        assert_eq!(out.field_count(), 2, "only id's fields: name and url");
        let mut s = build_stage(json!({"class": "FetchUri", "source": "url", "dest": "d"}));
        assert_eq!(process(&mut s, json!({"id": "d"})).field_count(), 0);
    }

    #[test]
    fn bad_configs() {
        let err = build_err(json!({"class": "FetchUri", "source": "url", "dest": "d",
            "maxSize": 200, "maxRetries": 1, "statusCodeRetryList": ["200"]}));
        assert!(
            err.contains("statusCodeRetryList") && err.contains("success"),
            "{err}"
        );
        assert_eq!(super::status_codes("206"), Ok(Some(vec![206])));
        assert_eq!(
            super::status_codes(" 2XX").unwrap_err().to_string(),
            "\" 2XX\" covers 200, a success status; retrying it would always spend every retry"
        );
        for bad in ["2xx", "20x"] {
            let err = build_err(json!({"class": "FetchUri", "source": "url", "dest": "d",
                "statusCodeRetryList": ["429", bad]}));
            assert!(err.contains(bad), "{err}");
        }
        // Entries that are no status code are left out (with a warning), as in Lucille.
        for bad in ["4x0", "802", "badCode", "6xx", "1x"] {
            assert_eq!(super::status_codes(bad), Ok(None), "{bad}");
        }
        let _ = build_stage(json!({"class": "FetchUri", "source": "url", "dest": "d",
            "statusCodeRetryList": ["429", "4x0", "802", "badCode"]}));
        assert!(build_err(json!({"class": "FetchUri", "source": "url"})).contains("dest"));
        assert!(
            build_err(json!({"class": "FetchUri", "source": "u", "dest": "d",
            "socketTimeout": -1}))
            .contains("socketTimeout")
        );
        assert!(
            build_err(json!({"class": "FetchUri", "source": "u", "dest": "d",
            "headers": {"bad name": "v"}}))
            .contains("headers.bad name")
        );
        assert!(
            build_err(json!({"class": "FetchUri", "source": "u", "dest": "d",
            "maxRetry": 3}))
            .contains("maxRetry")
        );
    }

    #[test]
    fn wildcards_expand() {
        assert_eq!(super::status_codes("429"), Ok(Some(vec![429])));
        assert_eq!(
            super::status_codes("30x").map(|c| c.map(|c| c.len())),
            Ok(Some(10))
        );
        assert_eq!(
            super::status_codes("5XX").map(|c| c.map(|c| (c[0], c[99]))),
            Ok(Some((500, 599)))
        );
    }

    #[test]
    fn listed_status_messages_count_attempts_past_the_first() {
        let listed = |attempts| {
            super::FetchError::ListedStatus {
                url: "http://h/x".into(),
                status: 503,
                attempts,
            }
            .to_string()
        };
        assert_eq!(
            listed(1),
            "GET http://h/x: HTTP 503 is in statusCodeRetryList"
        );
        assert_eq!(
            listed(3),
            "GET http://h/x: HTTP 503 is in statusCodeRetryList after 3 attempts"
        );
    }
}
