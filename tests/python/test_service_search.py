"""The service's search over the embedded indexes its runs wrote (issue 48; interface.md,
"Search"): `GET /api/indexes` lists them by folder name, newest first, with their document
counts; `GET /api/indexes/{name}/search` answers a page of hits with stored fields and
snippets, the match count, a field's value counts, and a query error at its character. Only a
listed name is reachable, never a path. Real `lucille serve` processes and real runs."""

from __future__ import annotations

import json
import pathlib
import urllib.parse
from typing import Any

from service_process import Service

TOKEN = "search-t0ken"

BOOKS: list[dict[str, Any]] = [
    {"id": "b1", "title": "Programming Rust", "kind": "book", "body": "Rust ownership and borrowing"},
    {"id": "b2", "title": "The Rust Book", "kind": "book", "body": "learn Rust from the start"},
    {"id": "b3", "title": "Python Tricks", "kind": "book", "body": "idiomatic Python"},
    {"id": "a1", "title": "Rust in the kernel", "kind": "article", "body": "Rust drivers for Linux"},
    {"id": "a2", "title": "Why Rust", "kind": "article", "body": "memory safety without a collector"},
    {"id": "a3", "title": "Async Python", "kind": "article", "body": "asyncio event loops"},
    {"id": "v1", "title": "Rust talk", "kind": "video", "body": "a talk about Rust traits"},
    {"id": "v2", "title": "Cooking", "kind": ["video", "food"], "body": "pasta"},
]


def tantivy_config(data: pathlib.Path, index: pathlib.Path) -> str:
    return f"""
connectors: [{{ name: "books", class: "FileConnector", paths: ["{data}"],
               fileHandlers {{ jsonl {{ idField: "id" }} }} }}]
indexer {{ type: "tantivy", batchSize: 100 }}
tantivy {{ path: "{index}" }}
"""


def search(svc: Service, name: str, **params: Any) -> tuple[int, Any]:
    query = urllib.parse.urlencode(params)
    return svc.call("GET", f"/api/indexes/{urllib.parse.quote(name, safe='')}/search?{query}")


def test_indexes_are_listed_and_searched_by_name(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "books.jsonl"
    data.write_text("".join(json.dumps(b) + "\n" for b in BOOKS))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with Service(tmp_path / "data", "--token-file", str(token_file), token=TOKEN) as svc:
        assert svc.call("GET", "/api/indexes", token=None)[0] == 401
        assert svc.call("GET", "/api/indexes/books/search?q=rust", token=None)[0] == 401
        assert svc.ok("GET", "/api/indexes") == {"indexes": []}

        first = svc.submit(tantivy_config(data, tmp_path / "shelf" / "books"))
        assert svc.wait(first)["state"] == "succeeded"
        # A run to a JSONL file writes no index.
        jsonl = svc.submit(f"""
connectors: [{{ name: "books", class: "FileConnector", paths: ["{data}"],
               fileHandlers {{ jsonl {{ idField: "id" }} }} }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{tmp_path / 'out.jsonl'}" }}
""")
        assert svc.wait(jsonl)["state"] == "succeeded"
        listed = svc.ok("GET", "/api/indexes")["indexes"]
        assert listed == [{"name": "books", "runId": first, "documents": 8,
                           "path": str(tmp_path / "shelf" / "books")}]

        # Another folder of the same name gets a name of its own, and is the newest.
        data2 = tmp_path / "two.jsonl"
        data2.write_text("".join(json.dumps(b) + "\n" for b in BOOKS[:2]))
        second = svc.submit(tantivy_config(data2, tmp_path / "annex" / "books"))
        assert svc.wait(second)["state"] == "succeeded"
        listed = svc.ok("GET", "/api/indexes")["indexes"]
        assert [(i["name"], i["runId"], i["documents"]) for i in listed] == [
            ("books-2", second, 2), ("books", first, 8)]

        # A search page: stored fields, snippets with the terms in <b>, the match count.
        status, page = search(svc, "books", q="rust", limit=3)
        assert status == 200, page
        assert page["total"] == 5
        assert len(page["hits"]) == 3
        assert set(page["hits"][0]) == {"id", "score", "fields", "snippets"}
        by_id = {b["id"]: b for b in BOOKS}
        for hit in page["hits"]:
            book = by_id[hit["id"]]
            assert hit["fields"] == {k: v for k, v in book.items() if k != "id"}
            assert any("<b>Rust</b>" in s for s in hit["snippets"].values()), hit
        scores = [h["score"] for h in page["hits"]]
        assert scores == sorted(scores, reverse=True)
        # Paging: the next page continues the ranking; together they are the first five.
        _, rest = search(svc, "books", q="rust", limit=3, offset=3)
        _, whole = search(svc, "books", q="rust", limit=10)
        assert [h["id"] for h in page["hits"] + rest["hits"]] == [h["id"] for h in whole["hits"]]
        assert len(rest["hits"]) == 2 and rest["total"] == 5
        # Facets: a field's values among the matches, most first, a list counting each value.
        _, faceted = search(svc, "books", q="", facet="kind")
        assert faceted["total"] == 8
        assert faceted["facets"] == {"kind": [
            {"value": "article", "count": 3}, {"value": "book", "count": 3},
            {"value": "video", "count": 2}, {"value": "food", "count": 1}]}
        _, narrowed = search(svc, "books", q="rust", facet="kind")
        assert narrowed["facets"]["kind"] == [
            {"value": "article", "count": 2}, {"value": "book", "count": 2},
            {"value": "video", "count": 1}]
        # The other index answers its own documents.
        _, other = search(svc, "books-2", q="rust")
        assert sorted(h["id"] for h in other["hits"]) == ["b1", "b2"]

        # A query error says where it breaks.
        status, err = search(svc, "books", q="title:(rust")
        assert status == 400 and isinstance(err["position"], int), err
        assert "syntax error at character" in err["error"]
        status, err = search(svc, "books", q='title:"rust')
        assert status == 400 and isinstance(err["position"], int), err

        # Only a listed name is reachable: never a path, never an unlisted folder.
        for name in ("nope", "../shelf/books", str(tmp_path / "shelf" / "books"), "out.jsonl"):
            status, body = search(svc, name, q="rust")
            assert status == 404 and "GET /api/indexes" in body["error"], (name, status, body)
        status, body = search(svc, "books", q="rust", limit="ten")
        assert status == 400 and "limit must be a whole number" in body["error"]
        status, body = search(svc, "books", q="rust", path="/etc")
        assert status == 400 and "unknown parameter" in body["error"]


def test_an_index_written_again_keeps_its_name_and_counts_its_documents(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "books.jsonl"
    data.write_text("".join(json.dumps(b) + "\n" for b in BOOKS[:3]))
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(b) + "\n" for b in BOOKS[3:]))
    with Service(tmp_path / "data") as svc:
        one = svc.submit(tantivy_config(data, tmp_path / "idx"))
        assert svc.wait(one)["state"] == "succeeded"
        two = svc.submit(tantivy_config(other, tmp_path / "idx"))
        assert svc.wait(two)["state"] == "succeeded"
        assert svc.ok("GET", "/api/indexes")["indexes"] == [
            {"name": "idx", "runId": two, "documents": 8, "path": str(tmp_path / "idx")}]
    # The service remembers its indexes across a restart.
    with Service(tmp_path / "data") as svc:
        assert [i["name"] for i in svc.ok("GET", "/api/indexes")["indexes"]] == ["idx"]
        assert search(svc, "idx", q="pasta")[1]["total"] == 1
