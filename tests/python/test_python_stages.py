"""The built-in EmbeddedPython and ExternalPython stages (Lucille's names and keys), run
in-process in this CPython. Cases follow Lucille's EmbeddedPythonTest / ExternalPythonTest."""

import json
import subprocess
import sys
import textwrap
from typing import Any


import pytest

import lucille
from lucille import Document, Pipeline
from pathlib import Path


def embedded(script: str) -> Pipeline:
    return Pipeline([lucille.stages.EmbeddedPython(script=textwrap.dedent(script))])


def run_one(script: str, doc: Document) -> Document:
    (out,) = embedded(script).process(doc)
    return out


def stage_errors(stage: dict[str, Any]) -> list[str]:
    return lucille.validate(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [stage]}],
    })


# ---------------------------------------------------------------- EmbeddedPython


def test_dict_and_attribute_access_write_through() -> None:
    out = run_one("""
        doc["title"] = doc["title"].upper()
        doc.count = doc.count + 1
        doc.pi = doc.pi + 0.14
        doc.copy = doc["title"]
        doc.flag = "gone" in doc
        del doc["gone"]
        del doc.gone2
    """, Document("d", {"title": "hello", "count": 1, "pi": 3.0, "gone": 1, "gone2": 2}))
    assert out.to_dict() == {"id": "d", "title": "HELLO", "count": 2, "pi": pytest.approx(3.14),
                             "copy": "HELLO", "flag": True}
    assert isinstance(out.get("count"), int)


def test_missing_fields_read_as_attribute_errors_and_none_stores_null() -> None:
    out = run_one("""
        if getattr(doc, 'missing', None) is None and not hasattr(doc, 'missing'):
            doc.present = 'ok'
        doc.f = None
        try:
            del doc.nothing
        except AttributeError:
            doc.del_missing = 'AttributeError'
        try:
            doc["nothing"]
        except KeyError:
            doc.get_missing = 'KeyError'
    """, Document("d", {"f": "before"}))
    assert out.get("present") == "ok"
    assert out.has("f") and out.get("f") is None
    assert out.get("del_missing") == "AttributeError" and out.get("get_missing") == "KeyError"


def test_ids_keys_items_and_raw_doc() -> None:
    out = run_one("""
        doc.keys_seen = sorted(doc.keys())
        doc.echo = {k: v for (k, v) in doc.items() if k in ("a", "b")}
        doc.copied_id = doc.id
        rawDoc.set_field("via_raw", rawDoc.id + "!")
    """, Document("d", {"a": 1, "b": 2}))
    assert out.get_list("keys_seen") == ["a", "b", "id"]
    assert out.get("echo") == {"a": 1, "b": 2}
    assert out.get("copied_id") == "d"
    assert out.get("via_raw") == "d!"


def test_nested_objects_and_lists_are_live_views() -> None:
    out = run_one("""
        doc.tags2 = doc.tags
        doc.tags[0] = "X"
        doc.a = {}
        doc.a.b = [{}, {}, {'c': [{}, {'d': {'f': [0, 1, 2]}}]}]
        doc.a.b[2].c[1].d.f[2] = 200
        doc.meta = {"x": "keep", "flag": 1}
        doc.meta.flag = None
        doc.a.list = [10, 20, 30]
        del doc.a.list[1]
        doc.a.list.append(40)
        doc["nested"]["b"]["c"] = 99
    """, Document("d", {"tags": ["x", "y"], "nested": {"a": 1, "b": {"c": 2}}}))
    assert out.get_list("tags") == ["X", "y"]
    assert out.get_list("tags2") == ["x", "y"], "assignment copies the value"
    assert out.get_nested("a.b[2].c[1].d.f[2]") == 200
    assert out.get("meta") == {"x": "keep", "flag": None}
    assert out.get_nested("a.list") == [10, 30, 40]
    assert out.get("nested") == {"a": 1, "b": {"c": 99}}


def test_nested_write_without_parent_fails_the_document() -> None:
    with pytest.raises(lucille.StageError, match="AttributeError"):
        run_one("doc.a.b = 100", Document("d"))


def test_reserved_fields_cannot_be_written() -> None:
    with pytest.raises(lucille.StageError, match="id"):
        run_one("doc.id = 'other'", Document("d"))


def test_globals_persist_between_documents_of_one_instance() -> None:
    p = embedded("""
        try:
            seen += 1
        except NameError:
            seen = 1
        doc.seen = seen
    """)
    assert [p.process(Document(str(i)))[0].get("seen") for i in range(3)] == [1, 2, 3]


def test_script_path_and_its_alias(tmp_path: Path) -> None:
    script = tmp_path / "sum.py"
    script.write_text("if getattr(doc, 'a', None) is not None and getattr(doc, 'b', None) is not None:\n"
                      "  doc.sum = doc.a + doc.b\n")
    for key in ("scriptPath", "script_path"):
        p = Pipeline([lucille.stages.EmbeddedPython(**{key: str(script)})])
        assert p.process(Document("d", {"a": 2, "b": 3}))[0].get("sum") == 5
        assert not p.process(Document("e", {"a": 2}))[0].has("sum")


def test_config_errors_at_validation() -> None:
    (err,) = stage_errors({"class": "EmbeddedPython", "script": "x = 1\ndef bad(:\n    pass\n"})
    assert err.startswith("pipelines[0].stages[0].script: Python syntax error at line 2"), err
    (err,) = stage_errors({"class": "EmbeddedPython"})
    assert "stages[0].script" in err and "scriptPath" in err
    (err,) = stage_errors({"class": "EmbeddedPython", "script": "pass", "scriptPath": "x.py"})
    assert "not both" in err
    (err,) = stage_errors({"class": "com.kmwllc.lucille.stage.EmbeddedPython", "scriptPath": "nope/missing.py"})
    assert "stages[0].scriptPath" in err and "not found" in err
    (err,) = stage_errors({"class": "EmbeddedPython", "script": "pass", "scrpt": "x"})
    assert 'unknown key "scrpt"' in err


def test_exception_fails_only_that_document_in_a_run(tmp_path: Path) -> None:
    r = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 4, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{
            "class": "com.kmwllc.lucille.stage.EmbeddedPython",
            "script": "if doc.id == '2':\n    raise RuntimeError('Failure on two')\ndoc.ok = True\n",
        }]}],
    }, mode="test")
    assert (r.status, r.succeeded, r.failed) == ("Success", 3, 1)
    fails = [e for e in r.events if e[1] == "FAIL"]
    assert fails[0][0] == "2" and "Failure on two" in (fails[0][2] or "")
    assert all(d.get("ok") is True for d in r.documents)


def test_cli_validate_reports_the_syntax_error_line(tmp_path: Path) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text(textwrap.dedent('''
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1, pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "EmbeddedPython", script: "ok = 1\\nif x\\n" }] }]
    '''))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "stages[0].script: Python syntax error at line 2" in r.stdout + r.stderr


# ---------------------------------------------------------------- ExternalPython


def external(tmp_path: Path, code: str, **keys: Any) -> Pipeline:
    script = tmp_path / "fn.py"
    script.write_text(textwrap.dedent(code))
    return Pipeline([lucille.stages.ExternalPython(scriptPath=str(script), **keys)])


def test_returned_json_string_sets_fields_and_sees_the_id(tmp_path: Path) -> None:
    # Lucille's copy_doc_id.py: the function returns json.dumps(doc).
    p = external(tmp_path, """
        import json
        def process_document(doc):
            doc['field_added_by_python'] = doc['id']
            return json.dumps(doc)
    """)
    (out,) = p.process(Document("doc1", {"keep": 1}))
    assert out.to_dict() == {"id": "doc1", "keep": 1, "field_added_by_python": "doc1"}


def test_returned_dict_replaces_the_fields_and_none_leaves_them(tmp_path: Path) -> None:
    p = external(tmp_path, """
        def process_document(doc):
            if doc.get("skip"):
                return None
            return {"id": "ignored", "title": doc["title"].upper(), "n": len(doc)}
    """)
    (out,) = p.process(Document("d", {"title": "hi", "other": 1}))
    assert out.id == "d"
    assert out.to_dict() == {"id": "d", "title": "HI", "n": 3}, "fields left out are removed"
    (out,) = p.process(Document("e", {"skip": True, "other": 1}))
    assert out.to_dict() == {"id": "e", "skip": True, "other": 1}


def test_function_name_and_bad_returns(tmp_path: Path) -> None:
    p = external(tmp_path, """
        def custom_method2(doc):
            doc['field_added_by_python'] = "method 2"
            return doc
        def bad(doc):
            return [1]
    """, functionName="custom_method2")
    assert p.process(Document("d"))[0].get("field_added_by_python") == "method 2"
    bad = Pipeline([lucille.stages.ExternalPython(scriptPath=str(tmp_path / "fn.py"), functionName="bad")])
    with pytest.raises(lucille.StageError, match="must return a dict"):
        bad.process(Document("d"))


def test_external_config_errors(tmp_path: Path) -> None:
    script = tmp_path / "fn.py"
    script.write_text("def process_document(doc):\n    return None\ndef other(doc):\n    pass\n")
    (err,) = stage_errors({"class": "ExternalPython", "scriptPath": str(script), "functionName": "nope"})
    assert "stages[0].functionName" in err and "'nope'" in err and "other, process_document" in err
    (err,) = stage_errors({"class": "ExternalPython"})
    assert 'missing required key "scriptPath"' in err
    broken = tmp_path / "broken.py"
    broken.write_text("def f(doc)\n    pass\n")
    (err,) = stage_errors({"class": "ExternalPython", "scriptPath": str(broken)})
    assert "stages[0].scriptPath: Python syntax error at line 1" in err
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("# comment\nnumpy>=1.0\nno-such-package-xyz==1.0\nanother_missing_pkg_q ; python_version>'3'\n")
    (err,) = stage_errors({"class": "ExternalPython", "scriptPath": str(script), "requirementsPath": str(reqs)})
    assert "stages[0].requirementsPath" in err
    assert "no-such-package-xyz, another_missing_pkg_q" in err and "numpy" not in err.split("Python")[1]
    reqs.write_text("numpy\n")
    assert stage_errors({"class": "ExternalPython", "scriptPath": str(script), "requirementsPath": str(reqs)}) == []


def test_transport_keys_are_accepted_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    script = tmp_path / "fn.py"
    script.write_text("def process_document(doc):\n    return {'x': 1}\n")
    code = textwrap.dedent(f"""
        import logging, lucille
        logging.basicConfig(level=logging.INFO)
        r = lucille.run(config={{
            "connectors": [{{"name": "seq", "class": "SequenceConnector", "numDocs": 2, "pipeline": "p"}}],
            "pipelines": [{{"name": "p", "stages": [{{"class": "com.kmwllc.lucille.stage.ExternalPython",
                "scriptPath": {str(script)!r}, "pythonExecutable": "python3", "port": 25333}}]}}],
        }}, mode="test")
        print(r.status, [d.get("x") for d in r.documents])
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "Success [1, 1]", r.stderr
    for key in ("pythonExecutable", "port"):
        lines = [l for l in r.stderr.splitlines() if f"stages[0].{key}: does not apply" in l]
        assert len(lines) == 1, r.stderr


def test_script_paths_resolve_as_every_input_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # classpath: under the resource roots (runner.resourceRoots replaces the defaults), and a
    # relative path from the working directory, as for every other input path of a config.
    (tmp_path / "res" / "scripts").mkdir(parents=True)
    (tmp_path / "res" / "scripts" / "up.py").write_text("doc['t'] = 'x'\n")
    (tmp_path / "here.py").write_text("doc['n'] = 1\n")
    monkeypatch.chdir(tmp_path)
    config: dict[str, Any] = {
        "runner": {"resourceRoots": ["res"]},
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "EmbeddedPython", "scriptPath": "classpath:scripts/up.py"},
            {"class": "EmbeddedPython", "scriptPath": "here.py"}]}],
    }
    assert lucille.validate(config=config) == []
    config["runner"]["resourceRoots"] = ["elsewhere"]
    (err,) = lucille.validate(config=config)
    assert "classpath:scripts/up.py" in err and "elsewhere" in err, err
