//! OpenAIEmbed (Lucille's stage and keys): embeds the text of `source` through an
//! OpenAI-compatible embeddings endpoint (`POST {url}/embeddings` with
//! `{"model", "input": [texts], "encoding_format": "float"}` and `dimensions` when set) and
//! stores each vector in `dest` as float32 numbers, as `Document.set_vector` does.
//!
//! Keys (Lucille's): `source`, `dest` (default `embeddings`), `embedDocument` and
//! `embedChildren` (both required; at least one true: embed the document itself, and/or the
//! children attached to it), `apiKey` (required, sent as `Authorization: Bearer`),
//! `modelName` (default `text-embedding-3-small`), `dimensions`; older Lucille versions'
//! `embed_document`, `embed_children`, `api_key` and `model_name` are accepted too. New here: `url` (the API base,
//! default `https://api.openai.com/v1`; e.g. `http://localhost:11434/v1` for Ollama),
//! `batchSize` (documents whose texts go in one request, default 32; the pipeline hands the
//! stage that many documents at once), `timeout` (seconds per request, default 60) and the
//! retry keys (`maxRetries`, default 3 here, `retryWaitDurationMs`, `retryMaxWaitDurationMs`,
//! `retryRandomizationFactor`, `retryableStatusCodes`), as for the HTTP indexers.
//!
//! A document (or child) whose `source` is missing or blank is not sent. A request that fails
//! for good (an error status, or retries used up) fails every document of the request with
//! the server's message. Where we differ from Lucille: Lucille cuts texts to 8191 tokens with
//! OpenAI's tokenizer before sending; here texts are sent whole and a server that rejects an
//! over-long input fails those documents (chunk long texts with ChunkText first). Lucille
//! accepts only the three OpenAI model names; any `modelName` the server knows is accepted.

use serde_json::{json, Value};

use super::{
    client, floats, post_json, seconds, AnswerProblem, EmbedError, EmbedServer, Embedding,
    RemoteEmbed, RetryOptions,
};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::http::{Auth, HttpClient};
use crate::stage::{Stage, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "OpenAIEmbed",
    spec: OpenAIEmbedOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Embeds the text of a field through an OpenAI-compatible embeddings endpoint and stores the
/// vector on the document (or on its attached children).
#[derive(Options)]
#[options(base = Spec::stage())]
struct OpenAIEmbedOptions {
    /// The field whose text is embedded (a document without it, or with blank text, is not
    /// sent).
    source: String,
    /// true: the document itself is embedded.
    #[option(alias = "embed_document")]
    embed_document: bool,
    /// true: the children attached to the document are embedded.
    #[option(alias = "embed_children")]
    embed_children: bool,
    /// The API key, sent as Authorization: Bearer.
    #[option(alias = "api_key")]
    api_key: String,
    /// The field the vector is written to (float32 numbers).
    #[option(default = "embeddings")]
    dest: String,
    /// The embedding model the server knows.
    #[option(default = "text-embedding-3-small", alias = "model_name")]
    model_name: String,
    /// The vectors' size, sent to the server (default: the model's).
    #[option(min = 1)]
    dimensions: Option<i64>,
    /// The API's base URL (e.g. http://localhost:11434/v1 for Ollama).
    #[option(default = "https://api.openai.com/v1")]
    url: String,
    /// Documents whose texts go in one request.
    #[option(default = 32, min = 1)]
    batch_size: usize,
    /// Seconds a request may take.
    #[option(default = 60, min = 1)]
    timeout: i64,
    /// The retry keys (maxRetries, retryWaitDurationMs, retryMaxWaitDurationMs,
    /// retryRandomizationFactor, retryableStatusCodes).
    #[option(flatten)]
    retry: RetryOptions,
}

/// The server side of the stage (a [`RemoteEmbed`]).
struct OpenAIEmbed {
    model: String,
    dimensions: Option<u64>,
    endpoint: String,
    client: HttpClient,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = OpenAIEmbedOptions::from_config(config)?;
    let mut errors = Vec::new();
    let embedding = Embedding {
        source: o.source,
        dest: o.dest,
        embed_document: o.embed_document,
        embed_children: o.embed_children,
        batch_size: o.batch_size,
    };
    embedding.check(config, &mut errors);
    if o.api_key.trim().is_empty() {
        errors.push(config.error("apiKey", "is empty"));
    }
    let client = client(
        "OpenAIEmbed",
        config,
        ("url", &o.url),
        o.retry,
        seconds(o.timeout),
        Auth::Header("Authorization", format!("Bearer {}", o.api_key)),
        &mut errors,
    );
    match client {
        Some(client) if errors.is_empty() => Ok(Box::new(RemoteEmbed {
            embedding,
            server: OpenAIEmbed {
                model: o.model_name,
                // Positive: checked by its `min`.
                dimensions: o.dimensions.map(i64::unsigned_abs),
                endpoint: format!("{}/embeddings", o.url.trim_end_matches('/')),
                client,
            },
        })),
        _ => Err(ConfigErrors(errors)),
    }
}

impl EmbedServer for OpenAIEmbed {
    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(d) = self.dimensions {
            body["dimensions"] = json!(d);
        }
        let answer = post_json(&self.client, &self.endpoint, &body, "/error/message")?;
        parse_embeddings(&answer, texts.len())
    }
}

/// The vectors of an embeddings answer, ordered by their `index`.
fn parse_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = |problem: AnswerProblem| EmbedError::answer(problem, body);
    let json: Value = serde_json::from_str(body).map_err(|_| bad(AnswerProblem::NotJson))?;
    let data = json
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(AnswerProblem::NoList("data")))?;
    if data.len() != expected {
        return Err(bad(AnswerProblem::Count {
            found: data.len(),
            expected,
        }));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(position, |i| usize::try_from(i).unwrap_or(usize::MAX));
        let vector = item.get("embedding").and_then(floats);
        let slot = out
            .get_mut(index)
            .ok_or_else(|| bad(AnswerProblem::IndexOutOfRange))?;
        *slot = Some(vector.ok_or_else(|| bad(AnswerProblem::NotNumbers))?);
    }
    out.into_iter()
        .map(|v| v.ok_or_else(|| bad(AnswerProblem::Missing)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_embeddings;

    #[test]
    fn bad_answers_say_what_is_wrong_and_show_the_body() {
        let err = |body: &str, expected| parse_embeddings(body, expected).unwrap_err().to_string();
        assert_eq!(
            err("<html>", 1),
            "unexpected embeddings answer (not JSON): <html>"
        );
        assert_eq!(
            err(r#"{"data": []}"#, 2),
            r#"unexpected embeddings answer (0 embeddings for 2 inputs): {"data": []}"#
        );
        assert!(err("{}", 1).contains("(no data list)"));
        assert!(err(r#"{"data": [{"index": 5, "embedding": [1]}]}"#, 1)
            .contains("(index out of range)"));
        assert!(err(r#"{"data": [{"embedding": ["a"]}]}"#, 1)
            .contains("(an embedding is not a list of numbers)"));
        assert!(err(
            r#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}"#,
            2
        )
        .contains("(an input has no embedding)"));
        assert_eq!(
            parse_embeddings(
                r#"{"data": [{"index": 1, "embedding": [2]}, {"index": 0, "embedding": [1]}]}"#,
                2
            )
            .unwrap(),
            vec![vec![1.0], vec![2.0]]
        );
    }
}
