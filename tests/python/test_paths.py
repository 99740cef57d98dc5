"""Where a config's relative paths point (interface "Paths"): the working directory first, as
Lucille started from its project folder with -Dconfig.file=conf/x.conf; an input found only
beside the config file there; `classpath:` in the resource roots; includes beside the including
file."""

import json
import pathlib
import subprocess
import sys
import textwrap

import lucille
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def project(tmp_path: pathlib.Path, conf_text: str) -> pathlib.Path:
    """A Lucille-style project: conf/x.conf, data under the project root."""
    write(tmp_path / "data" / "in.jsonl", '{"id": "a", "word": "cat"}\n{"id": "b", "word": "dog"}\n')
    return write(tmp_path / "conf" / "x.conf", conf_text)


def out_ids(path: pathlib.Path) -> list[str]:

    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_inputs_and_outputs_resolve_against_the_working_directory(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = project(tmp_path, """
        connectors: [ { name: "f", class: "FileConnector", paths: ["data/in.jsonl"], fileHandlers { jsonl {} }, pipeline: "p" } ]
        pipelines: [ { name: "p", stages: [ { class: "CopyFields", fieldMapping { word: w2 } } ] } ]
        indexer { type: "jsonl" }
        jsonl { path: "out/docs.jsonl" }
    """)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    r = lucille.run("conf/x.conf")
    assert (r.status, r.succeeded) == ("Success", 2), r.summary
    assert out_ids(tmp_path / "out" / "docs.jsonl") == ["a", "b"]
    assert not (conf.parent / "out").exists()


def test_an_input_found_only_beside_the_config_is_read_there(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "conf" / "songs.csv", "id,title\n1,x\n2,y\n3,z\n")
    write(tmp_path / "conf" / "x.conf", """
        connectors: [ { name: "f", class: "FileConnector", paths: ["songs.csv"], fileHandlers { csv { idField: id } } } ]
        indexer { type: "jsonl" }
        jsonl { path: "out.jsonl" }
    """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    r = lucille.run(str(tmp_path / "conf" / "x.conf"))
    assert (r.status, r.succeeded) == ("Success", 3), r.summary
    # the output, which does not exist anywhere yet, goes to the working directory
    assert out_ids(elsewhere / "out.jsonl") == ["1", "2", "3"]


def test_a_missing_input_is_named_where_lucille_would_look(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "conf" / "x.conf", """
        connectors: [ { name: "f", class: "FileConnector", paths: ["c.csv"], pipeline: "p" } ]
        pipelines: [ { name: "p", stages: [ { class: "DictionaryLookup", source: a, dest: b, dictPath: "dicts/d.txt" } ] } ]
    """)
    monkeypatch.chdir(tmp_path)
    (error,) = lucille.validate("conf/x.conf")
    assert "dictPath" in error and str(tmp_path / "dicts" / "d.txt") in error


def test_classpath_reads_the_resource_roots_then_the_config_folder(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "src" / "test" / "resources" / "dict.txt", "cat,feline\n")
    write(tmp_path / "conf" / "dict.txt", "cat,wrong\n")
    write(tmp_path / "conf" / "values.txt", "dog\n")
    project(tmp_path, """
        connectors: [ { name: "f", class: "FileConnector", paths: ["data/in.jsonl"], fileHandlers { jsonl {} }, pipeline: "p" } ]
        pipelines: [ { name: "p", stages: [
            { class: "DictionaryLookup", source: word, dest: kind, dictPath: "classpath:dict.txt" },
            { class: "DropDocument", conditions: [ { fields: [word], valuesPath: "classpath:/values.txt" } ] }
        ] } ]
    """)
    monkeypatch.chdir(tmp_path)
    r = lucille.run("conf/x.conf", mode="test")
    assert (r.status, r.succeeded, r.dropped) == ("Success", 1, 1), r.summary
    assert r.documents[0].get("kind") == "feline"


def test_runner_resource_roots_replace_the_default_roots(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "res" / "dict.txt", "cat,from-res\n")
    write(tmp_path / "src" / "main" / "resources" / "dict.txt", "cat,from-main\n")
    project(tmp_path, """
        connectors: [ { name: "f", class: "FileConnector", paths: ["data/in.jsonl"], fileHandlers { jsonl {} }, pipeline: "p" } ]
        pipelines: [ { name: "p", stages: [
            { class: "DictionaryLookup", source: word, dest: kind, dictPath: "classpath:dict.txt" } ] } ]
        runner { resourceRoots: ["res"] }
    """)
    monkeypatch.chdir(tmp_path)
    r = lucille.run("conf/x.conf", mode="test")
    assert [d.get("kind") for d in r.documents] == ["from-res", None]
    bad = write(tmp_path / "conf" / "bad.conf", """
        connectors: [ { name: "f", class: "SequenceConnector", numDocs: 1 } ]
        runner { resourceRoots: "res" }
    """)
    (error,) = lucille.validate(str(bad))
    assert "runner.resourceRoots" in error


def test_missing_classpath_resource_says_where_it_looked(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, """
        connectors: [ { name: "f", class: "FileConnector", paths: ["data/in.jsonl"], fileHandlers { jsonl {} }, pipeline: "p" } ]
        pipelines: [ { name: "p", stages: [
            { class: "DictionaryLookup", source: word, dest: kind, dictPath: "classpath:nope.txt" } ] } ]
    """)
    monkeypatch.chdir(tmp_path)
    (error,) = lucille.validate("conf/x.conf")
    assert "src/test/resources" in error and "runner.resourceRoots" in error


def test_include_stays_relative_to_the_including_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "conf" / "parts" / "connector.conf", """
        connectors: [ { name: "f", class: "SequenceConnector", numDocs: 4 } ]
    """)
    write(tmp_path / "conf" / "x.conf", 'include "parts/connector.conf"\n')
    monkeypatch.chdir(tmp_path)
    r = lucille.run("conf/x.conf", mode="test")
    assert r.succeeded == 4, r.summary


def test_python_file_class_is_found_in_the_working_directory_first(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stage = """
        import lucille
        class Mark(lucille.Stage):
            def process_document(self, doc):
                doc.set_field("where", {where!r})
    """
    write(tmp_path / "stages.py", stage.format(where="cwd"))
    write(tmp_path / "conf" / "stages.py", stage.format(where="conf"))
    write(tmp_path / "conf" / "x.conf", """
        connectors: [ { name: "f", class: "SequenceConnector", numDocs: 1, pipeline: "p" } ]
        pipelines: [ { name: "p", stages: [ { class: "stages.py:Mark" } ] } ]
    """)
    monkeypatch.chdir(tmp_path)
    r = lucille.run("conf/x.conf", mode="test")
    assert r.documents[0].get("where") == "cwd"
    (tmp_path / "stages.py").unlink()
    r = lucille.run("conf/x.conf", mode="test")
    assert r.documents[0].get("where") == "conf"


def test_quickstart_runs_from_another_directory_and_indexes_there(tmp_path: pathlib.Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "lucille.cli", "run", str(ROOT / "examples" / "quickstart.conf")],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    hits = lucille.search(str(tmp_path / "quickstart-index"), 'id:"json.dumps"', limit=1)
    assert [h["id"] for h in hits] == ["json.dumps"]
