//! SolrCloud discovery: connect strings and node names without a server, and discovery and the
//! Solr indexer against a real ZooKeeper (`LUCILLE_TEST_ZK`, started by
//! scripts/services/zookeeper.sh; skipped with a note when unset, unless
//! `LUCILLE_REQUIRE_SERVICES=1`) whose SolrCloud znodes each test writes under its own chroot,
//! with the Solr nodes played by the mock of `solr_tests`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zookeeper_client::{Acls, Client, CreateMode};

use super::*;
use crate::indexer::mock_http::{free_port, obj, Fault, FaultServer, Seen};

#[test]
fn zk_hosts_shapes() {
    let z = ZkHosts::parse("zk1:2181,zk2:2182/solr").unwrap();
    assert_eq!(z.hosts(), ["zk1:2181", "zk2:2182"]);
    assert_eq!(z.chroot(), Some("/solr"));
    assert_eq!(z.connect_string(), "zk1:2181,zk2:2182/solr");
    let z = ZkHosts::parse("zk1, [::1]:2190, [fe80::1]").unwrap();
    assert_eq!(z.hosts(), ["zk1:2181", "[::1]:2190", "[fe80::1]:2181"]);
    assert_eq!(z.chroot(), None);
    let e = ZkHosts::parse("h:abc,[::1").unwrap_err();
    assert_eq!(
        e.0,
        [
            ZkHostError::BadPort {
                entry: "h:abc".into()
            },
            ZkHostError::UnclosedIpv6 {
                entry: "[::1".into()
            },
        ]
    );
    assert_eq!(
        e.to_string(),
        "\"h:abc\" has no valid port (expected host:port); \"[::1\" has no closing ] after its IPv6 host"
    );

    let read = |block: Value| {
        ZkHosts::from_config(&ComponentConfig::new(obj(block), "solr")).map_err(|e| {
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    };
    let z = read(json!({"zkHosts": ["a:1", "b:2/x"], "zkChroot": "/solr/"}))
        .unwrap()
        .unwrap();
    assert_eq!(
        z.connect_string(),
        "a:1,b:2/x/solr",
        "suffix then zkChroot, as SolrJ"
    );
    assert_eq!(read(json!({"url": "http://h/solr"})), Ok(None));
    for (block, part) in [
        (
            json!({"zkHosts": []}),
            "solr.zkHosts: must name at least one",
        ),
        (
            json!({"zkHosts": [""]}),
            "solr.zkHosts: \"\": an empty entry",
        ),
        (json!({"zkHosts": "a:2181,,b"}), "an empty entry"),
        (json!({"zkHosts": [":2181"]}), "\":2181\" has no host"),
        (json!({"zkHosts": ["h:abc"]}), "\"h:abc\" has no valid port"),
        (json!({"zkHosts": ["h:0"]}), "\"h:0\" has no valid port"),
        (json!({"zkHosts": ["h:70000"]}), "no valid port"),
        (
            json!({"zkHosts": ["a:1/x", "b:2"]}),
            "may follow only the last host",
        ),
        (json!({"zkHosts": ["a:1//x"]}), "not a valid ZooKeeper path"),
        (
            json!({"zkHosts": ["a:1"], "zkChroot": "solr"}),
            "solr.zkChroot: \"solr\" must start with /",
        ),
        (json!({"zkHosts": {"a": 1}}), "solr.zkHosts"),
        (json!({"zkHosts": ["a:1"], "zkChroot": 5}), "solr.zkChroot"),
    ] {
        let e = read(block.clone()).expect_err(&block.to_string());
        assert!(e.contains(part), "{block}: {part} missing in {e}");
    }
}

#[test]
fn node_names_become_base_urls() {
    assert_eq!(
        base_url("127.0.0.1:8983_solr", "http").as_deref(),
        Some("http://127.0.0.1:8983/solr")
    );
    assert_eq!(
        base_url("solr-1.example:8983_a%2Fb", "https").as_deref(),
        Some("https://solr-1.example:8983/a/b")
    );
    assert_eq!(
        base_url("host_with_underscore:8983_", "http").as_deref(),
        Some("http://host_with_underscore:8983"),
        "the context starts at the first _ after the port"
    );
    assert_eq!(
        base_url("h:89x_solr", "http"),
        None,
        "the port must be digits"
    );
    assert_eq!(
        base_url("h:8983_", "http").as_deref(),
        Some("http://h:8983"),
        "an empty context is the root"
    );
    assert_eq!(
        base_url("[::1]:8983_solr", "http").as_deref(),
        Some("http://[::1]:8983/solr")
    );
    assert_eq!(base_url("nonsense", "http"), None);
    assert_eq!(base_url("h:8983_bad%zz", "http"), None);
    assert_eq!(base_url("h:8983_bad%4", "http"), None);
    assert_eq!(
        base_url("h:8983_a+b%2Bc", "http").as_deref(),
        Some("http://h:8983/a b+c"),
        "as Java's URLDecoder: + is a space, %2B a plus"
    );
    assert_eq!(
        url_scheme(b"{\"urlScheme\":\"https\"}").ok().as_deref(),
        Some("https")
    );
    assert_eq!(url_scheme(b"{}").ok().as_deref(), Some("http"));
    assert_eq!(url_scheme(b"").ok().as_deref(), Some("http"));
    assert_eq!(
        url_scheme(b"{\"urlScheme\":\"ftp\"}")
            .unwrap_err()
            .to_string(),
        "urlScheme is \"ftp\", not http or https"
    );
    assert!(matches!(
        url_scheme(b"{urlScheme"),
        Err(ClusterPropsError::Json(_))
    ));
}

/// The test ZooKeeper's address, or `None` (skip) when it is not running.
pub(crate) fn test_zk() -> Option<String> {
    crate::test_service::test_service("LUCILLE_TEST_ZK", "source scripts/services/zookeeper.sh")
}

/// A SolrCloud's znodes under a fresh chroot of the test ZooKeeper, written by a client whose
/// session (and so its ephemeral live nodes) lasts as long as this value: the runtime keeps a
/// worker thread that answers the session's pings between calls.
pub(crate) struct TestCloud {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    /// The ZooKeeper connect string with the chroot (`127.0.0.1:21810/lucille-test-...`).
    pub connect: String,
    pub host: String,
    pub chroot: String,
}

struct Spawner(tokio::runtime::Handle);

impl spawns_core::Spawn for Spawner {
    fn spawn(&self, task: spawns_core::Task) {
        drop(self.0.spawn(Box::into_pin(task.future)));
    }
}

impl TestCloud {
    pub(crate) fn new(host: &str) -> TestCloud {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let chroot = format!("/lucille-test-{}", uuid::Uuid::new_v4().simple());
        let mut cloud = TestCloud {
            rt,
            client: None,
            connect: format!("{host}{chroot}"),
            host: host.to_string(),
            chroot: chroot.clone(),
        };
        let client = cloud.run(async {
            let root = connect(host, Duration::from_secs(10)).await.unwrap();
            let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
            root.create(&chroot, b"", &persistent).await.unwrap();
            for p in ["live_nodes", "collections"] {
                root.create(&format!("{chroot}/{p}"), b"", &persistent)
                    .await
                    .unwrap();
            }
            root
        });
        cloud.client = Some(client);
        cloud
    }

    fn run<F: std::future::Future>(&self, f: F) -> F::Output {
        let spawner = Spawner(self.rt.handle().clone());
        let _scope = spawns_core::enter(&spawner);
        self.rt.block_on(f)
    }

    fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    /// Registers a live node (ephemeral, as Solr does).
    pub(crate) fn add_node(&self, name: &str) {
        let path = format!("{}/live_nodes/{name}", self.chroot);
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        self.run(self.client().create(&path, b"", &ephemeral))
            .unwrap();
    }

    pub(crate) fn remove_node(&self, name: &str) {
        let path = format!("{}/live_nodes/{name}", self.chroot);
        self.run(self.client().delete(&path, None)).unwrap();
    }

    /// Writes a persistent znode under the chroot (`/clusterprops.json`, `/collections/c`).
    pub(crate) fn put(&self, path: &str, data: &str) {
        let path = format!("{}{path}", self.chroot);
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        self.run(async {
            match self
                .client()
                .create(&path, data.as_bytes(), &persistent)
                .await
            {
                Err(zookeeper_client::Error::NodeExists) => {
                    self.client()
                        .set_data(&path, data.as_bytes(), None)
                        .await
                        .unwrap();
                }
                other => {
                    other.unwrap();
                }
            }
        });
    }

    /// A collection, as Solr 9 writes it (`/collections/<name>/state.json`).
    pub(crate) fn add_collection(&self, name: &str) {
        self.put(&format!("/collections/{name}"), "");
        self.put(
            &format!("/collections/{name}/state.json"),
            &json!({name: {"shards": {}}}).to_string(),
        );
    }

    /// The node name of a mock Solr at `url` (`http://127.0.0.1:PORT`), context `solr`.
    pub(crate) fn node_name(url: &str) -> String {
        format!("{}_solr", url.trim_start_matches("http://"))
    }
}

impl Drop for TestCloud {
    fn drop(&mut self) {
        // Persistent znodes of the chroot go; ephemeral ones go with the session.
        if let Some(client) = self.client.take() {
            let chroot = self.chroot.clone();
            self.run(async move {
                let mut stack = vec![chroot];
                let mut order = Vec::new();
                while let Some(p) = stack.pop() {
                    if let Ok(children) = client.list_children(&p).await {
                        stack.extend(children.into_iter().map(|c| format!("{p}/{c}")));
                    }
                    order.push(p);
                }
                for p in order.iter().rev() {
                    let _ = client.delete(p, None).await;
                }
            });
        }
    }
}

#[test]
fn discovery_reads_live_nodes_scheme_and_collections() {
    let Some(host) = test_zk() else { return };
    let cloud = TestCloud::new(&host);
    let zk = ZkHosts::parse(&cloud.connect).unwrap();
    let t = Duration::from_secs(10);
    match zk.discover(None, t) {
        Err(DiscoveryError::NoLiveNodes { zk }) => assert_eq!(zk, cloud.connect),
        other => panic!("{other:?}"),
    }
    let e = zk.discover(None, t).unwrap_err().to_string();
    assert!(
        e.contains("lists no live Solr nodes") && e.contains(&cloud.connect),
        "{e}"
    );

    cloud.add_node("127.0.0.1:8984_solr");
    cloud.add_node("127.0.0.1:8983_solr");
    cloud.add_node("127.0.0.1:8985_");
    assert_eq!(
        zk.discover(None, t).unwrap(),
        [
            "http://127.0.0.1:8983/solr",
            "http://127.0.0.1:8984/solr",
            "http://127.0.0.1:8985"
        ]
    );
    cloud.put("/clusterprops.json", r#"{"urlScheme":"https"}"#);
    assert_eq!(
        zk.discover(None, t).unwrap()[0],
        "https://127.0.0.1:8983/solr"
    );

    cloud.add_collection("books");
    cloud.put("/aliases.json", r#"{"collection":{"latest":"books"}}"#);
    assert!(zk.discover(Some("books"), t).is_ok());
    assert!(
        zk.discover(Some("latest"), t).is_ok(),
        "an alias is a collection"
    );
    let e = zk.discover(Some("films"), t).unwrap_err().to_string();
    assert!(
        e.contains("no collection or alias \"films\"") && e.contains("collections: books"),
        "{e}"
    );

    // Another chroot: no SolrCloud there.
    let other = ZkHosts::parse(&format!("{host}/lucille-test-absent")).unwrap();
    let e = other.discover(None, t).unwrap_err().to_string();
    assert!(e.contains("has no /live_nodes"), "{e}");
}

#[test]
fn an_unreachable_zookeeper_fails_quickly_naming_its_hosts() {
    let port = free_port();
    let zk = ZkHosts::parse(&format!("127.0.0.1:{port}/solr")).unwrap();
    let start = Instant::now();
    let e = zk
        .discover(Some("c"), Duration::from_secs(10))
        .unwrap_err()
        .to_string();
    assert!(
        start.elapsed() < Duration::from_secs(11),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.contains(&format!(
            "ZooKeeper 127.0.0.1:{port}/solr cannot be reached"
        )),
        "{e}"
    );
}

/// A mock Solr node: pings and updates of collection `c`, recording the added ids. It closes
/// each connection after its answer, so once dropped it refuses connections, as a node that
/// went down.
fn node() -> (std::sync::Arc<parking_lot::Mutex<Vec<String>>>, FaultServer) {
    let ids: std::sync::Arc<parking_lot::Mutex<Vec<String>>> = Default::default();
    let i2 = ids.clone();
    let server = FaultServer::start(
        0,
        Duration::ZERO,
        Box::new(move |r: &Seen| {
            let ok =
                json!({"responseHeader": {"status": 0, "QTime": 1}, "status": "OK"}).to_string();
            match r.path() {
                "/solr/c/admin/ping" => Fault::Answer(200, vec![], ok),
                "/solr/c/update" => {
                    // `"add":{"doc":{"id":...` once per document (the body repeats `add`).
                    for part in r.body.split("\"doc\":{\"id\":\"").skip(1) {
                        if let Some((id, _)) = part.split_once('"') {
                            i2.lock().push(id.to_string());
                        }
                    }
                    Fault::Answer(200, vec![], ok)
                }
                _ => Fault::Answer(404, vec![], "{}".to_string()),
            }
        }),
    );
    (ids, server)
}

fn cloud_block(cloud: &TestCloud) -> Value {
    json!({"useCloudClient": true, "zkHosts": [cloud.host], "zkChroot": cloud.chroot,
           "defaultCollection": "c"})
}

#[test]
fn the_solr_indexer_sends_to_the_live_nodes_and_reads_them_again_when_all_fail() {
    use crate::indexer::mock_http::{failed, run_docs, run_with};
    use crate::indexer::{build_backend, IndexerSettings};
    let Some(host) = test_zk() else { return };
    let cloud = TestCloud::new(&host);
    cloud.add_collection("c");
    let (ids, solr) = node();
    let name = TestCloud::node_name(&solr.url);
    cloud.add_node(&name);
    let indexer = json!({"type": "Solr", "batchSize": 10, "batchTimeout": 60000});
    let out = run_docs(
        indexer.clone(),
        cloud_block(&cloud),
        vec![json!({"id": "a"}), json!({"id": "b"})],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert!(solr
        .requests()
        .iter()
        .any(|r| r.path() == "/solr/c/admin/ping"));
    assert_eq!(*ids.lock(), ["a", "b"]);

    // The node goes away mid-run and another one registers: the indexer reads the live
    // nodes again and sends there.
    let settings =
        IndexerSettings::from_config(&ComponentConfig::new(obj(indexer), "indexer")).unwrap();
    let mut backend = build_backend(
        &settings,
        &ComponentConfig::new(obj(cloud_block(&cloud)), "solr"),
        crate::indexer::Opening::Fresh,
    )
    .unwrap();
    backend.validate_connection().unwrap();
    drop(solr);
    cloud.remove_node(&name);
    let (ids2, solr2) = node();
    cloud.add_node(&TestCloud::node_name(&solr2.url));
    let out = run_with(settings, backend, vec![json!({"id": "later"})]);
    assert!(failed(&out).is_empty(), "{out:?}");
    assert_eq!(*ids2.lock(), ["later"]);
    assert!(solr2
        .requests()
        .iter()
        .any(|r| r.path() == "/solr/c/update" && r.query().contains("commit=true")));
}

/// SolrCloud nodes get children as standalone Solr does: nested in the parent's `add`.
#[test]
fn the_solr_indexer_sends_children_to_the_live_nodes_as_nested_documents() {
    use crate::indexer::mock_http::{failed, run_docs};
    let Some(host) = test_zk() else { return };
    let cloud = TestCloud::new(&host);
    cloud.add_collection("c");
    let (ids, solr) = node();
    cloud.add_node(&TestCloud::node_name(&solr.url));
    let out = run_docs(
        json!({"type": "solr", "batchSize": 10, "batchTimeout": 60000}),
        cloud_block(&cloud),
        vec![json!({"id": "a", "t": "x", "___children": [{"id": "a-1", "t": "y"}]})],
    );
    assert!(failed(&out).is_empty(), "{out:?}");
    assert_eq!(*ids.lock(), ["a"], "the child is not a document of its own");
    let update = solr
        .requests()
        .into_iter()
        .find(|r| r.path() == "/solr/c/update" && r.body.contains("\"add\""))
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&update.body).unwrap(),
        json!({"add": {"doc": {"id": "a", "t": "x",
            "_childDocuments_": [{"id": "a-1", "t": "y"}]}}})
    );
}

#[test]
fn the_solr_indexer_fails_at_start_without_live_nodes_or_zookeeper() {
    use crate::indexer::{build_backend, IndexerSettings};
    let settings = IndexerSettings::from_config(&ComponentConfig::new(
        obj(json!({"type": "Solr"})),
        "indexer",
    ))
    .unwrap();
    let start = |block: Value| {
        let mut b = build_backend(
            &settings,
            &ComponentConfig::new(obj(block), "solr"),
            crate::indexer::Opening::Fresh,
        )
        .unwrap();
        b.validate_connection().unwrap_err().message
    };
    let port = free_port();
    let e = start(
        json!({"useCloudClient": true, "zkHosts": format!("127.0.0.1:{port}"),
        "defaultCollection": "c"}),
    );
    assert!(
        e.contains(&format!("ZooKeeper 127.0.0.1:{port} cannot be reached")),
        "{e}"
    );
    let Some(host) = test_zk() else { return };
    let cloud = TestCloud::new(&host);
    let e = start(cloud_block(&cloud));
    assert!(
        e.contains("lists no live Solr nodes") && e.contains(&cloud.connect),
        "{e}"
    );
    cloud.add_node("127.0.0.1:9_solr");
    let e = start(cloud_block(&cloud));
    assert!(e.contains("no collection or alias \"c\""), "{e}");
}
