"""The Typesense indexer against a real Typesense server (scripts/services/typesense.sh starts
one and exports LUCILLE_TEST_TYPESENSE_URL / LUCILLE_TEST_TYPESENSE_API_KEY): a run with
indexer.type typesense, then Typesense's own search API shows what was indexed and deleted; a
document Typesense rejects FAILs alone. Skipped without the server unless
LUCILLE_REQUIRE_SERVICES=1."""

import json
import os
import pathlib
import textwrap
import time
import urllib.parse
import urllib.request
from typing import Any, Sequence

import pytest

import lucille
from services import service_env

URL = service_env("LUCILLE_TEST_TYPESENSE_URL", "typesense.sh", module=True)
KEY = service_env("LUCILLE_TEST_TYPESENSE_API_KEY", "typesense.sh", module=True)

FEED = """
import lucille

class Feed(lucille.Connector):
    def execute(self, publisher):
        for d in self.config["docs"]:
            publisher.publish(lucille.Document.from_dict(d))
"""


def search(collection: str, **params: str) -> Any:
    query = urllib.parse.urlencode({"q": "*", "per_page": 250, **params})
    req = urllib.request.Request(f"{URL}/collections/{collection}/documents/search?{query}",
                                 headers={"X-TYPESENSE-API-KEY": KEY})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def ids(collection: str, **params: str) -> list[str]:
    return sorted(h["document"]["id"] for h in search(collection, **params)["hits"])


@pytest.fixture
def feed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tsfeed.py").write_text(textwrap.dedent(FEED))
    monkeypatch.syspath_prepend(str(tmp_path))


def run(collection: str, docs: Sequence[object]) -> lucille.RunResult:
    return lucille.run(config={
        "connectors": [{"name": "feed", "class": "tsfeed:Feed", "pipeline": "p", "docs": docs}],
        "pipelines": [{"name": "p", "stages": [{"class": "SetStaticValues", "staticValues": {"source": "pytest"}}]}],
        "indexer": {"type": "typesense", "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "true",
                    "deleteByFieldField": "del_field", "deleteByFieldValue": "del_value"},
        "typesense": {"url": URL, "apiKey": KEY, "collection": collection},
    })


def test_typesense_run_indexes_deletes_and_fails_only_the_rejected_document(feed: None) -> None:
    collection = f"pytest_{os.getpid()}_{time.time_ns()}"
    r = run(collection, [
        {"id": "a", "title": "alpha", "year": 2001, "author": "ann"},
        {"id": "b", "title": "beta", "year": 2002, "author": "bob"},
        {"id": "c", "title": "gamma", "year": 2003, "author": "bob"},
        {"id": "bad", "title": "delta", "year": "not a year"},
    ])
    assert (r.published, r.succeeded, r.failed) == (4, 3, 1), r.summary
    assert ids(collection) == ["a", "b", "c"]
    hit = search(collection, q="alpha", query_by="title")["hits"][0]["document"]
    assert hit == {"id": "a", "title": "alpha", "year": 2001, "author": "ann", "source": "pytest"}

    r = run(collection, [
        {"id": "a", "deleted": "true"},
        {"id": "x", "deleted": "true", "del_field": "author", "del_value": "bob"},
        {"id": "e", "title": "epsilon", "year": 2005, "author": "eve"},
    ])
    assert (r.published, r.succeeded, r.failed) == (3, 3, 0), r.summary
    assert ids(collection) == ["e"]


def test_vector_fields_and_a_nearest_neighbour_query(feed: None) -> None:
    collection = f"vectors_{os.getpid()}_{time.time_ns()}"
    result = lucille.run(config={
        "connectors": [{"name": "feed", "class": "tsfeed:Feed", "docs": [
            {"id": "east", "v": [1.0, 0.0, 0.0]},
            {"id": "north", "v": [0.0, 1.0, 0.0]},
            {"id": "ne", "v": [0.7, 0.7, 0.0]},
            {"id": "short", "v": [1.0, 0.0]},
        ]}],
        "indexer": {"type": "typesense"},
        "typesense": {"url": URL, "apiKey": KEY, "collection": collection, "vectorFields": {"v": 3}},
    })
    assert (result.succeeded, result.failed) == (3, 1), "a vector of another length FAILs"
    hits = search(collection, vector_query="v:([0.1,0.9,0.0], k:3)")["hits"]
    assert [h["document"]["id"] for h in hits] == ["north", "ne", "east"]
    assert hits[0]["vector_distance"] < hits[1]["vector_distance"] < hits[2]["vector_distance"]
    errors = lucille.validate(config={
        "connectors": [{"name": "feed", "class": "tsfeed:Feed", "docs": []}],
        "indexer": {"type": "typesense"},
        "typesense": {"url": URL, "apiKey": KEY, "collection": "x", "vectorFields": {"v": 0}},
    })
    assert any("vectorFields.v" in e for e in errors), errors
