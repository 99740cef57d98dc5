//! Stages that query a search engine per document: `QueryOpensearch` (a search template run
//! for each document, a part of the answer stored on it) and `ElasticsearchLookup` (the
//! indexed copy of the document fetched by id, fields copied from it). Both reach the engine
//! through the project's one HTTP client (`indexer::http`), with the connection block the
//! indexers use (`opensearch { }` / `elasticsearch { }`: `url`, credentials in the URL or as
//! `username` / `password`, `index`, `acceptInvalidCert`).

pub mod elasticsearch_lookup;
pub mod query_opensearch;

use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{ComponentConfig, ConfigError, Options, Spec};
use crate::http::{snippet, Auth, HttpClient, HttpUrl, RetryPolicy};
use crate::stage::StageFailure;

/// Attempts after the first for a request that gets no answer or a 429 / 502 / 503 / 504.
const RETRIES: u32 = 3;
/// Whole-request limit.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A search engine reached from a stage.
pub(crate) struct Engine {
    pub client: HttpClient,
    /// The base URL, without credentials or a trailing slash.
    pub url: String,
    pub index: String,
}

/// An engine's answer as JSON; `product` names the engine in the error.
pub(crate) fn json_answer(product: &str, body: &str) -> Result<serde_json::Value, StageFailure> {
    serde_json::from_str(body).map_err(|e| {
        StageFailure::msg(format!(
            "{product}'s answer is not JSON ({e}): {}",
            snippet(body)
        ))
    })
}

/// The connection block of a search stage (`opensearch { }`, `elasticsearch { }`), as the
/// indexers' blocks.
#[derive(Options)]
#[options(extend = unsupported_engine_keys)]
struct EngineOptions {
    /// The engine's base URL (http:// or https://host:port); credentials may be given in it
    /// as user:password@.
    url: HttpUrl,
    /// The index queried.
    index: String,
    /// true: the server's TLS certificate is not verified (any certificate, any host name).
    #[option(default = false)]
    accept_invalid_cert: bool,
    /// The user for basic authentication (overrides credentials in the URL).
    username: Option<String>,
    /// The password of `username` (default empty).
    password: Option<String>,
}

/// Lucille's block keys not done here.
fn unsupported_engine_keys(spec: Spec) -> Spec {
    spec.unsupported(
        "enableCompression",
        "request compression is not done here; leave it out (answers are read either way)",
    )
}

/// The connection block `block` (`opensearch`, `elasticsearch`) of a stage config, whose
/// value is `map`: every problem of the block at once.
pub(crate) fn engine(
    config: &ComponentConfig,
    block: &str,
    map: Map<String, Value>,
    product: &'static str,
) -> Result<Engine, Vec<ConfigError>> {
    let settings =
        ComponentConfig::new(map, config.key_path(block)).with_paths(config.paths().clone());
    let o = EngineOptions::from_config(&settings)?;
    if o.index.is_empty() {
        return Err(vec![settings.error("index", "must not be empty")]);
    }
    let base = o.url.0;
    let auth = match (o.username, base.credentials) {
        (Some(user), _) => Auth::Basic(user, o.password.unwrap_or_default()),
        (None, Some((user, pass))) => Auth::Basic(user, pass),
        (None, None) => Auth::None,
    };
    let retry = RetryPolicy {
        max_retries: RETRIES,
        ..RetryPolicy::default()
    };
    let client =
        HttpClient::new(product, retry, None, o.accept_invalid_cert, auth).with_timeout(TIMEOUT);
    Ok(Engine {
        client,
        url: base.url,
        index: o.index,
    })
}

#[cfg(test)]
mod tests;
