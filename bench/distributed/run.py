#!/usr/bin/env python3
"""Distributed mode (Kafka) against local mode and against the broker's own limit, in one run
(bench/distributed/README.md has the tables and how to read them).

    python3 bench/distributed/run.py --docs 100000 --rounds 3

Needs tansu (`source scripts/services/kafka.sh` exports LUCILLE_TEST_TANSU): the bench starts a
broker of its own on a free port of 127.0.0.1 (`--engine memory`, tansu's in-memory engine, by
default: the throughput rows measure messaging, not a disk), so every row starts from an empty
broker.

Rows (medians of `--rounds`, rows taking turns inside each round):
- the limit: a plain Kafka client (confluent-kafka) producing the corpus to the broker and
  consuming it back (broker_limit.py);
- the standard pipeline (bench/standard/six_stages.conf's stages over the standard corpus,
  JSONL out) in local mode with 2 worker threads, and over Kafka: `lucille run --mode
  distributed` with one `lucille worker` process of 2 threads and one `lucille indexer`
  process, then the same with `publisher.maxPendingDocs: 5000`, then with 2 worker processes;
- a CPU-heavy Python stage (cpu_heavy.py, ~5 ms of pure-Python work a document) with 1 and 2
  worker processes of one thread;
- one document's latency under light load: a connector publishing 100 documents a second, every
  document traced (tracing.sampleRatio 1), the `document` span from publish to terminal event
  (p50, p99), and where it waited on the way, from the spans and the message timestamps
  (`--profile`).

Seconds are the wall time of the runner's process (workers and indexer already running and the
worker group settled, so a late join does not rebalance the group mid-run). CPU seconds per
process are read from /proc around the run.
"""
from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
sys.path.insert(0, HERE)

import broker_limit  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))
from trickle import TRICKLE, Spans  # noqa: E402,F401  (bench/trickle.py)

STANDARD = (open(os.path.join(ROOT, "bench/standard/six_stages.conf")).read()
            .split('{ name: "main", stages: ', 1)[1].rsplit("] }", 1)[0] + "]")
HEAVY = f'[{{ class: "EmbeddedPython", scriptPath: "{HERE}/cpu_heavy.py" }}]'



# ---------------------------------------------------------------------------------------------
# The broker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """A tansu broker of the bench's own, on a free port."""

    def __init__(self, engine: str, work: str):
        binary = os.environ.get("LUCILLE_TEST_TANSU")
        if not binary:
            sys.exit("LUCILLE_TEST_TANSU is not set: source scripts/services/kafka.sh first")
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self.dir = tempfile.mkdtemp(prefix="broker-", dir=work)
        storage = "memory://tansu/" if engine == "memory" else "sqlite://store.db"
        self.log = open(os.path.join(self.dir, "broker.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", storage], stdout=self.log, stderr=subprocess.STDOUT,
            cwd=self.dir)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    sys.exit(open(self.log.name).read())
                time.sleep(0.1)
        sys.exit("the broker did not start")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


# ---------------------------------------------------------------------------------------------
# Configs and processes


def config(work: str, name: str, corpus: str, stages: str, bootstrap: str,
           worker: str = "threads: 2", extra: str = "", connector: str | None = None) -> str:
    path = os.path.join(work, f"{name}.conf")
    connector = connector or (
        f'{{ name: "corpus", class: "FileConnector", pipeline: "{name}", paths: ["{corpus}"], '
        f'fileHandlers {{ jsonl {{ idField: "id" }} }} }}')
    with open(path, "w") as f:
        f.write(f"""
connectors: [{connector}]
pipelines: [{{ name: "{name}", stages: {stages} }}]
indexer {{ type: "jsonl", batchSize: 1000 }}
jsonl {{ path: "{work}/{name}.out.jsonl" }}
worker {{ {worker} }}
log {{ seconds: 3600 }}
kafka {{ bootstrapServers: "{bootstrap}", consumerGroupId: "b-{name}" }}
{extra}
{EXTRA}
""")
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_timed(args: list[str], cwd: str) -> float:
    t = time.perf_counter()
    r = subprocess.run([PY, "-m", "lucille.cli", *args], capture_output=True, text=True, cwd=cwd)
    took = time.perf_counter() - t
    if r.returncode != 0 or "0 docs failed" not in r.stdout + r.stderr:
        sys.exit(f"lucille {' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    return took


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def settled(log_path: str, workers: int, limit: float = 90) -> None:
    """Waits until every worker and the indexer have partitions and the groups have been quiet
    for 3 s (a worker that joins late would rebalance the group seconds into the run)."""
    deadline = time.time() + limit
    last, quiet_since = -1, time.time()
    while time.time() < deadline:
        text = open(log_path).read()
        moves = text.count(" assigned (committed") + text.count(" revoked")
        if moves != last:
            last, quiet_since = moves, time.time()
        elif (text.count(" assigned (committed") >= workers + 1
              and text.count("serving pipeline") >= workers + 1
              and time.time() - quiet_since >= 3):
            return
        time.sleep(0.2)
    sys.exit(f"the worker group did not settle in {limit} s; see {log_path}")


class Cluster:
    """`workers` worker processes and one indexer process for one pipeline's config."""

    def __init__(self, conf: str, workers: int, work: str, broker: Broker | None):
        self.log = open(conf + ".log", "w")
        self.procs = [subprocess.Popen([PY, "-m", "lucille.cli", role, conf], stdout=self.log,
                                       stderr=subprocess.STDOUT, cwd=work)
                      for role in ["worker"] * workers + ["indexer"]]
        self.names = [f"worker {i + 1}" for i in range(workers)] + ["indexer"]
        if broker is not None:
            self.procs_watched = self.procs + [broker.proc]
            self.names.append("broker")
        else:
            self.procs_watched = list(self.procs)
        settled(self.log.name, workers)

    def cpu(self) -> list[float]:
        return [cpu_seconds(p.pid) for p in self.procs_watched]

    def stop(self) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


class Measure:
    def __init__(self, seconds: float, docs: int, cpu: dict[str, float]):
        self.seconds, self.docs, self.cpu = seconds, docs, cpu

    @property
    def rate(self) -> float:
        return self.docs / self.seconds


def local_run(work: str, corpus: str, docs: int, stages: str, bootstrap: str,
              worker: str) -> Measure:
    name = f"local_{uuid.uuid4().hex[:8]}"
    conf = config(work, name, corpus, stages, bootstrap, worker)
    before = children_cpu()
    t = run_timed(["run", conf], work)
    return Measure(t, docs, {"run": children_cpu() - before})


def kafka_run(work: str, corpus: str, docs: int, stages: str, broker: Broker, workers: int,
              worker: str, extra: str = "") -> Measure:
    name = f"bench_{uuid.uuid4().hex[:8]}"
    conf = config(work, name, corpus, stages, broker.bootstrap, worker, extra)
    cluster = Cluster(conf, workers, work, broker)
    try:
        before = cluster.cpu()
        runner_before = children_cpu()
        t = run_timed(["run", conf, "--mode", "distributed"], work)
        used = [a - b for a, b in zip(cluster.cpu(), before)]
        cpu = dict(zip(cluster.names, used))
        cpu["runner"] = children_cpu() - runner_before
        return Measure(t, docs, cpu)
    finally:
        cluster.stop()


# ---------------------------------------------------------------------------------------------
# Latency: spans from an OTLP receiver of the bench's own




def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def latency_run(work: str, corpus: str, broker: Broker, n: int, gap_ms: int,
                extra: str = "") -> dict[str, list[float]]:
    """Per traced document, milliseconds: end to end, and each leg of its way."""
    spans = Spans()
    name = f"lat_{uuid.uuid4().hex[:8]}"
    script = os.path.join(work, "trickle.py")
    with open(script, "w") as f:
        f.write(TRICKLE)
    connector = (f'{{ name: "trickle", class: "{script}:Trickle", pipeline: "{name}", '
                 f'numDocs: {n}, gapMs: {gap_ms}, sample: "{corpus}" }}')
    tracing = (f'tracing {{ otlpEndpoint: "{spans.url}", sampleRatio: 1.0, '
               f'serviceName: "bench" }}')
    conf = config(work, name, corpus, STANDARD, broker.bootstrap, "threads: 2",
                  tracing + "\n" + extra, connector)
    cluster = Cluster(conf, 1, work, None)
    try:
        run_timed(["run", conf, "--mode", "distributed"], work)
        time.sleep(3)  # the worker's and indexer's exporters flush every second or so
    finally:
        cluster.stop()
        spans.close()
    docs = {s[2]: s for s in spans.spans if s[0] == "document"}
    stages: dict[str, list[tuple[int, int]]] = {}
    index: dict[str, tuple[int, int]] = {}
    for s in spans.spans:
        if s[0] == "stage":
            stages.setdefault(s[3], []).append((s[4], s[5]))
        elif s[0] == "index":
            index[s[3]] = (s[4], s[5])
    legs: dict[str, list[float]] = {k: [] for k in (
        "end to end", "publish -> worker (source topic)", "stages",
        "worker -> indexer sends the batch (dest topic, batch fill)", "backend",
        "indexer -> runner (event topic)")}
    for span_id, d in docs.items():
        start, end = d[4], d[5]
        legs["end to end"].append((end - start) / 1e6)
        st, ix = stages.get(span_id), index.get(span_id)
        if not st or not ix:
            continue
        first, last = min(a for a, _ in st), max(b for _, b in st)
        legs["publish -> worker (source topic)"].append((first - start) / 1e6)
        legs["stages"].append((last - first) / 1e6)
        legs["worker -> indexer sends the batch (dest topic, batch fill)"].append(
            (ix[0] - last) / 1e6)
        legs["backend"].append((ix[1] - ix[0]) / 1e6)
        legs["indexer -> runner (event topic)"].append((end - ix[1]) / 1e6)
    if len(legs["end to end"]) < n:
        print(f"warning: {len(legs['end to end'])} of {n} document spans received")
    return legs


# ---------------------------------------------------------------------------------------------

EXTRA = ""


def med(ms: list[Measure]) -> Measure:
    m = sorted(ms, key=lambda m: m.seconds)[len(ms) // 2]
    return m


def fmt_cpu(m: Measure) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in m.cpu.items())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--heavy-docs", type=int, default=3000)
    ap.add_argument("--latency-docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engine", choices=["memory", "sqlite"], default="memory")
    ap.add_argument("--work", default="/tmp/lucille-bench-distributed")
    ap.add_argument("--only", default="limit,standard,pending,workers,heavy,latency",
                    help="rows to run, comma-separated")
    ap.add_argument("--extra-config", default="",
                    help="HOCON appended to every generated config (later keys win)")
    a = ap.parse_args()
    global EXTRA
    EXTRA = a.extra_config
    only = set(a.only.split(","))
    os.makedirs(a.work, exist_ok=True)
    corpus = os.path.join(a.work, f"corpus-{a.docs}.jsonl")
    heavy = os.path.join(a.work, f"corpus-{a.heavy_docs}.jsonl")
    for n, path in ((a.docs, corpus), (a.heavy_docs, heavy)):
        if not os.path.exists(path):
            subprocess.run([PY, os.path.join(ROOT, "bench/standard/generate.py"), "--docs",
                            str(n), "--out", path], check=True)
    lines = [line.rstrip(b"\n") for line in open(corpus, "rb")]
    broker = Broker(a.engine, a.work)
    out: list[str] = []
    try:
        results: dict[str, list[Any]] = {}

        def add(key: str, value: Any) -> None:
            results.setdefault(key, []).append(value)

        for r in range(a.rounds):
            print(f"round {r + 1} of {a.rounds}", file=sys.stderr)
            if "limit" in only:
                lim = broker_limit.limits(broker.bootstrap, lines, 8)
                add("limit produce", lim["produce"])
                add("limit consume", lim["consume"])
            if "standard" in only or "pending" in only or "workers" in only:
                add("local", local_run(a.work, corpus, a.docs, STANDARD, broker.bootstrap,
                                       "threads: 2"))
            if "standard" in only:
                add("kafka", kafka_run(a.work, corpus, a.docs, STANDARD, broker, 1,
                                       "threads: 2"))
            if "pending" in only:
                add("kafka pending", kafka_run(a.work, corpus, a.docs, STANDARD, broker, 1,
                                               "threads: 2", "publisher { maxPendingDocs: 5000 }"))
            if "workers" in only:
                add("kafka 2 workers", kafka_run(a.work, corpus, a.docs, STANDARD, broker, 2,
                                                 "threads: 2"))
            if "heavy" in only:
                for w in (1, 2):
                    add(f"heavy {w}", kafka_run(a.work, heavy, a.heavy_docs, HEAVY, broker, w,
                                                "threads: 1"))
        out.append(f"broker: tansu, {a.engine} engine, on 127.0.0.1; {a.docs} standard docs, "
                   f"{a.heavy_docs} CPU-heavy docs; medians of {a.rounds} rounds\n")
        out.append("| row | docs/s | ratio | CPU-s by process (median run) |")
        out.append("| --- | ---: | ---: | --- |")
        if "limit produce" in results:
            prod = statistics.median(results['limit produce'])
            cons = statistics.median(results['limit consume'])
            out.append(f"| plain client: produce the corpus (8 partitions), msgs/s | "
                       f"{prod:,.0f} | | |")
            out.append(f"| plain client: consume it, msgs/s | {cons:,.0f} | | |")
            # A document crosses the broker twice (source, dest): two produces, two consumes.
            out.append(f"| the broker's limit for a document's two hops, 1 / (2 / produce + "
                       f"2 / consume) | {1 / (2 / prod + 2 / cons):,.0f} | | |")
        local = med(results["local"]) if "local" in results else None
        if local:
            out.append(f"| local mode, 2 worker threads | {local.rate:,.0f} | 1.00 | "
                       f"{fmt_cpu(local)} |")
        for key, label in (("kafka", "Kafka: 1 worker process (2 threads), 1 indexer process"),
                           ("kafka pending", "the same, publisher.maxPendingDocs 5000"),
                           ("kafka 2 workers", "Kafka: 2 worker processes (2 threads each)")):
            if key in results:
                m = med(results[key])
                ratio = f"{m.rate / local.rate:.2f}" if local else ""
                out.append(f"| {label} | {m.rate:,.0f} | {ratio} | {fmt_cpu(m)} |")
        if "kafka 2 workers" in results and "kafka" in results:
            pairs = [b.rate / a_.rate for a_, b in zip(results["kafka"], results["kafka 2 workers"])]
            out.append(f"| light stage: 2 workers over 1 (per round: "
                       f"{', '.join(f'{p:.2f}' for p in pairs)}) | | "
                       f"{statistics.median(pairs):.2f} | |")
        if "heavy 1" in results:
            h1, h2 = med(results["heavy 1"]), med(results["heavy 2"])
            pairs = [b.rate / a_.rate for a_, b in zip(results["heavy 1"], results["heavy 2"])]
            out.append(f"| CPU-heavy stage: 1 worker process | {h1.rate:,.0f} | | {fmt_cpu(h1)} |")
            out.append(f"| CPU-heavy stage: 2 worker processes (per round: "
                       f"{', '.join(f'{p:.2f}' for p in pairs)}) | {h2.rate:,.0f} | "
                       f"{statistics.median(pairs):.2f} | {fmt_cpu(h2)} |")
        if "latency" in only:
            out.append(f"\nOne document's latency under light load: {a.latency_docs} documents "
                       "published at a steady rate, every one traced (tracing.sampleRatio 1); "
                       "each leg from the spans of the runner, the worker and the indexer "
                       "(p50 / p99, ms)\n")
            cases = [("10 docs/s", 100, ""), ("100 docs/s", 10, ""),
                     ("100 docs/s, indexer.batchTimeout 20", 10,
                      "indexer.batchTimeout: 20")]
            results_lat = [(label, latency_run(a.work, corpus, broker, a.latency_docs, gap, x))
                           for label, gap, x in cases]
            out.append("| leg | " + " | ".join(label for label, _ in results_lat) + " |")
            out.append("| --- |" + " ---: |" * len(results_lat))
            for k in results_lat[0][1]:
                cells = [f"{statistics.median(v[k]):.1f} / {pct(v[k], 0.99):.1f}"
                         if v[k] else "" for _, v in results_lat]
                out.append(f"| {k} | " + " | ".join(cells) + " |")
    finally:
        broker.stop()
    print("\n".join(out))


if __name__ == "__main__":
    main()
