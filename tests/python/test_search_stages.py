"""QueryOpensearch and ElasticsearchLookup through the Python API, against local HTTP servers
speaking OpenSearch's search-template and Elasticsearch's get-document shapes (neither server
installs here)."""

import json
from typing import Any, Iterator

import pytest

import lucille
from local_http import JsonHandler, serve
from lucille import Document, Pipeline, StageError


class Engine(JsonHandler):
    seen: list[tuple[str, str, Any]] = []

    def do_GET(self) -> None:
        Engine.seen.append(("GET", self.path, None))
        if self.path == "/":
            return self.reply(200, {"name": "n1", "version": {"number": "8.13.0"}})
        if self.path == "/books/_doc/b1":
            return self.reply(200, {"_index": "books", "_id": "b1", "found": True,
                                    "_source": {"title": "Dune", "year": 1965}})
        self.reply(404, {"_index": "books", "_id": self.path.rsplit("/", 1)[-1], "found": False})

    def do_POST(self) -> None:
        body = json.loads(self.body_text())
        Engine.seen.append(("POST", self.path, body))
        if body["params"].get("park_name") == "boom":
            return self.reply(400, {"error": {"type": "parsing_exception", "reason": "bad template"}})
        hits = [{"_id": "p1", "_score": 2.5, "_source": {"park_name": body["params"]["park_name"]}}]
        self.reply(200, {"took": 1, "hits": {"total": {"value": 1}, "max_score": 2.5, "hits": hits}})


@pytest.fixture
def engine() -> Iterator[str]:
    Engine.seen = []
    with serve(Engine) as url:
        yield url


def test_query_opensearch(engine: str) -> None:
    p = Pipeline([lucille.stages.QueryOpensearch(
        opensearch={"url": engine, "index": "parks"},
        searchTemplate='{"source": {"query": {"match_phrase": {"park_name": "{{park_name}}"}}}}',
        requiredParamNames=["park_name"], opensearchResponsePath="/hits/hits/0/_source",
        destinationField="hit")])
    (doc,) = p.process(Document("1", {"park_name": "Zion"}))
    assert doc.get("hit") == {"park_name": "Zion"}
    method, path, body = Engine.seen[0]
    assert (method, path) == ("POST", "/parks/_search/template")
    assert body["params"] == {"park_name": "Zion"}
    (missing,) = p.process(Document("2"))
    assert "park_name" in (missing.get_string("queryOpensearchError") or "")
    with pytest.raises(StageError, match="HTTP 400"):
        p.process(Document("3", {"park_name": "boom"}))


def test_elasticsearch_lookup(engine: str) -> None:
    p = Pipeline([lucille.stages.ElasticsearchLookup(
        elasticsearch={"url": engine, "index": "books"}, source=["title", "year"],
        dest=["title", "published"], updateMode="append")])
    (doc,) = p.process(Document("b1", {"title": "draft"}))
    assert doc.get_list("title") == ["draft", "Dune"]
    assert doc.get("published") == "1965"
    (other,) = p.process(Document("zz"))
    assert not other.has("title")
