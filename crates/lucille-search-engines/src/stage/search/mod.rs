//! Stages that query a search engine per document: `QueryOpensearch` (a search template run
//! for each document, a part of the answer stored on it) and `ElasticsearchLookup` (the
//! indexed copy of the document fetched by id, fields copied from it). Both reach the engine
//! through the project's one HTTP client (`indexer::http`), with the connection block the
//! indexers use (`opensearch { }` / `elasticsearch { }`: `url`, credentials in the URL or as
//! `username` / `password`, `index`, `acceptInvalidCert`).

pub mod elasticsearch_lookup;
pub mod query_opensearch;

use std::time::Duration;

use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::http::{parse_url, snippet, Auth, HttpClient, RetryPolicy};
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

/// The connection block `block` (`opensearch`, `elasticsearch`) of a stage config.
pub(crate) fn engine(
    config: &ComponentConfig,
    block: &str,
    product: &'static str,
) -> Result<Engine, ConfigError> {
    let Some(map) = config.object(block)? else {
        return Err(config.error(block, "missing required block (url and index)"));
    };
    let path = format!("{}.{block}", config.path());
    let spec = Spec::new()
        .required("url", Kind::String)
        .required("index", Kind::String)
        .optional("acceptInvalidCert", Kind::Bool)
        .optional("username", Kind::String)
        .optional("password", Kind::String)
        .unsupported(
            "enableCompression",
            "request compression is not done here; leave it out (answers are read either way)",
        );
    if let Some(e) = spec.validate(map, &path).into_iter().next() {
        return Err(e);
    }
    let settings = ComponentConfig::new(map.clone(), path).with_paths(config.paths().clone());
    let base = parse_url(&settings.require_string("url")?)
        .map_err(|e| settings.error("url", e.to_string()))?;
    let index = settings.require_string("index")?;
    if index.is_empty() {
        return Err(settings.error("index", "must not be empty"));
    }
    let auth = match (settings.string("username")?, base.credentials) {
        (Some(user), _) => Auth::Basic(user, settings.string("password")?.unwrap_or_default()),
        (None, Some((user, pass))) => Auth::Basic(user, pass),
        (None, None) => Auth::None,
    };
    let retry = RetryPolicy {
        max_retries: RETRIES,
        ..RetryPolicy::default()
    };
    let client = HttpClient::new(
        product,
        retry,
        None,
        settings.bool_or("acceptInvalidCert", false)?,
        auth,
    )
    .with_timeout(TIMEOUT);
    Ok(Engine {
        client,
        url: base.url,
        index,
    })
}

#[cfg(test)]
mod tests;
