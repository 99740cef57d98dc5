"""worker.processes: a CPU-heavy Python stage with 1 and 2 worker processes against worker
threads, and the cost per document of the process hand-off on a cheap Python stage.

    python3 bench/processes/run.py [--docs 2000] [--cheap-docs 50000] [--runs 3]

Each run is `python -m lucille.cli run` in a subprocess; wall time is the median of the runs,
CPU is user+sys of the run and its worker processes (getrusage of children). Prints a table.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

STAGES = textwrap.dedent(
    '''
    import lucille

    class Heavy(lucille.Stage):
        """About a few milliseconds of pure-Python arithmetic per document."""
        def process_document(self, doc):
            total = 0
            for i in range(int(self.config.get("loops", 40000))):
                total += (i * i) % 7
            doc.set_field("total", total)

    class Cheap(lucille.Stage):
        def process_document(self, doc):
            doc.set_field("seen", True)
    '''
)


def config(folder: Path, stage: str, docs: int, worker: str) -> Path:
    conf = folder / f"{stage}-{worker.replace(' ', '').replace(':', '')}.conf"
    conf.write_text(
        textwrap.dedent(
            f"""
            connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: {docs}, pipeline: "p" }}]
            pipelines: [{{ name: "p", stages: [{{ class: "bench_stages.py:{stage}" }}] }}]
            indexer {{ type: "nop" }}
            worker {{ {worker} }}
            """
        )
    )
    return conf


def run_once(conf: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "lucille.cli", "run", str(conf)],
        cwd=conf.parent, capture_output=True, text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{conf.name} failed:\n{p.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(conf: Path, runs: int) -> tuple[float, float]:
    results = [run_once(conf) for _ in range(runs)]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--cheap-docs", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bench_stages.py").write_text(STAGES)
        rows = []
        for stage, docs, worker in [
            ("Heavy", args.docs, "threads: 1"),
            ("Heavy", args.docs, "threads: 2"),
            ("Heavy", args.docs, "processes: 1"),
            ("Heavy", args.docs, "processes: 2"),
            ("Cheap", args.cheap_docs, "threads: 1"),
            ("Cheap", args.cheap_docs, "processes: 1"),
            ("Cheap", args.cheap_docs, "processes: 2"),
        ]:
            wall, cpu = measure(config(folder, stage, docs, worker), args.runs)
            rows.append((stage, worker, docs, wall, docs / wall, cpu / docs * 1e6))
    base = {s: r[4] for r in rows for s in [r[0]] if r[1] == "threads: 1"}
    print(f"machine: {os.cpu_count()} cores; median of {args.runs} runs")
    print(f"| stage | worker | docs | wall s | docs/s | vs threads: 1 | CPU µs/doc |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for stage, worker, docs, wall, rate, cpu_us in rows:
        print(f"| {stage} | {worker} | {docs} | {wall:.2f} | {rate:.0f} | {rate / base[stage]:.2f}× | {cpu_us:.1f} |")
    heavy = {r[1]: r[4] for r in rows if r[0] == "Heavy"}
    print(f"\nHeavy, processes: 2 / processes: 1 = {heavy['processes: 2'] / heavy['processes: 1']:.2f}× (goal ≥ 1.8×)")


if __name__ == "__main__":
    main()
