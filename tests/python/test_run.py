"""lucille.run in local and test modes, Python stages and connectors in a run, the CLI."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from typing import Optional


import pytest

import lucille
from lucille import Document

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "python" / "data"


def write(tmp_path: pathlib.Path, name: str, text: str) -> pathlib.Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


STAGES_PY = """
import lucille

class Enrich(lucille.Stage):
    def process_document(self, doc):
        doc.set_field("n", int(doc.id) * 2)
        if doc.id == "3":
            raise ValueError("three is bad")
        if doc.id == "5":
            return (lucille.Document(f"{doc.id}-{i}", {"child": True}) for i in (1, 2))

class BadStart(lucille.Stage):
    def start(self):
        raise RuntimeError("model missing")
    def process_document(self, doc):
        pass

class Source(lucille.Connector):
    calls = []
    def pre_execute(self, run_id):
        Source.calls.append("pre")
    def execute(self, publisher):
        for i in range(self.config.get("count", 3)):
            publisher.publish(lucille.Document(self.doc_id(str(i)), {"from": self.name}))
    def post_execute(self, run_id):
        Source.calls.append("post")
    def close(self):
        Source.calls.append("close")

class Broken(lucille.Connector):
    def execute(self, publisher):
        publisher.publish(lucille.Document("ok"))
        raise IOError("source went away")
"""


@pytest.fixture
def conf_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "runstages.py").write_text(STAGES_PY)
    return tmp_path


def test_test_mode_records_documents_and_events(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "run.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 8, pipeline: "main" }]
        pipelines: [{ name: "main", stages: [
            { class: "runstages:Enrich" },
            { class: "DropDocument", conditions: [{ fields: ["id"], values: ["7"] }] }
        ] }]
        worker { threads: 2 }
    """)
    r = lucille.run(str(cfg), mode="test")
    assert r.status == "Success"
    assert (r.published, r.succeeded, r.failed, r.dropped) == (8, 8, 1, 1)
    ids = sorted(d.id for d in r.documents)
    assert ids == ["0", "1", "2", "4", "5", "5-1", "5-2", "6"]
    assert all(d.run_id == r.run_id for d in r.documents)
    kinds: dict[str, list[str]] = {}
    for doc_id, kind, message in r.events:
        kinds.setdefault(kind, []).append(doc_id)
    assert sorted(kinds["CREATE"]) == ["5-1", "5-2"]
    assert kinds["DROP"] == ["7"]
    assert kinds["FAIL"] == ["3"]
    fail_message = [m for (i, k, m) in r.events if k == "FAIL"][0]
    assert fail_message is not None
    assert "three is bad" in fail_message and "Traceback" in fail_message
    assert r.summary.splitlines()[0] == "RUN SUMMARY: Partial success. 1/1 connectors complete. Some docs failed."
    assert r.summary.splitlines()[1].startswith("seq: complete. 8 docs succeeded. 1 docs FAILED. 1 docs dropped. Time:")
    assert r.summary.splitlines()[2].startswith("Run took ")
    (c,) = r.connectors
    assert (c.name, c.status, c.published) == ("seq", "complete", 8)
    names = [m["name"] for m in r.stage_metrics]
    assert names == ["stage_1", "stage_2"]


def test_local_mode_writes_jsonl_and_config_dict(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "out.jsonl"
    r = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 5, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": "SetStaticValues", "staticValues": {"k": "v"}}]}],
        "indexer": {"type": "jsonl"},
        "jsonl": {"path": str(out)},
    })
    assert r.status == "Success" and r.succeeded == 5
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    assert [l["id"] for l in lines] == ["0", "1", "2", "3", "4"]
    assert all(l["k"] == "v" and "run_id" not in l for l in lines)
    with pytest.raises(RuntimeError):
        r.documents  # only recorded in test mode


def test_hocon_text_and_overrides(conf_dir: pathlib.Path) -> None:
    text = """
        n = 3
        n = ${?LUCILLE_TEST_UNSET}
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: ${n} }]
    """
    r = lucille.run(hocon=text, mode="test")
    assert r.published == 3
    cfg = write(conf_dir, "o.conf", """
        docs = 2
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: ${docs} }]
    """)
    assert lucille.run(str(cfg), mode="test", overrides=["docs=6"]).published == 6
    assert lucille.run(str(cfg), mode="test", overrides={"docs": 4}).published == 4


def test_python_connector_lifecycle(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "c.conf", """
        connectors: [{ name: "src", class: "runstages:Source", count: 4, docIdPrefix: "p-", pipeline: "main" }]
        pipelines: [{ name: "main", stages: [{ class: "CopyFields", fieldMapping: { from: "copied" } }] }]
    """)
    r = lucille.run(str(cfg), mode="test")
    assert r.status == "Success", r.summary
    assert sorted(d.id for d in r.documents) == ["p-0", "p-1", "p-2", "p-3"]
    assert all(d.get("copied") == "src" for d in r.documents)
    import importlib
    mod = importlib.import_module("runstages")
    assert mod.Source.calls[-3:] == ["pre", "post", "close"]


def test_failed_connector_is_reported_and_later_ones_skipped(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "b.conf", """
        connectors: [
            { name: "broken", class: "runstages:Broken" },
            { name: "after", class: "SequenceConnector", numDocs: 1 }
        ]
    """)
    r = lucille.run(str(cfg), mode="test")
    assert r.status == "Failure"
    assert [c.status for c in r.connectors] == ["failed", "skipped"]
    assert "source went away" in (r.connectors[0].message or "")
    assert r.connectors[0].succeeded == 1, "the document published before the error is accounted"
    assert "after: skipped." in r.summary


def test_stage_that_cannot_start_fails_documents_not_the_run(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "s.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 3, pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "runstages:BadStart" }] }]
    """)
    r = lucille.run(str(cfg), mode="test")
    assert r.failed == 3 and r.succeeded == 0
    assert all("model missing" in (m or "") for (_, k, m) in r.events if k == "FAIL")
    assert all('the worker could not start pipeline "p"' in (m or "")
               for (_, k, m) in r.events if k == "FAIL")


def test_config_errors_are_all_listed(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "bad.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", pipeline: "nope" },
                     { name: "x", class: "runstages:Missing" }]
        pipelines: [{ name: "p", stages: [{ class: "CopyFields", fieldMaping: {} }, { class: "NotAStage" }] }]
        worker { threads: "many" }
    """)
    errors = lucille.validate(str(cfg))
    joined = "\n".join(errors)
    for part in ["connectors[0].numDocs", "connectors[1].class", "fieldMaping", "stages[1].class", "worker.threads"]:
        assert part in joined, (part, joined)
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(str(cfg))
    assert "config errors" in str(e.value)
    assert lucille.validate(hocon='connectors: [{name: "a", class: "SequenceConnector", numDocs: 1}]') == []
    syntax = lucille.validate(hocon="connectors: [ {")
    assert len(syntax) == 1


def cli(
    *args: str, cwd: Optional[pathlib.Path] = None, env: Optional[dict[str, str]] = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lucille.cli", *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_cli_run_exit_codes_and_summary(conf_dir: pathlib.Path) -> None:
    ok = write(conf_dir, "ok.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 10 }]
    """)
    r = cli("run", str(ok))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("RUN SUMMARY: Success. 1/1 connectors complete.")
    assert "seq: complete. 10 docs succeeded." in r.stdout
    failing = write(conf_dir, "fail.conf", """
        connectors: [{ name: "broken", class: "runstages:Broken" }]
    """)
    r = cli("run", str(failing))
    assert r.returncode == 1 and "RUN SUMMARY: Failure." in r.stdout
    r = cli("run", str(ok), "--set", "connectors=[]")
    assert r.returncode == 0
    r = cli("run", str(conf_dir / "missing.conf"))
    assert r.returncode == 1 and "error" in r.stderr


def test_cli_validate_lists_several_errors(conf_dir: pathlib.Path) -> None:
    bad = write(conf_dir, "v.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector" }]
        indexer { batchSize: 0 }
        publisher { queueCapacity: -1 }
    """)
    r = cli("validate", str(bad))
    assert r.returncode == 1
    assert "3 config errors" in r.stderr or "config errors" in r.stderr
    for part in ["numDocs", "batchSize", "queueCapacity"]:
        assert part in r.stderr
    good = write(conf_dir, "g.conf", 'connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1 }]')
    assert cli("validate", str(good)).returncode == 0


def test_cli_render_redacts_secrets(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "r.conf", """
        host = "localhost"
        opensearch { url: "http://"${host}":9200", password: "hunter2", index: "docs" }
        typesense { apiKey: "abc123" }
        connectors: []
    """)
    r = cli("render", str(cfg))
    assert r.returncode == 0, r.stderr
    assert "hunter2" not in r.stdout and "abc123" not in r.stdout
    assert "REDACTED" in r.stdout and "http://localhost:9200" in r.stdout
    r = cli("render", str(cfg), "--json")
    assert json.loads(r.stdout)["opensearch"]["password"] == "***REDACTED***"


def test_sigterm_stops_a_run_gracefully(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "long.conf", """
        connectors: [{ name: "big", class: "SequenceConnector", numDocs: 1000000000 }]
        publisher { queueCapacity: 100 }
    """)
    p = subprocess.Popen([sys.executable, "-m", "lucille.cli", "run", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1
    assert "RUN SUMMARY: Failure." in out
    line = [l for l in out.splitlines() if l.startswith("big:")][0]
    assert "ERROR." in line and "docs succeeded" in line


def test_environment_overrides_and_set_precedence(conf_dir: pathlib.Path) -> None:
    cfg = write(conf_dir, "env.conf", """
        docs = 2
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: ${docs} }]
        worker { threads: 1 }
    """)
    env = dict(os.environ, CONFIG_FORCE_docs="9", CONFIG_FORCE_worker_threads="5")
    # An env override reaches a nested key; --set wins over it.
    code = ("import lucille; r = lucille.run(%r, mode='test'); print(r.published);"
            "r = lucille.run(%r, mode='test', overrides=['worker.threads=2']); print(r.published)") % (str(cfg), str(cfg))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["9", "9"]
    r = cli("render", str(cfg), "--set", "worker.threads=3", env=env)
    assert "threads = 3" in r.stdout or "threads: 3" in r.stdout, r.stdout
    r = cli("render", str(cfg), env=env)
    assert "threads = 5" in r.stdout or "threads: 5" in r.stdout, r.stdout


def test_python_connector_feeds_python_stage_under_backpressure(conf_dir: pathlib.Path) -> None:
    # 300 documents through a 2-slot queue into a Python stage on two workers: publish must
    # release the GIL while it blocks, or the stage could never run and the run would time out.
    (conf_dir / "feed.py").write_text(textwrap.dedent("""
        import lucille

        class Feed(lucille.Connector):
            def execute(self, publisher):
                for i in range(300):
                    publisher.publish(lucille.Document(f"f{i}", {"n": i}))

        class Square(lucille.Stage):
            def process_document(self, doc):
                doc.set_field("sq", doc.get_int("n") ** 2)
    """))
    cfg = write(conf_dir, "feed.conf", """
        connectors: [{ name: "feed", class: "feed:Feed", pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "feed.py:Square" }] }]
        publisher { queueCapacity: 2 }
        worker { threads: 2 }
        runner { connectorTimeout: 60000 }
    """)
    r = lucille.run(str(cfg), mode="test")
    assert (r.status, r.published, r.succeeded) == ("Success", 300, 300), r.summary
    assert sorted(int(d["sq"]) for d in r.documents) == [i * i for i in range(300)]


THREAD_STATE_PY = """
import threading
import lucille

_local = threading.local()

class CountPerThread(lucille.Stage):
    def process_document(self, doc):
        # threading.local lives in the thread's Python thread state: it survives between calls
        # only if the worker keeps one thread state for its whole life.
        _local.n = getattr(_local, "n", 0) + 1
        doc.set_field("calls_on_this_thread", _local.n)
        doc.set_field("thread", threading.get_ident())
"""


def test_a_worker_thread_keeps_one_python_thread_state(tmp_path: pathlib.Path) -> None:
    (tmp_path / "perthread.py").write_text(THREAD_STATE_PY)
    out = tmp_path / "out.jsonl"
    r = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 200, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": f"{tmp_path / 'perthread.py'}:CountPerThread"}]}],
        "indexer": {"type": "jsonl"},
        "jsonl": {"path": str(out)},
        "worker": {"threads": 2},
    })
    assert r.status == "Success" and r.succeeded == 200
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    by_thread: dict[int, list[int]] = {}

    for l in lines:
        by_thread.setdefault(l["thread"], []).append(l["calls_on_this_thread"])
    assert 1 <= len(by_thread) <= 2
    # Each worker thread's counter ran 1, 2, 3, ... over every document it processed.
    for counts in by_thread.values():
        assert sorted(counts) == list(range(1, len(counts) + 1))
    assert sum(len(c) for c in by_thread.values()) == 200


def test_set_with_a_list_index_as_the_readme_shows() -> None:
    # `--set connectors.0.numDocs=N` sets a key of the first connector (the list stays a list).
    root = pathlib.Path(__file__).resolve().parents[2]
    p = subprocess.run(
        [sys.executable, "-m", "lucille.cli", "run", "examples/pipeline.conf", "--mode", "test",
         "--set", "connectors.0.numDocs=7"],
        cwd=root, capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "7 docs succeeded" in p.stdout + p.stderr
    errors = lucille.validate(str(root / "examples/pipeline.conf"), overrides=["connectors.3.numDocs=1"])
    assert any("past the end of the list" in e for e in errors), errors
