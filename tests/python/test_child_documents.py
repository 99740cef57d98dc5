"""Child documents a Python stage attaches (doc.add_child, not returned) through lucille.run to
each kind of indexer: OpenSearch / Elasticsearch nest them under childDocumentsField (and warn
without it), Solr receives them as nested documents (_childDocuments_), a jsonl line holds
them as ___children, a Python indexer receives them on its documents, and an indexer that
cannot index them (csv) says so. The servers are local mocks that keep what they received."""

import json
import logging
import pathlib
import textwrap
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

import lucille
from local_http import JsonHandler, serve
from test_http_indexers import Cluster, cluster  # noqa: F401 (the fixture, by name)

MODULE = """
import lucille

class Feed(lucille.Connector):
    def execute(self, publisher):
        for d in self.config["docs"]:
            publisher.publish(lucille.Document.from_dict(d))

class AttachChildren(lucille.Stage):
    # Attaches two children to documents with a "kids" field; returns nothing, so the
    # children travel inside their parent (Lucille's ___children), not as documents.
    def process_document(self, doc):
        if doc.has("kids"):
            for n in range(doc.get_int("kids")):
                child = lucille.Document(f"{doc.id}-{n + 1}", {"n": n + 1, "secret": "s"})
                doc.add_child(child)
            doc.remove_field("kids")
        return None

RECEIVED = []

class Collect(lucille.Indexer):
    def send_batch(self, docs):
        for d in docs:
            RECEIVED.append((d.id, [(c.id, c.get_int("n")) for c in d.children()]))
        return None
"""

DOCS = [{"id": "p", "title": "parent", "kids": 2}, {"id": "q", "title": "alone"}]


@pytest.fixture
def children_module(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "childmod.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))


def config(indexer: dict[str, Any], **blocks: Any) -> dict[str, Any]:
    return {
        "connectors": [{"name": "feed", "class": "childmod:Feed", "pipeline": "p", "docs": DOCS}],
        "pipelines": [{"name": "p", "stages": [{"class": "childmod:AttachChildren"}]}],
        "indexer": {"blacklist": ["secret"], **indexer},
        **blocks,
    }


def bulk_sources(cluster: Cluster) -> list[Any]:
    """The documents of every _bulk request, in order."""
    lines = [json.loads(line) for (_, path, body) in cluster.requests
             if path.startswith("/_bulk") and body is not None for line in body.splitlines()]
    return lines[1::2]


@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_bulk_indexers_nest_children_under_child_documents_field(
    kind: str, cluster: Cluster, children_module: None
) -> None:
    r = lucille.run(config=config({"type": kind},
                                  **{kind: {"url": cluster.url, "index": "i", "childDocumentsField": "kids"}}))
    assert (r.published, r.succeeded, r.failed) == (2, 2, 0), r.summary
    assert sorted(bulk_sources(cluster), key=lambda s: str(s["id"])) == [
        {"id": "p", "title": "parent", "kids": [{"id": "p-1", "n": 1}, {"id": "p-2", "n": 2}]},
        {"id": "q", "title": "alone"},
    ]


def test_without_child_documents_field_the_parent_is_indexed_alone_with_a_warning(
    cluster: Cluster, children_module: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="lucille"):
        r = lucille.run(config=config({"type": "elasticsearch"},
                                      elasticsearch={"url": cluster.url, "index": "i"}))
    assert (r.succeeded, r.failed) == (2, 0), r.summary
    assert cluster.docs[("i", "p")] == {"id": "p", "title": "parent"}
    assert [m for m in caplog.messages if "child documents" in m] == [
        'indexer.type "elasticsearch" does not index child documents: 1 of the 2 documents in this '
        'batch carry 2 children, indexed without them (the first: "p"); set '
        "elasticsearch.childDocumentsField to nest them under that field"]


class Solr:
    def __init__(self) -> None:
        self.adds: list[Any] = []


def solr_handler(solr: Solr) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self.reply(200, {"responseHeader": {"status": 0}, "status": "OK"})

        def do_POST(self) -> None:
            # The JSON update format repeats command names: keep every pair, in order.
            pairs = json.loads(self.body_text(), object_pairs_hook=lambda p: p)
            solr.adds.extend(dict(arg)["doc"] for name, arg in pairs if name == "add")
            self.reply(200, {"responseHeader": {"status": 0}})

    return Handler


def as_dicts(value: Any) -> Any:
    """Pairs lists (object_pairs_hook) back to dicts, all the way down."""
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        return {k: as_dicts(v) for k, v in value}
    if isinstance(value, list):
        return [as_dicts(v) for v in value]
    return value


def test_solr_receives_children_as_nested_documents(children_module: None) -> None:
    solr = Solr()
    with serve(solr_handler(solr)) as url:
        r = lucille.run(config=config({"type": "solr"},
                                      solr={"url": url + "/solr", "defaultCollection": "c"}))
    assert (r.succeeded, r.failed) == (2, 0), r.summary
    assert sorted((as_dicts(d) for d in solr.adds), key=lambda d: str(d["id"])) == [
        {"id": "p", "title": "parent", "_childDocuments_": [{"id": "p-1", "n": 1}, {"id": "p-2", "n": 2}]},
        {"id": "q", "title": "alone"},
    ]


def test_a_jsonl_line_holds_the_children(tmp_path: pathlib.Path, children_module: None) -> None:
    out = tmp_path / "out.jsonl"
    r = lucille.run(config=config({"type": "jsonl"}, jsonl={"path": str(out)}))
    assert (r.succeeded, r.failed) == (2, 0), r.summary
    lines = sorted(out.read_text().splitlines())
    assert lines == ['{"id":"p","title":"parent","___children":[{"id":"p-1","n":1},{"id":"p-2","n":2}]}',
                     '{"id":"q","title":"alone"}']
    assert [c.id for c in lucille.Document.from_json(lines[0]).children()] == ["p-1", "p-2"]


def test_a_python_indexer_receives_the_children(children_module: None) -> None:
    import childmod  # type: ignore[import-not-found]
    r = lucille.run(config=config({"class": "childmod:Collect"}))
    assert (r.succeeded, r.failed) == (2, 0), r.summary
    assert sorted(childmod.RECEIVED) == [("p", [("p-1", 1), ("p-2", 2)]), ("q", [])]


def test_an_indexer_that_cannot_index_children_says_so(
    tmp_path: pathlib.Path, children_module: None, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out.csv"
    with caplog.at_level(logging.WARNING, logger="lucille"):
        r = lucille.run(config=config({"type": "csv"}, csv={"path": str(out), "columns": ["id", "title"]}))
    assert (r.succeeded, r.failed) == (2, 0), r.summary
    assert [m for m in caplog.messages if "child documents" in m] == [
        'indexer.type "csv" does not index child documents: 1 of the 2 documents in this batch '
        'carry 2 children, indexed without them (the first: "p")']


def test_child_documents_field_is_rejected_where_it_means_nothing() -> None:
    def errors(kind: str, block: dict[str, Any]) -> str:
        with pytest.raises(lucille.ConfigError) as e:
            lucille.run(config={
                "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1}],
                "indexer": {"type": kind},
                kind: block,
            })
        return str(e.value)

    assert "solr.childDocumentsField: unknown key" in errors(
        "solr", {"url": "http://localhost:8983/solr", "childDocumentsField": "kids"})
    assert "csv.childDocumentsField: unknown key" in errors(
        "csv", {"path": "x.csv", "columns": ["id"], "childDocumentsField": "kids"})
    text = errors("opensearch", {"url": "http://127.0.0.1:9", "index": "i", "childDocumentsField": "id"})
    assert "opensearch.childDocumentsField" in text and "cannot hold child documents" in text, text
