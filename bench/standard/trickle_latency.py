#!/usr/bin/env python3
"""One document's latency under a trickle, in a local run: a Python connector publishes one
document (a corpus record) every `--gap-ms` through the standard six stages into the JSONL
indexer, and each document's `document` span (publish to terminal event, as the publisher
applies it) is read from the run's trace. Prints p50 / p99 / max in milliseconds.

    python3 bench/standard/trickle_latency.py [--docs 200] [--gap-ms 20] [--batch-timeout 100]

Used to check that records handed over in blocks do not hold a trickle back: a run's latency is
the indexer's `batchTimeout` (a part-filled batch waits for it) plus what the framework adds.
Needs the `lucille` package and opentelemetry-proto (the spans are received by a local OTLP
endpoint, `bench/trickle.py`'s `Spans`).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from trickle import TRICKLE, Spans  # noqa: E402  (bench/trickle.py)

# The six stages of the standard pipeline, as six_stages.conf lists them.
STANDARD = (open(os.path.join(HERE, "six_stages.conf")).read()
            .split('{ name: "main", stages: ', 1)[1].rsplit("] }", 1)[0] + "]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--gap-ms", type=int, default=20)
    ap.add_argument("--batch-timeout", type=int, default=100, help="indexer.batchTimeout, ms")
    ap.add_argument("--corpus", default="/tmp/lucille-bench/corpus-200000.jsonl")
    a = ap.parse_args()
    if not os.path.exists(a.corpus):
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--docs", "1000",
                        "--out", a.corpus], check=True)
    spans = Spans()
    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, "trickle.py")
        with open(script, "w") as f:
            f.write(TRICKLE)
        conf = os.path.join(work, "trickle.conf")
        with open(conf, "w") as f:
            f.write(f"""
connectors: [{{ name: "trickle", class: "{script}:Trickle", pipeline: "main",
                numDocs: {a.docs}, gapMs: {a.gap_ms}, sample: "{a.corpus}" }}]
pipelines: [{{ name: "main", stages: {STANDARD} }}]
indexer {{ type: "jsonl", batchSize: 1000, batchTimeout: {a.batch_timeout} }}
jsonl {{ path: "{work}/out.jsonl" }}
worker {{ threads: 2 }}
log {{ seconds: 3600 }}
tracing {{ otlpEndpoint: "{spans.url}", sampleRatio: 1.0, serviceName: "trickle" }}
""")
        r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", conf],
                           capture_output=True, text=True)
        if r.returncode != 0 or f"{a.docs} docs succeeded" not in r.stdout + r.stderr:
            raise SystemExit(f"the run failed:\n{(r.stdout + r.stderr)[-3000:]}")
    spans.close()
    ms = sorted((end - start) / 1e6 for name, _, _, _, start, end, _ in spans.spans
                if name == "document")
    if len(ms) != a.docs:
        raise SystemExit(f"{len(ms)} document spans for {a.docs} documents")
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(f"{a.docs} documents, one every {a.gap_ms} ms, batchTimeout {a.batch_timeout} ms: "
          f"p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms")


if __name__ == "__main__":
    main()
