"""A real `lucille serve` process for the service tests: started on a free port (the address
it prints), talked to over HTTP, stopped with SIGTERM or killed with SIGKILL."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Iterator, Optional

LUCILLE = [sys.executable, "-m", "lucille.cli"]

# Stages the tests name by path: `Flaky` fails the documents whose number is a multiple of
# `every` unless the file `fixed` exists (so a replay after the fix succeeds); `Slow` sleeps.
STAGES = '''
import os, time
import lucille

class Flaky(lucille.Stage):
    def process_document(self, doc):
        n = int(doc.id.rsplit("-", 1)[-1])
        if n % int(self.config.get("every", 5)) == 0 and not os.path.exists(self.config["fixed"]):
            raise ValueError(f"number {n} is not wanted")
        doc.set_field("checked", True)

class Slow(lucille.Stage):
    def process_document(self, doc):
        time.sleep(float(self.config.get("seconds", 0.05)))
'''


def write_stages(folder: pathlib.Path) -> pathlib.Path:
    path = folder / "service_stages.py"
    path.write_text(STAGES)
    return path


class Service:
    """`lucille serve --port 0 --data-dir DATA ...` in a process of its own."""

    def __init__(self, data_dir: pathlib.Path, *args: str, token: Optional[str] = None,
                 cwd: Optional[pathlib.Path] = None, env: Optional[dict[str, str]] = None) -> None:
        self.data_dir = data_dir
        self.token = token
        self.args = ["serve", "--port", "0", "--data-dir", str(data_dir), *args]
        self.cwd = cwd or data_dir.parent
        self.env = {**os.environ, **(env or {})}
        self.log = data_dir.parent / f"serve-{int(time.time() * 1000)}.log"
        self.proc: Optional[subprocess.Popen[str]] = None
        self.url = ""

    def start(self) -> "Service":
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(LUCILLE + self.args, cwd=self.cwd, env=self.env,
                                     stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on " not in line:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"lucille serve did not start ({self.proc.returncode}): {line}"
                               f"{self.log.read_text()}")
        self.url = line.split("listening on ", 1)[1].split()[0]
        return self

    def __enter__(self) -> "Service":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def stop(self, timeout: float = 60) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    # ----- HTTP -----

    def call(self, method: str, path: str, body: Any = None, token: Optional[str] = "default",
             raw: Optional[bytes] = None, timeout: float = 30) -> tuple[int, Any]:
        """(status, parsed JSON body); the service's token unless `token` says otherwise."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        tok = self.token if token == "default" else token
        if tok:
            req.add_header("Authorization", f"Bearer {tok}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                status = r.status
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            status = e.code
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.call(method, path, body)
        assert 200 <= status < 300, (status, data)
        return data

    def submit(self, config: str, **extra: Any) -> str:
        status, data = self.call("POST", "/api/runs", {"config": config, **extra})
        assert status == 201, (status, data)
        assert data["state"] == "queued"
        return str(data["id"])

    def run(self, run_id: str) -> dict[str, Any]:
        return dict(self.ok("GET", f"/api/runs/{run_id}"))

    def wait(self, run_id: str, timeout: float = 120, states: tuple[str, ...] = (
            "succeeded", "partial", "failed", "cancelled", "interrupted")) -> dict[str, Any]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            run = self.run(run_id)
            if run["state"] in states:
                return run
            time.sleep(0.1)
        raise AssertionError(f"run {run_id} still {self.run(run_id)['state']} after {timeout} s")

    def events(self, run_id: str, timeout: float = 120) -> Iterator[tuple[str, dict[str, Any]]]:
        """The run's Server-Sent Events, as (event, data) until the stream ends."""
        req = urllib.request.Request(f"{self.url}/api/runs/{run_id}/events")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            assert r.headers["Content-Type"].startswith("text/event-stream")
            event, data = "message", list[str]()
            for raw in r:
                line = raw.decode().rstrip("\n")
                if line.startswith(":"):
                    continue
                if not line:
                    if data:
                        yield event, json.loads("\n".join(data))
                    event, data = "message", []
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())
