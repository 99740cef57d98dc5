//! `indexer.class: "com.kmwllc.lucille.weaviate.indexer.WeaviateIndexer"` (or
//! `indexer.type: "weaviate"`) with Lucille's `weaviate { host, apiKey, className,
//! idDestinationName, vectorField }` block, over Weaviate's REST API.
//!
//! As Lucille: a batch is one `POST /v1/batch/objects?consistency_level=ALL` of
//! `{objects: [{class, id, properties, vector}]}`. Weaviate ids are UUIDs, so each object's id is
//! the name-based (MD5, version 3) UUID of the document id, the same as Java's
//! `UUID.nameUUIDFromBytes(id.getBytes())`, and the document id itself is stored in the property
//! `idDestinationName` (default `id_original`). The other fields are the properties, but for
//! `vectorField`, which is sent as the object's vector (a document without that field goes
//! without a vector, for Weaviate to vectorize, as in Lucille; one that is not a list of numbers
//! FAILs). The per-object errors in Weaviate's answer FAIL those documents only.
//! `className` defaults to `Document`; `indexer.indexOverrideField` names another class.
//!
//! `host` is a host name, reached over https as in Lucille, or (new) a full `http://` /
//! `https://` URL. `apiKey` is sent as `Authorization: Bearer` (an empty key sends none).
//! `requestTimeout` (new, ms) defaults to Lucille's fixed 6000. 429 and 5xx are retried 3 times
//! with backoff unless `indexer.maxRetries` says otherwise.
//!
//! Difference from Lucille, which indexes documents marked deleted as regular ones (with a
//! warning): here they are deleted, by id with `DELETE /v1/objects/{class}/{uuid}` (an object
//! that is not there counts as deleted) and by field (`deleteByFieldField`) with a batch delete
//! `DELETE /v1/batch/objects` matching `field Equal value`.

use serde_json::{json, Map, Value};

use super::pinecone::{retry_policy, unsupported_indexer_keys};
use super::{Backend, BackendCheck, BackendError, IndexOp, IndexerSettings, PositiveMillis};
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::http::{self, Auth, HttpClient};
use crate::pinecone::HostUrl;

/// Lucille's class name.
pub const CLASS: &str = "com.kmwllc.lucille.weaviate.indexer.WeaviateIndexer";
/// Lucille's fixed Weaviate client timeouts.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(6000);
/// Rounds of a batch delete by field (each removes up to Weaviate's query limit).
const MAX_DELETE_ROUNDS: usize = 1000;

/// Stores documents as Weaviate objects (a UUID from each id, the fields as properties, an
/// optional vector), through Weaviate's REST API.
#[derive(Options)]
struct WeaviateOptions {
    /// Weaviate's host name (reached over https), or a full http:// or https:// URL.
    host: HostUrl,
    /// The API key, sent as Authorization: Bearer (an empty key sends none).
    api_key: String,
    /// The class objects go to (indexer.indexOverrideField names another per document).
    #[option(default = "Document")]
    class_name: String,
    /// The property that keeps the document's id (objects' ids are UUIDs made from it).
    #[option(default = "id_original")]
    id_destination_name: String,
    /// The field sent as the object's vector (without it, Weaviate vectorizes).
    vector_field: Option<String>,
    /// Milliseconds one request may take (default 6000).
    request_timeout: Option<PositiveMillis>,
}

#[derive(Debug, Clone)]
struct Block {
    base: String,
    api_key: String,
    class_name: String,
    id_destination: String,
    vector_field: Option<String>,
    timeout: std::time::Duration,
}

/// The block, read once for checking and building: every problem at once.
fn read(settings: &IndexerSettings, config: &ComponentConfig) -> Result<Block, ConfigErrors> {
    let mut errors = unsupported_indexer_keys(settings, "weaviate", true);
    let o = match WeaviateOptions::from_config(config) {
        Ok(o) => o,
        Err(e) => {
            errors.extend(e);
            return Err(errors.into());
        }
    };
    for (key, v) in [
        ("className", Some(&o.class_name)),
        ("idDestinationName", Some(&o.id_destination_name)),
        ("vectorField", o.vector_field.as_ref()),
    ] {
        if v.is_some_and(String::is_empty) {
            errors.push(config.error(key, "must not be empty"));
        }
    }
    if o.vector_field.as_ref() == Some(&o.id_destination_name) {
        errors.push(config.error("idDestinationName", "must differ from vectorField"));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Block {
        base: o.host.0,
        api_key: o.api_key,
        class_name: o.class_name,
        id_destination: o.id_destination_name,
        vector_field: o.vector_field,
        timeout: o.request_timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
    })
}

inventory::submit!(super::IndexerDescriptor {
    name: "weaviate",
    aliases: &[CLASS],
    spec: WeaviateOptions::spec,
    check: |settings, config| {
        read(settings, config)?;
        Ok(BackendCheck::default())
    },
    build: |settings, config, _| build(settings, read(settings, config)?),
});

fn build(settings: &IndexerSettings, o: Block) -> Result<Box<dyn Backend>, ConfigErrors> {
    let auth = if o.api_key.is_empty() {
        Auth::None
    } else {
        Auth::Header("Authorization", format!("Bearer {}", o.api_key))
    };
    let client = HttpClient::new(
        "Weaviate",
        retry_policy(settings),
        settings.connection_timeout,
        false,
        auth,
    )
    .with_timeout(o.timeout);
    Ok(Box::new(WeaviateBackend { client, o }))
}

/// The Weaviate id of a document: Java's `UUID.nameUUIDFromBytes(id.getBytes(UTF-8))`.
pub fn document_uuid(id: &str) -> String {
    use md5::{Digest, Md5};
    let digest: [u8; 16] = Md5::digest(id.as_bytes()).into();
    uuid::Builder::from_md5_bytes(digest)
        .into_uuid()
        .hyphenated()
        .to_string()
}

pub struct WeaviateBackend {
    client: HttpClient,
    o: Block,
}

/// Weaviate's error text (`{"error": [{"message": ...}]}`), else the body.
fn message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| error_messages(v.get("error")?))
        .unwrap_or_else(|| http::snippet(body))
}

/// The messages of an `[{"message": ...}]` list, joined.
fn error_messages(list: &Value) -> Option<String> {
    let items = list.as_array()?;
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|e| e.get("message").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("; "))
}

/// The error of one object of a batch answer, if it failed.
fn object_error(object: &Value) -> Option<String> {
    let result = object.get("result")?;
    if let Some(m) = result.pointer("/errors/error").and_then(error_messages) {
        return Some(m);
    }
    match result.get("status").and_then(Value::as_str) {
        Some(s) if s.eq_ignore_ascii_case("FAILED") => Some("failed (no message)".into()),
        _ => None,
    }
}

/// Why an operation cannot be an object of a batch (the document FAILs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ObjectError {
    #[error("not an upsert")]
    NotAnUpsert,
    #[error("field {field:?} (weaviate.vectorField) is not a vector: a non-empty list of numbers")]
    NotAVector { field: String },
}

impl WeaviateBackend {
    fn class_of<'a>(&'a self, index: &'a Option<String>) -> &'a str {
        index.as_deref().unwrap_or(&self.o.class_name)
    }

    /// One object of a batch, or why the document cannot be one.
    fn object(&self, op: &IndexOp) -> Result<Value, ObjectError> {
        let IndexOp::Upsert {
            id, index, fields, ..
        } = op
        else {
            return Err(ObjectError::NotAnUpsert);
        };
        let mut properties = Map::with_capacity(fields.len() + 1);
        let mut vector = None;
        for (k, v) in fields {
            if Some(k) == self.o.vector_field.as_ref() {
                let ok = matches!(v, Value::Array(items) if !items.is_empty()
                    && items.iter().all(|i| i.as_f64().is_some_and(f64::is_finite)));
                if !ok {
                    return Err(ObjectError::NotAVector { field: k.clone() });
                }
                vector = Some(v.clone());
            } else if k != &self.o.id_destination {
                properties.insert(k.clone(), v.clone());
            }
        }
        properties.insert(self.o.id_destination.clone(), Value::String(id.clone()));
        let mut object = Map::with_capacity(4);
        object.insert(
            "class".into(),
            Value::String(self.class_of(index).to_string()),
        );
        object.insert("id".into(), Value::String(document_uuid(id)));
        object.insert("properties".into(), Value::Object(properties));
        if let Some(v) = vector {
            object.insert("vector".into(), v);
        }
        Ok(Value::Object(object))
    }

    /// Sends the upserts `ops` (all upserts) in one batch; one result each.
    fn batch(&self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let mut results: Vec<Option<String>> = vec![None; ops.len()];
        let mut objects = Vec::with_capacity(ops.len());
        let mut sent = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            match self.object(op) {
                Ok(o) => {
                    objects.push(o);
                    sent.push(i);
                }
                Err(e) => results[i] = Some(e.to_string()),
            }
        }
        if objects.is_empty() {
            return Ok(results);
        }
        let uuids: Vec<String> = objects
            .iter()
            .map(|o| {
                o.get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        let body = json!({ "objects": objects }).to_string();
        drop(objects);
        let url = format!("{}/v1/batch/objects?consistency_level=ALL", self.o.base);
        let reply = self
            .client
            .send("POST", &url, "application/json", Some(&body))?;
        if !reply.ok() {
            let reason = format!(
                "Weaviate rejected the batch: HTTP {}: {}",
                reply.status,
                message(&reply.body)
            );
            for &i in &sent {
                results[i] = Some(reason.clone());
            }
            return Ok(results);
        }
        let answer: Vec<Value> = serde_json::from_str(&reply.body).map_err(|e| {
            BackendError::new(format!(
                "unreadable Weaviate batch answer ({e}): {}",
                http::snippet(&reply.body)
            ))
        })?;
        if answer.len() == sent.len() {
            // Weaviate answers in the order of the request.
            for (k, object) in answer.iter().enumerate() {
                if let Some(e) = object_error(object) {
                    results[sent[k]] = Some(format!("Weaviate rejected the object: {e}"));
                }
            }
        } else {
            // Otherwise by UUID: an error for a UUID FAILs every document with it.
            for object in &answer {
                let Some(e) = object_error(object) else {
                    continue;
                };
                let id = object.get("id").and_then(Value::as_str).unwrap_or("");
                for (k, &i) in sent.iter().enumerate() {
                    if uuids[k] == id {
                        results[i] = Some(format!("Weaviate rejected the object: {e}"));
                    }
                }
            }
            let answered: std::collections::HashSet<&str> = answer
                .iter()
                .filter_map(|o| o.get("id").and_then(Value::as_str))
                .collect();
            for (k, &i) in sent.iter().enumerate() {
                if !answered.contains(uuids[k].as_str()) && results[i].is_none() {
                    results[i] =
                        Some("Weaviate's batch answer does not mention this object".into());
                }
            }
        }
        Ok(results)
    }

    fn delete(&self, op: &IndexOp) -> Result<Option<String>, BackendError> {
        match op {
            IndexOp::DeleteById { id, index, .. } => {
                let url = format!(
                    "{}/v1/objects/{}/{}?consistency_level=ALL",
                    self.o.base,
                    http::encode(self.class_of(index)),
                    document_uuid(id)
                );
                let reply = self.client.send("DELETE", &url, "application/json", None)?;
                if reply.ok() || reply.status == 404 {
                    Ok(None)
                } else {
                    Ok(Some(format!(
                        "Weaviate delete of {id:?} failed: HTTP {}: {}",
                        reply.status,
                        message(&reply.body)
                    )))
                }
            }
            IndexOp::DeleteByField {
                field,
                value,
                index,
            } => {
                let url = format!("{}/v1/batch/objects?consistency_level=ALL", self.o.base);
                let body = json!({
                    "match": {
                        "class": self.class_of(index),
                        "where": {"path": [field], "operator": "Equal", "valueText": value}
                    },
                    "output": "minimal"
                })
                .to_string();
                // Weaviate deletes up to its query limit a call: again while it hits the limit.
                for _ in 0..MAX_DELETE_ROUNDS {
                    let reply =
                        self.client
                            .send("DELETE", &url, "application/json", Some(&body))?;
                    if !reply.ok() {
                        return Ok(Some(format!(
                            "Weaviate delete by {field}={value:?} failed: HTTP {}: {}",
                            reply.status,
                            message(&reply.body)
                        )));
                    }
                    let v: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
                    let n = |k: &str| v.pointer(&format!("/results/{k}")).and_then(Value::as_u64);
                    if n("failed").unwrap_or(0) > 0 {
                        return Ok(Some(format!(
                            "Weaviate delete by {field}={value:?}: {} of {} objects failed",
                            n("failed").unwrap_or(0),
                            n("matches").unwrap_or(0)
                        )));
                    }
                    match (n("matches"), n("limit")) {
                        (Some(m), Some(l)) if m > 0 && m >= l => continue,
                        _ => return Ok(None),
                    }
                }
                Ok(Some(format!(
                    "Weaviate delete by {field}={value:?} still matched objects after {MAX_DELETE_ROUNDS} rounds"
                )))
            }
            IndexOp::Upsert { .. } => Ok(Some("not a delete".into())),
        }
    }
}

impl Backend for WeaviateBackend {
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        let url = format!("{}/v1/meta", self.o.base);
        let reply = self.client.send("GET", &url, "application/json", None)?;
        if !reply.ok() {
            return Err(BackendError::new(format!(
                "Weaviate at {} answered HTTP {}: {}",
                self.o.base,
                reply.status,
                message(&reply.body)
            )));
        }
        let v: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
        let version = v
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        tracing::info!("Weaviate at {}: version {version}", self.o.base);
        Ok(())
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let mut results: Vec<Option<String>> = Vec::with_capacity(ops.len());
        let mut rest = ops;
        while !rest.is_empty() {
            let upserts = rest
                .iter()
                .position(|op| !matches!(op, IndexOp::Upsert { .. }))
                .unwrap_or(rest.len());
            let (later, outcome) = if upserts > 0 {
                let (run, later) = rest.split_at(upserts);
                (later, self.batch(run))
            } else {
                let (run, later) = rest.split_at(1);
                (later, self.delete(&run[0]).map(|r| vec![r]))
            };
            match outcome {
                Ok(r) => results.extend(r),
                Err(e) => {
                    // This request failed for good: it and everything after it FAIL, in order.
                    results.extend(rest.iter().map(|_| Some(e.message.clone())));
                    break;
                }
            }
            rest = later;
        }
        Ok(results)
    }
}
