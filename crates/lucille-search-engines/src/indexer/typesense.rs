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
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options};
use crate::http::{self, Auth, HttpClient, HttpUrl};

inventory::submit!(super::IndexerDescriptor {
    name: "typesense",
    aliases: &[],
    spec: TypesenseOptions::spec,
    check: |settings, config| {
        let o = read(settings, config)?;
        Ok(super::tls_check(o.accept_invalid_cert, settings, config))
    },
    build: |settings, config, _| {
        let o = read(settings, config)?;
        Ok(Box::new(TypesenseBackend::new(settings, o)))
    },
});

/// Sends documents to Typesense: upserts through its import endpoint, deletes by id and by
/// filter; a missing collection can be created with an automatic schema.
#[derive(Options)]
struct TypesenseOptions {
    /// The server's URL (http://host:8108).
    url: HttpUrl,
    /// The API key, sent as X-TYPESENSE-API-KEY.
    api_key: String,
    /// The collection documents go to (indexer.indexOverrideField names another per document).
    collection: String,
    /// true: a missing collection is created (automatic schema, nested fields on).
    #[option(default = true)]
    create_collection: bool,
    /// The most documents per import request (default: the whole batch).
    #[option(min = 1)]
    batch_size: Option<i64>,
    /// true: the server's TLS certificate is not verified (a warning is logged).
    #[option(default = false)]
    accept_invalid_cert: bool,
    /// Vector fields of a collection created here, each with its number of dimensions
    /// ({ embedding: 384 }).
    vector_fields: Option<VectorFields>,
}

/// `vectorFields { name: dimensions }`, checked as the option is read.
struct VectorFields(Vec<(String, u64)>);

impl OptionValue for VectorFields {
    fn kind() -> Kind {
        Kind::Object
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(fields) = config.object(key)? else {
            return Ok(None);
        };
        fields
            .iter()
            .map(|(name, v)| match crate::config::as_i64(v) {
                Some(n) if n > 0 && !name.is_empty() => Ok((name.clone(), n.unsigned_abs())),
                _ => Err(ConfigError::new(
                    config.key_path(&format!("{key}.{name}")),
                    "must be the vector's number of dimensions (a positive integer)",
                )),
            })
            .collect::<Result<_, _>>()
            .map(|v| Some(VectorFields(v)))
    }
}

/// The block, read once for checking and building: every problem at once.
fn read(
    settings: &IndexerSettings,
    config: &ComponentConfig,
) -> Result<TypesenseOptions, ConfigErrors> {
    let mut errors = Vec::new();
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
    match TypesenseOptions::from_config(config) {
        Ok(o) if errors.is_empty() => Ok(o),
        Ok(_) => Err(errors.into()),
        Err(e) => {
            errors.extend(e);
            Err(errors.into())
        }
    }
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
    /// A backend on the block as read; opens nothing.
    fn new(settings: &IndexerSettings, o: TypesenseOptions) -> Self {
        let client = HttpClient::new(
            "Typesense",
            settings.retry.clone(),
            settings.connection_timeout,
            o.accept_invalid_cert,
            Auth::Header("X-TYPESENSE-API-KEY", o.api_key),
        )
        .with_timeout(
            settings
                .request_timeout
                .unwrap_or(http::DEFAULT_REQUEST_TIMEOUT),
        );
        TypesenseBackend {
            client,
            base: o.url.0.url,
            collection: o.collection,
            create: o.create_collection,
            batch_size: o.batch_size,
            vectors: o.vector_fields.map(|v| v.0).unwrap_or_default(),
            ready: HashSet::new(),
        }
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
