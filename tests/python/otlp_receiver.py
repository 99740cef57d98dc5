"""A local OTLP/HTTP trace receiver for the tracing tests: it decodes each export request with
the `opentelemetry-proto` package (the collector's own message definitions) and keeps the
spans, or answers every request with an error status to play a failing collector."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent: str
    name: str
    attributes: dict[str, str]
    error: str | None
    pid: int
    service: str


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    status: int = 200
    delay: float = 0.0
    spans: list[Span] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def named(self, name: str) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.name == name]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _value(v: Any) -> str:
    kind = v.WhichOneof("value")
    return str(getattr(v, kind)) if kind else ""


def start(status: int = 200, delay: float = 0.0) -> Receiver:
    """A receiver on a free port of 127.0.0.1 answering `status` to every export, after
    `delay` seconds (a slow collector)."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the handler's API)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            time.sleep(receiver.delay)
            with receiver.lock:
                receiver.requests += 1
            if receiver.status != 200 or self.path != "/v1/traces":
                self.send_response(receiver.status if receiver.status != 200 else 404)
                self.end_headers()
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            got: list[Span] = []
            for rs in request.resource_spans:
                resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        got.append(Span(
                            trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                            parent=s.parent_span_id.hex(), name=s.name,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            error=s.status.message if s.status.code == 2 else None,
                            pid=int(resource.get("process.pid", "0")),
                            service=resource.get("service.name", "")))
            with receiver.lock:
                receiver.spans.extend(got)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(server, status, delay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver
