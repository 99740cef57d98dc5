"""Issue 48: hybrid search (reciprocal rank fusion of the BM25 and the vector ranking) against
each ranking alone, by mean nDCG@10 on a labelled relevance set.

The corpus is the quickstart's (examples/data/stdlib-reference.jsonl, all 2,503 records),
embedded by the Embed stage (all-MiniLM-L6-v2, from "{id}: {summary}") into an embedded
Tantivy index. The judgments are in tests/python/data/relevance/queries.jsonl; its README says
how they were made. What holds: fusion beats text alone, and beats both rankings on keyword
queries; on natural-language queries MiniLM alone is better (a strict xfail below, with the
numbers). `pytest -s` prints the three means, by query type and per query."""

from __future__ import annotations

import json
import math
import pathlib
import re
import statistics
import time
from dataclasses import dataclass
from typing import Any

import pytest

import lucille

HERE = pathlib.Path(__file__).resolve().parent
QUERIES = HERE / "data" / "relevance" / "queries.jsonl"
CORPUS = HERE.parent.parent / "examples" / "data" / "stdlib-reference.jsonl"
K = 10
RANKINGS = ("text", "vector", "hybrid")


@dataclass(frozen=True)
class Judged:
    query: str
    kind: str  # "keyword" or "natural"
    relevant: dict[str, int]


def load_queries() -> list[Judged]:
    out = []
    for line in QUERIES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row: dict[str, Any] = json.loads(line)
            relevant = {str(d): int(g) for d, g in row["relevant"].items()}
            out.append(Judged(str(row["query"]), str(row["type"]), relevant))
    return out


def ndcg_at_k(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    """nDCG@k with graded gains: DCG = sum over the first k of (2^grade - 1) / log2(rank + 1),
    divided by the DCG of the labels' own best order. Unlabelled documents have grade 0."""

    def dcg(grades: list[int]) -> float:
        return sum((2.0**g - 1) / math.log2(rank + 1) for rank, g in enumerate(grades[:k], start=1))

    ideal = dcg(sorted(relevant.values(), reverse=True))
    return dcg([relevant.get(d, 0) for d in ranked]) / ideal if ideal > 0 else 0.0


# Characters of Tantivy's query syntax (+ - ! ( ) { } [ ] ^ " ' ~ * ? : \ / < > =): a user's
# sentence is searched as plain words, so each becomes a space; the operator words in upper
# case become ordinary words. The dots of a dotted name are kept, as typed.
SYNTAX = re.compile(r"[^\w.\s]")
OPERATORS = {"AND", "OR", "NOT", "IN"}


def text_query(q: str) -> str:
    return " ".join(w.lower() if w in OPERATORS else w for w in SYNTAX.sub(" ", q).split())


def test_ndcg_against_a_hand_computed_value() -> None:
    relevant = {"a": 3, "b": 2, "c": 1}
    # DCG = 7/log2(2) + 0 + 3/log2(4) = 8.5; ideal (a, b, c) = 7 + 3/log2(3) + 1/log2(4).
    expected = 8.5 / (7 + 3 / math.log2(3) + 0.5)
    assert ndcg_at_k(["a", "x", "b"], relevant) == pytest.approx(expected, rel=1e-12)
    assert ndcg_at_k(["a", "x", "b"], relevant) == pytest.approx(0.9049495058, rel=1e-9)
    assert ndcg_at_k(["a", "b", "c", "x"], relevant) == pytest.approx(1.0)
    assert ndcg_at_k([], relevant) == 0.0
    # Only the first k count: a relevant document at rank 11 adds nothing.
    assert ndcg_at_k([f"x{i}" for i in range(10)] + ["a"], relevant) == 0.0
    assert ndcg_at_k(["b"], {"b": 1}, k=1) == pytest.approx(1.0)


def test_text_query_keeps_words_and_drops_syntax() -> None:
    assert text_query("find files like *.txt") == "find files like .txt"
    assert text_query("a string like 2024-01-31 (ISO)") == "a string like 2024 01 31 ISO"
    assert text_query("what's NOT here?") == "what s not here"
    assert text_query("json.dumps") == "json.dumps"


def test_the_labels_name_documents_of_the_corpus() -> None:
    ids = {json.loads(line)["id"] for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()}
    queries = load_queries()
    assert 25 <= len(queries) <= 40 and len({q.query for q in queries}) == len(queries)
    for q in queries:
        assert q.kind in ("keyword", "natural"), q
        assert q.relevant and set(q.relevant.values()) <= {1, 2, 3}, q
        assert set(q.relevant) <= ids, (q.query, set(q.relevant) - ids)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embed_model: pathlib.Path) -> pathlib.Path:
    path = tmp_path_factory.mktemp("relevance") / "index"
    config = {
        "connectors": [{"name": "stdlib", "class": "FileConnector", "paths": [str(CORPUS)],
                        "fileHandlers": {"jsonl": {"idField": "id"}}, "pipeline": "embed"}],
        "pipelines": [{"name": "embed", "stages": [
            {"class": "Concatenate", "dest": "passage", "formatString": "{id}: {summary}"},
            {"class": "Embed", "source": "passage", "dest": "embedding", "model": str(embed_model),
             "batchSize": 32},
            # Only the vector keeps the passage; BM25 sees the record's own fields.
            {"class": "DeleteFields", "fields": ["passage"]}]}],
        "indexer": {"type": "tantivy", "batchSize": 500},
        "worker": {"threads": 2},
        "tantivy": {"path": str(path), "fields": {"embedding": {"type": "vector", "stored": False}}},
    }
    start = time.monotonic()
    result = lucille.run(config=config)
    assert result.succeeded and result.published == 2503, result
    print(f"\nindexed and embedded 2503 documents in {time.monotonic() - start:.1f} s")
    return path


@dataclass(frozen=True)
class Scores:
    queries: list[Judged]
    by_ranking: dict[str, list[float]]

    def mean(self, ranking: str, kind: str | None = None) -> float:
        return statistics.fmean(s for s, q in zip(self.by_ranking[ranking], self.queries)
                                if kind in (None, q.kind))


@pytest.fixture(scope="module")
def scores(index: pathlib.Path, embed_model: pathlib.Path) -> Scores:
    """nDCG@10 of every labelled query for text alone, vector alone and hybrid (printed)."""
    queries = load_queries()
    vectors = lucille.embed(embed_model, [q.query for q in queries])
    by_ranking: dict[str, list[float]] = {r: [] for r in RANKINGS}
    lines = []
    for q, v in zip(queries, vectors):
        text = text_query(q.query)
        hits = {
            "text": lucille.search(index, text, limit=K),
            "vector": lucille.search(index, vector=v, field="embedding", limit=K),
            "hybrid": lucille.search(index, text, vector=v, field="embedding", hybrid=True, limit=K),
        }
        row = {r: ndcg_at_k([h["id"] for h in hits[r]], q.relevant) for r in RANKINGS}
        for r in RANKINGS:
            by_ranking[r].append(row[r])
        lines.append(f"  {row['text']:.3f}  {row['vector']:.3f}  {row['hybrid']:.3f}  {q.kind:8} {q.query}")
    result = Scores(queries, by_ranking)
    print(f"\nnDCG@{K} per query:   text  vector  hybrid")
    print("\n".join(lines))
    for kind in (None, "keyword", "natural"):
        n = sum(1 for q in queries if kind in (None, q.kind))
        means = "  ".join(f"{r} {result.mean(r, kind):.3f}" for r in RANKINGS)
        print(f"mean nDCG@{K} ({kind or 'all'}, {n} queries): {means}")
    return result


def test_hybrid_beats_text_alone(scores: Scores) -> None:
    for kind in (None, "keyword", "natural"):
        assert scores.mean("hybrid", kind) > scores.mean("text", kind), kind


def test_hybrid_beats_each_ranking_alone_on_keyword_queries(scores: Scores) -> None:
    assert scores.mean("hybrid", "keyword") > scores.mean("text", "keyword")
    assert scores.mean("hybrid", "keyword") > scores.mean("vector", "keyword")


# Measured at 2026-12-07 (40 queries): text 0.575, vector 0.779, hybrid 0.712; on the 24
# natural-language queries vector 0.745 against hybrid 0.588. BM25 over a sentence's common
# words ranks documents that sit fairly high in both lists above the vector's best hit when the
# text ranking misses it (heapq.nlargest: vector 1st, text 835th for "biggest few items").
# Strict: when fusion does beat the vector ranking on the whole set, this test says so.
@pytest.mark.xfail(strict=True, reason="equal-weight fusion loses to MiniLM alone on natural-language "
                   "queries of this set (issue 48, open)")
def test_hybrid_beats_vector_alone_on_the_whole_set(scores: Scores) -> None:
    assert scores.mean("hybrid") > scores.mean("vector")
