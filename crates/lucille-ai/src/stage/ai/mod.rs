//! Stages that call a model server over HTTP: `OpenAIEmbed` (the OpenAI embeddings API, which
//! Ollama, vLLM, TEI and llama.cpp servers speak too) and `PromptOllama` (Ollama's chat API).
//! Both use the project's one HTTP client (`indexer::http`): a whole-request timeout, and
//! retries with exponential, jittered backoff on the statuses of `retryableStatusCodes`
//! (default 429, 502, 503, 504 and -1 for "no response"), with the indexer's retry keys.

pub mod openai_embed;
pub mod prompt_ollama;

use std::time::Duration;

use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::http::{Auth, HttpClient, RetryPolicy};

/// Retries when `maxRetries` is not set: a model server that answers 429 or is briefly
/// unavailable should not fail the documents at once.
const DEFAULT_MAX_RETRIES: u32 = 3;

/// The retry keys, shared with the HTTP indexers.
pub(crate) fn with_retry_keys(spec: Spec) -> Spec {
    spec.optional("maxRetries", Kind::Integer)
        .optional("retryWaitDurationMs", Kind::Integer)
        .optional("retryMaxWaitDurationMs", Kind::Integer)
        .optional("retryRandomizationFactor", Kind::Number)
        .optional("retryableStatusCodes", Kind::List)
}

/// The client of a stage: `timeout` (whole request) and the retry keys.
pub(crate) fn client(
    name: &'static str,
    config: &ComponentConfig,
    timeout: Duration,
    auth: Auth,
) -> Result<HttpClient, ConfigError> {
    let mut errors = Vec::new();
    let mut retry = if config.has("maxRetries") {
        RetryPolicy::from_config(config, &mut errors)
    } else {
        for key in [
            "retryWaitDurationMs",
            "retryMaxWaitDurationMs",
            "retryRandomizationFactor",
            "retryableStatusCodes",
        ] {
            if config.has(key) {
                errors.push(config.error(key, "needs maxRetries to be set"));
            }
        }
        RetryPolicy::default()
    };
    if !config.has("maxRetries") {
        retry.max_retries = DEFAULT_MAX_RETRIES;
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    Ok(HttpClient::new(name, retry, None, false, auth).with_timeout(timeout))
}

/// A positive whole number of seconds from `key`, or `default`.
pub(crate) fn seconds(
    config: &ComponentConfig,
    key: &str,
    default: u64,
) -> Result<Duration, ConfigError> {
    match config.i64(key)? {
        None => Ok(Duration::from_secs(default)),
        Some(n) if n > 0 => Ok(Duration::from_secs(n as u64)),
        Some(_) => Err(config.error(key, "must be a positive number of seconds")),
    }
}

#[cfg(test)]
mod tests;
