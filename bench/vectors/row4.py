"""Row 4 of the standard benchmark with and without a 384-dimension vector field.

Row 4 is `bench/standard/six_stages.conf` into the embedded Tantivy index. Beside it, the
same run on the same records with one more field, `vec`: 384 numbers (a seeded unit vector,
six significant digits, as an embedding job would write it to JSON lines), typed `vector` in
the index (`tantivy.fields.vec.type = vector`, not stored): its JSON to parse, its fast field,
and the vector codes written when the run closes the index. The rows alternate, whole
`lucille run` processes; the table has the medians.

    python bench/vectors/row4.py --docs 200000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
STANDARD = HERE.parent / "standard"
DIMS = 384


def corpus(work: pathlib.Path, docs: int) -> tuple[pathlib.Path, pathlib.Path]:
    plain = work / f"corpus-{docs}.jsonl"
    if not plain.exists():
        subprocess.run([sys.executable, str(STANDARD / "generate.py"), "--docs", str(docs),
                        "--out", str(plain)], check=True)
    with_vectors = work / f"corpus-vec-{docs}.jsonl"
    if not with_vectors.exists():
        rng = np.random.default_rng(4)
        tmp = with_vectors.with_suffix(".tmp")
        with open(plain, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as out:
            for line in src:
                v = rng.standard_normal(DIMS)
                v /= np.linalg.norm(v)
                record = json.loads(line)
                record["vec"] = [float(f"{x:.6g}") for x in v]
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
        tmp.rename(with_vectors)
    return plain, with_vectors


def lucille() -> list[str]:
    exe = shutil.which("lucille", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "lucille.cli"]


def run(source: pathlib.Path, index: pathlib.Path, vectors: bool) -> tuple[float, float]:
    shutil.rmtree(index, ignore_errors=True)
    sets = ["--set", "indexer.type=tantivy", "--set", f"tantivy.path={index}",
            "--set", "worker.threads=2"]
    if vectors:
        sets += ["--set", "tantivy.fields.vec.type=vector", "--set", "tantivy.fields.vec.stored=false"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(lucille() + ["run", str(STANDARD / "six_stages.conf"), *sets],
                          env={**os.environ, "LUCILLE_BENCH_CORPUS": str(source)},
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "RUN SUMMARY: Success" not in done.stdout + done.stderr:
        sys.exit(f"the run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("LUCILLE_BENCH_DIR", "/tmp/lucille-bench")))
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    plain, with_vectors = corpus(a.work, a.docs)
    rows = {"(4) six stages -> tantivy": (plain, False),
            "(4) + a 384-d vector field": (with_vectors, True)}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    for _ in range(a.runs):
        for name, (source, vectors) in rows.items():
            times[name].append(run(source, a.work / "index-row4-vectors", vectors))
    print("| row | wall s | docs/s | CPU µs/doc |")
    print("| --- | ---: | ---: | ---: |")
    rates = {}
    for name, t in times.items():
        wall = statistics.median(w for w, _ in t)
        cpu = statistics.median(c for _, c in t)
        rates[name] = a.docs / wall
        print(f"| {name} | {wall:.2f} | {a.docs / wall:,.0f} | {1e6 * cpu / a.docs:.2f} |")
    base, vec = rates.values()
    print(f"\nwith the vector field: {vec / base:.2f} of the row's docs/s (goal: >= 0.70)")


if __name__ == "__main__":
    main()
