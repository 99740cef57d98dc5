//! SolrCloud discovery through ZooKeeper, for the Solr indexer and the SolrConnector: Lucille's
//! `solr { useCloudClient: true, zkHosts, zkChroot, defaultCollection }` (SolrJ's
//! CloudSolrClient built from ZooKeeper hosts).
//!
//! `zkHosts` is a list of `host:port` entries or one comma-separated string (a port left out is
//! ZooKeeper's 2181; an IPv6 host is bracketed); the chroot is `zkChroot` and/or a `/path`
//! suffix on the last host, joined as SolrJ joins them (suffix, then `zkChroot`). Only the
//! shape is checked when the config is validated; ZooKeeper is read when the indexer or
//! connector starts ([`ZkHosts::discover`]): the children of `/live_nodes` (SolrCloud node
//! names, `127.0.0.1:8983_solr`: host and port, then the context path with `/` written `%2F`),
//! `urlScheme` from `/clusterprops.json` when present (default `http`), and, given a
//! collection, that `/collections/<name>` or an alias in `/aliases.json` exists. The answer is
//! the nodes' base URLs (`http://127.0.0.1:8983/solr`), sorted; requests then go to
//! `<base>/<collection>` as with a `solr.url` list. The whole discovery is bounded by
//! [`DISCOVERY_TIMEOUT`]. The async ZooKeeper client runs on a current-thread tokio runtime made
//! for the call; its session task is spawned there through `spawns-core`'s thread-context
//! spawner, and the session ends with the call.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::config::{ComponentConfig, ConfigError, Kind, OptionValue};

/// ZooKeeper's default client port, for a host given without one.
pub const DEFAULT_ZK_PORT: u16 = 2181;

/// Bound of one discovery: connecting, the session and every read.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Where SolrCloud keeps its state: ZooKeeper hosts and the chroot under them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkHosts {
    /// `host:port` (IPv6 hosts bracketed), in config order.
    hosts: Vec<String>,
    /// `/solr`, or `None` for the root.
    chroot: Option<String>,
}

/// What is wrong with one `zkHosts` entry or a chroot path (`zkChroot`, or the `/path` after
/// the last host).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZkHostError {
    #[error("{entry:?} has no closing ] after its IPv6 host")]
    UnclosedIpv6 { entry: String },
    #[error("{entry:?} is not [host]:port")]
    NotBracketedHostPort { entry: String },
    #[error("{entry:?} has no host (expected host:port)")]
    NoHost { entry: String },
    #[error("{entry:?} is not host:port")]
    NotHostPort { entry: String },
    #[error("{entry:?} has no valid port (expected host:port)")]
    BadPort { entry: String },
    #[error("{part:?}: an empty entry (expected host:port)")]
    EmptyEntry { part: String },
    #[error("{part:?}: a chroot suffix (/path) may follow only the last host")]
    ChrootNotLast { part: String },
    #[error("must name at least one ZooKeeper host:port")]
    NoHosts,
    #[error("{path:?} must start with / (a ZooKeeper path)")]
    RelativeChroot { path: String },
    #[error("{path:?} is not a valid ZooKeeper path")]
    BadChroot { path: String },
}

/// Every problem of a `zkHosts` value (or a ZooKeeper connect string), in order; shown joined
/// by `; `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join_problems(.0))]
pub struct ZkHostsError(pub Vec<ZkHostError>);

fn join_problems(problems: &[ZkHostError]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why discovery failed. Every message names the ZooKeeper connect string.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("SolrCloud discovery: cannot start the ZooKeeper client runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("SolrCloud discovery: ZooKeeper {zk} cannot be reached: {}", unreachable_reason(.source))]
    Unreachable {
        zk: String,
        #[source]
        source: zookeeper_client::Error,
    },
    #[error("SolrCloud discovery: ZooKeeper {zk} did not answer within {} s", timeout.as_secs())]
    Timeout { zk: String, timeout: Duration },
    #[error("SolrCloud discovery: ZooKeeper {zk}: reading {path} failed: {source}")]
    Read {
        zk: String,
        path: String,
        #[source]
        source: zookeeper_client::Error,
    },
    #[error("SolrCloud discovery: ZooKeeper {zk} has no /live_nodes: no SolrCloud there (is zkChroot right?)")]
    NotSolrCloud { zk: String },
    #[error("SolrCloud discovery: ZooKeeper {zk} lists no live Solr nodes (/live_nodes is empty)")]
    NoLiveNodes { zk: String },
    #[error("SolrCloud discovery: ZooKeeper {zk}: live node {node:?} is not a SolrCloud node name (host:port_context)")]
    BadNodeName { zk: String, node: String },
    #[error("SolrCloud discovery: ZooKeeper {zk}: {path} is not JSON: {source}")]
    BadJson {
        zk: String,
        path: String,
        #[source]
        source: ClusterPropsError,
    },
    #[error("SolrCloud discovery: ZooKeeper {zk}: no collection or alias {collection:?} in SolrCloud (collections: {known})")]
    NoCollection {
        zk: String,
        collection: String,
        known: String,
    },
}

/// Why `/clusterprops.json` gives no usable `urlScheme`.
#[derive(Debug, thiserror::Error)]
pub enum ClusterPropsError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("urlScheme is {0}, not http or https")]
    UrlScheme(Value),
}

/// Why ZooKeeper's client could not connect, as said in [`DiscoveryError::Unreachable`].
fn unreachable_reason(e: &zookeeper_client::Error) -> String {
    match e {
        zookeeper_client::Error::NoHosts => {
            "no host accepted a connection (refused or timed out)".to_string()
        }
        other => other.to_string(),
    }
}

/// One `host[:port]` entry, checked as ZooKeeper's client does; `host:port` back.
fn host_port(entry: &str) -> Result<String, ZkHostError> {
    let owned = || entry.to_string();
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| ZkHostError::UnclosedIpv6 { entry: owned() })?;
        match after {
            "" => (format!("[{host}]"), None),
            p => match p.strip_prefix(':') {
                Some(p) => (format!("[{host}]"), Some(p)),
                None => return Err(ZkHostError::NotBracketedHostPort { entry: owned() }),
            },
        }
    } else {
        match entry.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (entry.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(ZkHostError::NoHost { entry: owned() });
    }
    if host.contains([':', ' ', '@']) && !host.starts_with('[') {
        return Err(ZkHostError::NotHostPort { entry: owned() });
    }
    let port = match port {
        None => DEFAULT_ZK_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(ZkHostError::BadPort { entry: owned() }),
        },
    };
    Ok(format!("{host}:{port}"))
}

/// A chroot path: `/a/b` (a trailing `/` dropped; `/` alone is the root, `None`).
fn chroot_path(path: &str) -> Result<Option<String>, ZkHostError> {
    if !path.starts_with('/') {
        return Err(ZkHostError::RelativeChroot {
            path: path.to_string(),
        });
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(None);
    }
    if trimmed[1..]
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(ZkHostError::BadChroot {
            path: path.to_string(),
        });
    }
    Ok(Some(trimmed.to_string()))
}

/// `zkHosts`: ZooKeeper's `host[:port]` entries (a list, or one comma-separated string), the
/// last one optionally followed by a `/chroot`; checked as the option is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkHostList {
    /// `host:port` (IPv6 hosts bracketed), in config order.
    hosts: Vec<String>,
    /// The `/path` after the last host.
    suffix: Option<String>,
}

impl ZkHostList {
    /// Every problem with the entries.
    fn parse(entries: &[String]) -> Result<Self, ZkHostsError> {
        let mut problems = Vec::new();
        let parts: Vec<&str> = entries
            .iter()
            .flat_map(|e| e.split(','))
            .map(str::trim)
            .collect();
        let mut hosts = Vec::new();
        let mut suffix = None;
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let (entry, path) = match part.find('/') {
                Some(at) => part.split_at(at),
                None => (*part, ""),
            };
            if entry.is_empty() {
                problems.push(ZkHostError::EmptyEntry {
                    part: part.to_string(),
                });
                continue;
            }
            match host_port(entry) {
                Ok(h) => hosts.push(h),
                Err(e) => problems.push(e),
            }
            if !path.is_empty() {
                if i != last {
                    problems.push(ZkHostError::ChrootNotLast {
                        part: part.to_string(),
                    });
                } else {
                    match chroot_path(path) {
                        Ok(p) => suffix = p,
                        Err(e) => problems.push(e),
                    }
                }
            }
        }
        if parts.is_empty() {
            problems.push(ZkHostError::NoHosts);
        }
        if problems.is_empty() {
            Ok(ZkHostList { hosts, suffix })
        } else {
            Err(ZkHostsError(problems))
        }
    }
}

impl OptionValue for ZkHostList {
    fn kind() -> Kind {
        Kind::StringOrList
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.strings(key)? {
            None => Ok(None),
            Some(entries) => ZkHostList::parse(&entries)
                .map(Some)
                .map_err(|problems| config.error(key, problems.to_string())),
        }
    }
}

/// `zkChroot`: a ZooKeeper path (`/solr`; `/` is the root), checked as it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkChroot(Option<String>);

impl OptionValue for ZkChroot {
    fn kind() -> Kind {
        Kind::String
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.string(key)? {
            None => Ok(None),
            Some(p) => chroot_path(&p)
                .map(|p| Some(ZkChroot(p)))
                .map_err(|e| config.error(key, e.to_string())),
        }
    }
}

impl ZkHosts {
    /// The hosts of `zkHosts` under their chroot: the suffix on the last host, then
    /// `zkChroot`, joined as SolrJ joins them.
    pub fn new(hosts: ZkHostList, chroot: Option<ZkChroot>) -> ZkHosts {
        let chroot = match (hosts.suffix, chroot.and_then(|c| c.0)) {
            (Some(a), Some(b)) => Some(format!("{a}{b}")),
            (a, b) => a.or(b),
        };
        ZkHosts {
            hosts: hosts.hosts,
            chroot,
        }
    }

    /// Reads `zkHosts` and `zkChroot` of a `solr` block as the options types do; `Ok(None)`
    /// without `zkHosts`. Errors name the key.
    #[cfg(test)]
    pub fn from_config(c: &ComponentConfig) -> Result<Option<ZkHosts>, Vec<ConfigError>> {
        let hosts = ZkHostList::read(c, "zkHosts");
        let chroot = ZkChroot::read(c, "zkChroot");
        match (hosts, chroot) {
            (Ok(None), _) => Ok(None),
            (Ok(Some(hosts)), Ok(chroot)) => Ok(Some(ZkHosts::new(hosts, chroot))),
            (hosts, chroot) => Err(hosts.err().into_iter().chain(chroot.err()).collect()),
        }
    }

    /// From a ZooKeeper connect string (`h1:2181,h2:2181/solr`), as `zkHosts` is read.
    pub fn parse(connect: &str) -> Result<ZkHosts, ZkHostsError> {
        ZkHostList::parse(&[connect.to_string()]).map(|hosts| ZkHosts::new(hosts, None))
    }

    /// The connect string: `h1:2181,h2:2181/chroot`.
    pub fn connect_string(&self) -> String {
        format!(
            "{}{}",
            self.hosts.join(","),
            self.chroot.as_deref().unwrap_or("")
        )
    }

    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    pub fn chroot(&self) -> Option<&str> {
        self.chroot.as_deref()
    }

    /// The base URLs of SolrCloud's live nodes, sorted; with `collection`, checks that it (or an
    /// alias of that name) exists. Bounded by `timeout`.
    pub fn discover(
        &self,
        collection: Option<&str>,
        timeout: Duration,
    ) -> Result<Vec<String>, DiscoveryError> {
        let zk = self.connect_string();
        let result = block_on(async {
            match tokio::time::timeout(timeout, read_cluster(&zk, collection, timeout)).await {
                Ok(r) => r,
                Err(_) => Err(DiscoveryError::Timeout {
                    zk: zk.clone(),
                    timeout,
                }),
            }
        })?;
        if let Ok(urls) = &result {
            tracing::info!(
                "SolrCloud discovery through ZooKeeper {zk}: {} live node(s): {}",
                urls.len(),
                urls.join(", ")
            );
        }
        result
    }
}

/// A `spawns-core` spawner that puts the ZooKeeper client's tasks on a tokio runtime.
struct TokioSpawner(tokio::runtime::Handle);

impl spawns_core::Spawn for TokioSpawner {
    fn spawn(&self, task: spawns_core::Task) {
        drop(self.0.spawn(Box::into_pin(task.future)));
    }
}

/// Runs `f` (which may use the ZooKeeper client) to completion on a current-thread runtime
/// made for the call; tasks the client spawned end with it.
pub(crate) fn block_on<F: Future>(f: F) -> Result<F::Output, DiscoveryError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(DiscoveryError::Runtime)?;
    let spawner = TokioSpawner(rt.handle().clone());
    let _scope = spawns_core::enter(&spawner);
    Ok(rt.block_on(f))
}

/// Connects a ZooKeeper client (bounded: it fails once every host refused or timed out).
pub(crate) async fn connect(
    zk: &str,
    timeout: Duration,
) -> Result<zookeeper_client::Client, DiscoveryError> {
    zookeeper_client::Client::connector()
        .with_fail_eagerly()
        .with_connection_timeout(timeout)
        .with_session_timeout(timeout)
        .connect(zk)
        .await
        .map_err(|source| DiscoveryError::Unreachable {
            zk: zk.to_string(),
            source,
        })
}

/// A failed read of `path` in ZooKeeper `zk`.
fn read_error(zk: &str, path: &str, source: zookeeper_client::Error) -> DiscoveryError {
    DiscoveryError::Read {
        zk: zk.to_string(),
        path: path.to_string(),
        source,
    }
}

async fn read_cluster(
    zk: &str,
    collection: Option<&str>,
    timeout: Duration,
) -> Result<Vec<String>, DiscoveryError> {
    use zookeeper_client::Error as ZkError;
    let client = connect(zk, timeout).await?;
    let read_err = |path: &str, e: ZkError| read_error(zk, path, e);
    let mut nodes = match client.list_children("/live_nodes").await {
        Ok(n) => n,
        Err(ZkError::NoNode) => return Err(DiscoveryError::NotSolrCloud { zk: zk.to_string() }),
        Err(e) => return Err(read_err("/live_nodes", e)),
    };
    if nodes.is_empty() {
        return Err(DiscoveryError::NoLiveNodes { zk: zk.to_string() });
    }
    nodes.sort();
    let scheme = match client.get_data("/clusterprops.json").await {
        Ok((data, _)) => url_scheme(&data).map_err(|source| DiscoveryError::BadJson {
            zk: zk.to_string(),
            path: "/clusterprops.json".to_string(),
            source,
        })?,
        Err(ZkError::NoNode) => "http".to_string(),
        Err(e) => return Err(read_err("/clusterprops.json", e)),
    };
    if let Some(name) = collection {
        check_collection(&client, zk, name).await?;
    }
    let mut urls = Vec::with_capacity(nodes.len());
    for node in &nodes {
        urls.push(
            base_url(node, &scheme).ok_or_else(|| DiscoveryError::BadNodeName {
                zk: zk.to_string(),
                node: node.clone(),
            })?,
        );
    }
    urls.sort();
    urls.dedup();
    Ok(urls)
}

/// `/collections/<name>` exists, or `name` is an alias in `/aliases.json`.
async fn check_collection(
    client: &zookeeper_client::Client,
    zk: &str,
    name: &str,
) -> Result<(), DiscoveryError> {
    use zookeeper_client::Error as ZkError;
    let read_err = |path: &str, e: ZkError| read_error(zk, path, e);
    // A name ZooKeeper rejects as a path cannot be a collection.
    let path = format!("/collections/{name}");
    if !name.is_empty() && !name.contains('/') {
        match client.check_stat(&path).await {
            Ok(Some(_)) => return Ok(()),
            Ok(None) | Err(ZkError::BadArguments(_)) => {}
            Err(e) => return Err(read_err(&path, e)),
        }
    }
    match client.get_data("/aliases.json").await {
        Ok((data, _)) => {
            let aliases: Value = serde_json::from_slice(&data).unwrap_or(Value::Null);
            if aliases
                .pointer("/collection")
                .and_then(|a| a.get(name))
                .is_some()
            {
                return Ok(());
            }
        }
        Err(ZkError::NoNode) => {}
        Err(e) => return Err(read_err("/aliases.json", e)),
    }
    let known = match client.list_children("/collections").await {
        Ok(mut c) if !c.is_empty() => {
            c.sort();
            c.join(", ")
        }
        Ok(_) | Err(ZkError::NoNode) => "none".to_string(),
        Err(e) => return Err(read_err("/collections", e)),
    };
    Err(DiscoveryError::NoCollection {
        zk: zk.to_string(),
        collection: name.to_string(),
        known,
    })
}

/// `urlScheme` of `/clusterprops.json` (`http` when absent or empty).
fn url_scheme(data: &[u8]) -> Result<String, ClusterPropsError> {
    if data.iter().all(u8::is_ascii_whitespace) {
        return Ok("http".to_string());
    }
    let v: Value = serde_json::from_slice(data)?;
    match v.get("urlScheme") {
        None | Some(Value::Null) => Ok("http".to_string()),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("http") => Ok("http".to_string()),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("https") => Ok("https".to_string()),
        Some(other) => Err(ClusterPropsError::UrlScheme(other.clone())),
    }
}

/// A live node's base URL: `127.0.0.1:8983_solr` -> `http://127.0.0.1:8983/solr` (the context
/// after the `_` following the port, percent-decoded). `None` when it is not `host:port_...`.
pub fn base_url(node: &str, scheme: &str) -> Option<String> {
    let colon = if node.starts_with('[') {
        node.find("]:")? + 1
    } else {
        node.find(':')?
    };
    let (host_port, context) = match node[colon..].find('_') {
        Some(at) => (&node[..colon + at], &node[colon + at + 1..]),
        None => (node, ""),
    };
    let port = &host_port[colon + 1..];
    if colon == 0 || port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let context = percent_decode(context)?;
    let context = context.trim_matches('/');
    Some(if context.is_empty() {
        format!("{scheme}://{host_port}")
    } else {
        format!("{scheme}://{host_port}/{context}")
    })
}

/// URL decoding as Java's URLDecoder (`%XX`, `+` for a space); `None` when malformed.
fn percent_decode(s: &str) -> Option<String> {
    // percent_encoding keeps a malformed escape as written; URLDecoder rejects it.
    let bytes = s.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if malformed {
        return None;
    }
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

#[cfg(test)]
#[path = "solr_cloud_tests.rs"]
pub(crate) mod tests;
