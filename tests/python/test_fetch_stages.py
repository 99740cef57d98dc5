"""Issue 14's stages through the Python API: FetchUri (against a local http.server: 200, 404,
redirect, timeout, size limit, headers), FetchFileContent, ApplyFileHandlers (in a Pipeline and
in a whole run over the FileConnector), AddRandomNestedField and ExtractEntitiesFST; bad keys
are config errors with their key paths."""

import base64
import pathlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

import lucille
from lucille import Document, Pipeline, StageError


class Site(BaseHTTPRequestHandler):
    seen_headers: dict[str, str] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, location: str = "") -> None:
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Site.seen_headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path == "/ok":
            return self._answer(200, b"exampleresponse")
        if self.path == "/missing":
            return self._answer(404, b"no such page")
        if self.path == "/redirect":
            return self._answer(302, b"", location="/ok")
        if self.path == "/slow":
            time.sleep(2)
            return self._answer(200, b"late")
        return self._answer(500, b"unexpected")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def fetch(url: str, **config: Any) -> Document:
    p = Pipeline([lucille.stages.FetchUri(source="url", dest="data", **config)])
    (doc,) = p.process(Document("d", {"url": url}))
    return doc


def test_fetch_uri(site: str) -> None:
    doc = fetch(f"{site}/ok", headers={"X-Token": "abc"})
    assert base64.b64decode(doc.get("data")) == b"exampleresponse"
    assert doc.get("url_status_code") == 200 and doc.get("url_size") == 15
    assert not doc.has("url_error")
    assert Site.seen_headers["x-token"] == "abc"

    doc = fetch(f"{site}/missing", statusSuffix="code")
    assert base64.b64decode(doc.get("data")) == b"no such page"
    assert doc.get("url_code") == 404

    doc = fetch(f"{site}/redirect")
    assert base64.b64decode(doc.get("data")) == b"exampleresponse"
    assert doc.get("url_status_code") == 200

    doc = fetch(f"{site}/ok", maxSize=4, sizeSuffix="length")
    assert base64.b64decode(doc.get("data")) == b"exam"
    assert doc.get("url_length") == 4

    doc = fetch(f"{site}/slow", socketTimeout=200, errorSuffix="problem")
    assert not doc.has("data") and not doc.has("url_status_code")
    assert "timeout" in (doc.get_string("url_problem") or "").lower()

    doc = fetch("not a url")
    assert "not a url" in (doc.get_string("url_error") or "")
    assert fetch("").field_names() == ["url"]


def test_fetch_file_content(tmp_path: pathlib.Path) -> None:
    (tmp_path / "hello.bin").write_bytes(b"\x00hello\xff")
    p = Pipeline([lucille.stages.FetchFileContent(filePathField="path", fileContentField="bytes")])
    (doc,) = p.process(Document("a", {"path": str(tmp_path / "hello.bin")}))
    assert base64.b64decode(doc.get("bytes")) == b"\x00hello\xff"
    (doc,) = p.process(Document("b", {"file_path": str(tmp_path / "hello.bin")}))
    assert not doc.has("bytes")
    with pytest.raises(StageError, match="missing.txt"):
        p.process(Document("c", {"path": str(tmp_path / "missing.txt")}))


def test_apply_file_handlers_in_a_pipeline(tmp_path: pathlib.Path) -> None:
    csv = tmp_path / "people.csv"
    csv.write_text("number,name\n1,Lucille\n2,Buster\n3,Michael\n")
    p = Pipeline([lucille.stages.ApplyFileHandlers(fileHandlers={"csv": {"idField": "number"}, "jsonl": {}})])
    out = p.process(Document("parent", {"file_path": str(csv)}))
    assert [d.id for d in out] == ["1", "2", "3", "parent"]
    assert out[1].get("name") == "Buster" and out[1].get("filename") == "people.csv"
    # Content on the document (base64 bytes) is used before the path.
    content = base64.b64encode(b'{"id": "j1", "v": 1}\n{"id": "j2", "v": 2}\n').decode()
    out = p.process(Document("p2", {"file_path": "nowhere/x.json", "file_content": content}))
    assert [d.id for d in out] == ["j1", "j2", "p2"]
    # No handler for the extension: only the parent.
    assert [d.id for d in p.process(Document("p3", {"file_path": "a.xml"}))] == ["p3"]
    with pytest.raises(StageError, match="row has 1 columns"):
        csv.write_text("number,name\n1,a\n2\n")
        p.process(Document("p4", {"file_path": str(csv)}))


def test_fetch_then_apply_file_handlers_in_a_run(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("number,name\n1,Lucille\n2,Buster\n")
    (data / "b.jsonl").write_text('{"id": "x", "n": 1}\n')
    config = {
        "connectors": [{"name": "files", "class": "FileConnector", "pipeline": "p",
                        "paths": [str(data)], "getFileContent": False}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "com.kmwllc.lucille.stage.FetchFileContent"},
            {"class": "com.kmwllc.lucille.stage.ApplyFileHandlers",
             "fileHandlers": {"csv": {"idField": "number"}, "json": {}}},
        ]}],
    }
    result = lucille.run(config=config, mode="test")
    assert result.status == "Success"
    ids = sorted(d.id for d in result.documents)
    assert ["1", "2", "x"] == [i for i in ids if len(i) == 1]
    assert result.succeeded == 5 and result.failed == 0


def test_add_random_nested_field() -> None:
    p = Pipeline([lucille.stages.AddRandomNestedField(
        targetField="people", minNumObjects=2, maxNumObjects=2,
        entries={"user.name": "name", "user.id": "idGen"},
        generators={"idGen": {"class": "AddRandomInt", "rangeStart": 7, "rangeEnd": 8}})])
    (doc,) = p.process(Document("d", {"name": "Alice"}))
    assert doc.get_list("people") == [{"user": {"name": "Alice", "id": 7}}] * 2
    with pytest.raises(StageError, match="nowhere"):
        Pipeline([lucille.stages.AddRandomNestedField(targetField="t", entries={"a": "nowhere"})]).process(Document("e"))


def test_extract_entities_fst(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "places.dict"
    d.write_text("United States,North America\nCanada,North America\nnew,T1\nnew town,T2\n")
    p = Pipeline([lucille.stages.ExtractEntitiesFST(source=["text"], dest=["regions"], dictionaries=[str(d)],
                                                    entityField="places")])
    (doc,) = p.process(Document("d", {"text": "From Canada to the United States, via new town."}))
    assert doc.get_list("regions") == ["North America", "North America", "T1", "T2"]
    assert doc.get_list("places") == ["Canada", "United States", "new", "new town"]
    p = Pipeline([lucille.stages.ExtractEntitiesFST(source="text", dest="regions", dictionaries=str(d),
                                                    ignoreOverlaps=True, ignoreCase=True)])
    (doc,) = p.process(Document("d", {"text": "NEW TOWN"}))
    assert doc.get("regions") == "T2"


def test_bad_keys_are_config_errors(tmp_path: pathlib.Path) -> None:
    config = {
        "connectors": [{"name": "s", "class": "SequenceConnector", "pipeline": "p", "numDocs": 1}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "FetchUri", "source": "u", "dest": "d", "statusCodeRetryList": ["2xx"]},
            {"class": "FetchFileContent", "s3": {"region": "x", "accessKeyId": "only-the-id"}},
            {"class": "ApplyFileHandlers", "fileHandlers": {"csv": {"idFeild": "n"}}},
            {"class": "AddRandomNestedField", "targetField": "t", "entries": {"a": "x"}, "numObjects": 0},
            {"class": "ExtractEntitiesFST", "source": "a", "dest": "b", "dictionaries": str(tmp_path / "none.dict")},
            {"class": "com.kmwllc.lucille.stage.FetchUri", "source": "u", "dest": "d", "maxRetry": 1},
        ]}],
    }
    errors = "\n".join(lucille.validate(config=config))
    for path in ["stages[0].statusCodeRetryList", "stages[1].s3.secretAccessKey",
                 "stages[2].fileHandlers.csv.idFeild", "stages[3].numObjects", "stages[4].dictionaries",
                 "stages[5].maxRetry"]:
        assert path in errors, (path, errors)
    with pytest.raises(ValueError, match="statusCodeRetryList"):
        lucille.stages.FetchUri(source="u", dest="d", statusCodeRetryList=["200"])


def test_apply_javascript(tmp_path: pathlib.Path) -> None:
    js = tmp_path / "valid.js"
    js.write_text("if (doc.a != null && doc.b != null) {\n  doc.sum = doc.a + doc.b;\n}\n")
    p = Pipeline([lucille.stages.ApplyJavascript(scriptPath=str(js))])
    (doc,) = p.process(Document("d", {"a": 2, "b": 3}))
    assert doc.get("sum") == 5
    (doc,) = p.process(Document("e", {"a": 2}))
    assert not doc.has("sum")

    script = "if (doc.bad) { throw new Error('bad doc ' + doc.id); }\ndoc.meta = {upper: doc.title.toUpperCase()}; delete doc.tmp;"
    p = Pipeline([lucille.stages.ApplyJavascript(script=script)])
    (doc,) = p.process(Document("ok", {"title": "hi", "tmp": 1}))
    assert doc.get("meta") == {"upper": "HI"} and not doc.has("tmp")
    with pytest.raises(StageError, match="bad doc x"):
        p.process(Document("x", {"bad": True, "title": "t"}))

    # In a run, a script error FAILs its document and the run goes on.
    config = {
        "connectors": [{"name": "s", "class": "SequenceConnector", "pipeline": "p", "numDocs": 4}],
        "pipelines": [{"name": "p", "stages": [{"class": "com.kmwllc.lucille.stage.ApplyJavascript",
                                                 "script": "if (doc.id === '2') { null.boom; } doc.seen = true;"}]}],
    }
    result = lucille.run(config=config, mode="test")
    assert result.failed == 1 and result.succeeded == 3
    assert all(d.get("seen") is True for d in result.documents)

    errors = "\n".join(lucille.validate(config={
        "connectors": [{"name": "s", "class": "SequenceConnector", "pipeline": "p", "numDocs": 1}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "ApplyJavascript", "scriptPath": str(tmp_path / "does_not_exist.js")},
            {"class": "ApplyJavascript", "script": "doc.a = ;"},
        ]}],
    }))
    assert "stages[0].scriptPath" in errors and "does_not_exist.js" in errors, errors
    assert "stages[1].script" in errors, errors
