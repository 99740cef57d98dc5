"""Local HTTP servers for the tests of HTTP clients (indexers, model servers, feeds) whose real
servers do not install here: a JSON request handler and a server on 127.0.0.1 in a thread."""

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that reads and answers JSON."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def body_text(self) -> str:
        return self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()

    def reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serves `handler` on a free port of 127.0.0.1; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
