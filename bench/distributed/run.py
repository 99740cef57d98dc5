#!/usr/bin/env python3
"""Distributed mode against local mode (see README.md here).

Needs a broker: `source scripts/services/kafka.sh` (exports LUCILLE_TEST_KAFKA_BOOTSTRAP).

    python3 bench/distributed/run.py --docs 20000 --heavy-docs 2000

Rows: the standard pipeline (bench/standard/six_stages.conf over the standard corpus) in local
mode and over Kafka with 1 and 2 worker processes (one thread each) and one indexer process; a
CPU-heavy Python stage (cpu_heavy.py) with 1 and 2 worker processes. Times are the wall time of
`lucille run` (local) or `lucille run --mode distributed` (workers and indexer started, and the worker group settled:
with 2 workers, the source partitions split between them, before the clock starts).
"""
import argparse
import resource
import os
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable


def config(work, pipeline, corpus, heavy, worker="threads: 1"):
    stages = (f'[{{ class: "EmbeddedPython", scriptPath: "{HERE}/cpu_heavy.py" }}]' if heavy
              else open(os.path.join(ROOT, "bench/standard/six_stages.conf")).read()
              .split('{ name: "main", stages: ', 1)[1].rsplit("] }", 1)[0] + "]")
    path = os.path.join(work, f"{pipeline}.conf")
    with open(path, "w") as f:
        f.write(f"""
connectors: [{{ name: "corpus", class: "FileConnector", pipeline: "{pipeline}", paths: ["{corpus}"],
               fileHandlers {{ jsonl {{ idField: "id" }} }} }}]
pipelines: [{{ name: "{pipeline}", stages: {stages} }}]
indexer {{ type: "jsonl", batchSize: 1000 }}
jsonl {{ path: "{work}/{pipeline}.out.jsonl" }}
worker {{ {worker} }}
log {{ seconds: 3600 }}
{EXTRA}
publisher {{ maxPendingDocs: 5000 }}
kafka {{ bootstrapServers: "{os.environ['LUCILLE_TEST_KAFKA_BOOTSTRAP']}", consumerGroupId: "b-{pipeline}",
         topicPartitions: 4, producer {{ "linger.ms": 20 }} }}
""")
    return path


def timed(args):
    t = time.perf_counter()
    r = subprocess.run([PY, "-m", "lucille.cli", *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stdout + r.stderr)
    return time.perf_counter() - t


def settled(log_path, workers, limit=90):
    """Waits until the worker group has settled: every process assigned, and with 2 workers the
    four source partitions split between them (a worker that joins late triggers a rebalance
    seconds into the run, and the first worker would process alone until then)."""
    want = (["partitions [0, 1, 2, 3] assigned"] if workers == 1
            else ["partitions [0, 1] assigned", "partitions [2, 3] assigned"])
    deadline = time.time() + limit
    while time.time() < deadline:
        text = open(log_path).read()
        if text.count("assigned") >= workers + 1 and all(w in text for w in want):
            time.sleep(1)
            return
        time.sleep(0.2)
    sys.exit(f"the worker group did not settle in {limit} s; see {log_path}")


def cpu_seconds(pid):
    """User + system CPU seconds of a live process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def broker_pid():
    r = subprocess.run(["pgrep", "-f", "tansu broker"], capture_output=True, text=True)
    pids = r.stdout.split()
    return int(pids[0]) if pids else None


CPU_LINES = []
# HOCON appended to every generated config (--extra-config), e.g. to try indexer settings.
EXTRA = ""


def distributed(work, corpus, heavy, workers, worker="threads: 1"):
    pipeline = f"bench_{uuid.uuid4().hex[:8]}"
    conf = config(work, pipeline, corpus, heavy, worker)
    log = open(os.path.join(work, f"{pipeline}.log"), "w")
    procs = [subprocess.Popen([PY, "-m", "lucille.cli", role, conf], stdout=log, stderr=log)
             for role in ["worker"] * workers + ["indexer"]]
    settled(log.name, workers)
    watched = [p.pid for p in procs] + ([broker_pid()] if broker_pid() else [])
    before = [cpu_seconds(pid) for pid in watched]
    runner_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        seconds = timed(["run", conf, "--mode", "distributed"])
        used = [cpu_seconds(pid) - b for pid, b in zip(watched, before)]
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        runner = (r.ru_utime - runner_before.ru_utime) + (r.ru_stime - runner_before.ru_stime)
        names = [f"worker {i + 1}" for i in range(workers)] + ["indexer", "broker (tansu)"]
        CPU_LINES.append(f"{'heavy' if heavy else 'standard'}, {workers} worker(s), {seconds:.1f} s wall: "
                         + ", ".join(f"{n} {u:.1f}" for n, u in zip(names, used))
                         + f", runner {runner:.1f} CPU-s")
        return seconds
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--heavy-docs", type=int, default=2000)
    ap.add_argument("--work", default="/tmp/lucille-bench-distributed")
    ap.add_argument("--retries", action="store_true",
                    help="only the cost of worker.maxRetries (the retries topic): the standard "
                         "pipeline, 1 worker process, without and with it, 1 and 4 threads")
    ap.add_argument("--extra-config", default="",
                    help="HOCON appended to every generated config (later keys win)")
    a = ap.parse_args()
    global EXTRA
    EXTRA = a.extra_config
    os.makedirs(a.work, exist_ok=True)
    corpus = os.path.join(a.work, f"corpus-{a.docs}.jsonl")
    heavy = os.path.join(a.work, f"corpus-{a.heavy_docs}.jsonl")
    for n, path in ((a.docs, corpus), (a.heavy_docs, heavy)):
        if not os.path.exists(path):
            subprocess.run([PY, os.path.join(ROOT, "bench/standard/generate.py"), "--docs", str(n),
                            "--out", path], check=True)
    rows = []
    if a.retries:
        for threads in (1, 4):
            for extra in ("", ", maxRetries: 2"):
                mode = f"Kafka, 1 worker process, {threads} thread(s)" + (
                    ", worker.maxRetries" if extra else "")
                rows.append(("standard pipeline", mode, a.docs, distributed(
                    a.work, corpus, False, 1, f"threads: {threads}{extra}")))
        table(rows)
        return
    t = timed(["run", config(a.work, f"local_{uuid.uuid4().hex[:8]}", corpus, False)])
    rows.append(("standard pipeline", "local, 1 worker thread", a.docs, t))
    for w in (1, 2):
        rows.append(("standard pipeline", f"Kafka, {w} worker process(es)", a.docs,
                     distributed(a.work, corpus, False, w)))
    t = timed(["run", config(a.work, f"local_{uuid.uuid4().hex[:8]}", heavy, True)])
    rows.append(("CPU-heavy Python stage", "local, 1 worker thread", a.heavy_docs, t))
    for w in (1, 2):
        rows.append(("CPU-heavy Python stage", f"Kafka, {w} worker process(es)", a.heavy_docs,
                     distributed(a.work, heavy, True, w)))
    table(rows)


def table(rows):
    print("| pipeline | mode | docs | seconds | docs/s |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, mode, n, t in rows:
        print(f"| {name} | {mode} | {n} | {t:.1f} | {n / t:,.0f} |")
    if CPU_LINES:
        print("\nCPU seconds per process during each distributed run (/proc; the runner by rusage):")
        for line in CPU_LINES:
            print("  " + line)


if __name__ == "__main__":
    main()
