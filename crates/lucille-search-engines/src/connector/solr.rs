//! SolrConnector (Lucille's `com.kmwllc.lucille.connector.SolrConnector`): sends
//! `preActions` / `postActions` to Solr's update handler and, when the connector has a
//! `pipeline`, queries the core with `solrParams` and cursorMark paging, publishing each result
//! document.
//!
//! Keys as Lucille's: `solr { url, userName, password, acceptInvalidCert, defaultCollection }`
//! (`url` a string or a list: the first is used, as Lucille's HTTP client; it names the core, or
//! `defaultCollection` does), `preActions` / `postActions` (request bodies, `{runId}` replaced by
//! the run id; JSON, or XML with `useXml: true`), `solrParams` (query parameters: a string, a
//! number or a list of them each), `idField` (default `id`). With `useCloudClient: true` and
//! `zkHosts` (`zkChroot`), the node is found in SolrCloud's ZooKeeper when the connector starts
//! (`indexer::solr_cloud`: the first live node, sorted, with `defaultCollection`, which is then
//! required; `url` is not needed and, if given, not used, as in Lucille).
//!
//! Paging: `/select` with `wt=json`, `cursorMark=*` and then each response's `nextCursorMark`,
//! until it comes back unchanged; `rows` sets the page size. The sort is `idField asc` (Lucille
//! adds it); a `sort` in `solrParams` is kept first and the id added as the tie-breaker, which
//! cursorMark requires. `start` and `cursorMark` in `solrParams` are config errors (Solr rejects
//! a start offset with a cursor). As Lucille: field names are lower-cased, the id field (and a
//! field called `id`) is not kept as a field, multi-valued Solr fields stay multi-valued. Values
//! keep their JSON type (Lucille turns them into strings). Errors (an unreachable Solr, an HTTP
//! error, a failed action) stop the connector with Solr's message.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{Checked, ComponentConfig, ConfigError, ConfigErrors, Options};
use crate::document::ids::id_text;
use crate::document::{is_reserved, Document};
use crate::http::{encode, snippet, Auth, HttpClient, HttpUrls, RetryPolicy};
use crate::indexer::solr_cloud::{self, ZkChroot, ZkHostList, ZkHosts};

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "SolrConnector",
    aliases: &[],
    spec: SolrOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Sends preActions / postActions to Solr's update handler and, when the connector has a
/// pipeline, reads a core's documents with solrParams and cursorMark paging.
#[derive(Options)]
#[options(base = connector_spec())]
struct SolrOptions {
    /// The Solr connection: url (or useCloudClient with zkHosts and zkChroot),
    /// defaultCollection, userName, password, acceptInvalidCert.
    solr: Map<String, Value>,
    /// Request bodies sent to the update handler before reading ({runId} is replaced by the
    /// run id).
    pre_actions: Option<Vec<String>>,
    /// Request bodies sent to the update handler after reading ({runId} is replaced by the run
    /// id).
    post_actions: Option<Vec<String>>,
    /// Query parameters of /select, each a string, a number or a list of them (not start or
    /// cursorMark; a sort gets the id field added as its tie-breaker).
    solr_params: Option<Map<String, Value>>,
    /// true: the actions are XML (else JSON).
    #[option(default = false)]
    use_xml: bool,
    /// The field of the results that holds each document's id (the core's uniqueKey).
    #[option(default = "id")]
    id_field: String,
}

/// SolrConnector's `solr` block.
#[derive(Options)]
struct SolrBlockOptions {
    /// The Solr URL, naming the core or, with defaultCollection, Solr's base; of a list, the
    /// first is used.
    url: Option<Checked<HttpUrls>>,
    /// The user for basic authentication (with password).
    #[option(alias = "username")]
    user_name: Option<String>,
    /// The password of userName.
    password: Option<String>,
    /// true: Solr's TLS certificate is not verified.
    #[option(default = false)]
    accept_invalid_cert: bool,
    /// The collection (core) read; required with zkHosts.
    default_collection: Option<String>,
    /// true with zkHosts: the node is found in SolrCloud's ZooKeeper when the connector starts
    /// (url is then not used).
    #[option(default = false)]
    use_cloud_client: bool,
    /// ZooKeeper's host:port entries (a string of them, comma-separated, or a list; a /chroot
    /// may follow the last).
    zk_hosts: Option<Checked<ZkHostList>>,
    /// The ZooKeeper path SolrCloud lives under (/solr).
    zk_chroot: Option<Checked<ZkChroot>>,
}

struct SolrConnector {
    common: Common,
    client: HttpClient,
    /// Where the core is.
    target: Target,
    pre_actions: Vec<String>,
    post_actions: Vec<String>,
    /// (name, value) pairs, in config order.
    params: Vec<(String, String)>,
    sort: String,
    id_field: String,
    xml: bool,
}

/// The core's URL (`http://host:8983/solr/core`), given or found in ZooKeeper.
enum Target {
    Core(String),
    Cloud {
        zk: ZkHosts,
        collection: String,
        /// `<first live node>/<collection>`, once read.
        core: OnceLock<String>,
    },
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    Ok(Box::new(new(config, common)?))
}

/// A `solrParams` value as its text(s).
fn param_values(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Number(n) => Some(vec![n.to_string()]),
        Value::Bool(b) => Some(vec![b.to_string()]),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                param_values(i)
                    .filter(|v| v.len() == 1)
                    .map(|mut v| v.remove(0))
            })
            .collect(),
        _ => None,
    }
}

/// Where the `solr` block points, and how to authenticate there.
struct Connection {
    target: Target,
    auth: Auth,
    accept_invalid_cert: bool,
}

/// Reads and checks the `solr` block, pushing every problem onto `errors`.
fn connection(solr: &ComponentConfig, errors: &mut Vec<ConfigError>) -> Option<Connection> {
    let s = SolrBlockOptions::from_config(solr)
        .map_err(|e| errors.extend(e))
        .ok()?;
    let cloud = s.use_cloud_client && s.zk_hosts.is_some();
    // zkHosts is checked without useCloudClient too, but then not used (as Lucille).
    let chroot = s.zk_chroot.and_then(|c| c.value(errors));
    let zk = s
        .zk_hosts
        .and_then(|hosts| hosts.value(errors))
        .map(|hosts| ZkHosts::new(hosts, chroot))
        .filter(|_| cloud);
    let collection = s.default_collection;
    if cloud && collection.as_deref().is_none_or(str::is_empty) {
        errors.push(solr.error(
            "defaultCollection",
            "is needed with zkHosts: it names the collection to read",
        ));
    }
    // Of several URLs, the first is used (as Lucille's HTTP client).
    let base = match s.url {
        Some(urls) => urls
            .value(errors)
            .and_then(|urls| urls.0.into_iter().next()),
        None => {
            if !cloud {
                errors.push(solr.error(
                    "url",
                    "missing: the Solr URL, or useCloudClient: true with zkHosts",
                ));
            }
            None
        }
    };
    if s.user_name.is_some() != s.password.is_some() {
        errors.push(solr.error("userName", "userName and password must be set together"));
    }
    if !errors.is_empty() {
        return None;
    }
    let credentials = base.as_ref().and_then(|b| b.credentials.clone());
    let auth = match (s.user_name, s.password, credentials) {
        (Some(u), Some(p), _) | (None, None, Some((u, p))) => Auth::Basic(u, p),
        _ => Auth::None,
    };
    let target = match (zk, base, collection) {
        (Some(zk), base, Some(collection)) => {
            if base.is_some() {
                tracing::warn!(
                    "{}: url is not used: the Solr nodes are read from ZooKeeper {} (zkHosts, as in Lucille)",
                    solr.path(),
                    zk.connect_string()
                );
            }
            Target::Cloud {
                zk,
                collection,
                core: OnceLock::new(),
            }
        }
        (_, Some(base), Some(c)) if !c.is_empty() => {
            Target::Core(format!("{}/{}", base.url, encode(&c)))
        }
        (_, Some(base), _) => Target::Core(base.url),
        (_, None, _) => {
            errors.push(solr.error("url", "missing"));
            return None;
        }
    };
    Some(Connection {
        target,
        auth,
        accept_invalid_cert: s.accept_invalid_cert,
    })
}

/// `solrParams` as (name, value) pairs, and the `sort` given there; problems go to `errors`.
fn params(
    config: &ComponentConfig,
    solr_params: Option<Map<String, Value>>,
    errors: &mut Vec<ConfigError>,
) -> (Vec<(String, String)>, Option<String>) {
    let mut params = Vec::new();
    let mut user_sort = None;
    for (name, v) in solr_params.unwrap_or_default() {
        let key = format!("solrParams.{name}");
        let Some(values) = param_values(&v) else {
            errors.push(config.error(&key, "must be a string, a number or a list of them"));
            continue;
        };
        match name.as_str() {
            "cursorMark" => errors
                .push(config.error(&key, "is set by the connector, which pages with cursorMark")),
            "start" => errors.push(config.error(
                &key,
                "cannot be used with cursorMark paging (Solr rejects it); use fq to select",
            )),
            "wt" if values.iter().any(|w| w != "json") => {
                errors.push(config.error(&key, "must be json (the connector reads JSON)"))
            }
            "wt" => {}
            "sort" => user_sort = Some(values.join(",")),
            _ => params.extend(values.into_iter().map(|v| (name.clone(), v))),
        }
    }
    (params, user_sort)
}

fn new(config: &ComponentConfig, common: &Common) -> Result<SolrConnector, ConfigErrors> {
    let o = SolrOptions::from_config(config)?;
    let mut errors: Vec<ConfigError> = Vec::new();
    let solr =
        ComponentConfig::new(o.solr, config.key_path("solr")).with_paths(config.paths().clone());
    let connection = connection(&solr, &mut errors);
    let id_field = o.id_field;
    if id_field.trim().is_empty() {
        errors.push(config.error("idField", "must not be empty"));
    }
    let (params, user_sort) = params(config, o.solr_params, &mut errors);
    let id_sort = format!("{id_field} asc");
    let sort = match user_sort.filter(|s| !s.trim().is_empty()) {
        Some(s)
            if s.split(',')
                .any(|c| c.split_whitespace().next() == Some(id_field.as_str())) =>
        {
            s
        }
        Some(s) => format!("{s},{id_sort}"),
        None => id_sort,
    };
    let Some(connection) = connection.filter(|_| errors.is_empty()) else {
        return Err(ConfigErrors(errors));
    };
    Ok(SolrConnector {
        common: common.clone(),
        client: HttpClient::new(
            "Solr",
            RetryPolicy::default(),
            None,
            connection.accept_invalid_cert,
            connection.auth,
        ),
        target: connection.target,
        pre_actions: o.pre_actions.unwrap_or_default(),
        post_actions: o.post_actions.unwrap_or_default(),
        params,
        sort,
        id_field,
        xml: o.use_xml,
    })
}

/// Solr's error message from an error response, else the body's start.
fn solr_message(status: u16, body: &str) -> String {
    let msg = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/msg")
            .and_then(Value::as_str)
            .map(String::from)
    });
    format!("HTTP {status}: {}", msg.unwrap_or_else(|| snippet(body)))
}

impl SolrConnector {
    fn err(&self, m: impl std::fmt::Display) -> ConnectorError {
        ConnectorError::new(format!("SolrConnector {:?}: {m}", self.common.name))
    }

    /// The core's URL; with ZooKeeper, read there on first use (the connector's start).
    fn core(&self) -> Result<&str, ConnectorError> {
        match &self.target {
            Target::Core(c) => Ok(c),
            Target::Cloud {
                zk,
                collection,
                core,
            } => {
                if core.get().is_none() {
                    let nodes = zk
                        .discover(Some(collection), solr_cloud::DISCOVERY_TIMEOUT)
                        .map_err(|e| self.err(e))?;
                    let first = nodes.first().ok_or_else(|| {
                        self.err(format!(
                            "ZooKeeper {} lists no Solr node",
                            zk.connect_string()
                        ))
                    })?;
                    let _ = core.set(format!("{first}/{}", encode(collection)));
                }
                core.get()
                    .map(String::as_str)
                    .ok_or_else(|| self.err("no Solr node"))
            }
        }
    }

    fn actions(&self, actions: &[String], run_id: &str) -> Result<(), ConnectorError> {
        let url = format!("{}/update", self.core()?);
        let content_type = if self.xml {
            "text/xml; charset=UTF-8"
        } else {
            "application/json; charset=UTF-8"
        };
        for action in actions {
            let body = action.replace("{runId}", run_id);
            let reply = self
                .client
                .send("POST", &url, content_type, Some(&body))
                .map_err(|e| self.err(format!("failed to perform action {body:?}: {e}")))?;
            if !reply.ok() {
                return Err(self.err(format!(
                    "failed to perform action {body:?}: {}",
                    solr_message(reply.status, &reply.body)
                )));
            }
            tracing::info!("SolrConnector: action {body:?} complete");
        }
        Ok(())
    }

    fn select_url(&self, core: &str, cursor: &str) -> String {
        let mut q = String::from("wt=json");
        for (k, v) in &self.params {
            q.push_str(&format!("&{}={}", encode(k), encode(v)));
        }
        q.push_str(&format!(
            "&sort={}&cursorMark={}",
            encode(&self.sort),
            encode(cursor)
        ));
        format!("{}/select?{q}", core)
    }

    /// Queries page after page, handing each document to `emit`; the number published.
    fn read(
        &self,
        emit: &mut dyn FnMut(Document) -> Result<(), ConnectorError>,
    ) -> Result<u64, ConnectorError> {
        let core = self.core()?;
        let mut cursor = "*".to_string();
        let mut count = 0u64;
        loop {
            let url = self.select_url(core, &cursor);
            let reply = self
                .client
                .send("GET", &url, "", None)
                .map_err(|e| self.err(format!("cannot query Solr: {e}")))?;
            if !reply.ok() {
                return Err(self.err(format!(
                    "query {url} failed: {}",
                    solr_message(reply.status, &reply.body)
                )));
            }
            let body: Value = serde_json::from_str(&reply.body).map_err(|e| {
                self.err(format!(
                    "the answer of {url} is not JSON ({e}): {}",
                    snippet(&reply.body)
                ))
            })?;
            let docs = body
                .pointer("/response/docs")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    self.err(format!(
                        "the answer of {url} has no response.docs: {}",
                        snippet(&reply.body)
                    ))
                })?;
            for d in docs {
                let Value::Object(fields) = d else {
                    return Err(self.err(format!("a result of {url} is not an object: {d}")));
                };
                emit(self.document(fields)?)?;
                count += 1;
            }
            let next = body
                .get("nextCursorMark")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    self.err(format!(
                        "the answer of {url} has no nextCursorMark (is {} a uniqueKey field of the core?)",
                        self.id_field
                    ))
                })?;
            if next == cursor {
                return Ok(count);
            }
            cursor = next.to_string();
        }
    }

    fn document(&self, fields: &Map<String, Value>) -> Result<Document, ConnectorError> {
        let id = fields
            .get(&self.id_field)
            .and_then(|v| match v {
                // A multi-valued id: its first value.
                Value::Array(a) => a.first().and_then(id_text),
                other => id_text(other),
            })
            .ok_or_else(|| {
                self.err(format!(
                    "a result has no idField {:?}: {}",
                    self.id_field,
                    snippet(&Value::Object(fields.clone()).to_string())
                ))
            })?;
        let mut doc = Document::new(self.common.doc_id(&id)).map_err(|e| self.err(e))?;
        for (name, v) in fields {
            let lower = name.to_lowercase();
            if *name == self.id_field || lower == self.id_field || lower == "id" || v.is_null() {
                continue;
            }
            if is_reserved(&lower) {
                return Err(self.err(format!(
                    "document {id:?}: field {name:?} is a reserved field name; leave it out with fl"
                )));
            }
            set_or_add_value(&mut doc, &lower, v.clone())
                .map_err(|e| self.err(format!("document {id:?}, field {name:?}: {e}")))?;
        }
        Ok(doc)
    }
}

/// A Solr multi-valued field (a JSON array) stays multi-valued; fields whose names differ only
/// by case are merged, as Lucille's lower-casing does.
fn set_or_add_value(
    doc: &mut Document,
    name: &str,
    v: Value,
) -> Result<(), crate::document::DocumentError> {
    match v {
        Value::Array(items) if !doc.has(name) => doc.set_field(name, Value::Array(items)),
        Value::Array(items) => {
            for i in items {
                doc.add_to_field(name, i)?;
            }
            Ok(())
        }
        other => doc.set_or_add(name, other),
    }
}

impl Connector for SolrConnector {
    fn pre_execute(&mut self, run_id: &str) -> Result<(), ConnectorError> {
        // With ZooKeeper, the node is found now: a run fails at its start without one.
        self.core()?;
        self.actions(&self.pre_actions, run_id)
    }

    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        // As Lucille: without a pipeline the connector only sends its actions.
        if self.common.pipeline.is_none() {
            return Ok(());
        }
        let count = self.read(&mut |doc| publisher.publish(doc).map_err(ConnectorError::from))?;
        tracing::info!(
            "SolrConnector {:?}: published {count} documents",
            self.common.name
        );
        Ok(())
    }

    fn post_execute(&mut self, run_id: &str) -> Result<(), ConnectorError> {
        self.actions(&self.post_actions, run_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::http::mock::{obj, Mock, Seen};
    use crate::runner::{run, test_history, RunMode, RunOptions};

    fn query(seen: &Seen) -> HashMap<String, Vec<String>> {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for pair in seen.query().split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                let bytes = s.as_bytes();
                let mut raw = Vec::new();
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i] == b'%' && i + 2 < bytes.len() {
                        raw.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                        i += 3;
                    } else {
                        raw.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
                        i += 1;
                    }
                }
                String::from_utf8(raw).unwrap()
            };
            out.entry(decode(k)).or_default().push(decode(v));
        }
        out
    }

    /// A Solr core that answers /select with cursorMark paging over `docs` (sorted by id, as
    /// the uniqueKey sort makes Solr return them) and records /update bodies.
    fn solr(docs: Vec<Value>) -> Mock {
        Mock::start(Box::new(move |seen: &Seen| {
            if seen.path().ends_with("/update") {
                return (200, r#"{"responseHeader":{"status":0,"QTime":1}}"#.into());
            }
            let q = query(seen);
            let one = |k: &str| {
                q.get(k)
                    .and_then(|v| v.first())
                    .cloned()
                    .unwrap_or_default()
            };
            if !one("sort").ends_with("id asc") {
                return (
                    400,
                    r#"{"responseHeader":{"status":400},"error":{"msg":"Cursor functionality requires a sort containing a uniqueKey field tie breaker","code":400}}"#.into(),
                );
            }
            if one("q") == "bad:" {
                return (
                    400,
                    r#"{"responseHeader":{"status":400},"error":{"metadata":["error-class","org.apache.solr.common.SolrException"],"msg":"org.apache.solr.search.SyntaxError: Cannot parse 'bad:'","code":400}}"#.into(),
                );
            }
            let rows: usize = one("rows").parse().unwrap_or(10);
            let cursor = one("cursorMark");
            let after = cursor.strip_prefix("AoE").map(str::to_string);
            let page: Vec<Value> = docs
                .iter()
                .filter(|d| {
                    after
                        .as_deref()
                        .is_none_or(|a| d["id"].as_str().unwrap() > a)
                })
                .take(rows)
                .cloned()
                .collect();
            let next = page.last().map_or(cursor.clone(), |d| {
                format!("AoE{}", d["id"].as_str().unwrap())
            });
            let body = json!({
                "responseHeader": {"zkConnected": null, "status": 0, "QTime": 0,
                                   "params": {"q": one("q"), "cursorMark": cursor}},
                "response": {"numFound": docs.len(), "start": 0, "numFoundExact": true, "docs": page},
                "nextCursorMark": next
            });
            (200, body.to_string())
        }))
    }

    fn connector(config: Value) -> Result<SolrConnector, ConfigErrors> {
        let mut map = obj(config);
        map.entry("name").or_insert(json!("solr"));
        map.entry("class").or_insert(json!("SolrConnector"));
        let spec = SolrOptions::spec();
        spec.normalize(&mut map);
        let errors = spec.validate(&map, "connectors[0]");
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        let config = ComponentConfig::new(map, "connectors[0]");
        let common = Common {
            name: "solr".into(),
            pipeline: config.string("pipeline")?,
            doc_id_prefix: config.string("docIdPrefix")?,
            ..Default::default()
        };
        new(&config, &common)
    }

    fn docs() -> Vec<Value> {
        vec![
            json!({"id": "a", "Title": "Alpha", "tags": ["x", "y"], "_version_": 1}),
            json!({"id": "b", "Title": "Beta", "price": 2.5}),
            json!({"id": "c", "title": "Gamma"}),
            json!({"id": "d"}),
            json!({"id": "e", "n": 5}),
        ]
    }

    #[test]
    fn pages_with_cursor_mark_until_it_repeats() {
        let mock = solr(docs());
        let c = connector(json!({"solr": {"url": format!("{}/solr/core1", mock.url)},
            "pipeline": "p", "idField": "id", "docIdPrefix": "s-",
            "solrParams": {"q": "*:*", "fq": ["type:a", "n:[1 TO 5]"], "rows": 2, "fl": "*"}}))
        .unwrap();
        let mut got = Vec::new();
        let n = c
            .read(&mut |d| {
                got.push(d.into_value());
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 5);
        assert_eq!(
            got,
            vec![
                json!({"id": "s-a", "title": "Alpha", "tags": ["x", "y"], "_version_": 1}),
                json!({"id": "s-b", "title": "Beta", "price": 2.5}),
                json!({"id": "s-c", "title": "Gamma"}),
                json!({"id": "s-d"}),
                json!({"id": "s-e", "n": 5}),
            ]
        );
        let selects: Vec<HashMap<String, Vec<String>>> = mock
            .requests()
            .iter()
            .filter(|r| r.path() == "/solr/core1/select")
            .map(query)
            .collect();
        // Pages a-b, c-d, e, then an empty page whose nextCursorMark repeats the cursor.
        let cursors: Vec<&str> = selects
            .iter()
            .map(|q| q["cursorMark"][0].as_str())
            .collect();
        assert_eq!(cursors, ["*", "AoEb", "AoEd", "AoEe"]);
        assert_eq!(selects[0]["fq"], ["type:a", "n:[1 TO 5]"]);
        assert_eq!(selects[0]["sort"], ["id asc"]);
        assert_eq!(selects[0]["wt"], ["json"]);
    }

    #[test]
    fn a_user_sort_keeps_the_id_as_tie_breaker_and_errors_carry_solrs_message() {
        let mock = solr(docs());
        let c = connector(
            json!({"solr": {"url": [format!("{}/solr", mock.url)], "defaultCollection": "core1"},
            "pipeline": "p", "solrParams": {"q": "bad:", "sort": "price desc"}}),
        )
        .unwrap();
        assert_eq!(c.sort, "price desc,id asc");
        let err = c.read(&mut |_| Ok(())).unwrap_err().to_string();
        assert!(
            err.contains("HTTP 400")
                && err.contains("Cannot parse 'bad:'")
                && err.contains("/solr/core1/select"),
            "{err}"
        );
        let c = connector(json!({"solr": {"url": "http://127.0.0.1:9/solr/x"}, "pipeline": "p"}))
            .unwrap();
        let err = c.read(&mut |_| Ok(())).unwrap_err().to_string();
        assert!(err.contains("cannot query Solr"), "{err}");
    }

    /// The error a bad connector config gets.
    fn err(config: Value) -> String {
        match connector(config) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted a bad config"),
        }
    }

    #[test]
    fn config_errors_name_their_keys() {
        let e = err(
            json!({"solr": {"url": "ftp://x", "zkHosts": ["z:x"], "userName": "u"},
            "solrParams": {"start": 10, "cursorMark": "*", "wt": "xml", "q": {"a": 1}}}),
        );
        for part in [
            "solr.url",
            "solr.zkHosts",
            "solr.userName",
            "solrParams.start",
            "solrParams.cursorMark",
            "solrParams.wt",
            "solrParams.q",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        let e = err(json!({"preActions": ["<commit/>"]}));
        assert!(e.contains("solr"), "{e}");
    }

    #[test]
    fn zookeeper_keys_are_checked_and_name_the_collection() {
        let e = err(
            json!({"solr": {"useCloudClient": true, "zkHosts": ["zk:2181"],
            "zkChroot": "solr"}}),
        );
        assert!(
            e.contains("solr.defaultCollection: is needed with zkHosts")
                && e.contains("solr.zkChroot: \"solr\" must start with /")
                && !e.contains("solr.url"),
            "{e}"
        );
        let e = err(json!({"solr": {"zkHosts": ["zk:2181"], "defaultCollection": "c"}}));
        assert!(
            e.contains("solr.url: missing"),
            "without useCloudClient: {e}"
        );
        assert!(connector(
            json!({"solr": {"useCloudClient": true, "zkHosts": "zk1:2181,zk2:2181/solr",
            "defaultCollection": "c"}})
        )
        .is_ok());
    }

    #[test]
    fn reads_the_collection_from_a_live_node_found_in_zookeeper() {
        use crate::indexer::solr_cloud::tests::{test_zk, TestCloud};
        let Some(host) = test_zk() else { return };
        let cloud = TestCloud::new(&host);
        let mock = solr(docs());
        let block = json!({"useCloudClient": true, "zkHosts": [cloud.host.clone()],
            "zkChroot": cloud.chroot.clone(), "defaultCollection": "core1"});
        let mut c = connector(json!({"solr": block, "pipeline": "p"})).unwrap();
        let e = c.pre_execute("run").unwrap_err().to_string();
        assert!(
            e.contains("lists no live Solr nodes") && e.contains(&cloud.connect),
            "{e}"
        );
        cloud.add_collection("core1");
        cloud.add_node(&TestCloud::node_name(&mock.url));
        let mut c = connector(json!({"solr": block, "pipeline": "p"})).unwrap();
        c.pre_execute("run").unwrap();
        let mut got = Vec::new();
        let n = c
            .read(&mut |d| {
                got.push(d.id().to_string());
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 5, "{got:?}");
        assert!(mock
            .requests()
            .iter()
            .any(|r| r.path() == "/solr/core1/select"));
    }

    #[test]
    fn actions_run_before_and_after_with_the_run_id_and_lucilles_class_name() {
        let mock = solr(docs());
        let config = json!({
            "connectors": [{"name": "solr", "class": "com.kmwllc.lucille.connector.SolrConnector",
                "solr": {"url": [format!("{}/solr/core1", mock.url)]}, "pipeline": "p",
                "preActions": ["<delete><query>runId:{runId}</query></delete>"],
                "postActions": ["<commit/>"], "useXml": true,
                "solrParams": {"q": "*:*", "rows": 3}}],
            "pipelines": [{"name": "p", "stages": []}]
        });
        let opts = RunOptions {
            mode: RunMode::Test,
            ..Default::default()
        };
        let r = run(&config, None, &opts).unwrap();
        assert!(r.ok, "{}", r.summary);
        let (docs, _) = test_history(&r);
        assert_eq!(docs.len(), 5);
        let reqs = mock.requests();
        let updates: Vec<&Seen> = reqs
            .iter()
            .filter(|r| r.path().ends_with("/update"))
            .collect();
        assert_eq!(updates.len(), 2);
        assert!(
            updates[0].body.starts_with("<delete><query>runId:")
                && !updates[0].body.contains("{runId}")
        );
        assert_eq!(updates[1].body, "<commit/>");
        assert!(updates[0]
            .header("Content-Type")
            .unwrap()
            .starts_with("text/xml"));
        // The first request is the pre-action, the last the post-action.
        assert!(reqs.first().unwrap().path().ends_with("/update"));
        assert!(reqs.last().unwrap().path().ends_with("/update"));
    }
}
