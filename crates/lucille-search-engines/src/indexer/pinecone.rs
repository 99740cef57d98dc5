//! `indexer.class: "com.kmwllc.lucille.pinecone.indexer.PineconeIndexer"` (or
//! `indexer.type: "pinecone"`) with Lucille's `pinecone { index, apiKey, namespaces,
//! metadataFields, mode, defaultEmbeddingField }` block, over Pinecone's REST data plane.
//!
//! As Lucille: each document's vector comes from `defaultEmbeddingField` (written to the
//! namespace `default`), or from one field per namespace (`namespaces { ns: field }`: the
//! document goes to every namespace, each with its own vector). `metadataFields` are sent as
//! metadata, their values as text (a list as a list of texts, which Pinecone accepts where
//! Lucille sends Java's `[a, b]` text). `mode: upsert` (default) sends
//! `POST {host}/vectors/upsert {vectors: [{id, values, metadata}], namespace}` and checks
//! `upsertedCount`; `mode: update` sends `POST {host}/vectors/update {id, values, namespace}`
//! per document (plus `setMetadata` when the document has metadata fields: Lucille drops them
//! in this mode). Documents marked deleted (`indexer.deletionMarkerField`) are deleted by id
//! from every namespace (`POST {host}/vectors/delete {ids, namespace}`); Pinecone serverless has
//! no delete by metadata, so `deleteByFieldField` is a config error. When one batch holds the
//! same id twice, its last operation is the one sent (as Lucille).
//!
//! `indexer.batchSize` above 1000 is a config error (Pinecone's limit, as Lucille); requests are
//! also cut at 2 MB. Differences from Lucille, where Lucille fails the whole batch: a document
//! without its vector (or with a vector of the wrong dimension, once the index's dimension is
//! known) FAILs alone; a batch Pinecone rejects with HTTP 400 is sent again one vector a request,
//! so only the vectors Pinecone refuses FAIL.
//!
//! The index host: Lucille's Java client asks the control plane
//! (`GET https://api.pinecone.io/indexes/{index}`) for the index's `host` and checks its state;
//! so does this backend, unless `host` (new) names the data-plane URL directly
//! (`https://my-index-abc.svc.pinecone.io`, or any `http://` address such as a local server);
//! `controlPlaneUrl` (new) moves the control plane. `requestTimeout` (new, ms, default 30000)
//! limits each request. Retries: 429 and 5xx are retried 3 times with backoff unless
//! `indexer.maxRetries` (and the other retry keys) say otherwise.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{Backend, BackendCheck, BackendError, IndexOp, IndexerSettings, PositiveMillis};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options};
use crate::http::{self, Auth, HttpClient, HttpError, RetryPolicy};
use crate::pinecone::{self, message, HostUrl, CONTROL_PLANE, DEFAULT_NAMESPACE};

/// Lucille's class name.
pub const CLASS: &str = "com.kmwllc.lucille.pinecone.indexer.PineconeIndexer";
/// Most vectors one request may carry (Pinecone's limit; Lucille's batchSize bound).
pub const MAX_BATCH: usize = 1000;
/// Largest upsert request body (Pinecone's limit is 2 MB).
const MAX_REQUEST_BYTES: usize = 2_000_000;
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);

/// Stores each document's vector (and its metadata fields) in a Pinecone index, through
/// Pinecone's REST data plane.
#[derive(Options)]
struct PineconeOptions {
    /// The Pinecone index.
    index: String,
    /// The API key, sent as Api-Key.
    api_key: String,
    /// Each namespace with the field holding the document's vector for it ({ ns: field }); the
    /// document goes to every namespace.
    namespaces: Option<Vec<(String, String)>>,
    /// Fields sent as metadata, their values as text.
    metadata_fields: Option<Vec<String>>,
    /// upsert: vectors with their metadata; update: the vectors (and metadata) of existing ids.
    #[option(default = "upsert", one_of = ["upsert", "update"])]
    mode: String,
    /// The field holding each document's vector, written to the namespace "default" (without
    /// namespaces).
    default_embedding_field: Option<String>,
    /// The index's data-plane URL (https://my-index-abc.svc.pinecone.io, or any http://
    /// address); without it, the control plane is asked for it.
    host: Option<HostUrl>,
    /// The control plane's URL (default https://api.pinecone.io).
    control_plane_url: Option<HostUrl>,
    /// Milliseconds one request may take (default 30000).
    request_timeout: Option<PositiveMillis>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Upsert,
    Update,
}

/// The `pinecone` block as read and checked.
#[derive(Debug, Clone)]
struct Block {
    index: String,
    api_key: String,
    /// (namespace, vector field), in config order; empty when neither `namespaces` nor
    /// `defaultEmbeddingField` is set (then only deletes can succeed).
    targets: Vec<(String, String)>,
    /// Namespaces deletes go to.
    delete_namespaces: Vec<String>,
    metadata_fields: Vec<String>,
    mode: Mode,
    host: Option<String>,
    control_plane: String,
    timeout: Duration,
}

/// The generic indexer keys a vector backend cannot honour.
pub(crate) fn unsupported_indexer_keys(
    settings: &IndexerSettings,
    backend: &str,
    index_override: bool,
) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    for (set, key, why) in [
        (settings.routing_field.is_some(), "indexer.routingField", ""),
        (settings.version_type.is_some(), "indexer.versionType", ""),
        (
            settings.delete_by_field_field.is_some() && backend == "pinecone",
            "indexer.deleteByFieldField",
            " (Pinecone serverless indexes cannot delete by metadata; delete by id with deletionMarkerField)",
        ),
        (
            settings.index_override_field.is_some() && !index_override,
            "indexer.indexOverrideField",
            "",
        ),
    ] {
        if set {
            errors.push(ConfigError::new(
                key,
                format!("is not supported by the {backend} indexer{why}"),
            ));
        }
    }
    errors
}

/// The retry policy of the vector backends: the `indexer` block's when `maxRetries` is set,
/// else 3 retries of 429, 5xx and connection failures.
pub(crate) fn retry_policy(settings: &IndexerSettings) -> RetryPolicy {
    if settings.retry.max_retries > 0 {
        settings.retry.clone()
    } else {
        RetryPolicy {
            max_retries: 3,
            retryable: vec![429, 500, 502, 503, 504, http::NO_STATUS],
            counter: settings.retry.counter.clone(),
            ..RetryPolicy::default()
        }
    }
}

/// The block, read once for checking and building: every problem at once.
fn read(settings: &IndexerSettings, config: &ComponentConfig) -> Result<Block, ConfigErrors> {
    let mut errors = unsupported_indexer_keys(settings, "pinecone", false);
    if settings.batch_size > MAX_BATCH {
        let hint = if settings.batch_byte_size.is_some() && settings.batch_size == usize::MAX {
            " (with batchByteSize alone the count is unlimited: set batchSize too)"
        } else {
            ""
        };
        errors.push(ConfigError::new(
            "indexer.batchSize",
            format!("Pinecone takes at most {MAX_BATCH} vectors a request (fewer for large vectors): set indexer.batchSize to {MAX_BATCH} or less{hint}"),
        ));
    }
    let o = match PineconeOptions::from_config(config) {
        Ok(o) => o,
        Err(e) => {
            errors.extend(e);
            return Err(errors.into());
        }
    };
    if o.namespaces.as_ref().is_some_and(Vec::is_empty) {
        errors.push(config.error(
            "namespaces",
            "must map at least one namespace to its vector field (or remove it and set defaultEmbeddingField)",
        ));
    }
    if o.namespaces.is_none()
        && o.default_embedding_field.is_none()
        && settings.deletion_marker_field.is_none()
    {
        errors.push(config.error(
            "defaultEmbeddingField",
            "Pinecone needs the field holding each document's vector: set defaultEmbeddingField, or namespaces { namespace: field }",
        ));
    }
    if o.namespaces.is_some() && o.default_embedding_field.is_some() {
        tracing::debug!("pinecone.defaultEmbeddingField is not used: pinecone.namespaces names the vector fields, as in Lucille");
    }
    for (key, v) in [("index", &o.index), ("apiKey", &o.api_key)] {
        if v.is_empty() {
            errors.push(config.error(key, "must not be empty"));
        }
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let (targets, delete_namespaces) = match (o.namespaces, o.default_embedding_field) {
        (Some(ns), _) => {
            let names = ns.iter().map(|(n, _)| n.clone()).collect();
            (ns, names)
        }
        (None, Some(f)) => (
            vec![(DEFAULT_NAMESPACE.to_string(), f)],
            vec![DEFAULT_NAMESPACE.to_string()],
        ),
        (None, None) => (Vec::new(), vec![DEFAULT_NAMESPACE.to_string()]),
    };
    Ok(Block {
        index: o.index,
        api_key: o.api_key,
        targets,
        delete_namespaces,
        metadata_fields: o.metadata_fields.unwrap_or_default(),
        mode: if o.mode == "update" {
            Mode::Update
        } else {
            Mode::Upsert
        },
        host: o.host.map(|h| h.0),
        control_plane: o
            .control_plane_url
            .map_or_else(|| CONTROL_PLANE.to_string(), |c| c.0),
        timeout: o.request_timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
    })
}

inventory::submit!(super::IndexerDescriptor {
    name: "pinecone",
    aliases: &[CLASS],
    spec: PineconeOptions::spec,
    check: |settings, config| {
        read(settings, config)?;
        Ok(BackendCheck::default())
    },
    build: |settings, config, _| build(settings, read(settings, config)?),
});

fn build(settings: &IndexerSettings, o: Block) -> Result<Box<dyn Backend>, ConfigErrors> {
    let client = HttpClient::new(
        "Pinecone",
        retry_policy(settings),
        settings.connection_timeout,
        false,
        Auth::Header("Api-Key", o.api_key.clone()),
    )
    .with_timeout(o.timeout);
    Ok(Box::new(PineconeBackend {
        client,
        host: o.host.clone(),
        dimension: None,
        o,
    }))
}

pub struct PineconeBackend {
    client: HttpClient,
    o: Block,
    /// The data-plane URL, once known.
    host: Option<String>,
    /// The index's dimension, once known: vectors of another length FAIL before sending.
    dimension: Option<usize>,
}

fn op_id(op: &IndexOp) -> Option<&str> {
    match op {
        IndexOp::Upsert { id, .. } | IndexOp::DeleteById { id, .. } => Some(id),
        IndexOp::DeleteByField { .. } => None,
    }
}

/// A metadata value as Lucille sends it: text (a list as a list of texts).
fn metadata_value(v: &Value) -> Option<Value> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match v {
        Value::Null => None,
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter(|i| !i.is_null())
                .map(|i| Value::String(text(i)))
                .collect(),
        )),
        other => Some(Value::String(text(other))),
    }
}

/// Why a document has no vector to send to a namespace (the document FAILs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum VectorError {
    #[error("has no field {field:?} holding its vector (for Pinecone namespace {namespace:?})")]
    Missing { field: String, namespace: String },
    #[error("field {field:?} is not a vector (a non-empty list of numbers) for Pinecone namespace {namespace:?}")]
    NotAVector { field: String, namespace: String },
    #[error(
        "the vector in field {field:?} has {len} dimensions; the Pinecone index has {dimension}"
    )]
    Dimension {
        field: String,
        len: usize,
        dimension: usize,
    },
}

/// A data-plane request that failed: no answer (after the retries), an error status, or an
/// upsert that did not store every vector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum RequestError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("Pinecone {path} failed: HTTP {status}: {message}")]
    Status {
        path: &'static str,
        status: u16,
        /// Pinecone's error text, else the start of the body.
        message: String,
    },
    #[error("Pinecone rejected the upsert: HTTP {status}: {message}")]
    UpsertRejected { status: u16, message: String },
    #[error("Pinecone upserted {} of {sent} vectors in namespace {namespace:?}", upserted.map_or("an unknown number".to_string(), |c| c.to_string()))]
    UpsertCount {
        namespace: String,
        upserted: Option<u64>,
        sent: usize,
    },
}

impl RequestError {
    /// The HTTP status Pinecone answered with, when it rejected the request.
    fn status(&self) -> Option<u16> {
        match self {
            RequestError::Status { status, .. } | RequestError::UpsertRejected { status, .. } => {
                Some(*status)
            }
            RequestError::Http(_) | RequestError::UpsertCount { .. } => None,
        }
    }
}

/// The vector in `field` of a document: a non-empty list of finite numbers, as written.
fn vector_of(
    fields: &crate::document::Fields,
    field: &str,
    namespace: &str,
    dimension: Option<usize>,
) -> Result<Value, VectorError> {
    let v = fields.get(field).ok_or_else(|| VectorError::Missing {
        field: field.to_string(),
        namespace: namespace.to_string(),
    })?;
    match v {
        Value::Array(items)
            if !items.is_empty()
                && items.iter().all(|i| i.as_f64().is_some_and(f64::is_finite)) =>
        {
            match dimension {
                Some(d) if d != items.len() => Err(VectorError::Dimension {
                    field: field.to_string(),
                    len: items.len(),
                    dimension: d,
                }),
                _ => Ok(v.clone()),
            }
        }
        _ => Err(VectorError::NotAVector {
            field: field.to_string(),
            namespace: namespace.to_string(),
        }),
    }
}

/// Sets `slot` to `reason` unless it already holds one.
fn fail(slot: &mut Option<String>, reason: impl std::fmt::Display) {
    if slot.is_none() {
        *slot = Some(reason.to_string());
    }
}

impl PineconeBackend {
    /// The data-plane URL: `host`, else the control plane's answer for the index.
    fn host(&mut self) -> Result<String, BackendError> {
        if let Some(h) = &self.host {
            return Ok(h.clone());
        }
        let found = pinecone::describe_index(&self.client, &self.o.control_plane, &self.o.index)
            .map_err(|e| BackendError::new(e.to_string()))?;
        self.dimension = found.dimension;
        self.host = Some(found.host.clone());
        Ok(found.host)
    }

    fn post(&self, host: &str, path: &'static str, body: &Value) -> Result<Value, RequestError> {
        let url = format!("{host}{path}");
        let reply = self
            .client
            .send("POST", &url, "application/json", Some(&body.to_string()))?;
        if !reply.ok() {
            return Err(RequestError::Status {
                path,
                status: reply.status,
                message: message(&reply.body),
            });
        }
        Ok(serde_json::from_str(&reply.body).unwrap_or(Value::Null))
    }

    fn delete(&self, host: &str, ops: &[IndexOp], which: &[usize], results: &mut [Option<String>]) {
        if which.is_empty() {
            return;
        }
        let ids: Vec<&str> = which.iter().filter_map(|&i| op_id(&ops[i])).collect();
        for ns in &self.o.delete_namespaces {
            let body = json!({ "ids": ids, "namespace": ns });
            if let Err(e) = self.post(host, "/vectors/delete", &body) {
                for &i in which {
                    fail(&mut results[i], &e);
                }
            }
        }
    }

    fn metadata(&self, fields: &crate::document::Fields) -> Map<String, Value> {
        self.o
            .metadata_fields
            .iter()
            .filter_map(|f| {
                fields
                    .get(f)
                    .and_then(metadata_value)
                    .map(|v| (f.clone(), v))
            })
            .collect()
    }

    fn upload(&self, host: &str, ops: &[IndexOp], which: &[usize], results: &mut [Option<String>]) {
        if which.is_empty() {
            return;
        }
        if self.o.targets.is_empty() {
            for &i in which {
                fail(&mut results[i], "Pinecone needs pinecone.defaultEmbeddingField or pinecone.namespaces to upload documents");
            }
            return;
        }
        // Every vector of every document first: a document with a bad one goes nowhere.
        let mut vectors: Vec<(usize, Vec<Value>, Map<String, Value>)> = Vec::new();
        for &i in which {
            let IndexOp::Upsert { fields, .. } = &ops[i] else {
                continue;
            };
            let got: Result<Vec<Value>, VectorError> = self
                .o
                .targets
                .iter()
                .map(|(ns, field)| vector_of(fields, field, ns, self.dimension))
                .collect();
            match got {
                Ok(v) => vectors.push((i, v, self.metadata(fields))),
                Err(e) => fail(&mut results[i], &e),
            }
        }
        for (t, (ns, _)) in self.o.targets.iter().enumerate() {
            let records: Vec<(usize, Value)> = vectors
                .iter()
                .filter_map(|(i, v, meta)| {
                    let id = op_id(&ops[*i])?;
                    let mut record = Map::new();
                    record.insert("id".into(), Value::String(id.to_string()));
                    record.insert("values".into(), v[t].clone());
                    if !meta.is_empty() {
                        let key = match self.o.mode {
                            Mode::Upsert => "metadata",
                            Mode::Update => "setMetadata",
                        };
                        record.insert(key.into(), Value::Object(meta.clone()));
                    }
                    Some((*i, Value::Object(record)))
                })
                .collect();
            match self.o.mode {
                Mode::Upsert => self.upsert(host, ns, &records, results),
                Mode::Update => {
                    for (i, record) in records {
                        let mut body = record;
                        if let Value::Object(m) = &mut body {
                            m.insert("namespace".into(), Value::String(ns.clone()));
                        }
                        if let Err(e) = self.post(host, "/vectors/update", &body) {
                            fail(&mut results[i], &e);
                        }
                    }
                }
            }
        }
    }

    /// Upserts `records` into `ns` in requests of at most 1000 vectors and 2 MB.
    fn upsert(
        &self,
        host: &str,
        ns: &str,
        records: &[(usize, Value)],
        results: &mut [Option<String>],
    ) {
        let mut start = 0;
        while start < records.len() {
            let mut bytes = 64 + ns.len();
            let mut end = start;
            while end < records.len() && end - start < MAX_BATCH {
                let size = records[end].1.to_string().len() + 1;
                if end > start && bytes + size > MAX_REQUEST_BYTES {
                    break;
                }
                bytes += size;
                end += 1;
            }
            let chunk = &records[start..end];
            if let Err(e) = self.upsert_once(host, ns, chunk) {
                if e.status() == Some(400) && chunk.len() > 1 {
                    // Find the vectors Pinecone refuses: one a request.
                    for one in chunk.chunks(1) {
                        if let Err(e) = self.upsert_once(host, ns, one) {
                            fail(&mut results[one[0].0], &e);
                        }
                    }
                } else {
                    for (i, _) in chunk {
                        fail(&mut results[*i], &e);
                    }
                }
            }
            start = end;
        }
    }

    fn upsert_once(
        &self,
        host: &str,
        ns: &str,
        chunk: &[(usize, Value)],
    ) -> Result<(), RequestError> {
        let vectors: Vec<&Value> = chunk.iter().map(|(_, v)| v).collect();
        let body = json!({ "vectors": vectors, "namespace": ns });
        let url = format!("{host}/vectors/upsert");
        let reply = self
            .client
            .send("POST", &url, "application/json", Some(&body.to_string()))?;
        if !reply.ok() {
            return Err(RequestError::UpsertRejected {
                status: reply.status,
                message: message(&reply.body),
            });
        }
        let count = serde_json::from_str::<Value>(&reply.body)
            .ok()
            .and_then(|v| v.get("upsertedCount").and_then(Value::as_u64));
        if count != Some(chunk.len() as u64) {
            return Err(RequestError::UpsertCount {
                namespace: ns.to_string(),
                upserted: count,
                sent: chunk.len(),
            });
        }
        Ok(())
    }
}

impl Backend for PineconeBackend {
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        let known = self.host.is_some();
        let host = self.host()?;
        if known {
            // A configured host: check it answers, and learn the dimension.
            let v = self
                .post(&host, "/describe_index_stats", &json!({}))
                .map_err(|e| BackendError::new(e.to_string()))?;
            self.dimension = v
                .get("dimension")
                .and_then(Value::as_u64)
                .map(|d| d as usize);
        }
        Ok(())
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let host = self.host()?;
        // As Lucille: per id, the batch's last operation is the one sent.
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            if let Some(id) = op_id(op) {
                last.insert(id, i);
            }
        }
        let mut results: Vec<Option<String>> = vec![None; ops.len()];
        let (mut deletes, mut uploads) = (Vec::new(), Vec::new());
        for (i, op) in ops.iter().enumerate() {
            match op {
                IndexOp::DeleteById { id, .. } if last.get(id.as_str()) == Some(&i) => {
                    deletes.push(i)
                }
                IndexOp::Upsert { id, .. } if last.get(id.as_str()) == Some(&i) => uploads.push(i),
                IndexOp::DeleteByField { .. } => {
                    results[i] = Some("Pinecone cannot delete by field".into())
                }
                _ => {}
            }
        }
        self.delete(&host, ops, &deletes, &mut results);
        self.upload(&host, ops, &uploads, &mut results);
        // An operation another one in the batch replaced shares that one's outcome.
        for (i, op) in ops.iter().enumerate() {
            if let Some(&j) = op_id(op).and_then(|id| last.get(id)) {
                if j != i {
                    results[i] = results[j].clone();
                }
            }
        }
        Ok(results)
    }
}
