"""FileConnector through the Python API: a folder of CSV, JSON-lines and XML files read by their
handlers in test mode; every good record is a document with Lucille's fields and ids, every
malformed one a FAIL event naming file and position."""

import gzip
import json
import hashlib
import os
import pathlib
import shutil
from typing import Any


import lucille

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "files"


def copy(tmp_path: pathlib.Path, *names: str) -> pathlib.Path:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    for n in names:
        shutil.copy(DATA / n, folder / n)
    return folder


def run_files(folder: pathlib.Path, **extra: Any) -> lucille.RunResult:
    connector: dict[str, Any] = {
        "name": "files",
        "class": "FileConnector",
        "pipeline": "p",
        "paths": [str(folder)],
        "fileHandlers": {
            "csv": {},
            "jsonl": {},
            "xml": {"xmlRootPath": "/catalog/book", "idField": "isbn"},
        },
    }
    connector.update(extra)
    config = {"connectors": [connector], "pipelines": [{"name": "p", "stages": []}]}
    return lucille.run(config=config, mode="test")


def test_csv_jsonl_and_xml_folder(tmp_path: pathlib.Path) -> None:
    folder = copy(tmp_path, "books.csv", "items.jsonl", "catalog.xml")
    r = run_files(folder)
    assert r.status == "Success", r.summary
    # books.csv: 3 rows + 1 short row; items.jsonl: 3 lines + 2 bad; catalog.xml: 2 books.
    assert (r.published, r.succeeded, r.failed) == (11, 8, 3)

    docs = {d.id: d for d in r.documents}
    assert sorted(docs) == sorted(
        ["books.csv-1", "books.csv-2", "books.csv-4", "j1", "j2", "j3", "x1", "x2"]
    )
    emma = docs["books.csv-2"]
    assert emma.get("title") == "Emma, a novel"
    assert emma.get("author") == "Austen"
    assert emma.get("filename") == "books.csv"
    assert emma.get("source") == str(folder / "books.csv")
    assert emma.get("csvLineNumber") == 2
    assert docs["j2"].get_list("tags") == ["a", "b"]
    book = docs["x1"]
    assert book.get("title") == "A & B"
    assert book.get_list("author") == ["Ann", "Bob"]
    assert book.get("xml").startswith('<book isbn="x1">')

    # Per-file order is kept.
    order = [d.id for d in r.documents if d.id.startswith("j")]
    assert order == ["j1", "j2", "j3"]

    fails = {doc_id: message or "" for doc_id, kind, message in r.events if kind == "FAIL"}
    jsonl = str(folder / "items.jsonl")
    csv = str(folder / "books.csv")
    assert fails == {
        f"{csv}:line4": f"{csv}: line 4: row has 2 columns but the header has 3",
        f"{jsonl}:line4": fails[f"{jsonl}:line4"],
        f"{jsonl}:line5": f'{jsonl}: line 5: no usable id field "id" (a non-empty string or number)',
    }
    assert fails[f"{jsonl}:line4"].startswith(f"{jsonl}: line 4: invalid JSON")


def test_whole_file_documents_ids_and_prefix(tmp_path: pathlib.Path) -> None:
    folder = copy(tmp_path, "notes.txt", "junk.bin")
    r = run_files(folder, docIdPrefix="file-")
    assert (r.published, r.succeeded, r.failed) == (2, 2, 0)
    by_name = {d.get("file_name"): d for d in r.documents}
    notes = by_name["notes.txt"]
    path = str(folder / "notes.txt")
    assert notes.id == "file-" + hashlib.md5(path.encode()).hexdigest()
    assert notes.get("file_path") == path
    assert notes.get("file_size_bytes") == 17
    assert notes.get("file_content") == "plain text notes\n"
    assert notes.get("file_modification_date").endswith("Z")
    assert by_name["junk.bin"].get("file_content") == "AP/+AQIDgIEKDQDI"  # base64


def test_compressed_inputs_and_lucille_nested_options(tmp_path: pathlib.Path) -> None:
    folder = copy(tmp_path, "more.jsonl.gz", "bundle.zip", "books.csv")
    done = tmp_path / "done"
    r = run_files(
        folder,
        filterOptions={"excludes": [".*books\\.csv"]},
        fileOptions={"moveToAfterProcessing": str(done)},
    )
    ids = [d.id for d in r.documents]
    readme = hashlib.md5(f"{folder / 'bundle.zip'}!readme.txt".encode()).hexdigest()
    assert sorted(ids) == sorted(["rows.csv-1", "rows.csv-2", readme, "g1", "g2"])
    assert (r.published, r.failed) == (6, 1)  # zip: 2 rows + readme; gz: 2 lines + 1 bad
    assert sorted(os.listdir(done)) == ["bundle.zip", "more.jsonl.gz"]
    assert (folder / "books.csv").exists()


def test_quickstart_connector_shape(tmp_path: pathlib.Path) -> None:
    corpus = tmp_path / "data" / "records.jsonl.gz"
    corpus.parent.mkdir()
    with gzip.open(corpus, "wt") as f:
        f.write('{"id": "a", "v": 1}\n{"id": "b", "v": 2}\n')
    conf = tmp_path / "ingest.conf"
    conf.write_text(
        """
        connectors: [ { name: "c", class: "FileConnector", pipeline: "p",
                        paths: ["data/records.jsonl.gz"], fileHandlers { jsonl { idField: "id" } } } ]
        pipelines: [ { name: "p", stages: [] } ]
        """
    )
    r = lucille.run(str(conf), mode="test")  # relative paths resolve from the config's folder
    assert [d.id for d in r.documents] == ["a", "b"]


def test_bad_config_lists_every_error(tmp_path: pathlib.Path) -> None:
    config = {
        "connectors": [
            {
                "name": "f",
                "class": "FileConnector",
                "paths": [str(tmp_path)],
                "includes": ["("],
                "fileHandlers": {"pdf": {}},
            }
        ]
    }
    try:
        lucille.run(config=config, mode="test")
    except lucille.ConfigError as e:
        text = str(e)
        assert "invalid regex" in text and 'unknown file handler "pdf"' in text
    else:
        raise AssertionError("expected a ConfigError")


def test_malformed_records_also_reach_the_dead_letter_file(tmp_path: pathlib.Path) -> None:
    folder = copy(tmp_path, "items.jsonl")
    dead = tmp_path / "dead.jsonl"
    config = {
        "connectors": [{"name": "files", "class": "FileConnector", "pipeline": "p",
                        "paths": [str(folder)], "fileHandlers": {"jsonl": {}}}],
        "pipelines": [{"name": "p", "stages": []}],
        "worker": {"deadLetterPath": str(dead)},
    }
    r = lucille.run(config=config, mode="test")
    assert (r.succeeded, r.failed) == (3, 2)
    lines = [json.loads(line) for line in dead.read_text().splitlines()]
    jsonl = str(folder / "items.jsonl")
    assert sorted(line["id"] for line in lines) == [f"{jsonl}:line4", f"{jsonl}:line5"]
    assert all(line["pipeline"] == "p" and line["document"] is None for line in lines)
    assert any("invalid JSON" in line["error"] for line in lines)


def test_local_runs_build_json_lines_on_the_workers_with_the_same_results(tmp_path: pathlib.Path) -> None:
    # In local mode a JSON line is only scanned for its id on the connector thread and parsed
    # by a worker; what is indexed, and what fails, must be as in test mode (parsed up front).
    folder = tmp_path / "in"
    folder.mkdir()
    lines = [
        '{"id": "a", "title": "first", "nested": {"k": [1, 2]}, "run_id": "old"}',
        '{"key": 1}',                                          # no id: FAILs at the connector
        '{"id": "b", "___children": 5}',                       # parses, cannot be a document
        '{"id": "c", "title": "third", "id": "c2"}',           # the last duplicate key wins
        '{"id": 7, "title": "numeric id"}',
    ]
    (folder / "items.jsonl").write_text("\n".join(lines) + "\n")
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    config = {
        "connectors": [{"name": "files", "class": "FileConnector", "pipeline": "p",
                        "paths": [str(folder)], "fileHandlers": {"jsonl": {}}}],
        "pipelines": [{"name": "p", "stages": [{"class": "CopyFields", "fieldMapping": {"title": "t2"}}]}],
        "indexer": {"type": "jsonl"}, "jsonl": {"path": str(out)},
        "worker": {"deadLetterPath": str(dead), "threads": 2},
    }
    local = lucille.run(config=config)
    local_dead = [json.loads(l) for l in dead.read_text().splitlines()]
    test = lucille.run(config=config, mode="test")
    assert (local.succeeded, local.failed) == (test.succeeded, test.failed) == (3, 2)
    indexed = sorted((json.loads(l) for l in out.read_text().splitlines()), key=lambda d: d["id"])
    assert [d["id"] for d in indexed] == ["7", "a", "c2"]
    assert indexed[1] == {"id": "a", "title": "first", "nested": {"k": [1, 2]}, "t2": "first"}
    assert indexed[2]["title"] == "third"
    failures = {e[0]: e[2] or "" for e in test.events if e[1] == "FAIL"}
    path = str(folder / "items.jsonl")
    assert failures[f"{path}:line2"].endswith('no usable id field "id" (a non-empty string or number)')
    assert "___children" in failures["b"] and f"{path}: line 3" in failures["b"]
    # The worker that failed to build "b" wrote it to the dead-letter file, as the connector
    # does for the line without an id.
    assert sorted(d["id"] for d in local_dead) == sorted(["b", f"{path}:line2"])
    assert f"{path}: line 3" in next(d for d in local_dead if d["id"] == "b")["error"]
