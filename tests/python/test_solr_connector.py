"""SolrConnector against a local mock Solr core: no Solr server installs on our test machines,
so this server speaks the parts of Solr's HTTP API the connector uses with their real shapes
(/select's JSON response with cursorMark / nextCursorMark, Solr's error body, /update with JSON
or XML bodies)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

import lucille


class Core:
    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}
        self.updates: list[tuple[str, str]] = []  # (content type, body)
        self.selects: list[dict[str, list[str]]] = []
        self.url = ""


def matches(doc: dict[str, Any], query: str) -> bool:
    if query == "*:*":
        return True
    field, _, value = query.partition(":")
    v = doc.get(field)
    return value in ([str(x) for x in v] if isinstance(v, list) else [str(v)])


def error(msg: str) -> dict[str, Any]:
    return {"responseHeader": {"status": 400, "QTime": 0},
            "error": {"metadata": ["error-class", "org.apache.solr.common.SolrException",
                                   "root-error-class", "org.apache.solr.common.SolrException"],
                      "msg": msg, "code": 400}}


def make_handler(core: Core) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def reply(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/solr/products/select":
                return self.reply(404, error(f"no handler for {url.path}"))
            q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            core.selects.append(q)

            def one(k: str, d: str = "") -> str:
                return q.get(k, [d])[0]

            if "cursorMark" in q and not one("sort").split(",")[-1].strip() == "id asc":
                return self.reply(400, error("Cursor functionality requires a sort containing a uniqueKey field tie breaker"))
            query = one("q", "*:*")
            if ":" not in query:
                return self.reply(400, error(f"org.apache.solr.search.SyntaxError: Cannot parse '{query}'"))
            found = [d for _, d in sorted(core.docs.items())
                     if matches(d, query) and all(matches(d, f) for f in q.get("fq", []))]
            cursor = one("cursorMark", "*")
            if cursor != "*":
                after = base64.b64decode(cursor[3:]).decode()
                found = [d for d in found if d["id"] > after]
            rows = int(one("rows", "10"))
            page = found[:rows]
            # Solr merges repeated fl parameters.
            fl = [f for f in ",".join(q.get("fl", ["*"])).split(",") if f]
            if fl != ["*"]:
                page = [{k: v for k, v in d.items() if k in fl} for d in page]
            nxt = cursor if not page else "AoE" + base64.b64encode(page[-1]["id"].encode()).decode()
            self.reply(200, {
                "responseHeader": {"zkConnected": None, "status": 0, "QTime": 1, "params": {k: v[-1] for k, v in q.items()}},
                "response": {"numFound": len(found), "start": 0, "numFoundExact": True, "docs": page},
                "nextCursorMark": nxt,
            })

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            kind = self.headers.get("Content-Type", "")
            core.updates.append((kind, body))
            if not self.path.startswith("/solr/products/update"):
                return self.reply(404, error(f"no handler for {self.path}"))
            if kind.startswith("application/json"):
                cmd = json.loads(body)
                if isinstance(cmd, list):
                    for d in cmd:
                        core.docs[d["id"]] = {**d, "_version_": 1790000000000000000 + len(core.docs)}
                elif "delete" in cmd:
                    doomed = [i for i, d in core.docs.items() if matches(d, cmd["delete"]["query"])]
                    for i in doomed:
                        del core.docs[i]
                elif "commit" not in cmd:
                    return self.reply(400, error("Unknown command"))
            elif not kind.startswith("text/xml"):
                return self.reply(415, error(f"Unsupported ContentType: {kind}"))
            self.reply(200, {"responseHeader": {"status": 0, "QTime": 2}})

    return Handler


@pytest.fixture
def core() -> Iterator[Core]:
    c = Core()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(c))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    c.url = "http://127.0.0.1:%d/solr/products" % server.server_address[1]
    yield c
    server.shutdown()
    server.server_close()


PRODUCTS = [{"id": f"p{i:02d}", "name": f"Product {i}", "type": "product" if i % 4 else "bundle",
             "price": i * 1.5, "tags": ["a", "b"] if i == 1 else ["c"], "runId": "old"}
            for i in range(1, 12)]


def test_pages_the_core_with_cursor_mark_through_the_cli(core: Core, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    conf = tmp_path / "solr.conf"
    conf.write_text(
        f"""
        connectors: [{{
          name: "solr", class: "com.kmwllc.lucille.connector.SolrConnector", pipeline: "main",
          solr.url: ["{core.url}"], idField: "id", docIdPrefix: "s-",
          preActions: [\"\"\"{json.dumps(PRODUCTS)}\"\"\", \"\"\"{{"commit": {{}}}}\"\"\"]
          postActions: [\"\"\"{{"delete": {{"query": "runId:{{runId}}"}}}}\"\"\"]
          solrParams: {{ q: "*:*", fq: ["type:product"], fl: ["id", "name", "price", "tags"], rows: 3 }}
        }}]
        pipelines: [{{ name: "main", stages: [] }}]
        indexer {{ type: "jsonl" }}
        jsonl {{ path: "{out}" }}
        """
    )
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    expected = [d for d in PRODUCTS if d["type"] == "product"]
    assert sorted(d["id"] for d in docs) == [f"s-{d['id']}" for d in expected]
    first = next(d for d in docs if d["id"] == "s-p01")
    assert first == {"id": "s-p01", "name": "Product 1", "price": 1.5, "tags": ["a", "b"]}
    # 9 products, 3 per page: three full pages, then an empty page whose nextCursorMark repeats
    # the cursor sent, which ends the paging.
    cursors = [q["cursorMark"][0] for q in core.selects]
    assert len(docs) == 9
    assert len(cursors) == 4 and cursors[0] == "*" and len(set(cursors)) == 4
    assert all(q["sort"] == ["id asc"] and q["wt"] == ["json"] and q["fq"] == ["type:product"] for q in core.selects)
    # The pre-actions went first (JSON), the post-action last with the run id filled in.
    kinds = [k for k, _ in core.updates]
    assert all(k.startswith("application/json") for k in kinds) and len(kinds) == 3
    assert "{runId}" not in core.updates[-1][1] and '"runId:' in core.updates[-1][1]


def test_solr_errors_fail_the_run_with_solrs_message(core: Core) -> None:
    config: dict[str, Any] = {
        "connectors": [{"name": "solr", "class": "SolrConnector", "pipeline": "main",
                        "solr": {"url": core.url}, "solrParams": {"q": "broken"}}],
        "pipelines": [{"name": "main", "stages": []}],
    }
    result = lucille.run(config=config, mode="test")
    assert result.status == "Failure"
    assert "Cannot parse 'broken'" in result.summary and "HTTP 400" in result.summary, result.summary
    # An XML action Solr refuses stops the run before any query.
    config["connectors"][0].update({"useXml": True, "preActions": ["<commit/>"], "solrParams": {"q": "*:*"}})
    core.selects.clear()
    result = lucille.run(config=config, mode="test")
    assert result.status == "Success", result.summary
    assert core.updates[-1] == ("text/xml; charset=UTF-8", "<commit/>")
    assert len(core.selects) == 1


def test_bad_solr_configs_are_config_errors() -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config={"connectors": [{"name": "solr", "class": "SolrConnector", "pipeline": "main",
                                            "solr": {"url": ["http://127.0.0.1:8983/solr/x"], "zkHosts": ["zk:x"]},
                                            "solrParams": {"start": 10, "cursorMark": "*"}}]}, mode="test")
    text = str(e.value)
    assert "solr.zkHosts" in text and "solrParams.start" in text and "solrParams.cursorMark" in text, text
