//! Stages that call a model server over HTTP: `OpenAIEmbed` (the OpenAI embeddings API, which
//! Ollama, vLLM, TEI and llama.cpp servers speak too), `OllamaEmbed` (Ollama's own embeddings
//! API) and `PromptOllama` (Ollama's chat API). All use the project's one HTTP client
//! (`indexer::http`): a whole-request timeout, and retries with exponential, jittered backoff on
//! the statuses of `retryableStatusCodes` (default 429, 502, 503, 504 and -1 for "no
//! response"), with the indexer's retry keys.
//!
//! The two embedding stages are one [`RemoteEmbed`] stage each, over their [`EmbedServer`]
//! (the request); they share [`Embedding`] (what is embedded and where the vectors go, in
//! batches of documents and their attached children), [`post_json`] (one request, an error
//! status turned into the server's message) and [`EmbedError`] / [`AnswerProblem`] (why a
//! request gave no vectors).

pub mod ollama_embed;
pub mod openai_embed;
pub mod prompt_ollama;

use std::time::Duration;

use serde_json::Value;

use crate::config::{ComponentConfig, ConfigError};
use crate::document::Document;
pub(crate) use crate::http::RetryOptions;
use crate::http::{snippet, Auth, HttpClient, HttpError};
use crate::stage::field_util::check_writable;
use crate::stage::{Stage, StageFailure, StageResult};

/// Retries when `maxRetries` is not set: a model server that answers 429 or is briefly
/// unavailable should not fail the documents at once.
const DEFAULT_MAX_RETRIES: u32 = 3;

/// The client of a stage whose server is at `url` (the value of its key `url_key`, an error
/// there when it is not a URL): `timeout` (whole request) and the retry keys. Errors join
/// `errors`; `None` when the retry keys are wrong.
pub(crate) fn client(
    name: &'static str,
    config: &ComponentConfig,
    (url_key, url): (&str, &str),
    retry: RetryOptions,
    timeout: Duration,
    auth: Auth,
    errors: &mut Vec<ConfigError>,
) -> Option<HttpClient> {
    if let Err(e) = crate::http::parse_url(url) {
        errors.push(config.error(url_key, e.to_string()));
    }
    let before = errors.len();
    let retry = retry.policy(config, "maxRetries", DEFAULT_MAX_RETRIES, errors);
    (errors.len() == before)
        .then(|| HttpClient::new(name, retry, None, false, auth).with_timeout(timeout))
}

/// A whole number of seconds, checked positive by its option's `min`.
pub(crate) fn seconds(n: i64) -> Duration {
    Duration::from_secs(n.unsigned_abs())
}

/// The message of an error answer: the string at `pointer` of its JSON (`/error/message` for
/// OpenAI, `/error` for Ollama), else the body's start.
pub(crate) fn server_message(body: &str, pointer: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.pointer(pointer).and_then(Value::as_str).map(String::from))
        .unwrap_or_else(|| snippet(body))
}

/// Why a request gave no vectors: every document of the request fails with it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EmbedError {
    /// Refused, timed out, or a retried status once the retries ran out.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// An error status: the server's message ([`server_message`]).
    #[error("{endpoint} answered HTTP {status}: {message}")]
    Status {
        endpoint: String,
        status: u16,
        message: String,
    },
    /// A success status whose body is not the embeddings of the inputs.
    #[error("unexpected embeddings answer ({problem}): {body}")]
    Answer {
        problem: AnswerProblem,
        /// The body's start ([`snippet`]).
        body: String,
    },
}

impl EmbedError {
    /// An unreadable answer, with the start of its body.
    pub(crate) fn answer(problem: AnswerProblem, body: &str) -> Self {
        EmbedError::Answer {
            problem,
            body: snippet(body),
        }
    }
}

/// What is wrong with an embeddings answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AnswerProblem {
    #[error("not JSON")]
    NotJson,
    /// The answer has no list under this key (`data`, `embeddings`).
    #[error("no {0} list")]
    NoList(&'static str),
    /// `found` embeddings for `expected` inputs.
    #[error("{found} embeddings for {expected} inputs")]
    Count { found: usize, expected: usize },
    #[error("index out of range")]
    IndexOutOfRange,
    #[error("an embedding is not a list of numbers")]
    NotNumbers,
    /// An input that no item of the answer is for.
    #[error("an input has no embedding")]
    Missing,
}

/// A JSON list of numbers as float32, or None when an item is not a number.
pub(crate) fn floats(v: &Value) -> Option<Vec<f32>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_f64().map(|f| f as f32))
        .collect()
}

/// Posts `body` as JSON to `endpoint` (with the client's retries): the answer's text on a
/// success status, else [`EmbedError::Status`] with the message at `error_pointer`.
pub(crate) fn post_json(
    client: &HttpClient,
    endpoint: &str,
    body: &Value,
    error_pointer: &str,
) -> Result<String, EmbedError> {
    let reply = client.send(
        "POST",
        endpoint,
        "application/json",
        Some(&body.to_string()),
    )?;
    if !reply.ok() {
        return Err(EmbedError::Status {
            endpoint: endpoint.to_string(),
            status: reply.status,
            message: server_message(&reply.body, error_pointer),
        });
    }
    Ok(reply.body)
}

/// An embeddings server, as an embedding stage calls it.
pub(crate) trait EmbedServer: Send {
    /// One request for `texts`: their vectors, in order.
    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// An embedding stage: what it embeds and where ([`Embedding`]), through its server.
pub(crate) struct RemoteEmbed<S> {
    pub embedding: Embedding,
    pub server: S,
}

impl<S: EmbedServer> Stage for RemoteEmbed<S> {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        self.process_batch(std::slice::from_mut(doc))
            .pop()
            .unwrap_or(Ok(None))
    }

    fn batch_size(&self) -> usize {
        self.embedding.batch_size
    }

    fn process_batch(&mut self, docs: &mut [Document]) -> Vec<StageResult> {
        let server = &self.server;
        self.embedding
            .process_batch(docs, |texts| server.request(texts))
    }
}

/// What an embedding stage embeds and where the vectors go (the keys OpenAIEmbed and
/// OllamaEmbed share: `source`, `dest`, `embedDocument`, `embedChildren`, `batchSize`).
pub(crate) struct Embedding {
    pub source: String,
    pub dest: String,
    pub embed_document: bool,
    pub embed_children: bool,
    /// Texts sent in one request.
    pub batch_size: usize,
}

/// Where a text to embed lives: a document of the batch, or a child attached to one.
#[derive(Clone, Copy)]
enum Target {
    Doc(usize),
    Child(usize, usize),
}

impl Embedding {
    /// The problems of the keys: nothing to embed, or a `dest` that cannot be written.
    pub(crate) fn check(&self, config: &ComponentConfig, errors: &mut Vec<ConfigError>) {
        if !self.embed_document && !self.embed_children {
            errors.push(config.error(
                "embedDocument",
                "embedDocument and embedChildren are both false: nothing would be embedded",
            ));
        }
        if let Err(e) = check_writable(config, "dest", &self.dest) {
            errors.push(e);
        }
    }

    /// The text of `source` (its first value, as Lucille's `getString`), or None when missing
    /// or blank: such a document is not sent.
    fn text(&self, doc: &Document) -> Option<String> {
        doc.get_string(&self.source)
            .ok()
            .flatten()
            .filter(|t| !t.trim().is_empty())
    }

    /// Embeds the texts of `docs` (and/or of their attached children) through `request`, up to
    /// `batch_size` texts per call, in order. A call that fails fails every document whose
    /// text (or whose child's text) was in it, with its message.
    pub(crate) fn process_batch(
        &self,
        docs: &mut [Document],
        mut request: impl FnMut(&[String]) -> Result<Vec<Vec<f32>>, EmbedError>,
    ) -> Vec<StageResult> {
        let mut results: Vec<StageResult> = (0..docs.len()).map(|_| Ok(None)).collect();
        let mut children: Vec<Vec<Document>> = vec![Vec::new(); docs.len()];
        let mut targets: Vec<(Target, String)> = Vec::new();
        for (i, doc) in docs.iter_mut().enumerate() {
            if self.embed_document {
                if let Some(t) = self.text(doc) {
                    targets.push((Target::Doc(i), t));
                }
            }
            if self.embed_children && doc.has_children() {
                children[i] = doc.take_children();
                for (j, child) in children[i].iter().enumerate() {
                    if let Some(t) = self.text(child) {
                        targets.push((Target::Child(i, j), t));
                    }
                }
            }
        }
        for group in targets.chunks(self.batch_size.max(1)) {
            let texts: Vec<String> = group.iter().map(|(_, t)| t.clone()).collect();
            let vectors = request(&texts).and_then(|v| {
                // The parsers check this; a guard so a short answer never leaves a text out.
                if v.len() == texts.len() {
                    Ok(v)
                } else {
                    Err(EmbedError::Answer {
                        problem: AnswerProblem::Count {
                            found: v.len(),
                            expected: texts.len(),
                        },
                        body: String::new(),
                    })
                }
            });
            match vectors {
                Ok(vectors) => {
                    for ((target, _), vector) in group.iter().zip(vectors) {
                        let (owner, written) = match *target {
                            Target::Doc(i) => (i, docs[i].set_vector(&self.dest, &vector)),
                            Target::Child(i, j) => {
                                (i, children[i][j].set_vector(&self.dest, &vector))
                            }
                        };
                        if let Err(e) = written {
                            results[owner] = Err(e.into());
                        }
                    }
                }
                Err(e) => {
                    for (target, _) in group {
                        let (Target::Doc(i) | Target::Child(i, _)) = *target;
                        results[i] = Err(StageFailure::msg(format!("embedding failed: {e}")));
                    }
                }
            }
        }
        for (doc, kids) in docs.iter_mut().zip(children) {
            for child in kids {
                doc.add_child(child);
            }
        }
        results
    }
}

#[cfg(test)]
mod tests;
