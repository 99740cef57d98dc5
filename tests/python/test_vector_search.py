"""Vectors in the embedded Tantivy index (issue 16): a `vector` field stores each document's
embedding; `lucille.search(..., vector=, field=)` and `lucille search --vector / --near` rank by
cosine similarity, optionally among the hits of a text query; `lucille.embed` embeds a query
the way the Embed stage embedded the documents."""

import json
import pathlib
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import lucille

CONNECTOR_PY = '''
import lucille

VECTORS = {"east": [1.0, 0.0, 0.0], "north": [0.0, 1.0, 0.0], "ne": [0.7, 0.7, 0.0]}


class Points(lucille.Connector):
    def execute(self, publisher):
        for name, v in VECTORS.items():
            d = lucille.Document(name, {"label": name + " point", "kind": "compass"})
            d.set_vector("v", v)
            publisher.publish(d)
        publisher.publish(lucille.Document("plain", {"label": "no vector", "kind": "compass"}))
'''


def cli(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "lucille.cli", *args], capture_output=True, text=True)


@pytest.fixture
def index(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "points.py").write_text(CONNECTOR_PY)
    (tmp_path / "ingest.conf").write_text(textwrap.dedent("""
        connectors: [ { name: "points", class: "points:Points" } ]
        indexer { type: "tantivy" }
        tantivy { path: "index", fields { v: { type: vector } } }
    """))
    result = lucille.run(str(tmp_path / "ingest.conf"))
    assert result.succeeded
    return tmp_path / "index"


def test_search_ranks_by_cosine_and_returns_the_vector(index: pathlib.Path) -> None:
    hits = lucille.search(index, vector=np.array([0.9, 0.2, 0.0], dtype=np.float32), field="v")
    assert [h["id"] for h in hits] == ["east", "ne", "north"], "a document without a vector is not ranked"
    assert hits[0]["score"] == pytest.approx(0.9 / np.sqrt(0.85), rel=1e-5)
    assert hits[0]["v"] == pytest.approx([1.0, 0.0, 0.0])
    assert hits[0]["label"] == "east point"
    # A text query narrows what is ranked; plain text search still works.
    hits = lucille.search(index, "label:north", vector=[1.0, 0.0, 0.0], field="v", limit=5)
    assert [h["id"] for h in hits] == ["north"]
    assert [h["id"] for h in lucille.search(index, "vector")] == ["plain"]


def test_search_vector_errors(index: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="not a vector field"):
        lucille.search(index, vector=[1.0], field="label")
    with pytest.raises(ValueError, match="field="):
        lucille.search(index, vector=[1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="all zeros"):
        lucille.search(index, vector=[0.0, 0.0, 0.0], field="v")


def test_cli_vector_option(index: pathlib.Path) -> None:
    out = cli("search", str(index), "--vector", "v=0.1,0.9,0", "--json")
    assert out.returncode == 0, out.stderr
    ids = [json.loads(line)["id"] for line in out.stdout.splitlines()]
    assert ids == ["north", "ne", "east"]
    bad = cli("search", str(index), "--vector", "v=a,b")
    assert bad.returncode == 1 and "comma-separated" in bad.stderr
    near = cli("search", str(index), "--near", "v=hello")
    assert near.returncode == 1 and "--model" in near.stderr


def test_embed_then_search_near_a_text(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, embed_model: pathlib.Path
) -> None:
    model = embed_model
    monkeypatch.chdir(tmp_path)
    lines = [
        {"id": "cats", "text": "Cats purr and sleep most of the day."},
        {"id": "rates", "text": "The central bank raised interest rates again."},
        {"id": "rockets", "text": "The rocket reached orbit after launch."},
    ]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    config = {
        "connectors": [{"name": "docs", "class": "FileConnector", "paths": ["docs.jsonl"],
                        "fileHandlers": {"jsonl": {}}, "pipeline": "embed"}],
        "pipelines": [{"name": "embed", "stages": [
            {"class": "Embed", "source": "text", "dest": "embedding", "model": str(model), "batchSize": 2}]}],
        "indexer": {"type": "tantivy"},
        "tantivy": {"path": "index", "fields": {"embedding": {"type": "vector", "stored": False}}},
    }
    assert lucille.run(config=config).succeeded
    query = lucille.embed(model, ["Which animal purrs?", "space flight"])
    assert query.shape == (2, 384) and query.dtype == np.float32
    assert lucille.search("index", vector=query[0], field="embedding")[0]["id"] == "cats"
    hits = lucille.search("index", vector=query[1], field="embedding")
    assert hits[0]["id"] == "rockets" and "embedding" not in hits[0]
    out = cli("search", "index", "--near", "embedding=money and inflation", "--model", str(model), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["id"] == "rates"
    with pytest.raises(ValueError, match="model"):
        lucille.embed(tmp_path / "nope", ["x"])


def _fused(hit: dict[str, Any]) -> float:
    ranks: list[int] = [r for r in (hit["text_rank"], hit["vector_rank"]) if r is not None]
    return sum(1.0 / (60 + r) for r in ranks)


def test_hybrid_search_fuses_text_and_vector_rankings(index: pathlib.Path) -> None:
    q = [0.1, 0.9, 0.0]
    text = [h["id"] for h in lucille.search(index, "label:point OR label:east", limit=100)]
    near = [h["id"] for h in lucille.search(index, vector=q, field="v", limit=100)]
    assert text[0] == "east" and set(text) == {"east", "north", "ne"}
    assert near == ["north", "ne", "east"]
    hits = lucille.search(index, "label:point OR label:east", vector=q, field="v", hybrid=True)
    # Every document in either ranking, each with its places in both and their fusion.
    assert sorted(h["id"] for h in hits) == ["east", "ne", "north"]
    for h in hits:
        assert h["text_rank"] == text.index(h["id"]) + 1
        assert h["vector_rank"] == near.index(h["id"]) + 1
        assert h["score"] == pytest.approx(_fused(h), rel=1e-6)
        assert h["label"] == h["id"] + " point"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    # The vector ranking is of every document: a hit the query does not match has no text rank.
    hits = lucille.search(index, "label:east", vector=q, field="v", hybrid=True)
    by_id = {h["id"]: h for h in hits}
    assert by_id["east"]["text_rank"] == 1 and by_id["north"]["text_rank"] is None
    assert by_id["north"]["vector_rank"] == 1
    # rrf_k is the fusion's constant; offset pages through the same order.
    k0 = lucille.search(index, "label:east", vector=q, field="v", hybrid=True, rrf_k=0)
    assert {h["id"]: h["score"] for h in k0}["east"] == pytest.approx(1 + 1 / 3)
    page = lucille.search(index, "label:east", vector=q, field="v", hybrid=True, offset=1, limit=1)
    assert [h["id"] for h in page] == [hits[1]["id"]]
    # Without hybrid, hits carry no ranks; paging works there too.
    plain = lucille.search(index, vector=q, field="v")
    assert "text_rank" not in plain[0]
    assert [h["id"] for h in lucille.search(index, vector=q, field="v", offset=2)] == ["east"]


def test_hybrid_search_errors(index: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="hybrid=True needs vector="):
        lucille.search(index, "label:east", hybrid=True)
    with pytest.raises(ValueError, match="rrf_k"):
        lucille.search(index, "label:east", vector=[1.0, 0.0, 0.0], field="v", hybrid=True, rrf_k=-1)
    with pytest.raises(OverflowError):  # as for a negative limit
        lucille.search(index, "label:east", offset=-1)


def test_cli_hybrid(index: pathlib.Path) -> None:
    out = cli("search", str(index), "label:east", "--vector", "v=0.1,0.9,0", "--hybrid", "--json")
    assert out.returncode == 0, out.stderr
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    by_id = {h["id"]: h for h in hits}
    assert by_id["east"]["text_rank"] == 1 and by_id["north"]["vector_rank"] == 1
    assert by_id["north"]["text_rank"] is None
    text = cli("search", str(index), "label:east", "--vector", "v=0.1,0.9,0", "--hybrid")
    assert text.returncode == 0, text.stderr
    assert "(text #1, vector #3)" in text.stdout and "(text #-, vector #1)" in text.stdout
    bad = cli("search", str(index), "label:east", "--hybrid")
    assert bad.returncode == 1 and "--hybrid" in bad.stderr


def test_snippets_through_python_and_the_cli(index: pathlib.Path) -> None:
    hits = lucille.search(index, "point AND north", snippets=True)
    assert [h["id"] for h in hits] == ["north"]
    assert hits[0]["snippets"] == {"label": "<b>north</b> <b>point</b>"}
    # Hybrid hits have them too; a field the query names has only its terms; off by default.
    hits = lucille.search(index, "kind:compass", vector=[0.0, 1.0, 0.0], field="v", hybrid=True,
                          snippets=True, limit=1)
    assert hits[0]["snippets"] == {"kind": "<b>compass</b>"}
    assert "snippets" not in lucille.search(index, "north")[0]
    out = cli("search", str(index), "north", "--snippets", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["snippets"] == {"label": "<b>north</b> point"}
    out = cli("search", str(index), "north", "--snippets")
    assert out.returncode == 0, out.stderr
    assert "label: **north** point" in out.stdout


class ManyPoints(lucille.Connector):
    """60,000 seeded unit vectors of 32 values: past the size where a vector search goes
    through the vector codes."""

    def __init__(self, rows: "np.ndarray[Any, Any]") -> None:
        super().__init__()
        self.rows = rows

    def execute(self, publisher: lucille.Publisher) -> None:
        for i, row in enumerate(self.rows):
            d = lucille.Document(f"p{i}", {"kind": "even" if i % 2 == 0 else "odd"})
            d.set_vector("v", row)
            publisher.publish(d)


def test_a_large_index_searches_through_its_vector_codes(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((60_000, 32)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = tmp_path / "index"
    result = lucille.run(config={
        "indexer": {"type": "tantivy"},
        "tantivy": {"path": str(index), "fields": {"v": {"type": "vector", "stored": False}}},
        "worker": {"threads": 2},
    }, connector=ManyPoints(rows), progress=False)
    assert result.status == "Success" and result.succeeded == 60_000
    # The run wrote the codes of each segment when it closed the index.
    codes = sorted(index.glob("*.lucvec"))
    segments = {p.name.split(".")[0] for p in index.glob("*.idx")}
    assert codes and {p.name.split(".")[0] for p in codes} == segments

    queries = rng.standard_normal((20, 32)).astype(np.float32)
    found = 0
    for q in queries:
        hits = lucille.search(index, vector=q, field="v", limit=10)
        exact = rows @ (q / np.linalg.norm(q))
        truth = {f"p{i}" for i in np.argsort(-exact)[:10]}
        found += sum(h["id"] in truth for h in hits)
        for h in hits:  # the scores are the cosine, best first
            assert h["score"] == pytest.approx(float(exact[int(h["id"][1:])]), abs=1e-5)
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert found / 200 >= 0.9, found

    # A filtered search compares every vector it is given: exactly the best of the filter.
    q = queries[0] / np.linalg.norm(queries[0])
    hits = lucille.search(index, "kind:even", vector=q, field="v", limit=5)
    even = np.arange(0, 60_000, 2)
    assert [h["id"] for h in hits] == [f"p{i}" for i in even[np.argsort(-(rows[even] @ q))[:5]]]

    # Codes missing (an index from before them): the search builds them again.
    for p in codes:
        p.unlink()
    again = lucille.search(index, vector=queries[1], field="v", limit=10)
    assert sorted(index.glob("*.lucvec")) == codes
    assert len(again) == 10
