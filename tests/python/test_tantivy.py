"""The embedded Tantivy indexer end to end: a run indexes records, then `lucille.search` and
`lucille search` find them; upserts replace, deletes remove, bad values FAIL one document."""

import json
import subprocess
import sys
import textwrap
from typing import Optional

import pytest

import lucille
from pathlib import Path

CONNECTOR_PY = '''
import lucille

RECORDS = [
    {"id": "json.dumps", "package": "json", "title": "json.dumps(obj, *, skipkeys=False)",
     "summary": "Serialize obj to a JSON formatted str.", "params": ["obj", "skipkeys"], "rank": 1},
    {"id": "json.loads", "package": "json", "title": "json.loads(s)",
     "summary": "Deserialize s to a Python object.", "params": ["s"], "rank": 2},
    {"id": "csv.reader", "package": "csv", "title": "csv.reader(csvfile)",
     "summary": "Return a reader object that iterates over lines.", "params": ["csvfile"], "rank": 3},
    {"id": "os.remove", "package": "os", "title": "os.remove(path)",
     "summary": "Remove (delete) the file path.", "rank": "not a number"},
]


class Records(lucille.Connector):
    def execute(self, publisher):
        for r in RECORDS:
            publisher.publish(lucille.Document.from_dict(r))


class Deletes(lucille.Connector):
    def execute(self, publisher):
        publisher.publish(lucille.Document("csv.reader", {"deleted": "yes"}))
        publisher.publish(lucille.Document("json.loads", {"package": "json", "title": "json.loads(s, *, cls=None)"}))
'''


def cli(*args: str, cwd: Optional[Path] = None) -> subprocess.CompletedProcess[str]:

    return subprocess.run(
        [sys.executable, "-m", "lucille.cli", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:

    # Run from the config's folder, as Lucille is started from its project folder: the relative
    # index path resolves against the working directory.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "records.py").write_text(CONNECTOR_PY)
    cfg = tmp_path / "ingest.conf"
    cfg.write_text(textwrap.dedent("""
        connectors: [ { name: "records", class: "records:Records" } ]
        indexer { type: "tantivy", batchSize: 2, deletionMarkerField: "deleted", deletionMarkerFieldValue: "yes" }
        tantivy { path: "index", fields { rank: { type: i64, stored: true, fast: true } } }
    """))
    return cfg


def test_run_indexes_and_python_search_finds_records(conf: Path) -> None:
    index = conf.parent / "index"  # the relative path resolves from the working directory
    r = lucille.run(str(conf))
    assert (r.succeeded, r.failed) == (3, 1), r.summary

    hits = lucille.search(str(index), 'id:"json.dumps"', limit=3)
    assert [h["id"] for h in hits] == ["json.dumps"]
    top = hits[0]
    assert isinstance(top["score"], float) and top["score"] > 0
    assert top["params"] == ["obj", "skipkeys"] and top["rank"] == 1
    assert top["title"].startswith("json.dumps(obj")

    # Bare words search every string; fields without a type are searchable by name.
    assert "json.dumps" in [h["id"] for h in lucille.search(index, "serialize JSON str")]
    assert sorted(h["id"] for h in lucille.search(index, "package:json")) == ["json.dumps", "json.loads"]
    assert [h["id"] for h in lucille.search(index, "rank:[2 TO 3]")] != []
    assert lucille.search(index, "id:os.remove") == []  # its rank was not an i64
    assert len(lucille.search(index, "*", limit=2)) == 2

    with pytest.raises(ValueError):
        lucille.search(index, "title:(unclosed")
    with pytest.raises(FileNotFoundError):
        lucille.search(conf.parent / "nowhere", "x")


def test_second_run_upserts_and_deletes_in_the_same_index(conf: Path) -> None:
    index = conf.parent / "index"
    assert lucille.run(str(conf)).succeeded == 3
    second = conf.parent / "second.conf"
    second.write_text(conf.read_text().replace("records:Records", "records:Deletes"))
    r = lucille.run(str(second))
    assert (r.status, r.succeeded) == ("Success", 2), r.summary
    ids = sorted(h["id"] for h in lucille.search(str(index), "*", limit=100))
    assert ids == ["json.dumps", "json.loads"]
    (loads,) = lucille.search(str(index), 'id:"json.loads"')
    assert loads["title"] == "json.loads(s, *, cls=None)" and "summary" not in loads


def test_cli_run_hints_and_search_prints_hits(conf: Path) -> None:
    # run from another folder: the index, and the hint, are in the working directory
    work = conf.parent / "work"
    work.mkdir()
    r = cli("run", str(conf), cwd=work)
    out = r.stdout + r.stderr
    index = work / "index"
    assert f"lucille search {index}" in out, out
    assert not (conf.parent / "index").exists()

    s = cli("search", str(index), "serialize obj JSON formatted str", "--limit", "5", "--json")
    assert s.returncode == 0, s.stderr
    hits = [json.loads(line) for line in s.stdout.splitlines() if line.strip()]
    assert hits and hits[0]["id"] == "json.dumps" and hits[0]["score"] > 0
    assert hits[0]["package"] == "json"

    h = cli("search", str(index), "package:csv")
    assert h.returncode == 0 and "csv.reader" in h.stdout and "csv.reader(csvfile)" in h.stdout

    missing = cli("search", str(conf.parent / "nowhere"), "x")
    assert missing.returncode == 1 and "no index" in missing.stderr
    bad = cli("search", str(index), "title:(unclosed")
    assert bad.returncode == 1 and "bad query" in bad.stderr


def test_bad_tantivy_config_is_rejected_before_the_run(tmp_path: Path) -> None:
    errors = lucille.validate(config={
        "connectors": [{"name": "s", "class": "SequenceConnector", "numDocs": 1}],
        "indexer": {"type": "tantivy"},
        "tantivy": {"path": str(tmp_path / "i"), "fields": {"a": {"type": "integer"}, "b": {"type": "text"}},
                    "writerMemoryMb": 1},
    })
    text = "\n".join(errors)
    assert "fields.a.type" in text and "writerMemoryMb" in text, text
    assert not (tmp_path / "i").exists()


def test_sequence_connector_into_tantivy(tmp_path: Path) -> None:
    r = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 50, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": "SetStaticValues", "staticValues": {"kind": "generated"}}]}],
        "indexer": {"type": "tantivy"},
        "tantivy": {"path": str(tmp_path / "seq")},
    })
    assert r.status == "Success" and r.succeeded == 50
    assert len(lucille.search(str(tmp_path / "seq"), "kind:generated", limit=100)) == 50
    (hit,) = lucille.search(str(tmp_path / "seq"), "id:42")
    assert hit == {"id": "42", "kind": "generated", "score": hit["score"]}
