"""PineconeIndexer and WeaviateIndexer through lucille.run(config=...) and the CLI, against small
local servers (http.server) that answer with Pinecone's and Weaviate's REST request and response
shapes: no Pinecone or Weaviate server can be installed here. Checked: the exact request bodies
(ids, vectors, metadata, namespaces, Weaviate's UUIDs), deletes, per-document errors FAILing
only that document, 429 then success, and config errors before the run."""

import hashlib
import json
import pathlib
import subprocess
import sys
import textwrap
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest

import lucille

FEED = """
import lucille

class Feed(lucille.Connector):
    def execute(self, publisher):
        for d in self.config["docs"]:
            publisher.publish(lucille.Document.from_dict(d))
"""


class Server:
    """Requests seen as (method, path, headers, json body) and a scripted list of early answers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.script: list[tuple[str, int, Any]] = []  # (path prefix, status, body) answered first
        self.store: dict[tuple[str, str], Any] = {}
        self.url = ""

    def bodies(self, method: str, path: str) -> list[Any]:
        return [b for (m, p, _, b) in self.requests if m == method and p.split("?")[0] == path]


Route = Callable[[Server, str, str, Any], tuple[int, Any]]


def serve(route: Route, key_header: str, key: str) -> Iterator[Server]:
    srv = Server()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def answer(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.loads(raw) if raw else None
            srv.requests.append((method, self.path, dict(self.headers), body))
            if self.headers.get(key_header) != key:
                status, out = 401, {"message": "Invalid API Key"}
            else:
                scripted = next((s for s in srv.script if self.path.startswith(s[0])), None)
                if scripted is not None:
                    srv.script.remove(scripted)
                    status, out = scripted[1], scripted[2]
                else:
                    status, out = route(srv, method, self.path, body)
            data = b"" if out is None else json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.answer("GET")

        def do_POST(self) -> None:
            self.answer("POST")

        def do_DELETE(self) -> None:
            self.answer("DELETE")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    srv.url = "http://127.0.0.1:%d" % server.server_address[1]
    yield srv
    server.shutdown()
    server.server_close()


def pinecone_route(srv: Server, method: str, path: str, body: Any) -> tuple[int, Any]:
    if path == "/describe_index_stats":
        return 200, {"namespaces": {}, "dimension": 3, "indexFullness": 0.0, "totalVectorCount": len(srv.store)}
    if path.startswith("/indexes/"):
        return 200, {"name": path.split("/")[2], "dimension": 3, "metric": "cosine", "host": srv.url,
                     "status": {"ready": True, "state": "Ready"}}
    if path == "/vectors/upsert":
        for v in body["vectors"]:
            if len(json.dumps(v.get("metadata", {}))) > 200:
                return 400, {"code": 3, "message": "Metadata size exceeds the limit of 200 bytes per vector",
                             "details": []}
        for v in body["vectors"]:
            srv.store[(body["namespace"], v["id"])] = v
        return 200, {"upsertedCount": len(body["vectors"])}
    if path == "/vectors/delete":
        for i in body["ids"]:
            srv.store.pop((body["namespace"], i), None)
        return 200, {}
    if path.startswith("/vectors/list?"):
        # Pinecone's list by prefix, paged (by 2 here, 100 at Pinecone); the token is an offset.
        q = dict(urllib.parse.parse_qsl(path.split("?", 1)[1]))
        ids = sorted(i for (ns, i) in srv.store if ns == q.get("namespace")
                     and i.startswith(q.get("prefix", "")))
        start = int(q.get("paginationToken", "0"))
        page: dict[str, Any] = {"vectors": [{"id": i} for i in ids[start:start + 2]],
                                "namespace": q.get("namespace"), "usage": {"readUnits": 1}}
        if start + 2 < len(ids):
            page["pagination"] = {"next": str(start + 2)}
        return 200, page
    if path == "/vectors/update":
        rec = srv.store.get((body["namespace"], body["id"]))
        if rec is not None:
            rec["values"] = body["values"]
        return 200, {}
    return 404, {"message": "Not Found"}


def weaviate_route(srv: Server, method: str, path: str, body: Any) -> tuple[int, Any]:
    if path == "/v1/meta":
        return 200, {"hostname": "http://[::]:8080", "version": "1.25.0", "modules": {}}
    if method == "POST" and path.startswith("/v1/batch/objects"):
        answer = []
        for o in body["objects"]:
            a = dict(o)
            if not isinstance(o["properties"].get("year", 0), int):
                a["result"] = {"errors": {"error": [{"message": "invalid int property 'year' on class 'Article'"}]}}
            else:
                srv.store[(o["class"], o["id"])] = o
                a["result"] = {}
            answer.append(a)
        return 200, answer
    if method == "DELETE" and path.startswith("/v1/objects/"):
        _, _, _, cls, oid = path.split("?")[0].split("/")
        return (204, None) if srv.store.pop((cls, oid), None) is not None else (404, None)
    return 404, {"error": [{"message": "not found"}]}


@pytest.fixture
def pinecone() -> Iterator[Server]:
    yield from serve(pinecone_route, "Api-Key", "pk-1")


@pytest.fixture
def weaviate() -> Iterator[Server]:
    yield from serve(weaviate_route, "Authorization", "Bearer wk-1")


@pytest.fixture
def feed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vecfeed.py").write_text(textwrap.dedent(FEED))
    monkeypatch.syspath_prepend(str(tmp_path))


def run(docs: list[dict[str, Any]], indexer: dict[str, Any], **blocks: Any) -> lucille.RunResult:
    return lucille.run(config={
        "connectors": [{"name": "feed", "class": "vecfeed:Feed", "pipeline": "p", "docs": docs}],
        "pipelines": [{"name": "p", "stages": []}],
        # One batch of all the documents (sent as soon as it is full), so request bodies are exact.
        "indexer": {"batchSize": len(docs), "batchTimeout": 60000, **indexer},
        **blocks,
    })


def java_uuid(doc_id: str) -> str:
    """Java's UUID.nameUUIDFromBytes(id.getBytes()), independently of the Rust code."""
    return str(uuid.UUID(bytes=hashlib.md5(doc_id.encode()).digest(), version=3))


PINECONE = "com.kmwllc.lucille.pinecone.indexer.PineconeIndexer"
WEAVIATE = "com.kmwllc.lucille.weaviate.indexer.WeaviateIndexer"


def test_pinecone_upserts_namespaces_metadata_and_deletes(pinecone: Server, feed: None) -> None:
    pinecone.store[("title", "old")] = {"id": "old"}
    pinecone.store[("body", "old")] = {"id": "old"}
    r = run([
        {"id": "a", "tv": [1, 0, 0], "bv": [0, 1, 0], "title": "A", "year": 2020, "other": "x"},
        {"id": "b", "tv": [0.5, 0.5, 0], "bv": [0, 0, 1], "title": "B"},
        {"id": "no-body-vector", "tv": [1, 1, 1]},
        {"id": "two-dims", "tv": [1, 1], "bv": [1, 1]},
        {"id": "old", "deleted": "yes"},
    ], {"class": PINECONE, "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "yes"},
        pinecone={"index": "docs", "apiKey": "pk-1", "host": pinecone.url,
                  "namespaces": {"title": "tv", "body": "bv"}, "metadataFields": ["title", "year"]})
    assert (r.published, r.succeeded, r.failed) == (5, 3, 2), r.summary
    assert pinecone.bodies("POST", "/vectors/delete") == [
        {"ids": ["old"], "namespace": "title"}, {"ids": ["old"], "namespace": "body"}]
    assert pinecone.bodies("POST", "/vectors/upsert") == [
        {"namespace": "title", "vectors": [
            {"id": "a", "values": [1, 0, 0], "metadata": {"title": "A", "year": "2020"}},
            {"id": "b", "values": [0.5, 0.5, 0], "metadata": {"title": "B"}}]},
        {"namespace": "body", "vectors": [
            {"id": "a", "values": [0, 1, 0], "metadata": {"title": "A", "year": "2020"}},
            {"id": "b", "values": [0, 0, 1], "metadata": {"title": "B"}}]},
    ]
    assert sorted(pinecone.store) == [("body", "a"), ("body", "b"), ("title", "a"), ("title", "b")]
    # Every request carried the key in Pinecone's header.
    assert all({k.lower(): v for k, v in h.items()}.get("api-key") == "pk-1" for (_, _, h, _) in pinecone.requests)


def test_pinecone_failures_are_per_document_and_429_is_retried(pinecone: Server, feed: None) -> None:
    pinecone.script = [("/vectors/upsert", 429, {"code": 8, "message": "Too many requests"})]
    r = run([
        {"id": "a", "e": [1, 2, 3], "body": "short"},
        {"id": "huge-metadata", "e": [1, 2, 3], "body": "x" * 300},
        {"id": "c", "e": [1, 2, 3]},
    ], {"class": "PineconeIndexer", "maxRetries": 2, "retryWaitDurationMs": 1},
        pinecone={"index": "docs", "apiKey": "pk-1", "host": pinecone.url,
                  "defaultEmbeddingField": "e", "metadataFields": ["body"]})
    assert (r.succeeded, r.failed) == (2, 1), r.summary
    assert sorted(i for (_, i) in pinecone.store) == ["a", "c"]
    assert all(ns == "default" for (ns, _) in pinecone.store)
    # 429, then the batch Pinecone refuses (400), then each vector alone.
    assert len(pinecone.bodies("POST", "/vectors/upsert")) == 5


def test_pinecone_resolves_its_host_through_the_control_plane(pinecone: Server, feed: None) -> None:
    r = run([{"id": "a", "e": [1, 2, 3]}], {"type": "PINECONE"},
            pinecone={"index": "docs", "apiKey": "pk-1", "controlPlaneUrl": pinecone.url,
                      "defaultEmbeddingField": "e", "mode": "update"})
    assert (r.succeeded, r.failed) == (1, 0), r.summary
    assert pinecone.requests[0][:2] == ("GET", "/indexes/docs")
    assert pinecone.bodies("POST", "/vectors/update") == [{"id": "a", "values": [1, 2, 3], "namespace": "default"}]


def test_weaviate_batches_objects_with_java_uuids_and_fails_only_rejected_objects(
    weaviate: Server, feed: None
) -> None:
    weaviate.store[("Article", java_uuid("old"))] = {}
    weaviate.script = [("/v1/batch/objects", 429, {"error": [{"message": "rate limited"}]})]
    r = run([
        {"id": "a", "title": "A", "year": 2020, "vec": [0.25, 0.5]},
        {"id": "no-vector", "title": "B"},
        {"id": "bad-year", "year": "nope", "vec": [1, 2]},
        {"id": "old", "deleted": "yes"},
    ], {"class": WEAVIATE, "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "yes",
        "maxRetries": 1, "retryWaitDurationMs": 1},
        weaviate={"host": weaviate.url, "apiKey": "wk-1", "className": "Article", "vectorField": "vec"})
    assert (r.published, r.succeeded, r.failed) == (4, 3, 1), r.summary
    batches = weaviate.bodies("POST", "/v1/batch/objects")
    assert len(batches) == 2 and batches[0] == batches[1], "the 429 was retried with the same batch"
    assert batches[1] == {"objects": [
        {"class": "Article", "id": java_uuid("a"), "properties": {"title": "A", "year": 2020, "id_original": "a"},
         "vector": [0.25, 0.5]},
        {"class": "Article", "id": java_uuid("no-vector"), "properties": {"title": "B", "id_original": "no-vector"}},
        {"class": "Article", "id": java_uuid("bad-year"), "properties": {"year": "nope", "id_original": "bad-year"},
         "vector": [1, 2]},
    ]}
    assert [(m, p) for (m, p, _, _) in weaviate.requests if m == "DELETE"] == [
        ("DELETE", "/v1/objects/Article/%s?consistency_level=ALL" % java_uuid("old"))]
    assert sorted(weaviate.store) == sorted([("Article", java_uuid("a")), ("Article", java_uuid("no-vector"))])


def test_the_cli_runs_and_renders_with_keys_hidden(weaviate: Server, tmp_path: pathlib.Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "docs.jsonl").write_text(
        json.dumps({"id": "x", "vec": [1, 2]}) + "\n" + json.dumps({"id": "y", "vec": "bad"}) + "\n")
    conf = tmp_path / "weaviate.conf"
    conf.write_text(f"""
connectors: [{{ name: "files", class: "FileConnector", pipeline: "p",
  paths: ["{tmp_path / 'data'}"], fileHandlers {{ jsonl {{}} }} }}]
pipelines: [{{ name: "p", stages: [] }}]
indexer {{ class: "{WEAVIATE}" }}
weaviate {{ host: "{weaviate.url}", apiKey: "wk-1", vectorField: "vec" }}
""")
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)], capture_output=True, text=True)
    assert list(weaviate.store) == [("Document", java_uuid("x"))], r.stdout + r.stderr
    assert "is not a vector" in r.stdout + r.stderr
    rendered = subprocess.run([sys.executable, "-m", "lucille.cli", "render", str(conf), "--json"],
                              capture_output=True, text=True, check=True)
    assert json.loads(rendered.stdout)["weaviate"]["apiKey"] == "***REDACTED***"
    assert "wk-1" not in rendered.stdout


@pytest.mark.parametrize("indexer, blocks, expected", [
    ({"class": PINECONE}, {"pinecone": {"defaultEmbeddingField": "e"}},
     ["pinecone.index", "pinecone.apiKey"]),
    ({"class": PINECONE}, {"pinecone": {"index": "i", "apiKey": "k"}}, ["pinecone.defaultEmbeddingField"]),
    ({"class": PINECONE, "batchSize": 5000}, {"pinecone": {"index": "i", "apiKey": "k", "defaultEmbeddingField": "e"}},
     ["indexer.batchSize", "at most 1000"]),
    ({"type": "pinecone"}, {"pinecone": {"index": "i", "apiKey": "k", "namespaces": {}}}, ["pinecone.namespaces"]),
    ({"class": WEAVIATE}, {"weaviate": {"className": "A"}}, ["weaviate.host", "weaviate.apiKey"]),
    ({"class": WEAVIATE}, {"weaviate": {"host": "h", "apiKey": "k", "requestTimeout": 0}}, ["weaviate.requestTimeout"]),
])
def test_bad_configs_fail_before_the_run(indexer: dict[str, Any], blocks: dict[str, Any], expected: list[str]) -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config={
            "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1}],
            "indexer": indexer, **blocks})
    for part in expected:
        assert part in str(e.value), str(e.value)


def test_an_unreachable_server_fails_the_connection_check(feed: None) -> None:
    r = run([{"id": "a", "e": [1]}], {"class": PINECONE, "indexerConnectionTimeout": 500, "maxRetries": 1,
                                      "retryWaitDurationMs": 1},
            pinecone={"index": "i", "apiKey": "k", "host": "http://127.0.0.1:9", "defaultEmbeddingField": "e",
                      "requestTimeout": 1000})
    assert r.status == "Failure" and r.succeeded == 0, r.summary


def test_emit_docs_to_delete_by_prefix_deletes_a_documents_chunks(pinecone: Server, feed: None) -> None:
    # doc1's three chunks in two namespaces (more than a page), doc2's chunk, and doc10's (a
    # prefix is a prefix: "doc1-" below keeps it).
    for ns in ("title", "body"):
        for i in ("doc1-0", "doc1-1", "doc1-2", "doc2-0", "doc10-0"):
            pinecone.store[(ns, i)] = {"id": i}
    namespaces = {"title": "tv", "body": "bv"}
    r = lucille.run(config={
        "connectors": [{"name": "feed", "class": "vecfeed:Feed", "pipeline": "p", "docs": [
            {"id": "doc1", "deleted": "yes"}, {"id": "doc2", "deleted": "no"}]}],
        "pipelines": [{"name": "p", "stages": [{
            "class": "com.kmwllc.lucille.pinecone.stage.EmitDocsToDeleteByPrefix",
            "index": "docs", "apiKey": "pk-1", "controlPlaneUrl": pinecone.url,
            "namespaces": namespaces, "addPrefix": "-", "dropOriginal": True,
            "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "yes"}]}],
        "indexer": {"class": PINECONE, "deletionMarkerField": "deleted",
                    "deletionMarkerFieldValue": "yes"},
        "pinecone": {"index": "docs", "apiKey": "pk-1", "controlPlaneUrl": pinecone.url,
                     "namespaces": namespaces},
    })
    # doc1 dropped; its chunks, listed twice (once per namespace), deleted; doc2 not marked,
    # and without its vectors it FAILs at the indexer.
    assert (r.dropped, r.succeeded, r.failed) == (1, 6, 1), r.summary
    assert sorted(pinecone.store) == sorted(
        (ns, i) for ns in ("title", "body") for i in ("doc2-0", "doc10-0"))
    lists = [p for (m, p, _, _) in pinecone.requests if p.startswith("/vectors/list")]
    assert len(lists) == 4 and sum("paginationToken=2" in p for p in lists) == 2


def test_emit_docs_to_delete_by_prefix_rejects_a_bad_config_before_the_run() -> None:
    stage = {"class": "EmitDocsToDeleteByPrefix", "index": "docs", "apiKey": "k",
             "deletionMarkerField": "deleted"}
    for extra, message in [({}, "deletionMarkerFieldValue: missing required key"),
                           ({"deletionMarkerFieldValue": "yes", "namespaces": {}},
                            "namespaces: names no namespace")]:
        with pytest.raises(lucille.ConfigError) as e:
            lucille.run(config={
                "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 1,
                                "pipeline": "p"}],
                "pipelines": [{"name": "p", "stages": [{**stage, **extra}]}],
            }, mode="test")
        assert f"pipelines[0].stages[0].{message}" in str(e.value), str(e.value)
