//! PromptOllama (Lucille's stage and keys): sends the document (or some of its fields) to an
//! Ollama server's chat API (`POST {hostURL}/api/chat`, `"stream": false`) with an optional
//! system prompt, and puts the answer on the document: when the answer is a JSON object its
//! fields are written with `updateMode`; otherwise the text goes to `ollamaResponse` (or, with
//! `requireJSON`, the document fails).
//!
//! Keys (Lucille's): `hostURL` and `modelName` (required), `systemPrompt`, `timeout` (seconds
//! per request, default 10 as Ollama's client), `fields` (the fields sent, as a JSON object;
//! default the whole document as JSON), `requireJSON` (default false; true also asks the
//! server for `"format": "json"`), `updateMode` (overwrite, append, skip; default overwrite; `update_mode`, older Lucille's name, is accepted too).
//! New here: the retry keys (`maxRetries`, default 3, `retryWaitDurationMs`,
//! `retryMaxWaitDurationMs`, `retryRandomizationFactor`, `retryableStatusCodes`), as for the
//! HTTP indexers: a 429 or a busy server is retried with backoff.

use serde_json::{json, Map, Value};

use super::{client, seconds, server_message, RetryOptions};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};
use crate::http::{snippet, Auth, HttpClient};
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "PromptOllama",
    spec: PromptOllamaOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Where a non-JSON answer goes (Lucille's field name).
pub const RESPONSE_FIELD: &str = "ollamaResponse";

/// Sends the document (or some of its fields) to an Ollama server's chat API and puts the
/// answer on the document: a JSON object's fields, else the text in ollamaResponse.
#[derive(Options)]
#[options(base = Spec::stage())]
struct PromptOllamaOptions {
    /// The Ollama server's URL (http://host:11434).
    #[option(key = "hostURL")]
    host_url: String,
    /// The model asked.
    model_name: String,
    /// The system prompt sent before the document.
    system_prompt: Option<String>,
    /// Seconds a request may take.
    #[option(default = 10, min = 1)]
    timeout: i64,
    /// The fields sent, as a JSON object (default: the whole document as JSON).
    fields: Option<Vec<String>>,
    /// true: an answer that is not a JSON object fails the document (and the server is asked
    /// for "format": "json").
    #[option(key = "requireJSON", default = false)]
    require_json: bool,
    /// How the answer's fields are written to fields that already have values.
    #[option(default = "overwrite", one_of = ["overwrite", "append", "skip"], alias = "update_mode")]
    update_mode: String,
    /// The retry keys (maxRetries, retryWaitDurationMs, retryMaxWaitDurationMs,
    /// retryRandomizationFactor, retryableStatusCodes).
    #[option(flatten)]
    retry: RetryOptions,
}

struct PromptOllama {
    endpoint: String,
    model: String,
    system_prompt: Option<String>,
    fields: Vec<String>,
    require_json: bool,
    mode: UpdateMode,
    client: HttpClient,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = PromptOllamaOptions::from_config(config)?;
    let mut errors = Vec::new();
    let client = client(
        "PromptOllama",
        config,
        ("hostURL", &o.host_url),
        o.retry,
        seconds(o.timeout),
        Auth::None,
        &mut errors,
    );
    match client {
        Some(client) if errors.is_empty() => Ok(Box::new(PromptOllama {
            endpoint: format!("{}/api/chat", o.host_url.trim_end_matches('/')),
            model: o.model_name,
            system_prompt: o.system_prompt,
            fields: o.fields.unwrap_or_default(),
            require_json: o.require_json,
            mode: UpdateMode::parse(&o.update_mode).unwrap_or_default(),
            client,
        })),
        _ => Err(ConfigErrors(errors)),
    }
}

impl PromptOllama {
    fn user_message(&self, doc: &Document) -> String {
        if self.fields.is_empty() {
            return doc.to_json();
        }
        let mut m = Map::new();
        for f in &self.fields {
            m.insert(f.clone(), doc.get(f).cloned().unwrap_or(Value::Null));
        }
        Value::Object(m).to_string()
    }
}

impl Stage for PromptOllama {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut messages = Vec::new();
        if let Some(system) = &self.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": self.user_message(doc)}));
        let mut body = json!({"model": self.model, "messages": messages, "stream": false});
        if self.require_json {
            body["format"] = json!("json");
        }
        let reply = self
            .client
            .send(
                "POST",
                &self.endpoint,
                "application/json",
                Some(&body.to_string()),
            )
            .map_err(|e| StageFailure::msg(format!("error communicating with Ollama: {e}")))?;
        if !reply.ok() {
            return Err(StageFailure::msg(format!(
                "Ollama answered HTTP {}: {}",
                reply.status,
                server_message(&reply.body, "/error")
            )));
        }
        let content = serde_json::from_str::<Value>(&reply.body)
            .ok()
            .and_then(|v| {
                v.pointer("/message/content")
                    .and_then(Value::as_str)
                    .map(String::from)
            })
            .ok_or_else(|| {
                StageFailure::msg(format!(
                    "unexpected Ollama answer (no message.content): {}",
                    snippet(&reply.body)
                ))
            })?;
        match serde_json::from_str::<Value>(&content) {
            Ok(Value::Object(fields)) => {
                for (name, value) in fields {
                    let values = match value {
                        Value::Array(items) => items,
                        v => vec![v],
                    };
                    doc.update(&name, self.mode, values)?;
                }
            }
            _ if self.require_json => {
                return Err(StageFailure::msg(format!(
                    "the answer is not a JSON object (requireJSON is true): {}",
                    snippet(&content)
                )))
            }
            _ => doc.set_field(RESPONSE_FIELD, Value::String(content))?,
        }
        Ok(None)
    }
}
