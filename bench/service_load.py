"""The service under load (issue 29): a real `lucille serve` (--max-concurrent-runs 2), 50 runs
submitted at once from 50 threads, while 20 clients poll it (15 read a run and the runs list in
a loop, 5 follow a run's progress stream). Every run must end `succeeded` with its exact counts
(each run has its own number of documents); the table gives the API's latency per request kind
while runs go on: median, p99 and the worst, in milliseconds.

    python3 bench/service_load.py [--runs 50] [--pollers 20] [--docs 2000]

No timing is asserted anywhere; this prints what was measured."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from service_process import Service  # noqa: E402


def config(tmp: pathlib.Path, docs: int, k: int) -> str:
    return f"""
connectors: [{{ name: "numbers", class: "SequenceConnector", numDocs: {docs}, docIdPrefix: "r{k}-", pipeline: "p" }}]
pipelines: [{{ name: "p", stages: [
  {{ class: "SetStaticValues", staticValues: {{ source: "load", run: {k} }} }}
  {{ class: "Concatenate", dest: "label", formatString: "{{source}}-{{run}}" }}
] }}]
indexer {{ type: "jsonl", batchSize: 200 }}
jsonl {{ path: "{tmp / f'out-{k}.jsonl'}" }}
worker {{ threads: 1 }}
"""


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--pollers", type=int, default=20)
    ap.add_argument("--docs", type=int, default=2000, help="documents of the first run; run k has docs + k")
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="lucille-service-load-"))
    latencies: dict[str, list[float]] = defaultdict(list)
    lock = threading.Lock()

    def timed(kind: str, svc: Service, method: str, path: str, body: object = None) -> tuple[int, object]:
        t0 = time.perf_counter()
        status, data = svc.call(method, path, body)
        ms = (time.perf_counter() - t0) * 1000
        with lock:
            latencies[kind].append(ms)
        return status, data

    with Service(tmp / "data", "--max-concurrent-runs", "2") as svc:
        ids: dict[int, str] = {}
        started = time.perf_counter()

        def submit(k: int) -> None:
            status, data = timed("POST /api/runs", svc, "POST", "/api/runs",
                                 {"config": config(tmp, args.docs + k, k), "name": f"load-{k}"})
            assert status == 201, data
            with lock:
                ids[k] = data["id"]  # type: ignore[index]

        threads = [threading.Thread(target=submit, args=(k,)) for k in range(args.runs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop = threading.Event()

        def poll(n: int) -> None:
            while not stop.is_set():
                if n % 4 == 3:
                    run_id = ids[n % args.runs]
                    t0 = time.perf_counter()
                    req = urllib.request.Request(f"{svc.url}/api/runs/{run_id}/events")
                    with urllib.request.urlopen(req, timeout=600) as r:
                        first = True
                        for line in r:
                            if first and line.startswith(b"event:"):
                                with lock:
                                    latencies["events: first event"].append((time.perf_counter() - t0) * 1000)
                                first = False
                    continue
                timed("GET /api/runs/{id}", svc, "GET", f"/api/runs/{ids[n % args.runs]}")
                timed("GET /api/runs?limit=20", svc, "GET", "/api/runs?limit=20")

        pollers = [threading.Thread(target=poll, args=(n,)) for n in range(args.pollers)]
        for t in pollers:
            t.start()
        runs = {}
        for k, run_id in ids.items():
            while True:
                run = svc.run(run_id)
                if run["state"] not in ("queued", "running"):
                    runs[k] = run
                    break
                time.sleep(0.2)
        elapsed = time.perf_counter() - started
        stop.set()
        for t in pollers:
            t.join()
        cpu = None
        try:
            stat = pathlib.Path(f"/proc/{svc.proc.pid}/stat").read_text().split() if svc.proc else []
            cpu = (int(stat[13]) + int(stat[14])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass

    bad = [k for k, r in runs.items()
           if r["state"] != "succeeded" or r["counts"] != {"published": args.docs + k, "succeeded": args.docs + k,
                                                            "failed": 0, "dropped": 0}]
    docs = sum(args.docs + k for k in range(args.runs))
    print(f"{args.runs} runs ({docs:,} documents) submitted at once, {args.pollers} clients polling; "
          f"--max-concurrent-runs 2; all done in {elapsed:.1f} s"
          + (f", service CPU {cpu:.1f} s" if cpu is not None else ""))
    print(f"runs with exact counts: {args.runs - len(bad)}/{args.runs}" + (f"  WRONG: {bad}" if bad else ""))
    print()
    print(f"| {'request':<24} | {'count':>6} | {'p50 ms':>7} | {'p99 ms':>7} | {'max ms':>7} |")
    print(f"| {'-' * 24} | {'-' * 5}: | {'-' * 6}: | {'-' * 6}: | {'-' * 6}: |")
    for kind, values in sorted(latencies.items()):
        print(f"| {kind:<24} | {len(values):>6} | {statistics.median(values):>7.2f} | "
              f"{pct(values, 99):>7.2f} | {max(values):>7.2f} |")
    json.dump({"runs": args.runs, "elapsed": elapsed, "latencies": latencies}, open(tmp / "latencies.json", "w"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
