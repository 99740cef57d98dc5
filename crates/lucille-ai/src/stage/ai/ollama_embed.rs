//! OllamaEmbed: embeds the text of `source` through an Ollama server's embeddings API
//! (`POST {hostURL}/api/embed` with `{"model", "input": [texts], "truncate"}`, plus
//! `keep_alive` and `options` when set; the answer's `embeddings` are the vectors, in the
//! order of the inputs) and stores each vector in `dest` as float32 numbers, as
//! `Document.set_vector` does.
//!
//! Keys: those of Lucille's open OllamaEmbed (kmwtechnology/lucille pull request 465):
//! `hostURL`, `modelName` and `source` (required), `dest` (default `embeddings`), `timeout`
//! (seconds per request; default 60 here, as OpenAIEmbed, where the pull request keeps its
//! client's 10: a batch of texts, or a model being loaded, takes longer); and, as OpenAIEmbed,
//! `embedDocument` (default true) and `embedChildren` (default false; at least one true),
//! `batchSize` (documents whose texts go in one request, default 32; the pipeline hands the
//! stage that many documents at once) and the retry keys (`maxRetries`, default 3,
//! `retryWaitDurationMs`, `retryMaxWaitDurationMs`, `retryRandomizationFactor`,
//! `retryableStatusCodes`). Ollama's own request fields: `truncate` (default true, Ollama's:
//! a text longer than the model's context is cut to it; false makes the server refuse it),
//! `keepAlive` (how long the server keeps the model loaded: a duration as Ollama reads it,
//! "5m", "1h30m", "0", or a number of seconds, negative for ever; the server's default when
//! unset) and `options` (model options such as `num_ctx`, sent as they are).
//!
//! A document (or child) whose `source` is missing or blank is not sent (its first value is
//! the text, as Lucille's `getString`). A request that fails for good (an error status, whose
//! `error` message is kept; an answer that is not JSON or has another number of embeddings
//! than inputs; a connection failure once the retries ran out) fails every document of the
//! request with that message.

use serde_json::{json, Map, Value};

use super::{
    client, floats, post_json, seconds, AnswerProblem, EmbedError, EmbedServer, Embedding,
    RemoteEmbed, RetryOptions,
};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::http::{Auth, HttpClient};
use crate::stage::{Stage, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "OllamaEmbed",
    spec: OllamaEmbedOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Embeds the text of a field through an Ollama server's embeddings API (/api/embed) and
/// stores the vector on the document (or on its attached children).
#[derive(Options)]
#[options(base = Spec::stage())]
struct OllamaEmbedOptions {
    /// The Ollama server's URL (http://host:11434).
    #[option(key = "hostURL")]
    host_url: String,
    /// The embedding model the server has pulled (e.g. nomic-embed-text).
    model_name: String,
    /// The field whose text is embedded (a document without it, or with blank text, is not
    /// sent).
    source: String,
    /// The field the vector is written to (float32 numbers).
    #[option(default = "embeddings")]
    dest: String,
    /// true: the document itself is embedded.
    #[option(default = true)]
    embed_document: bool,
    /// true: the children attached to the document are embedded.
    #[option(default = false)]
    embed_children: bool,
    /// Documents whose texts go in one request.
    #[option(default = 32, min = 1)]
    batch_size: usize,
    /// Seconds a request may take.
    #[option(default = 60, min = 1)]
    timeout: i64,
    /// true: a text longer than the model's context is cut to it by the server; false: the
    /// server refuses it and the document fails.
    #[option(default = true)]
    truncate: bool,
    /// How long the server keeps the model loaded after a request: a duration ("5m",
    /// "1h30m", "0") or a number of seconds (negative: for ever); the server's default when
    /// unset.
    keep_alive: Option<Value>,
    /// Model options sent with each request (e.g. { num_ctx: 2048 }).
    options: Option<Map<String, Value>>,
    /// The retry keys (maxRetries, retryWaitDurationMs, retryMaxWaitDurationMs,
    /// retryRandomizationFactor, retryableStatusCodes).
    #[option(flatten)]
    retry: RetryOptions,
}

/// The server side of the stage (a [`RemoteEmbed`]).
struct OllamaEmbed {
    model: String,
    truncate: bool,
    keep_alive: Option<Value>,
    options: Option<Map<String, Value>>,
    endpoint: String,
    client: HttpClient,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = OllamaEmbedOptions::from_config(config)?;
    let mut errors = Vec::new();
    let embedding = Embedding {
        source: o.source,
        dest: o.dest,
        embed_document: o.embed_document,
        embed_children: o.embed_children,
        batch_size: o.batch_size,
    };
    embedding.check(config, &mut errors);
    if o.model_name.trim().is_empty() {
        errors.push(config.error("modelName", "is empty"));
    }
    if let Some(k) = &o.keep_alive {
        if let Err(e) = check_keep_alive(k) {
            errors.push(config.error("keepAlive", e.to_string()));
        }
    }
    let client = client(
        "OllamaEmbed",
        config,
        ("hostURL", &o.host_url),
        o.retry,
        seconds(o.timeout),
        Auth::None,
        &mut errors,
    );
    match client {
        Some(client) if errors.is_empty() => Ok(Box::new(RemoteEmbed {
            embedding,
            server: OllamaEmbed {
                model: o.model_name,
                truncate: o.truncate,
                keep_alive: o.keep_alive,
                options: o.options,
                endpoint: format!("{}/api/embed", o.host_url.trim_end_matches('/')),
                client,
            },
        })),
        _ => Err(ConfigErrors(errors)),
    }
}

/// Why a `keepAlive` is not one Ollama reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum KeepAliveError {
    /// Neither a string nor a number (a boolean, a list, an object).
    #[error("must be a duration such as \"5m\" or a number of seconds, found {0}")]
    NotADuration(Value),
    /// A string that is not a duration as Go's `time.ParseDuration` reads it.
    #[error(
        "{0:?} is not a duration Ollama reads (e.g. \"5m\", \"1h30m\", \"0\", \"-1s\"); \
         a number of seconds is also accepted"
    )]
    Unreadable(String),
}

/// A `keepAlive` Ollama accepts: a number (seconds), or a duration as Go's
/// `time.ParseDuration` reads it ("0", or signed numbers each with a unit: ns, us, µs, ms, s,
/// m, h, as in "1h30m" or "-1s").
fn check_keep_alive(v: &Value) -> Result<(), KeepAliveError> {
    let text = match v {
        Value::Number(_) => return Ok(()),
        Value::String(s) => s.trim(),
        other => return Err(KeepAliveError::NotADuration(other.clone())),
    };
    let bad = || Err(KeepAliveError::Unreadable(text.to_string()));
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if unsigned == "0" {
        return Ok(());
    }
    if unsigned.is_empty() {
        return bad();
    }
    let mut rest = unsigned;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return bad();
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_end);
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&unit) {
            return bad();
        }
        rest = next;
    }
    Ok(())
}

impl EmbedServer for OllamaEmbed {
    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut body = json!({"model": self.model, "input": texts, "truncate": self.truncate});
        if let Some(k) = &self.keep_alive {
            body["keep_alive"] = k.clone();
        }
        if let Some(o) = &self.options {
            body["options"] = Value::Object(o.clone());
        }
        let answer = post_json(&self.client, &self.endpoint, &body, "/error")?;
        parse_embeddings(&answer, texts.len())
    }
}

/// The vectors of an /api/embed answer (`embeddings`, in the order of the inputs).
fn parse_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = |problem: AnswerProblem| EmbedError::answer(problem, body);
    let json: Value = serde_json::from_str(body).map_err(|_| bad(AnswerProblem::NotJson))?;
    let list = json
        .get("embeddings")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(AnswerProblem::NoList("embeddings")))?;
    if list.len() != expected {
        return Err(bad(AnswerProblem::Count {
            found: list.len(),
            expected,
        }));
    }
    list.iter()
        .map(|v| floats(v).ok_or_else(|| bad(AnswerProblem::NotNumbers)))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check_keep_alive, parse_embeddings, KeepAliveError};

    #[test]
    fn bad_answers_say_what_is_wrong_and_show_the_body() {
        let err = |body: &str, expected| parse_embeddings(body, expected).unwrap_err().to_string();
        assert_eq!(
            err("model loading...", 1),
            "unexpected embeddings answer (not JSON): model loading..."
        );
        assert!(err(r#"{"embedding": [1, 2]}"#, 1).contains("(no embeddings list)"));
        assert_eq!(
            err(r#"{"model": "m", "embeddings": [[1.0]]}"#, 2),
            r#"unexpected embeddings answer (1 embeddings for 2 inputs): {"model": "m", "embeddings": [[1.0]]}"#
        );
        assert!(err(r#"{"embeddings": [[1.0, "x"]]}"#, 1)
            .contains("(an embedding is not a list of numbers)"));
        assert!(err(r#"{"embeddings": [null]}"#, 1).contains("not a list of numbers"));
        assert_eq!(
            parse_embeddings(r#"{"embeddings": [[0.5, -1], [2, 3e-2]]}"#, 2).unwrap(),
            vec![vec![0.5, -1.0], vec![2.0, 0.03]]
        );
    }

    #[test]
    fn keep_alive_takes_what_ollama_reads() {
        for ok in [
            json!("5m"),
            json!("1h30m"),
            json!("0"),
            json!("-1s"),
            json!("1.5h"),
            json!("300ms"),
            json!(-1),
            json!(600),
            json!(2.5),
        ] {
            assert!(check_keep_alive(&ok).is_ok(), "{ok}");
        }
        for bad in ["5 minutes", "5", "", "m", "1..5s"] {
            assert_eq!(
                check_keep_alive(&json!(bad)),
                Err(KeepAliveError::Unreadable(bad.to_string())),
                "{bad}"
            );
        }
        for bad in [json!(true), json!(["5m"])] {
            assert_eq!(
                check_keep_alive(&bad),
                Err(KeepAliveError::NotADuration(bad.clone()))
            );
        }
        // The messages name the value and what to write instead.
        assert_eq!(
            check_keep_alive(&json!(" 5 minutes "))
                .unwrap_err()
                .to_string(),
            "\"5 minutes\" is not a duration Ollama reads (e.g. \"5m\", \"1h30m\", \"0\", \
             \"-1s\"); a number of seconds is also accepted"
        );
        assert_eq!(
            check_keep_alive(&json!(true)).unwrap_err().to_string(),
            "must be a duration such as \"5m\" or a number of seconds, found true"
        );
    }
}
