#!/usr/bin/env python3
"""What metrics and tracing cost: row 1 of the standard benchmark (six stages -> JSONL, 2
workers) under callgrind, without and with `metrics.port` and `tracing` at sampleRatio 0.01
(spans sent to a local OTLP receiver that answers 200), on two corpus sizes; the instructions
per record are the difference between the two sizes over the difference in records, so the
process's start (Python, the endpoint, the exporter thread) cancels out.

    python3 bench/standard/observability_overhead.py [--small 4000] [--large 12000]

Needs valgrind and the `lucille` package from a release build (`pip install .`, or
`maturin develop --release`). Prints one table; the goal (issue 28) is at most 3% more
instructions per record with both on.
"""
import argparse
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from instructions import callgrind, corpora, lucille_run


class Collector(BaseHTTPRequestHandler):
    """Takes OTLP export requests and answers 200, counting the requests."""
    requests = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Collector.requests += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def instructions(corpus, work, sets):
    return callgrind(lucille_run("six_stages.conf", work, *sets), corpus, work, lucille_run=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=4000)
    ap.add_argument("--large", type=int, default=12000)
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    variants = {
        "row 1": [],
        "row 1 + metrics + tracing 0.01": ["metrics.port=0", f"tracing.otlpEndpoint={endpoint}",
                                           "tracing.sampleRatio=0.01"],
    }
    with tempfile.TemporaryDirectory() as work:
        paths = corpora(work, (a.small, a.large))
        per_record = {}
        for name, sets in variants.items():
            counts = {n: instructions(paths[n], work, sets) for n in paths}
            per_record[name] = (counts[a.large] - counts[a.small]) / (a.large - a.small)
            print(f"  {name}: {counts}", file=sys.stderr)
    base = per_record["row 1"]
    print(f"| {'variant':<32} | {'instructions / record':>21} | {'vs row 1':>8} |")
    print(f"|{'-' * 34}|{'-' * 23}|{'-' * 10}|")
    for name, v in per_record.items():
        print(f"| {name:<32} | {v:>21,.0f} | {v / base - 1:>+7.1%} |")
    print(f"\nOTLP export requests received: {Collector.requests}")


if __name__ == "__main__":
    main()
