"""What the latency benchmarks share (bench/distributed/run.py, bench/standard/trickle_latency.py):
a Python connector that publishes one document every `gapMs`, and an OTLP receiver that keeps
the spans a traced run exports (a document's `document` span runs from its publish to its
terminal event)."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A connector for latency rows: one document (a corpus record with its id replaced) every
# `gapMs` milliseconds.
TRICKLE = '''
import json
import time
import lucille

class Trickle(lucille.Connector):
    def execute(self, publisher):
        n, gap = int(self.config["numDocs"]), float(self.config["gapMs"]) / 1000
        fields = json.loads(open(self.config["sample"]).readline())
        next_at = time.monotonic()
        for i in range(n):
            fields["id"] = f"t{i}"
            publisher.publish(lucille.Document.from_dict(fields))
            next_at += gap
            time.sleep(max(0.0, next_at - time.monotonic()))
'''


class Spans:
    """Keeps every span exported to it: (name, trace, span, parent, start ns, end ns, attrs)."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest, ExportTraceServiceResponse)
        self.spans: list[tuple[str, str, str, str, int, int, dict[str, str]]] = []
        lock = threading.Lock()
        spans = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                got = []
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            attrs = {a.key: a.value.string_value for a in s.attributes}
                            got.append((s.name, s.trace_id.hex(), s.span_id.hex(),
                                        s.parent_span_id.hex(), s.start_time_unix_nano,
                                        s.end_time_unix_nano, attrs))
                with lock:
                    spans.extend(got)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
