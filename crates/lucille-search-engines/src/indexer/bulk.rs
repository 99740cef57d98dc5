//! The `_bulk` protocol OpenSearch and Elasticsearch share: a batch becomes NDJSON `index` /
//! `update` / `delete` actions (with `_index`, `_id`, `routing`, `version`, `version_type`),
//! a delete by field becomes a `_delete_by_query` term query. The cluster answers per item; an
//! item's error FAILs that document with the cluster's `type: reason`. With
//! `childDocumentsField`, a document's attached children go in its source as a list under
//! that field (index and update alike), as Lucille nests them; without it they are left out.
//!
//! Order is kept: runs of consecutive actions go in one `_bulk` request (the cluster applies
//! actions on one id in request order) and each delete by field is sent between them. Items
//! rejected with a retryable status (429 `es_rejected_execution_exception`) are sent again,
//! together with every later action on the same id, so an upsert-then-delete stays in order.
//! When a whole request fails (after retries), its documents and every later one in the batch
//! FAIL with that error; earlier results stand.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::version_type::VersionType;
use super::{
    take_encoded, Backend, BackendCheck, BackendError, ChildDocuments, EncodeError, Encoded,
    Encoder, IndexOp, IndexerSettings,
};
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::http::{self, Auth, HttpClient, HttpUrl};

/// The keys OpenSearch's and Elasticsearch's blocks share.
#[derive(Options)]
pub struct BulkOptions {
    /// The cluster's URL (http://host:9200); credentials may sit in it as user:pass@.
    url: HttpUrl,
    /// The index documents go to (indexer.indexOverrideField names another per document).
    index: String,
    /// true: documents are partial updates (the update action), not whole documents.
    #[option(default = false)]
    update: bool,
    /// true: the server's TLS certificate is not verified (a warning is logged).
    #[option(default = false)]
    accept_invalid_cert: bool,
    /// The user of basic authentication (with password).
    username: Option<String>,
    /// The password of basic authentication (with username).
    password: Option<String>,
    /// The field of the indexed document its attached child documents go under, as a list of
    /// objects (map it as `nested` for child queries). Unset: documents are indexed without
    /// their children, and a warning per batch says how many carried some.
    child_documents_field: Option<String>,
}

/// An `opensearch { }` / `elasticsearch { }` block as read: the shared keys, and
/// Elasticsearch's `apiKey`.
pub struct BulkBlock {
    pub options: BulkOptions,
    pub api_key: Option<String>,
}

impl BulkBlock {
    /// The block, once its keys that go together (and with the generic settings) agree.
    pub fn checked(
        self,
        settings: &IndexerSettings,
        config: &ComponentConfig,
    ) -> Result<Self, ConfigErrors> {
        let o = &self.options;
        let mut errors = Vec::new();
        if o.username.is_some() != o.password.is_some() {
            errors.push(config.error("username", "username and password must be set together"));
        }
        if self.api_key.is_some() && o.username.is_some() {
            errors.push(config.error("apiKey", "give apiKey or username / password, not both"));
        }
        if let Some(field) = &o.child_documents_field {
            if field.is_empty() || crate::document::is_reserved(field) {
                errors.push(config.error(
                    "childDocumentsField",
                    format!("{field:?} cannot hold child documents: name a field of the document that is not id, run_id or a ___ control field"),
                ));
            }
        }
        if o.update && settings.version_type.is_some() {
            errors.push(config.error(
                "update",
                "partial updates cannot carry an external version (indexer.versionType)",
            ));
        }
        if errors.is_empty() {
            Ok(self)
        } else {
            Err(errors.into())
        }
    }

    /// What checking the block gives: the warning when it turns the TLS check off.
    pub fn check(&self, settings: &IndexerSettings, config: &ComponentConfig) -> BackendCheck {
        super::tls_check(self.options.accept_invalid_cert, settings, config)
    }
}

pub struct BulkBackend {
    /// The server (`OpenSearch`, `Elasticsearch`), for messages.
    name: &'static str,
    client: HttpClient,
    base: String,
    actions: Arc<Actions>,
}

/// How ops become NDJSON actions; shared with the worker threads, which encode each op's
/// lines there so the indexer thread only joins them into a request.
struct Actions {
    index: String,
    update: bool,
    /// Copy the index id into the stored document as `id` (unless filtered out), as Lucille.
    include_id: bool,
    version_type: Option<VersionType>,
    /// `childDocumentsField`: where attached children go in the source, if anywhere.
    child_field: Option<String>,
}

impl Actions {
    /// The NDJSON lines for one action, or why the document cannot be sent.
    fn lines(&self, op: &IndexOp) -> Result<String, EncodeError> {
        let (id, index, routing, version) = match op {
            IndexOp::Upsert {
                id,
                index,
                routing,
                version,
                ..
            }
            | IndexOp::DeleteById {
                id,
                index,
                routing,
                version,
            } => (id, index, routing, version),
            IndexOp::DeleteByField { .. } => return Err("not a bulk action".into()),
        };
        let mut meta = Map::new();
        meta.insert(
            "_index".into(),
            Value::String(index.clone().unwrap_or_else(|| self.index.clone())),
        );
        meta.insert("_id".into(), Value::String(id.clone()));
        if let Some(r) = routing {
            meta.insert("routing".into(), Value::String(r.clone()));
        }
        if let (Some(vt), Some(v)) = (self.version_type, version) {
            let n: i64 = v.trim().parse().ok().filter(|n| *n >= 0).ok_or_else(|| {
                format!("version {v:?} (indexer.versionField) is not a non-negative integer")
            })?;
            meta.insert("version".into(), json!(n));
            meta.insert("version_type".into(), json!(vt.as_str()));
        }
        let line = |v: &Value| v.to_string();
        match op {
            IndexOp::Upsert {
                fields, children, ..
            } => {
                let mut source = Map::with_capacity(fields.len() + 1);
                if self.include_id {
                    source.insert("id".into(), Value::String(id.clone()));
                }
                for (k, v) in fields {
                    source.insert(k.clone(), v.clone());
                }
                if let (Some(field), false) = (&self.child_field, children.is_empty()) {
                    source.insert(field.clone(), self.children(children));
                }
                let (action, source) = if self.update {
                    ("update", json!({ "doc": source }))
                } else {
                    ("index", Value::Object(source))
                };
                Ok(format!(
                    "{}\n{}\n",
                    line(&json!({ action: meta })),
                    line(&source)
                ))
            }
            _ => Ok(format!("{}\n", line(&json!({ "delete": meta })))),
        }
    }
}

impl Actions {
    /// The children as the list `childDocumentsField` holds, as Lucille nests them: each
    /// child's fields (its `id` unless the whitelist / blacklist drop `id`, as for the
    /// document), without its own children, which are not indexed (the indexer's warning
    /// counts them).
    fn children(&self, children: &[crate::document::Fields]) -> Value {
        let list = children
            .iter()
            .map(|child| {
                let map: Map<String, Value> = child
                    .iter()
                    .filter(|(k, _)| {
                        k.as_str() != crate::document::CHILDREN_FIELD
                            && (self.include_id || k.as_str() != crate::document::ID_FIELD)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Value::Object(map)
            })
            .collect();
        Value::Array(list)
    }
}

impl Encoder for Actions {
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, EncodeError> {
        if matches!(op, IndexOp::DeleteByField { .. }) {
            return Ok(None);
        }
        let lines = self.lines(op)?;
        if let IndexOp::Upsert { fields, .. } = op {
            *fields = crate::document::Fields::default();
        }
        Ok(Some(Box::new(lines)))
    }
}

impl BulkBackend {
    /// A backend (`name`: the server, for messages) on the block as read; opens nothing.
    pub fn new(name: &'static str, settings: &IndexerSettings, block: BulkBlock) -> Self {
        let o = block.options;
        let auth = match (o.username, o.password, block.api_key) {
            (_, _, Some(key)) => Auth::Header("Authorization", format!("ApiKey {key}")),
            (Some(u), Some(p), None) => Auth::Basic(u, p),
            _ => match o.url.0.credentials {
                Some((u, p)) => Auth::Basic(u, p),
                None => Auth::None,
            },
        };
        let client = HttpClient::new(
            name,
            settings.retry.clone(),
            settings.connection_timeout,
            o.accept_invalid_cert,
            auth,
        )
        .with_timeout(
            settings
                .request_timeout
                .unwrap_or(http::DEFAULT_REQUEST_TIMEOUT),
        );
        BulkBackend {
            client,
            base: o.url.0.url,
            actions: Arc::new(Actions {
                index: o.index,
                update: o.update,
                include_id: settings.keeps_field("id"),
                version_type: settings.version_type,
                child_field: o.child_documents_field,
            }),
            name,
        }
    }

    /// The `(index, id)` an action touches, for ordering retries.
    fn key<'a>(&'a self, op: &'a IndexOp) -> Option<(&'a str, &'a str)> {
        match op {
            IndexOp::Upsert { id, index, .. } | IndexOp::DeleteById { id, index, .. } => {
                Some((index.as_deref().unwrap_or(&self.actions.index), id))
            }
            IndexOp::DeleteByField { .. } => None,
        }
    }

    /// One run of bulk actions; one result per op. `encoded[i]`, when present, holds
    /// `ops[i]`'s lines as a worker encoded them.
    fn bulk(
        &self,
        ops: &[IndexOp],
        encoded: &mut [Option<Encoded>],
    ) -> Result<Vec<Option<String>>, BackendError> {
        let mut results: Vec<Option<String>> = vec![None; ops.len()];
        let mut lines: Vec<String> = Vec::with_capacity(ops.len());
        let mut pending: Vec<usize> = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let made = take_encoded::<String>(encoded, i);
            match made.map_or_else(|| self.actions.lines(op), Ok) {
                Ok(l) => {
                    lines.push(l);
                    pending.push(i);
                }
                Err(reason) => {
                    lines.push(String::new());
                    results[i] = Some(reason.to_string());
                }
            }
        }
        let url = format!("{}/_bulk", self.base);
        let mut retry = 0;
        while !pending.is_empty() {
            let body: String = pending.iter().map(|&i| lines[i].as_str()).collect();
            let reply = self
                .client
                .send("POST", &url, "application/x-ndjson", Some(&body))?;
            if !reply.ok() {
                return Err(BackendError::new(format!(
                    "{} rejected the bulk request: HTTP {}: {}",
                    self.client.name,
                    reply.status,
                    error_reason(&reply.body)
                )));
            }
            let parsed: Value = serde_json::from_str(&reply.body).map_err(|e| {
                BackendError::new(format!(
                    "{} sent an unreadable bulk response ({e}): {}",
                    self.client.name,
                    http::snippet(&reply.body)
                ))
            })?;
            if parsed.get("errors") == Some(&Value::Bool(false)) {
                for &i in &pending {
                    results[i] = None;
                }
                break;
            }
            let items = parsed
                .get("items")
                .and_then(Value::as_array)
                .filter(|items| items.len() == pending.len())
                .ok_or_else(|| {
                    BackendError::new(format!(
                        "{} answered a bulk request of {} actions without one item per action: {}",
                        self.client.name,
                        pending.len(),
                        http::snippet(&reply.body)
                    ))
                })?;
            let mut again: Vec<usize> = Vec::new();
            for (&i, item) in pending.iter().zip(items) {
                let (status, error) = item_result(item);
                results[i] = error;
                if results[i].is_some()
                    && retry < self.client.retry.max_retries
                    && self.client.retry.retries(status)
                {
                    again.push(i);
                }
            }
            if again.is_empty() {
                break;
            }
            // Later actions on a retried id follow it again, so their order holds.
            let keys: Vec<_> = again.iter().filter_map(|&i| self.key(&ops[i])).collect();
            let first = again[0];
            for &i in &pending {
                if i > first
                    && !again.contains(&i)
                    && self.key(&ops[i]).is_some_and(|k| keys.contains(&k))
                {
                    again.push(i);
                }
            }
            again.sort_unstable();
            retry += 1;
            let wait = self.client.retry.wait(retry);
            tracing::warn!(
                "{} rejected {} bulk items with a retryable status; retry {retry}/{} in {} ms",
                self.client.name,
                again.len(),
                self.client.retry.max_retries,
                wait.as_millis()
            );
            std::thread::sleep(wait);
            pending = again;
        }
        Ok(results)
    }

    /// A delete by field: `Ok(None)` deleted (or nothing matched), `Ok(Some)` rejected.
    fn delete_by_query(
        &self,
        field: &str,
        value: &str,
        index: Option<&str>,
    ) -> Result<Option<String>, BackendError> {
        let url = format!(
            "{}/{}/_delete_by_query",
            self.base,
            http::encode(index.unwrap_or(&self.actions.index))
        );
        let body = json!({ "query": { "term": { field: value } } }).to_string();
        let reply = self
            .client
            .send("POST", &url, "application/json", Some(&body))?;
        if !reply.ok() {
            return Ok(Some(format!(
                "delete by {field}={value:?} failed: HTTP {}: {}",
                reply.status,
                error_reason(&reply.body)
            )));
        }
        let parsed: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
        match parsed
            .get("failures")
            .and_then(Value::as_array)
            .and_then(|f| f.first())
        {
            Some(failure) => Ok(Some(format!(
                "delete by {field}={value:?} failed: {}",
                failure
                    .get("cause")
                    .map(describe_error)
                    .unwrap_or_else(|| failure.to_string())
            ))),
            None => Ok(None),
        }
    }
}

/// An item of a bulk response: its status and, when it failed, the reason.
fn item_result(item: &Value) -> (Option<u16>, Option<String>) {
    let Some(result) = item.as_object().and_then(|o| o.values().next()) else {
        return (None, Some(format!("unreadable bulk item: {item}")));
    };
    let status = result
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    match result.get("error") {
        Some(e) if !e.is_null() => (
            status,
            Some(match status {
                Some(s) => format!("{} (status {s})", describe_error(e)),
                None => describe_error(e),
            }),
        ),
        _ => (status, None),
    }
}

/// `type: reason (caused by: ...)` from an OpenSearch / Elasticsearch error object.
fn describe_error(e: &Value) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    match e {
        Value::String(s) => s.clone(),
        Value::Object(_) => {
            let mut s = format!("{}: {}", text(e.get("type")), text(e.get("reason")));
            if let Some(c) = e.get("caused_by").filter(|c| c.is_object()) {
                s.push_str(&format!(" (caused by {})", describe_error(c)));
            }
            s
        }
        other => other.to_string(),
    }
}

/// The reason in an error response body (`{"error": {...}, "status": 400}`), else the body.
fn error_reason(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => match v.get("error") {
            Some(e) => describe_error(e),
            None => http::snippet(body),
        },
        Err(_) => http::snippet(body),
    }
}

impl Backend for BulkBackend {
    /// Children are nested under `childDocumentsField` (their own children are not); without
    /// it they are not indexed.
    fn child_documents(&self) -> ChildDocuments {
        match self.actions.child_field {
            Some(_) => ChildDocuments::OneLevel,
            None => ChildDocuments::Dropped {
                hint: Some(format!(
                    "set {}.childDocumentsField to nest them under that field",
                    self.name.to_lowercase()
                )),
            },
        }
    }

    fn validate_connection(&mut self) -> Result<(), BackendError> {
        let url = format!("{}/", self.base);
        let reply = self.client.send("GET", &url, "application/json", None)?;
        if reply.ok() {
            Ok(())
        } else {
            Err(BackendError::new(format!(
                "{} at {} answered HTTP {}: {}",
                self.client.name,
                self.base,
                reply.status,
                error_reason(&reply.body)
            )))
        }
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        self.send_encoded(ops, Vec::new())
    }

    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        Some(self.actions.clone())
    }

    fn send_encoded(
        &mut self,
        ops: &[IndexOp],
        mut encoded: Vec<Option<Encoded>>,
    ) -> Result<Vec<Option<String>>, BackendError> {
        encoded.resize_with(ops.len(), || None);
        let mut results: Vec<Option<String>> = Vec::with_capacity(ops.len());
        let mut rest = ops;
        let mut rest_encoded = &mut encoded[..];
        while !rest.is_empty() {
            let done = match &rest[0] {
                IndexOp::DeleteByField {
                    field,
                    value,
                    index,
                } => self
                    .delete_by_query(field, value, index.as_deref())
                    .map(|r| (vec![r], 1)),
                _ => {
                    let n = rest
                        .iter()
                        .position(|op| matches!(op, IndexOp::DeleteByField { .. }))
                        .unwrap_or(rest.len());
                    self.bulk(&rest[..n], &mut rest_encoded[..n])
                        .map(|r| (r, n))
                }
            };
            match done {
                Ok((r, n)) => {
                    results.extend(r);
                    rest = &rest[n..];
                    rest_encoded = &mut std::mem::take(&mut rest_encoded)[n..];
                }
                Err(e) => {
                    // This request failed for good: it and everything after it FAIL, in order.
                    results.extend(rest.iter().map(|_| Some(e.message.clone())));
                    break;
                }
            }
        }
        Ok(results)
    }
}
