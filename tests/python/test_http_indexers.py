"""The OpenSearch / Elasticsearch indexers through lucille.run(config=...), against a small
mock cluster (http.server) answering GET /, _bulk and _delete_by_query with the real response
shapes. Documents the cluster rejects FAIL alone with its reason; deletes and overrides reach
the cluster; a bad indexer block is rejected before the run."""

import json
import pathlib
import textwrap
from http.server import BaseHTTPRequestHandler
from typing import Any, Iterator, Optional, Sequence


import pytest

import lucille
from local_http import JsonHandler, serve

FEED = """
import lucille

class Feed(lucille.Connector):
    def execute(self, publisher):
        for d in self.config["docs"]:
            publisher.publish(lucille.Document.from_dict(d))
"""


class Cluster:
    def __init__(self) -> None:
        self.docs: dict[tuple[str, str], dict[str, Any]] = {}  # (index, id) -> source
        self.requests: list[tuple[str, str, Optional[str]]] = []
        self.unavailable = 0
        self.url = ""


def make_handler(cluster: Cluster) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):

        def do_GET(self) -> None:
            cluster.requests.append(("GET", self.path, None))
            self.reply(200, {"name": "n1", "cluster_name": "mock", "version": {"number": "2.11.0"}})

        def do_POST(self) -> None:
            body = self.body_text()
            cluster.requests.append(("POST", self.path, body))
            if cluster.unavailable:
                cluster.unavailable -= 1
                return self.reply(503, {"error": {"type": "cluster_block_exception", "reason": "not recovered"}, "status": 503})
            if self.path.startswith("/_bulk"):
                lines = iter(body.splitlines())
                items: list[dict[str, Any]] = []
                errors = False
                for line in lines:
                    (action, meta), = json.loads(line).items()
                    key = (meta["_index"], meta["_id"])
                    if action == "delete":
                        found = cluster.docs.pop(key, None) is not None
                        items.append({"delete": {"_index": key[0], "_id": key[1], "status": 200 if found else 404,
                                                 "result": "deleted" if found else "not_found"}})
                        continue
                    source = json.loads(next(lines))
                    if "bad" in source:
                        errors = True
                        items.append({action: {"_index": key[0], "_id": key[1], "status": 400, "error": {
                            "type": "mapper_parsing_exception",
                            "reason": "failed to parse field [bad] of type [long] in document with id '%s'" % key[1]}}})
                        continue
                    created = key not in cluster.docs
                    cluster.docs[key] = source
                    items.append({action: {"_index": key[0], "_id": key[1], "_version": 1,
                                           "result": "created" if created else "updated",
                                           "status": 201 if created else 200}})
                return self.reply(200, {"took": 1, "errors": errors, "items": items})
            if self.path.endswith("/_delete_by_query"):
                index = self.path.split("/")[1]
                (field, value), = json.loads(body)["query"]["term"].items()
                doomed = [k for k, s in cluster.docs.items() if k[0] == index and s.get(field) == value]
                for k in doomed:
                    del cluster.docs[k]
                return self.reply(200, {"took": 1, "deleted": len(doomed), "failures": []})
            self.reply(404, {"error": {"type": "no_handler", "reason": self.path}, "status": 404})

    return Handler


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    with serve(make_handler(c)) as url:
        c.url = url
        yield c


@pytest.fixture
def feed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "httpfeed.py").write_text(textwrap.dedent(FEED))
    monkeypatch.syspath_prepend(str(tmp_path))


def run(kind: str, cluster: Cluster, docs: Sequence[object], **indexer: Any) -> lucille.RunResult:
    return lucille.run(config={
        "connectors": [{"name": "feed", "class": "httpfeed:Feed", "pipeline": "p", "docs": docs}],
        "pipelines": [{"name": "p", "stages": []}],
        "indexer": {"type": kind, **indexer},
        kind.lower(): {"url": cluster.url, "index": "books"},
    })


@pytest.mark.parametrize("kind", ["OpenSearch", "elasticsearch"])
def test_bulk_indexer_writes_deletes_and_fails_only_rejected_documents(
    kind: str, cluster: Cluster, feed: None
) -> None:
    cluster.docs[("books", "stale")] = {"author": "ann"}
    cluster.docs[("books", "gone")] = {"t": 1}
    r = run(kind, cluster, [
        {"id": "a", "title": "A", "secret": "x"},
        {"id": "b", "cid": "B-1"},
        {"id": "bad", "bad": "oops"},
        {"id": "gone", "deleted": "yes"},
        {"id": "d", "deleted": "yes", "df": "author", "dv": "ann"},
    ], idOverrideField="cid", blacklist=["secret"], deletionMarkerField="deleted",
        deletionMarkerFieldValue="yes", deleteByFieldField="df", deleteByFieldValue="dv")
    assert (r.published, r.succeeded, r.failed) == (5, 4, 1), r.summary
    assert r.status == "Success"
    assert cluster.docs == {("books", "a"): {"id": "a", "title": "A"},
                            ("books", "B-1"): {"id": "B-1", "cid": "B-1"}}
    assert cluster.requests[0][:2] == ("GET", "/"), "the connection is checked before the run"


def test_cluster_down_retries_then_fails_every_document_and_nothing_is_lost(cluster: Cluster, feed: None) -> None:
    cluster.unavailable = 2
    r = run("opensearch", cluster, [{"id": "a"}, {"id": "b"}], maxRetries=3, retryWaitDurationMs=1)
    assert (r.succeeded, r.failed) == (2, 0), r.summary
    cluster.unavailable = 100
    r = run("opensearch", cluster, [{"id": "c"}, {"id": "d"}], maxRetries=2, retryWaitDurationMs=1)
    assert (r.published, r.succeeded, r.failed) == (2, 0, 2), r.summary
    assert sorted(cluster.docs) == [("books", "a"), ("books", "b")]


def test_bad_indexer_blocks_are_rejected_up_front() -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config={
            "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1}],
            "indexer": {"type": "Solr", "routingField": "shard"},
            "solr": {"url": "localhost:8983", "zkHosts": ["zk:x"], "zkChroot": "solr"},
        })
    text = str(e.value)
    for part in ["indexer.routingField: is not supported by the solr indexer",
                 "solr.url: \"localhost:8983\" is not a URL",
                 "solr.zkHosts: \"zk:x\" has no valid port",
                 "solr.zkChroot: \"solr\" must start with /"]:
        assert part in text, text


def test_retry_keys_need_max_retries() -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config={
            "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1}],
            "indexer": {"type": "opensearch", "retryWaitDurationMs": 5, "retryableStatusCodes": [503]},
            "opensearch": {"url": "http://127.0.0.1:9", "index": "i"},
        })
    assert "indexer.retryWaitDurationMs: needs indexer.maxRetries" in str(e.value)
    assert "indexer.retryableStatusCodes: needs indexer.maxRetries" in str(e.value)
