//! `indexer.type: "solr"` with `solr { url, defaultCollection, commitWithin, userName,
//! password, acceptInvalidCert, useCloudClient, zkHosts, zkChroot }` (Lucille's keys;
//! `username` is accepted for `userName`). `url` is a Solr base URL (`http://host:8983/solr`)
//! or a list of them; the first node that answers the connection check is used, and a request
//! that fails for good on it (no answer once its retries ran out) is sent to the other nodes
//! in turn. Without a collection (`defaultCollection` or `indexer.indexOverrideField`) the URL
//! must name the core. With `useCloudClient: true` and `zkHosts`, the nodes are SolrCloud's
//! live nodes, read from ZooKeeper when the indexer starts (`solr_cloud`; `url` is then unused,
//! as in Lucille), and read again once when every known node failed a request. As in Lucille,
//! `url` (or `zkHosts`) is needed only to send: a config without it validates and runs in test
//! mode or with `indexer.sendEnabled: false`; a run that would send fails before it starts.
//!
//! Each run of operations on one collection is one request to the JSON update handler, whose
//! commands (`add`, `delete: {id}`, `delete: {query}`) Solr applies in the order written, so
//! an upsert then a delete of one id stay in order. Solr rejects a whole request for one bad
//! document (HTTP 400), so a rejected request is sent again document by document: only the
//! bad one FAILs, with Solr's message. Commits at close (and with `commitWithin` if set).
//!
//! A document's attached children go with it as Solr nested documents, as Lucille sends them:
//! the JSON update format's `_childDocuments_` list in the `add` command's `doc`, each child
//! with its own id and fields (whitelist / blacklist applied, `idOverrideField` not). Their own
//! children are not sent (as in Lucille); the indexer's per-batch warning counts them.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::solr_cloud::{ZkChroot, ZkHostList, ZkHosts};
use super::{Backend, BackendError, ChildDocuments, IndexOp, IndexerSettings, PositiveMillis};
use crate::config::{Checked, ComponentConfig, ConfigError, ConfigErrors, Options};
use crate::http::{self, Auth, HttpClient, HttpUrls, Reply};

inventory::submit!(super::IndexerDescriptor {
    name: "solr",
    aliases: &["com.kmwllc.lucille.indexer.SolrIndexer"],
    spec: SolrOptions::spec,
    check: |settings, config| {
        let o = read(settings, config)?;
        Ok(super::tls_check(o.accept_invalid_cert, settings, config))
    },
    build: |settings, config, _| {
        let o = read(settings, config)?;
        Ok(Box::new(SolrBackend::new(settings, config, o)?))
    },
});

/// Sends documents to Solr's JSON update handler: on the first node of `url` that answers, or
/// on SolrCloud's live nodes read from ZooKeeper (`useCloudClient` with `zkHosts`).
#[derive(Options)]
struct SolrOptions {
    /// Solr's base URL (http://host:8983/solr) or a list of them, the first that answers used;
    /// needed to send, unless useCloudClient with zkHosts.
    url: Option<Checked<HttpUrls>>,
    /// The collection documents go to (without it, the URL names the core;
    /// indexer.indexOverrideField names another per document).
    default_collection: Option<String>,
    /// Milliseconds within which Solr commits what it received (it also commits at the end).
    commit_within: Option<Checked<PositiveMillis>>,
    /// The user of basic authentication (with password).
    #[option(alias = "username")]
    user_name: Option<String>,
    /// The password of basic authentication (with userName).
    password: Option<String>,
    /// true: the server's TLS certificate is not verified (a warning is logged).
    #[option(default = false)]
    accept_invalid_cert: bool,
    /// true, with zkHosts: the Solr nodes are SolrCloud's live nodes, read from ZooKeeper.
    #[option(default = false)]
    use_cloud_client: bool,
    /// ZooKeeper's host:port entries (a list, or one comma-separated string; a /chroot may
    /// follow the last).
    zk_hosts: Option<Checked<ZkHostList>>,
    /// SolrCloud's path under ZooKeeper's root (/solr).
    zk_chroot: Option<Checked<ZkChroot>>,
}

/// The block, read once for checking and building: every problem at once.
fn read(settings: &IndexerSettings, config: &ComponentConfig) -> Result<SolrOptions, ConfigErrors> {
    let mut errors = Vec::new();
    for (set, key) in [
        (settings.routing_field.is_some(), "indexer.routingField"),
        (settings.version_type.is_some(), "indexer.versionType"),
    ] {
        if set {
            errors.push(ConfigError::new(
                key,
                "is not supported by the solr indexer",
            ));
        }
    }
    let o = match SolrOptions::from_config(config) {
        Ok(o) => o,
        Err(e) => {
            errors.extend(e);
            return Err(errors.into());
        }
    };
    // The values that can be malformed are reported with the checks that depend on their
    // being given (every problem of the block at once).
    let problems = [
        o.url.as_ref().and_then(Checked::problem),
        o.commit_within.as_ref().and_then(Checked::problem),
        o.zk_hosts.as_ref().and_then(Checked::problem),
        o.zk_chroot.as_ref().and_then(Checked::problem),
    ];
    errors.extend(problems.into_iter().flatten().cloned());
    if o.cloud() && o.default_collection.is_none() && settings.index_override_field.is_none() {
        errors.push(config.error(
            "defaultCollection",
            "is needed with zkHosts (or indexer.indexOverrideField): SolrCloud nodes serve collections",
        ));
    }
    if o.user_name.is_some() != o.password.is_some() {
        errors.push(config.error("userName", "userName and password must be set together"));
    }
    if errors.is_empty() {
        Ok(o)
    } else {
        Err(errors.into())
    }
}

impl SolrOptions {
    /// ZooKeeper discovery: `useCloudClient: true` with `zkHosts` (without `useCloudClient`,
    /// Lucille reads `url` and leaves `zkHosts` unused).
    fn cloud(&self) -> bool {
        self.use_cloud_client && self.zk_hosts.is_some()
    }
}

/// The key of the JSON update format's anonymous child documents (the JSON form of SolrJ's
/// `addChildDocument`).
const CHILD_DOCUMENTS: &str = "_childDocuments_";

pub struct SolrBackend {
    client: HttpClient,
    /// Candidate base URLs; `urls[current]` is used. With ZooKeeper, filled at start.
    urls: Vec<String>,
    current: usize,
    /// SolrCloud's ZooKeeper, when the nodes are discovered there.
    zk: Option<ZkHosts>,
    default_collection: Option<String>,
    commit_within: Option<u128>,
    /// Collections written to, committed at close (`None`: the core in the URL).
    touched: BTreeSet<Option<String>>,
}

impl SolrBackend {
    /// A backend on the block as read; opens nothing. Without ZooKeeper, a backend needs `url`
    /// (only to send: checking the block does not ask for it).
    fn new(
        settings: &IndexerSettings,
        config: &ComponentConfig,
        o: SolrOptions,
    ) -> Result<Self, ConfigError> {
        let cloud = o.cloud();
        // Both read cleanly: `read` returns no options otherwise.
        let chroot = o.zk_chroot.and_then(|c| c.0.ok());
        let zk = match o.zk_hosts.and_then(|c| c.0.ok()) {
            Some(hosts) if cloud => Some(ZkHosts::new(hosts, chroot)),
            Some(_) => {
                tracing::warn!(
                    "{}.zkHosts is read only with useCloudClient: true (as in Lucille); the nodes in url are used",
                    config.path()
                );
                None
            }
            None => None,
        };
        let given = o
            .url
            .and_then(|u| u.0.ok())
            .map(|u| u.0)
            .unwrap_or_default();
        let mut urls = Vec::new();
        let mut credentials = None;
        match &zk {
            Some(z) if !given.is_empty() => tracing::warn!(
                "{}: url is not used: the Solr nodes are read from ZooKeeper {} (zkHosts, as in Lucille)",
                config.path(),
                z.connect_string()
            ),
            Some(_) => {}
            None if given.is_empty() => {
                return Err(config.error(
                    "url",
                    "missing: the Solr base URL(s) documents are sent to, or useCloudClient: true with zkHosts (a run in test mode or with indexer.sendEnabled: false needs none)",
                ))
            }
            None => {
                for base in given {
                    credentials = credentials.or(base.credentials);
                    urls.push(base.url);
                }
            }
        }
        let auth = match (o.user_name, o.password) {
            (Some(u), Some(p)) => Auth::Basic(u, p),
            _ => credentials.map_or(Auth::None, |(u, p)| Auth::Basic(u, p)),
        };
        let client = HttpClient::new(
            "Solr",
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
        Ok(SolrBackend {
            client,
            urls,
            current: 0,
            zk,
            default_collection: o.default_collection,
            commit_within: o
                .commit_within
                .and_then(|t| t.0.ok())
                .map(|t| t.0.as_millis()),
            touched: BTreeSet::new(),
        })
    }

    fn collection<'a>(&'a self, op: &'a IndexOp) -> Option<&'a str> {
        let index = match op {
            IndexOp::Upsert { index, .. }
            | IndexOp::DeleteById { index, .. }
            | IndexOp::DeleteByField { index, .. } => index.as_deref(),
        };
        index.or(self.default_collection.as_deref())
    }

    fn update_url(base: &str, collection: Option<&str>, params: &str) -> String {
        match collection {
            Some(c) => format!("{base}/{}/update?wt=json{params}", http::encode(c)),
            None => format!("{base}/update?wt=json{params}"),
        }
    }

    /// Reads the live nodes from ZooKeeper into `urls`.
    fn discover(&mut self) -> Result<(), BackendError> {
        if let Some(zk) = &self.zk {
            self.urls = zk
                .discover(
                    self.default_collection.as_deref(),
                    super::solr_cloud::DISCOVERY_TIMEOUT,
                )
                .map_err(|e| BackendError::new(e.to_string()))?;
            self.current = 0;
        }
        Ok(())
    }

    /// POSTs an update to the current node. A request that fails for good there (no answer
    /// once its retries ran out) goes to the other known nodes in turn and, with ZooKeeper,
    /// to the live nodes read again once; the node that answers becomes the current one.
    fn post(
        &mut self,
        collection: Option<&str>,
        params: &str,
        body: &str,
    ) -> Result<Reply, BackendError> {
        if self.urls.is_empty() {
            self.discover()?;
        }
        let mut tried: Vec<String> = Vec::new();
        let mut problems: Vec<String> = Vec::new();
        let mut rediscovered = self.zk.is_none();
        loop {
            let n = self.urls.len();
            for k in 0..n {
                let i = (self.current + k) % n;
                let base = self.urls[i].clone();
                if tried.contains(&base) {
                    continue;
                }
                let url = Self::update_url(&base, collection, params);
                match self
                    .client
                    .send("POST", &url, "application/json", Some(body))
                {
                    Ok(reply) => {
                        if !tried.is_empty() {
                            tracing::warn!("Solr node {base} answered; it is used from now on");
                        }
                        self.current = i;
                        return Ok(reply);
                    }
                    Err(e) => {
                        tried.push(base);
                        problems.push(e.message);
                    }
                }
            }
            if rediscovered {
                break;
            }
            rediscovered = true;
            tracing::warn!(
                "every known Solr node failed ({}); reading SolrCloud's live nodes again",
                problems.join("; ")
            );
            if let Err(e) = self.discover() {
                problems.push(e.message);
                break;
            }
        }
        Err(BackendError::new(match problems.len() {
            1 => problems.remove(0),
            _ => format!("every Solr node failed: {}", problems.join("; ")),
        }))
    }

    /// One update command, as `"name":value` text (the body repeats command names).
    fn command(op: &IndexOp) -> String {
        match op {
            IndexOp::Upsert {
                id,
                fields,
                children,
                ..
            } => {
                let mut doc = Map::with_capacity(fields.len() + 2);
                doc.insert("id".into(), Value::String(id.clone()));
                for (k, v) in fields {
                    if k != "id" {
                        doc.insert(k.clone(), v.clone());
                    }
                }
                if !children.is_empty() {
                    doc.insert(CHILD_DOCUMENTS.into(), Self::children(children));
                }
                format!("\"add\":{}", json!({ "doc": doc }))
            }
            IndexOp::DeleteById { id, .. } => format!("\"delete\":{}", json!({ "id": id })),
            IndexOp::DeleteByField { field, value, .. } => {
                // The term query parser matches the raw value: no escaping to get wrong.
                let query = format!("{{!term f={field}}}{value}");
                format!("\"delete\":{}", json!({ "query": query }))
            }
        }
    }

    /// Attached children as Solr's anonymous nested documents, as Lucille adds them
    /// (`SolrInputDocument.addChildDocument`): each child's fields with its id, without its own
    /// children, which are not indexed (the indexer's warning counts them).
    fn children(children: &[crate::document::Fields]) -> Value {
        let list = children
            .iter()
            .map(|child| {
                let map: Map<String, Value> = child
                    .iter()
                    .filter(|(k, _)| k.as_str() != crate::document::CHILDREN_FIELD)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Value::Object(map)
            })
            .collect();
        Value::Array(list)
    }

    /// Sends ops as one update request: `Ok(None)` accepted, `Ok(Some)` rejected by Solr.
    fn update(
        &mut self,
        collection: Option<&str>,
        ops: &[IndexOp],
    ) -> Result<Option<String>, BackendError> {
        let commands: Vec<String> = ops.iter().map(Self::command).collect();
        let body = format!("{{{}}}", commands.join(","));
        let params = self
            .commit_within
            .map(|ms| format!("&commitWithin={ms}"))
            .unwrap_or_default();
        let reply = self.post(collection, &params, &body)?;
        if reply.ok() {
            Ok(None)
        } else {
            Ok(Some(format!(
                "Solr rejected the update: HTTP {}: {}",
                reply.status,
                solr_error(&reply.body)
            )))
        }
    }
}

/// Solr's message from an error response (`{"error": {"msg": ..., "code": 400}}`).
fn solr_error(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/msg")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| http::snippet(body))
}

impl Backend for SolrBackend {
    /// Children are sent as nested documents (`_childDocuments_`); their own children are not.
    fn child_documents(&self) -> ChildDocuments {
        ChildDocuments::OneLevel
    }

    fn validate_connection(&mut self) -> Result<(), BackendError> {
        self.discover()?;
        let mut problems = Vec::new();
        for (i, base) in self.urls.iter().enumerate() {
            let url = match &self.default_collection {
                Some(c) => format!("{base}/{}/admin/ping?wt=json", http::encode(c)),
                // SolrCloud without a default collection: the cluster answers (as Lucille).
                None if self.zk.is_some() => {
                    format!("{base}/admin/collections?action=CLUSTERSTATUS&wt=json")
                }
                None => format!("{base}/admin/ping?wt=json"),
            };
            match self.client.send("GET", &url, "application/json", None) {
                Ok(r) if r.ok() => {
                    self.current = i;
                    return Ok(());
                }
                Ok(r) => {
                    problems.push(format!("{url}: HTTP {}: {}", r.status, solr_error(&r.body)))
                }
                Err(e) => problems.push(e.message),
            }
        }
        Err(BackendError::new(format!(
            "no Solr node answered: {}",
            problems.join("; ")
        )))
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let mut results: Vec<Option<String>> = Vec::with_capacity(ops.len());
        let mut rest = ops;
        while !rest.is_empty() {
            let collection = self.collection(&rest[0]).map(str::to_string);
            let n = rest
                .iter()
                .position(|op| self.collection(op) != collection.as_deref())
                .unwrap_or(rest.len());
            let (run, later) = rest.split_at(n);
            self.touched.insert(collection.clone());
            match self.update(collection.as_deref(), run) {
                Ok(None) => results.extend(run.iter().map(|_| None)),
                Ok(Some(reason)) if run.len() == 1 => results.push(Some(reason)),
                // One bad document rejects the request: find it by sending one at a time.
                Ok(Some(_)) => {
                    for (i, op) in run.iter().enumerate() {
                        match self.update(collection.as_deref(), std::slice::from_ref(op)) {
                            Ok(r) => results.push(r),
                            Err(e) => {
                                results.extend(rest[i..].iter().map(|_| Some(e.message.clone())));
                                return Ok(results);
                            }
                        }
                    }
                }
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

    fn close(&mut self) -> Result<(), BackendError> {
        let touched = std::mem::take(&mut self.touched);
        for collection in &touched {
            let reply = self.post(collection.as_deref(), "&commit=true", "{\"commit\":{}}")?;
            if !reply.ok() {
                return Err(BackendError::new(format!(
                    "Solr commit failed: HTTP {}: {}",
                    reply.status,
                    solr_error(&reply.body)
                )));
            }
        }
        Ok(())
    }
}
