#!/usr/bin/env python3
"""Runtime benchmark table: SequenceConnector -> 6 Rust stages -> Nop indexer through the full
runner (publisher, accounting, worker pool, indexer thread), with 1 and 2 worker threads.

Each row runs in a fresh process (so peak RSS belongs to that row), three times; the table
shows the median docs/s and the largest peak RSS. The 10M-document rows show RSS staying flat
as the document count grows 10x (queues are bounded; the ledger holds only in-flight ids).
The "heavy" rows use text stages (diacritics, case, regex, dedup over a ~2 KB field) whose work
dominates the per-document cost, showing how the worker pool scales across cores when the
pipeline, not the plumbing, is the cost. The last line times the accounting ledger alone (track + FINISH pairs per second), to show it
is far from being the bottleneck at 500k docs/s.

Usage: python bench/runtime_bench.py [--quick]   (--quick: 200k and 2M documents)
"""

from __future__ import annotations

import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def bench(*args: str) -> dict:
    out = subprocess.run(
        ["cargo", "bench", "--quiet", "--bench", "runtime_bench", "--", *args],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    quick = "--quick" in sys.argv
    small, large = (200_000, 2_000_000) if quick else (1_000_000, 10_000_000)
    rows = []
    for docs in (small, large):
        for threads in (1, 2):
            runs = [bench("run", str(docs), str(threads)) for _ in range(3 if docs == small else 1)]
            rate = statistics.median(r["docs_per_sec"] for r in runs)
            rss = max(r["peak_rss_mb"] for r in runs)
            rows.append(("6 cheap stages", docs, threads, rate, rss, len(runs)))
    heavy_docs = 20_000 if quick else 100_000
    for threads in (1, 2):
        runs = [bench("run-heavy", str(heavy_docs), str(threads)) for _ in range(3)]
        rows.append(("6 text stages (heavy)", heavy_docs, threads,
                     statistics.median(r["docs_per_sec"] for r in runs), max(r["peak_rss_mb"] for r in runs), 3))
    ledger = statistics.median(bench("ledger", "5000000")["pairs_per_sec"] for _ in range(3))

    base = {(p, d): r for (p, d, t, r, _, _) in rows if t == 1}
    print("Runtime benchmark: SequenceConnector -> pipeline -> nop indexer (full accounting)")
    print(f"{'pipeline':22} {'docs':>11} {'threads':>7} {'docs/s':>11} {'vs 1 thread':>11} {'peak RSS MB':>12} {'runs':>5}")
    for p, docs, threads, rate, rss, n in rows:
        print(f"{p:22} {docs:>11,} {threads:>7} {rate:>11,.0f} {rate / base[(p, docs)]:>10.2f}x {rss:>12.1f} {n:>5}")
    print(f"ledger alone: {ledger:,.0f} track+FINISH pairs/s")


if __name__ == "__main__":
    main()
