//! The project's one HTTP client, a service under every component that talks HTTP: the
//! indexer backends (OpenSearch, Elasticsearch, Solr, Typesense, Pinecone, Weaviate), the
//! `ai/`, `search/` and `fetch/` stages and the Solr connector. One blocking `ureq` client with
//! timeouts, TLS and authentication; the generic retry keys (`maxRetries`,
//! `retryWaitDurationMs`, `retryMaxWaitDurationMs`, `retryRandomizationFactor`,
//! `retryableStatusCodes`); base-URL checks.
//!
//! Retry follows Lucille: off unless `maxRetries` is set; a request that fails with a
//! retryable status code (or with no status at all, code `-1`: refused connection, timeout) is
//! sent again after an exponential, jittered wait. When the attempts run out the caller FAILs
//! every document the request carried with the last error, so nothing is silently lost.

use std::time::Duration;

use ureq::Agent;

use lucille_core::config::{ComponentConfig, ConfigError, Kind, OptionValue};
use lucille_core::indexer::BackendError;
pub use lucille_core::retry::{
    RetryOptions, RetryPolicy, DEFAULT_RANDOMIZATION, DEFAULT_RETRYABLE, DEFAULT_RETRY_MAX_WAIT_MS,
    DEFAULT_RETRY_WAIT_MS, NO_STATUS,
};

/// A request that failed: refused, timed out, or answered with an error status after the
/// retries ran out. The message names the client, the method and the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HttpError {
    pub message: String,
}

impl HttpError {
    pub fn new(message: impl Into<String>) -> Self {
        HttpError {
            message: message.into(),
        }
    }
}

impl From<HttpError> for BackendError {
    fn from(e: HttpError) -> Self {
        BackendError { message: e.message }
    }
}

/// Connect timeout when `indexer.indexerConnectionTimeout` is not set.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Limit on one attempt (connect, send, wait for and read the answer) when
/// `indexer.indexerRequestTimeout` is not set: a server that accepts a request and never
/// answers fails that attempt (retried as a failure without a status) instead of hanging.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest response body read (bulk responses of big batches).
const MAX_BODY: u64 = 512 * 1024 * 1024;

/// A checked base URL: no trailing slash, credentials from `user:pass@` moved out.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseUrl {
    pub url: String,
    pub credentials: Option<(String, String)>,
}

/// Why a value is not a usable base URL ([`parse_url`]).
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("{value:?} is not a URL (expected http://host:port)")]
    NotAUrl { value: String },
    #[error("{value:?} must start with http:// or https://")]
    Scheme { value: String },
    #[error("{value:?} has no host")]
    NoHost { value: String },
    #[error("{value:?} is not a valid URL: {source}")]
    Invalid {
        value: String,
        #[source]
        source: ureq::http::uri::InvalidUri,
    },
}

/// Checks `value` is an absolute http(s) URL with a host.
pub fn parse_url(value: &str) -> Result<BaseUrl, UrlError> {
    let (scheme, rest) = value.split_once("://").ok_or_else(|| UrlError::NotAUrl {
        value: value.to_string(),
    })?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(UrlError::Scheme {
            value: value.to_string(),
        });
    }
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (credentials, host) = match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let (u, p) = user_info.split_once(':').unwrap_or((user_info, ""));
            (Some((u.to_string(), p.to_string())), host)
        }
        None => (None, authority),
    };
    if host.is_empty() || host.starts_with(':') {
        return Err(UrlError::NoHost {
            value: value.to_string(),
        });
    }
    let url = format!("{scheme}://{host}{path}");
    url.parse::<ureq::http::Uri>()
        .map_err(|source| UrlError::Invalid {
            value: value.to_string(),
            source,
        })?;
    Ok(BaseUrl {
        url: url.trim_end_matches('/').to_string(),
        credentials,
    })
}

/// An option holding one base URL (a backend's `url`), checked as it is read.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpUrl(pub BaseUrl);

impl OptionValue for HttpUrl {
    fn kind() -> Kind {
        Kind::String
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.string(key)? {
            None => Ok(None),
            Some(u) => parse_url(&u)
                .map(|b| Some(HttpUrl(b)))
                .map_err(|e| config.error(key, e.to_string())),
        }
    }
}

/// An option holding a base URL or a list of them (Solr's nodes), at least one, each checked
/// as it is read.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpUrls(pub Vec<BaseUrl>);

impl OptionValue for HttpUrls {
    fn kind() -> Kind {
        Kind::StringOrList
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(urls) = config.strings(key)? else {
            return Ok(None);
        };
        if urls.is_empty() {
            return Err(config.error(key, "must name a URL"));
        }
        let mut bases = Vec::with_capacity(urls.len());
        let mut problems = Vec::new();
        for u in &urls {
            match parse_url(u) {
                Ok(b) => bases.push(b),
                Err(e) => problems.push(e.to_string()),
            }
        }
        if problems.is_empty() {
            Ok(Some(HttpUrls(bases)))
        } else {
            Err(config.error(key, problems.join("; ")))
        }
    }
}

/// Percent-encodes a path segment or query value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// How requests authenticate.
#[derive(Debug, Clone, PartialEq)]
pub enum Auth {
    None,
    Basic(String, String),
    /// A header carrying a key (`Authorization: ApiKey ...`, `X-TYPESENSE-API-KEY: ...`).
    Header(&'static str, String),
}

/// An HTTP answer: its status and body text.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    /// The `Retry-After` header in seconds (429 / 503), when the server sent one.
    pub retry_after: Option<Duration>,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// An HTTP answer kept as bytes ([`HttpClient::get_bytes`]).
#[derive(Debug, Clone)]
pub struct BytesReply {
    pub status: u16,
    pub body: Vec<u8>,
}

/// One attempt that got no answer ([`HttpClient::once`], [`HttpClient::get_bytes`]): a request
/// that cannot be built, a refused, reset or timed-out connection, or an answer that cannot be
/// read.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("bad request to {url}: {source}")]
    Build {
        url: String,
        #[source]
        source: ureq::http::Error,
    },
    #[error("{0}")]
    Transport(#[from] ureq::Error),
    #[error("reading the answer of {url} failed: {source}")]
    Read {
        url: String,
        #[source]
        source: ureq::Error,
    },
    #[error("reading the answer of {url} failed: {source}")]
    ReadBytes {
        url: String,
        #[source]
        source: std::io::Error,
    },
}

/// One blocking client for one backend.
pub struct HttpClient {
    /// The backend's name for messages ("OpenSearch").
    pub name: &'static str,
    agent: Agent,
    auth: Option<(String, String)>,
    pub retry: RetryPolicy,
    /// Whole-request limit (connect, send, wait, read); none when unset.
    timeout: Option<Duration>,
}

impl HttpClient {
    pub fn new(
        name: &'static str,
        retry: RetryPolicy,
        connect_timeout: Option<Duration>,
        accept_invalid_cert: bool,
        auth: Auth,
    ) -> Self {
        let tls = ureq::tls::TlsConfig::builder()
            .disable_verification(accept_invalid_cert)
            .build();
        let agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)))
            .tls_config(tls)
            .build()
            .new_agent();
        let auth = match auth {
            Auth::None => None,
            Auth::Basic(user, pass) => {
                use base64::Engine;
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                Some(("Authorization".to_string(), format!("Basic {token}")))
            }
            Auth::Header(name, value) => Some((name.to_string(), value)),
        };
        HttpClient {
            name,
            agent,
            auth,
            retry,
            timeout: None,
        }
    }

    /// Limits each attempt (connect, send, wait for and read the answer) to `timeout`; an
    /// attempt that takes longer fails without a response (retried like a refused connection).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// One attempt. `Err` is a failure without a response (refused, reset, timed out).
    pub fn once(
        &self,
        method: &str,
        url: &str,
        content_type: &str,
        body: Option<&str>,
    ) -> Result<Reply, RequestError> {
        let mut builder = self
            .builder(method, url, &[])
            .header("Accept", "application/json");
        if body.is_some() {
            builder = builder.header("Content-Type", content_type);
        }
        let result = match body {
            Some(b) => builder.body(b).map(|r| self.run(r, None)),
            // GET / DELETE without a body.
            None => builder.body(()).map(|r| self.run(r, None)),
        }
        .map_err(|source| RequestError::Build {
            url: url.to_string(),
            source,
        })?;
        let mut response = result?;
        let status = response.status().as_u16();
        // Only the delay-seconds form; an HTTP date falls back to the policy's backoff.
        let retry_after = response
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_string()
            .map_err(|source| RequestError::Read {
                url: url.to_string(),
                source,
            })?;
        Ok(Reply {
            status,
            body,
            retry_after,
        })
    }

    /// One GET whose answer is kept as bytes (the FetchUri stage): `headers` are sent as given,
    /// redirects are followed (up to 10), at most `max_bytes` of the body are read (the rest is
    /// left unread), and `read_timeout`, when set, bounds each wait for data from the server.
    /// `Err` is a failure without a response (bad URL, refused, reset, timed out).
    pub fn get_bytes(
        &self,
        url: &str,
        headers: &[(String, String)],
        max_bytes: u64,
        read_timeout: Option<Duration>,
    ) -> Result<BytesReply, RequestError> {
        use std::io::Read;
        let request = self
            .builder("GET", url, headers)
            .body(())
            .map_err(|source| RequestError::Build {
                url: url.to_string(),
                source,
            })?;
        let mut response = self.run(request, read_timeout)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(max_bytes)
            .read_to_end(&mut body)
            .map_err(|source| RequestError::ReadBytes {
                url: url.to_string(),
                source,
            })?;
        Ok(BytesReply { status, body })
    }

    /// A request with the client's authentication and `headers` as given.
    fn builder(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
    ) -> ureq::http::request::Builder {
        let mut builder = ureq::http::Request::builder().method(method).uri(url);
        if let Some((k, v)) = &self.auth {
            builder = builder.header(k.as_str(), v.as_str());
        }
        for (k, v) in headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        builder
    }

    /// Sends a built request within the client's whole-request limit and, when set,
    /// `read_timeout` per wait for data.
    fn run(
        &self,
        request: ureq::http::Request<impl ureq::AsSendBody>,
        read_timeout: Option<Duration>,
    ) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(self.timeout)
            .timeout_per_read(read_timeout)
            .build();
        self.agent.run(request)
    }

    /// One POST of a binary body (the OTLP trace exporter's protobuf) with `headers` sent as
    /// given; the answer's body is read as text. `Err` is a failure without a response.
    pub fn post_bytes(
        &self,
        url: &str,
        content_type: &str,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Result<Reply, RequestError> {
        let request = self
            .builder("POST", url, headers)
            .header("Content-Type", content_type)
            .body(body)
            .map_err(|source| RequestError::Build {
                url: url.to_string(),
                source,
            })?;
        let mut response = self.run(request, None)?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_string()
            .unwrap_or_default();
        Ok(Reply {
            status,
            body,
            retry_after: None,
        })
    }

    /// Sends with retries on retryable statuses and connection failures. Returns the final
    /// answer (any status the policy does not retry), or the last error once retries run out.
    pub fn send(
        &self,
        method: &str,
        url: &str,
        content_type: &str,
        body: Option<&str>,
    ) -> Result<Reply, HttpError> {
        let mut attempt = 0u32;
        loop {
            let result = self.once(method, url, content_type, body);
            let (status, retry_after) = match &result {
                Ok(r) if r.ok() => return result.map_err(|e| HttpError::new(e.to_string())),
                Ok(r) => (Some(r.status), r.retry_after),
                Err(_) => (None, None),
            };
            if !self.retry.retries(status) {
                return result.map_err(|e| {
                    HttpError::new(format!("{} request {method} {url} failed: {e}", self.name))
                });
            }
            if attempt >= self.retry.max_retries {
                let last = match result {
                    Ok(r) => format!("HTTP {}: {}", r.status, snippet(&r.body)),
                    Err(e) => e.to_string(),
                };
                return Err(HttpError::new(format!(
                    "{} request {method} {url} failed after {} attempts: {last}",
                    self.name,
                    attempt + 1
                )));
            }
            attempt += 1;
            if let Some(counter) = &self.retry.counter {
                counter.inc();
            }
            let wait = self.retry.wait_after(attempt, retry_after);
            tracing::warn!(
                "{} request {method} {url} failed ({}); retry {attempt}/{} in {} ms",
                self.name,
                status.map_or("no response".to_string(), |s| format!("HTTP {s}")),
                self.retry.max_retries,
                wait.as_millis()
            );
            std::thread::sleep(wait);
        }
    }
}

/// The start of a response body, for messages.
pub fn snippet(body: &str) -> String {
    const MAX: usize = 300;
    let t = body.trim();
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &t[..i]),
        None => t.to_string(),
    }
}

/// The warning an indexer backend on this client logs once per run (by the runner, not per
/// backend, connector or thread) when its block (at `block_path`, for the `kind` backend)
/// turns the TLS check off (`acceptInvalidCert: true`).
pub fn insecure_warning(accept_invalid_cert: bool, block_path: &str, kind: &str) -> Option<String> {
    accept_invalid_cert.then(|| {
        format!(
            "{block_path}.acceptInvalidCert is true: TLS certificates of the {kind} server are NOT verified (any certificate, any host name is accepted)"
        )
    })
}

#[cfg(any(test, feature = "testing"))]
pub mod mock;

#[cfg(test)]
mod tests {
    use super::*;
    use lucille_core::config::ConfigErrors;
    use serde_json::json;

    fn policy(v: serde_json::Value) -> Result<RetryPolicy, ConfigErrors> {
        let serde_json::Value::Object(m) = v else {
            panic!()
        };
        let c = ComponentConfig::new(m, "indexer");
        let mut errors = Vec::new();
        let p = <RetryOptions as lucille_core::config::Options>::read(&c, &mut errors)
            .map(|o| o.policy(&c, "indexer.maxRetries", 0, &mut errors));
        match p {
            Some(p) if errors.is_empty() => Ok(p),
            _ if errors.is_empty() => unreachable!("a failed read reports its problem"),
            _ => Err(ConfigErrors(errors)),
        }
    }

    #[test]
    fn retry_keys_follow_lucille() {
        assert_eq!(policy(json!({})).unwrap().max_retries, 0);
        assert!(!policy(json!({})).unwrap().retries(Some(503)));
        let p = policy(json!({"maxRetries": 3, "retryWaitDurationMs": 100,
            "retryMaxWaitDurationMs": 250, "retryRandomizationFactor": 0.0,
            "retryableStatusCodes": [503]}))
        .unwrap();
        assert!(p.retries(Some(503)) && !p.retries(Some(429)) && !p.retries(None));
        let waits: Vec<u128> = (1..=3).map(|r| p.wait(r).as_millis()).collect();
        assert_eq!(waits, [100, 200, 250]);
        let e = policy(json!({"retryWaitDurationMs": 5, "retryableStatusCodes": [503]}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("retryWaitDurationMs: needs indexer.maxRetries"),
            "{e}"
        );
        assert!(e.contains("retryableStatusCodes: needs"), "{e}");
        let e = policy(
            json!({"maxRetries": 0, "retryableStatusCodes": [], "retryRandomizationFactor": 2}),
        )
        .unwrap_err()
        .to_string();
        for part in [
            "maxRetries: must be a positive",
            "must not be empty",
            "less than 1",
        ] {
            assert!(e.contains(part), "{part} missing in {e}");
        }
        let d = policy(json!({"maxRetries": 1})).unwrap();
        assert!(d.retries(None) && d.retries(Some(429)) && !d.retries(Some(400)));
    }

    #[test]
    fn urls_are_checked_and_credentials_split_off() {
        assert_eq!(
            parse_url("https://admin:secret@localhost:9200/").unwrap(),
            BaseUrl {
                url: "https://localhost:9200".into(),
                credentials: Some(("admin".into(), "secret".into()))
            }
        );
        assert_eq!(
            parse_url("http://h:8983/solr").unwrap().url,
            "http://h:8983/solr"
        );
        assert!(parse_url("localhost:9200").is_err());
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://").is_err());
        assert_eq!(encode("a b/é"), "a%20b%2F%C3%A9");
    }

    #[test]
    fn url_and_request_errors_keep_their_messages() {
        let msg = |v: &str| parse_url(v).unwrap_err().to_string();
        assert_eq!(
            msg("localhost:9200"),
            "\"localhost:9200\" is not a URL (expected http://host:port)"
        );
        assert_eq!(
            msg("ftp://x"),
            "\"ftp://x\" must start with http:// or https://"
        );
        assert_eq!(msg("http://"), "\"http://\" has no host");
        assert_eq!(msg("http://:80/x"), "\"http://:80/x\" has no host");
        let bad = "http://a b";
        let e = "http://a b".parse::<ureq::http::Uri>().unwrap_err();
        assert_eq!(msg(bad), format!("\"http://a b\" is not a valid URL: {e}"));

        let client = HttpClient::new("Test", RetryPolicy::default(), None, false, Auth::None);
        let url = "http://a b/";
        let e = client.once("GET", url, "", None).unwrap_err();
        assert!(matches!(e, RequestError::Build { .. }), "{e:?}");
        let build = ureq::http::Request::builder()
            .uri(url)
            .body(())
            .unwrap_err();
        assert_eq!(e.to_string(), format!("bad request to {url}: {build}"));
        let e = client.get_bytes(url, &[], 10, None).unwrap_err();
        assert_eq!(e.to_string(), format!("bad request to {url}: {build}"));
    }
}
