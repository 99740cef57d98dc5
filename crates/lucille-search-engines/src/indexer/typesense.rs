//! `indexer.type: "typesense"` with `typesense { url, apiKey, collection, createCollection,
//! batchSize, acceptInvalidCert }`. Upserts go through the import endpoint
//! (`POST /collections/{c}/documents/import?action=upsert`, one JSON document a line); its
//! per-line results FINISH or FAIL each document. Deletes by id use
//! `DELETE /collections/{c}/documents/{id}` (an id that is not there counts as deleted),
//! deletes by field `DELETE /collections/{c}/documents?filter_by=field:=`value``.
//!
//! Typesense needs `id` as a string in each document: the index id is written there. With
//! `createCollection` (default true) a missing collection is created with an automatic schema
//! (one `.*` field of type `auto`, nested fields enabled). `indexer.indexOverrideField` names
//! another collection. `vectorFields { embedding: 384 }` (new) declares vector fields in a
//! collection it creates: `float[]` fields with that `num_dim`, which Typesense (0.24 and
//! later) searches by nearest neighbour with `vector_query`; a vector of another length FAILs
//! its document.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::{Backend, BackendError, IndexOp, IndexerSettings};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::http::{self, Auth, HttpClient};

pub fn spec() -> Spec {
    Spec::new()
        .required("url", Kind::String)
        .required("apiKey", Kind::String)
        .required("collection", Kind::String)
        .optional("createCollection", Kind::Bool)
        .optional("batchSize", Kind::Integer)
        .optional("acceptInvalidCert", Kind::Bool)
        .optional("vectorFields", Kind::Object)
}

/// `vectorFields { name: dimensions }`, checked.
fn vector_fields(config: &ComponentConfig) -> Result<Vec<(String, u64)>, ConfigError> {
    let Some(Value::Object(m)) = config.get("vectorFields") else {
        return Ok(Vec::new());
    };
    m.iter()
        .map(|(name, v)| match crate::config::spec::as_i64(v) {
            Some(n) if n > 0 && !name.is_empty() => Ok((name.clone(), n as u64)),
            _ => Err(ConfigError::new(
                config.key_path(&format!("vectorFields.{name}")),
                "must be the vector's number of dimensions (a positive integer)",
            )),
        })
        .collect()
}

inventory::submit!(super::IndexerDescriptor {
    name: "typesense",
    aliases: &[],
    validate,
    build: |settings, config, _| build(settings, config),
    warning: Some(crate::http::insecure_warning),
});

pub fn validate(settings: &IndexerSettings, config: &ComponentConfig) -> Vec<ConfigError> {
    let mut errors = spec().validate(config.map(), config.path());
    http::check_url(config, "url", &mut errors);
    if let Err(e) = vector_fields(config) {
        errors.push(e);
    }
    if let Ok(Some(n)) = config.i64("batchSize") {
        if n <= 0 {
            errors.push(config.error("batchSize", "must be at least 1"));
        }
    }
    for (set, key) in [
        (settings.routing_field.is_some(), "indexer.routingField"),
        (settings.version_type.is_some(), "indexer.versionType"),
    ] {
        if set {
            errors.push(ConfigError::new(
                key,
                "is not supported by the typesense indexer",
            ));
        }
    }
    errors
}

pub fn build(
    settings: &IndexerSettings,
    config: &ComponentConfig,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    TypesenseBackend::from_config(settings, config).map(|b| Box::new(b) as Box<dyn Backend>)
}

pub struct TypesenseBackend {
    client: HttpClient,
    base: String,
    collection: String,
    create: bool,
    batch_size: Option<i64>,
    /// Vector fields (name, dimensions) of a collection created here.
    vectors: Vec<(String, u64)>,
    /// Collections known to exist.
    ready: HashSet<String>,
}

impl TypesenseBackend {
    pub fn from_config(
        settings: &IndexerSettings,
        config: &ComponentConfig,
    ) -> Result<Self, Vec<ConfigError>> {
        let one = |e: ConfigError| vec![e];
        let url = config.require_string("url").map_err(one)?;
        let base = http::parse_url(&url).map_err(|e| vec![config.error("url", e.to_string())])?;
        let key = config.require_string("apiKey").map_err(one)?;
        let client = HttpClient::new(
            "Typesense",
            settings.retry.clone(),
            settings.connection_timeout,
            config.bool_or("acceptInvalidCert", false).map_err(one)?,
            Auth::Header("X-TYPESENSE-API-KEY", key),
        )
        .with_timeout(
            settings
                .request_timeout
                .unwrap_or(http::DEFAULT_REQUEST_TIMEOUT),
        );
        Ok(TypesenseBackend {
            client,
            base: base.url,
            collection: config.require_string("collection").map_err(one)?,
            create: config.bool_or("createCollection", true).map_err(one)?,
            batch_size: config.i64("batchSize").map_err(one)?,
            vectors: vector_fields(config).map_err(one)?,
            ready: HashSet::new(),
        })
    }

    fn documents_url(&self, collection: &str) -> String {
        format!(
            "{}/collections/{}/documents",
            self.base,
            http::encode(collection)
        )
    }

    /// Makes sure `collection` exists, creating it (auto schema) if allowed.
    fn ensure(&mut self, collection: &str) -> Result<(), BackendError> {
        if self.ready.contains(collection) {
            return Ok(());
        }
        let url = format!("{}/collections/{}", self.base, http::encode(collection));
        let reply = self.client.send("GET", &url, "application/json", None)?;
        match reply.status {
            200 => {}
            404 if self.create => {
                // Nested fields on, so documents with object fields index as they are.
                let mut fields: Vec<Value> = self
                    .vectors
                    .iter()
                    .map(|(name, dims)| json!({"name": name, "type": "float[]", "num_dim": dims}))
                    .collect();
                fields.push(json!({ "name": ".*", "type": "auto" }));
                let schema = json!({
                    "name": collection,
                    "fields": fields,
                    "enable_nested_fields": true
                });
                let created = self.client.send(
                    "POST",
                    &format!("{}/collections", self.base),
                    "application/json",
                    Some(&schema.to_string()),
                )?;
                // 409: created meanwhile by someone else.
                if !created.ok() && created.status != 409 {
                    return Err(BackendError::new(format!(
                        "cannot create Typesense collection {collection:?}: HTTP {}: {}",
                        created.status,
                        message(&created.body)
                    )));
                }
            }
            404 => {
                return Err(BackendError::new(format!(
                    "Typesense collection {collection:?} does not exist (typesense.createCollection is false)"
                )))
            }
            s => {
                return Err(BackendError::new(format!(
                    "Typesense collection {collection:?}: HTTP {s}: {}",
                    message(&reply.body)
                )))
            }
        }
        self.ready.insert(collection.to_string());
        Ok(())
    }

    fn import(
        &self,
        collection: &str,
        ops: &[IndexOp],
    ) -> Result<Vec<Option<String>>, BackendError> {
        let mut body = String::new();
        for op in ops {
            if let IndexOp::Upsert { id, fields, .. } = op {
                let mut doc = Map::with_capacity(fields.len() + 1);
                doc.insert("id".into(), Value::String(id.clone()));
                for (k, v) in fields {
                    if k != "id" {
                        doc.insert(k.clone(), v.clone());
                    }
                }
                body.push_str(&Value::Object(doc).to_string());
                body.push('\n');
            }
        }
        let mut url = format!("{}/import?action=upsert", self.documents_url(collection));
        if let Some(n) = self.batch_size {
            url.push_str(&format!("&batch_size={n}"));
        }
        let reply = self.client.send("POST", &url, "text/plain", Some(&body))?;
        if !reply.ok() {
            let reason = format!(
                "Typesense rejected the import: HTTP {}: {}",
                reply.status,
                message(&reply.body)
            );
            return Ok(vec![Some(reason); ops.len()]);
        }
        let results: Vec<Option<String>> = reply
            .body
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| match serde_json::from_str::<Value>(line) {
                Ok(v) if v.get("success") == Some(&Value::Bool(true)) => None,
                Ok(v) => Some(format!(
                    "Typesense rejected the document: {}",
                    v.get("error").and_then(Value::as_str).unwrap_or(line)
                )),
                Err(_) => Some(format!("unreadable Typesense import result: {line}")),
            })
            .collect();
        if results.len() != ops.len() {
            return Err(BackendError::new(format!(
                "Typesense answered an import of {} documents with {} results",
                ops.len(),
                results.len()
            )));
        }
        Ok(results)
    }

    fn delete(&self, collection: &str, op: &IndexOp) -> Result<Option<String>, BackendError> {
        let (url, what) = match op {
            IndexOp::DeleteById { id, .. } => (
                format!("{}/{}", self.documents_url(collection), http::encode(id)),
                format!("delete of {id:?}"),
            ),
            IndexOp::DeleteByField { field, value, .. } => (
                format!(
                    "{}?filter_by={}",
                    self.documents_url(collection),
                    http::encode(&format!("{field}:=`{value}`"))
                ),
                format!("delete by {field}={value:?}"),
            ),
            IndexOp::Upsert { .. } => return Ok(Some("not a delete".into())),
        };
        let reply = self.client.send("DELETE", &url, "application/json", None)?;
        let absent = reply.status == 404 && matches!(op, IndexOp::DeleteById { .. });
        if reply.ok() || absent {
            Ok(None)
        } else {
            Ok(Some(format!(
                "Typesense {what} failed: HTTP {}: {}",
                reply.status,
                message(&reply.body)
            )))
        }
    }
}

/// Typesense's `{"message": ...}` error text, else the body.
fn message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| http::snippet(body))
}

impl Backend for TypesenseBackend {
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        let reply = self.client.send(
            "GET",
            &format!("{}/health", self.base),
            "application/json",
            None,
        )?;
        if !reply.ok() {
            return Err(BackendError::new(format!(
                "Typesense at {} is not healthy: HTTP {}: {}",
                self.base,
                reply.status,
                message(&reply.body)
            )));
        }
        let collection = self.collection.clone();
        self.ensure(&collection)
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let default = self.collection.clone();
        let collection_of = |op: &IndexOp| -> String {
            match op {
                IndexOp::Upsert { index, .. }
                | IndexOp::DeleteById { index, .. }
                | IndexOp::DeleteByField { index, .. } => index.clone(),
            }
            .unwrap_or_else(|| default.clone())
        };
        let mut results: Vec<Option<String>> = Vec::with_capacity(ops.len());
        let mut rest = ops;
        while !rest.is_empty() {
            let collection = collection_of(&rest[0]);
            let n = if matches!(rest[0], IndexOp::Upsert { .. }) {
                rest.iter()
                    .position(|op| {
                        !matches!(op, IndexOp::Upsert { .. }) || collection_of(op) != collection
                    })
                    .unwrap_or(rest.len())
            } else {
                1
            };
            let (run, later) = rest.split_at(n);
            let outcome = self.ensure(&collection).and_then(|_| {
                if n == 1 && !matches!(run[0], IndexOp::Upsert { .. }) {
                    self.delete(&collection, &run[0]).map(|r| vec![r])
                } else {
                    self.import(&collection, run)
                }
            });
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
