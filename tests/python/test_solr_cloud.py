"""SolrCloud discovery (`solr { useCloudClient: true, zkHosts, zkChroot, defaultCollection }`)
through lucille.run: the Solr indexer and the SolrConnector find their nodes in a real ZooKeeper
(LUCILLE_TEST_ZK, started by scripts/services/zookeeper.sh), whose SolrCloud znodes each test
writes under its own chroot with kazoo; the Solr node is a local mock speaking the update,
ping and select handlers' JSON."""

from __future__ import annotations

import json
import socket
import time
import urllib.parse
import uuid
from typing import Any, Iterator

import pytest

import lucille
from local_http import JsonHandler, serve
from services import service_env


@pytest.fixture
def zk_host() -> str:
    return service_env("LUCILLE_TEST_ZK", "zookeeper.sh")


class Cloud:
    """A SolrCloud's znodes under a fresh chroot; live nodes are ephemeral, as Solr's."""

    def __init__(self, host: str) -> None:
        from kazoo.client import KazooClient

        self.host = host
        self.chroot = "/lucille-pytest-" + uuid.uuid4().hex
        self.zk: Any = KazooClient(hosts=host, timeout=10)
        self.zk.start(timeout=10)
        for path in ["live_nodes", "collections"]:
            self.zk.ensure_path(f"{self.chroot}/{path}")

    def add_node(self, base_url: str) -> None:
        name = base_url.removeprefix("http://") + "_solr"
        self.zk.create(f"{self.chroot}/live_nodes/{name}", b"", ephemeral=True)

    def add_collection(self, name: str) -> None:
        self.zk.create(f"{self.chroot}/collections/{name}/state.json",
                       json.dumps({name: {"shards": {}}}).encode(), makepath=True)

    def block(self, **extra: Any) -> dict[str, Any]:
        return {"useCloudClient": True, "zkHosts": [self.host], "zkChroot": self.chroot, **extra}

    def close(self) -> None:
        self.zk.delete(self.chroot, recursive=True)
        self.zk.stop()
        self.zk.close()


@pytest.fixture
def cloud(zk_host: str) -> Iterator[Cloud]:
    c = Cloud(zk_host)
    try:
        yield c
    finally:
        c.close()


class Solr:
    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}
        self.paths: list[str] = []


@pytest.fixture
def solr() -> Iterator[tuple[Solr, str]]:
    state = Solr()
    ok = {"responseHeader": {"status": 0, "QTime": 1}, "status": "OK"}

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            state.paths.append(path)
            if path == "/solr/books/admin/ping":
                return self.reply(200, ok)
            if path == "/solr/books/select":
                docs = sorted(state.docs.values(), key=lambda d: str(d["id"]))
                cursor = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["cursorMark"][0]
                return self.reply(200, {"responseHeader": {"status": 0},
                                        "response": {"numFound": len(docs), "docs": docs if cursor == "*" else []},
                                        "nextCursorMark": "done"})
            self.reply(404, {"error": {"msg": "no such path " + path, "code": 404}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            state.paths.append(path)
            body = self.body_text()
            if path != "/solr/books/update":
                return self.reply(404, {"error": {"msg": "no such path " + path, "code": 404}})
            # The body repeats "add"; read every command in order.
            for name, arg in json.loads(body, object_pairs_hook=lambda pairs: pairs):
                if name == "add":
                    doc = dict(dict(arg)["doc"])
                    state.docs[str(doc["id"])] = doc
            self.reply(200, ok)

    with serve(Handler) as url:
        yield state, url


def index_config(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 3, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": []}],
        "indexer": {"type": "Solr"},
        "solr": block,
    }


def test_the_solr_indexer_finds_its_nodes_in_zookeeper(cloud: Cloud, solr: tuple[Solr, str]) -> None:
    state, url = solr
    cloud.add_collection("books")
    cloud.add_node(url)
    r = lucille.run(config=index_config(cloud.block(defaultCollection="books")))
    assert (r.status, r.published, r.succeeded, r.failed) == ("Success", 3, 3, 0), r.summary
    assert sorted(state.docs) == ["0", "1", "2"]
    assert state.paths[0] == "/solr/books/admin/ping"

    # The SolrConnector reads the collection through the same discovery.
    result = lucille.run(config={
        "connectors": [{"name": "solr", "class": "com.kmwllc.lucille.connector.SolrConnector",
                        "pipeline": "p", "solr": cloud.block(defaultCollection="books")}],
        "pipelines": [{"name": "p", "stages": []}],
    }, mode="test")
    assert result.status == "Success", result.summary
    assert sorted(d.id for d in result.documents) == ["0", "1", "2"]


def test_no_live_nodes_or_no_zookeeper_fails_the_run_at_start(cloud: Cloud) -> None:
    r = lucille.run(config=index_config(cloud.block(defaultCollection="books")))
    assert r.status != "Success" and r.published == 0, r.summary
    assert "lists no live Solr nodes" in r.summary and cloud.chroot in r.summary, r.summary

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    r = lucille.run(config=index_config({"useCloudClient": True, "zkHosts": f"127.0.0.1:{port}",
                                         "defaultCollection": "books"}))
    assert time.monotonic() - start < 15
    assert r.status != "Success", r.summary
    assert f"ZooKeeper 127.0.0.1:{port} cannot be reached" in r.summary, r.summary


def test_zookeeper_keys_are_checked_when_validating_without_connecting() -> None:
    # Nothing listens on zk:2181 here: validation never connects.
    assert lucille.validate(config=index_config({"useCloudClient": True, "zkHosts": ["zk:2181"],
                                                 "zkChroot": "/solr", "defaultCollection": "books"})) == []
    text = "\n".join(lucille.validate(config=index_config({"useCloudClient": True,
                                                             "zkHosts": ["zk:2181", ":1", "h:x"],
                                                             "zkChroot": "solr"})))
    # The bad entries of a key are one error, at that key.
    for part in ['solr.zkHosts: ":1" has no host', '"h:x" has no valid port',
                 'solr.zkChroot: "solr" must start with /', "solr.defaultCollection: is needed with zkHosts"]:
        assert part in text, text
