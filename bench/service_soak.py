"""The service for months, in minutes (issue 46): 1,000 runs through one `lucille serve` with
retention on, mixed as a deployment's are: successes, partial runs (some documents FAIL),
failed runs (a connector that raises), cancelled runs, replays of failures, and a schedule that
fires every second beside them. Every 100 runs it reads the service process's resident memory,
open file descriptors and threads, and the data directory's size; the table shows whether any of
them grows. Every run must end in the state its kind calls for, with its exact counts.

    python3 bench/service_soak.py [--runs 1000] [--keep-runs 100] [--every 100]

No timing or size is asserted anywhere; this prints what was measured."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from service_process import Service, write_stages  # noqa: E402

FAILING_CONNECTOR = '''
import lucille

class Broken(lucille.Connector):
    def execute(self, publisher):
        for n in range(5):
            publisher.publish(lucille.Document(f"broken-{n}"))
        raise RuntimeError("the source went away")
'''


def config(tmp: pathlib.Path, kind: str, docs: int, stages: pathlib.Path) -> str:
    connector = (f'{{ name: "numbers", class: "SequenceConnector", numDocs: {docs}, '
                 f'docIdPrefix: "doc-", pipeline: "p" }}')
    extra = ""
    if kind == "partial":
        extra = f'{{ name: "check", class: "{stages}:Flaky", every: 5, fixed: "{tmp / "never"}" }}'
    elif kind == "failed":
        connector = f'{{ name: "broken", class: "{tmp / "broken.py"}:Broken", pipeline: "p" }}'
    elif kind == "cancelled":
        extra = f'{{ class: "{stages}:Slow", seconds: 0.01 }}'
    return f"""
connectors: [{connector}]
pipelines: [{{ name: "p", stages: [
  {{ name: "mark", class: "SetStaticValues", staticValues: {{ source: "soak" }} }}
  {extra}
] }}]
indexer {{ type: "jsonl", batchSize: 50 }}
jsonl {{ path: "{tmp / f'out-{kind}.jsonl'}" }}
worker {{ threads: 1 }}
publisher {{ queueCapacity: 20 }}
"""


def proc_sample(pid: int) -> tuple[float, int, int]:
    """(resident MB, open fds, threads) of a live process."""
    rss_kb, threads = 0, 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss_kb / 1024, len(os.listdir(f"/proc/{pid}/fd")), threads


def dir_size(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--keep-runs", type=int, default=100)
    ap.add_argument("--every", type=int, default=100, help="sample every this many runs")
    ap.add_argument("--docs", type=int, default=200)
    a = ap.parse_args()

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="lucille-soak-"))
    stages = write_stages(tmp)
    (tmp / "broken.py").write_text(FAILING_CONNECTOR)
    data = tmp / "data"
    svc = Service(data, "--keep-runs", str(a.keep_runs), "--keep-days", "30").start()
    assert svc.proc is not None
    pid = svc.proc.pid
    expect = {
        "succeeded": ("succeeded", {"published": a.docs, "succeeded": a.docs, "failed": 0}),
        "partial": ("partial", {"published": a.docs, "succeeded": a.docs - a.docs // 5,
                                "failed": a.docs // 5}),
        "failed": ("failed", {"published": 5, "succeeded": 5, "failed": 0}),
    }
    kinds = ["succeeded", "partial", "failed", "cancelled", "replay"]
    counted: dict[str, int] = {k: 0 for k in kinds}
    rows: list[tuple[int, float, int, int, int, int]] = []
    submitted = 0
    last_partial = ""
    start = time.time()
    schedule = svc.ok("POST", "/api/schedules", {
        "config": config(tmp, "succeeded", 20, stages), "everySecs": 1, "name": "every second"})

    def fired() -> int:
        return svc.logs().count(" queued run_id=") - submitted

    def check(run: dict[str, Any], kind: str) -> None:
        if kind in expect:
            state, counts = expect[kind]
            got = {k: run["counts"][k] for k in counts}
            assert run["state"] == state and got == counts, (kind, run)
        elif kind == "cancelled":
            assert run["state"] == "cancelled", run
            c = run["counts"]
            assert c["succeeded"] + c["failed"] + c["dropped"] == c["published"], run
        else:  # a replay of a partial run's failures: they fail again (the stage is not fixed)
            assert run["state"] == "partial" and run["counts"]["failed"] == a.docs // 5, run

    def sample(done: int) -> None:
        rss, fds, threads = proc_sample(pid)
        total = svc.ok("GET", "/api/runs?limit=1")["total"]
        rows.append((done, rss, fds, threads, dir_size(data), total))
        print(f"{done:>5} runs: RSS {rss:.1f} MB, {fds} fds, {threads} threads, data dir "
              f"{dir_size(data) / 1e6:.2f} MB, {total} runs in the history", flush=True)

    next_sample = a.every
    while submitted + fired() < a.runs:
        kind = kinds[submitted % len(kinds)]
        if kind == "replay":
            status, body = svc.call("POST", f"/api/runs/{last_partial}/replay")
            assert status == 201, (status, body)
            run_id = body["id"]
        else:
            cfg = config(tmp, kind, 4000 if kind == "cancelled" else a.docs, stages)
            run_id = svc.submit(cfg, name=kind)
        submitted += 1
        if kind == "cancelled":
            svc.wait(run_id, states=("running",))
            time.sleep(0.05)
            svc.ok("POST", f"/api/runs/{run_id}/cancel")
        run = svc.wait(run_id, timeout=300, states=(
            "succeeded", "partial", "failed", "cancelled", "interrupted"))
        check(run, kind)
        if kind == "partial":
            last_partial = run_id
        counted[kind] += 1
        if submitted + fired() >= next_sample:
            sample(submitted + fired())
            next_sample += a.every
    svc.ok("DELETE", f"/api/schedules/{schedule['id']}")
    took = time.time() - start
    scheduled = fired()
    svc.stop()

    warm = rows[min(1, len(rows) - 1)]
    print(f"\n{submitted + scheduled} runs in {took:.0f} s: " +
          ", ".join(f"{n} {k}" for k, n in counted.items()) + f", {scheduled} by the schedule; "
          f"--keep-runs {a.keep_runs}\n")
    print("| runs | RSS MB | open fds | threads | data dir MB | runs in history |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for done, rss, fds, threads, size, total in rows:
        print(f"| {done} | {rss:.1f} | {fds} | {threads} | {size / 1e6:.2f} | {total} |")
    top = max(r[1] for r in rows[1:]) if len(rows) > 1 else rows[0][1]
    print(f"\nRSS after warm-up ({warm[0]} runs: {warm[1]:.1f} MB) to the highest later sample: "
          f"{100 * (top / warm[1] - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
