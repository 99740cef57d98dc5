//! Stages that call a model server over HTTP: `OpenAIEmbed` (the OpenAI embeddings API, which
//! Ollama, vLLM, TEI and llama.cpp servers speak too) and `PromptOllama` (Ollama's chat API).
//! Both use the project's one HTTP client (`indexer::http`): a whole-request timeout, and
//! retries with exponential, jittered backoff on the statuses of `retryableStatusCodes`
//! (default 429, 502, 503, 504 and -1 for "no response"), with the indexer's retry keys.

pub mod openai_embed;
pub mod prompt_ollama;

use std::time::Duration;

use crate::config::{ComponentConfig, ConfigError};
pub(crate) use crate::http::RetryOptions;
use crate::http::{Auth, HttpClient};

/// Retries when `maxRetries` is not set: a model server that answers 429 or is briefly
/// unavailable should not fail the documents at once.
const DEFAULT_MAX_RETRIES: u32 = 3;

/// The client of a stage: `timeout` (whole request) and the retry keys.
pub(crate) fn client(
    name: &'static str,
    config: &ComponentConfig,
    retry: RetryOptions,
    timeout: Duration,
    auth: Auth,
) -> Result<HttpClient, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let retry = retry.policy(config, "maxRetries", DEFAULT_MAX_RETRIES, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(HttpClient::new(name, retry, None, false, auth).with_timeout(timeout))
}

/// A whole number of seconds, checked positive by its option's `min`.
pub(crate) fn seconds(n: i64) -> Duration {
    Duration::from_secs(n.unsigned_abs())
}

#[cfg(test)]
mod tests;
