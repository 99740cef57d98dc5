"""FileConnector checkpoints: a run killed with kill -9 mid-traversal resumes without
re-publishing what was acknowledged, `incremental` skips unchanged files, and `emitDeletes`
marks vanished files (reliable-scan-pattern.txt)."""

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import lucille
from jsonl_output import ids_in

LINES = 3000


def write_corpus(folder: pathlib.Path) -> dict[str, list[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    ids: dict[str, list[str]] = {}
    for name in ("a", "b"):
        rows = [{"id": f"{name}-{i}", "n": i} for i in range(LINES)]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        ids[str(folder / f"{name}.jsonl")] = [f"{name}-{i}" for i in range(LINES)]
    return ids


def config_text(tmp: pathlib.Path, out: pathlib.Path, extra: str = "") -> str:
    return f"""
connectors: [{{ name: "files", class: "FileConnector", pipeline: "p",
  paths: ["{tmp / 'data'}"], fileHandlers {{ jsonl {{}} }},
  checkpoint {{ path: "{tmp / 'state.sqlite'}" }}, readerThreads: 2 {extra} }}]
pipelines: [{{ name: "p", stages: [{{ class: "slow.py:Slow" }}] }}]
indexer {{ type: "jsonl", batchSize: 20 }}
jsonl {{ path: "{out}" }}
worker {{ threads: 2 }}
"""


def watermarks(db: pathlib.Path) -> dict[str, int]:
    with sqlite3.connect(db) as c:
        return dict(c.execute("SELECT path, acked FROM units").fetchall())


def test_a_killed_run_resumes_with_exactly_the_unacknowledged_records(tmp_path: pathlib.Path) -> None:
    corpus = write_corpus(tmp_path / "data")
    (tmp_path / "slow.py").write_text(
        "import time, lucille\n"
        "class Slow(lucille.Stage):\n"
        "    def process_document(self, doc):\n"
        "        time.sleep(0.002)\n"
    )
    out1, out2 = tmp_path / "out1.jsonl", tmp_path / "out2.jsonl"
    conf = tmp_path / "run.conf"
    conf.write_text(config_text(tmp_path, out1))
    proc = subprocess.Popen(
        [sys.executable, "-m", "lucille.cli", "run", str(conf)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(ids_in(out1)) < 1500:
            assert proc.poll() is None, "the first run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.5)  # let a checkpoint commit land mid-traversal
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    first = ids_in(out1)
    marks = watermarks(tmp_path / "state.sqlite")
    acked = {i for path, ids in corpus.items() for i in ids[: marks.get(path, 0)]}
    assert 0 < len(acked) < 2 * LINES, marks
    # Acknowledged means indexed: every checkpointed record is in the first run's output.
    assert acked <= set(first)

    conf.write_text(config_text(tmp_path, out2))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    second = ids_in(out2)
    expected = [i for path, ids in corpus.items() for i in ids[marks.get(path, 0):]]
    # Exactly the records past each file's watermark, each once; nothing lost overall.
    assert sorted(second) == sorted(expected)
    everything = {i for ids in corpus.values() for i in ids}
    assert set(first) | set(second) == everything
    assert f"{len(expected)} docs succeeded. 0 docs failed." in r.stdout

    # The traversal finished: both files are complete and a new run reads them all again.
    with sqlite3.connect(tmp_path / "state.sqlite") as c:
        assert c.execute("SELECT count(*) FROM units WHERE complete = 1").fetchone()[0] == 2
        assert c.execute("SELECT finished FROM traversals").fetchone()[0] == 1


def run_test_mode(tmp_path: pathlib.Path, extra: str = "") -> lucille.RunResult:
    conf = config_text(tmp_path, tmp_path / "unused.jsonl", extra)
    # The state file inside the traversed folder: its own files are never read as documents.
    conf = conf.replace(str(tmp_path / "state.sqlite"), str(tmp_path / "data" / "state.sqlite"))
    return lucille.run(hocon=conf.replace('{ class: "slow.py:Slow" }', ""), mode="test")


def test_incremental_reads_only_changed_files_and_marks_vanished_ones(tmp_path: pathlib.Path) -> None:
    write_corpus(tmp_path / "data")
    (tmp_path / "data" / "c.txt").write_text("a whole-file document")
    extra = ", incremental: true, emitDeletes: true"
    first = run_test_mode(tmp_path, extra)
    assert first.status == "Success" and first.published == 2 * LINES + 1

    # Nothing changed: nothing is read.
    again = run_test_mode(tmp_path, extra)
    assert again.status == "Success" and again.published == 0

    # One file rewritten with other content, one removed.
    (tmp_path / "data" / "a.jsonl").write_text('{"id": "a-new"}\n')
    os.remove(tmp_path / "data" / "c.txt")
    third = run_test_mode(tmp_path, extra)
    assert third.status == "Success"
    gone = str(tmp_path / "data" / "c.txt")
    got = {d.id: d for d in third.documents}
    assert set(got) == {"a-new", _md5(gone)}
    assert got[_md5(gone)].get("is_deleted") == "true"
    assert got[_md5(gone)].get("file_path") == gone

    # A file that still exists but is out of scope (excluded) is not deleted.
    excluded = run_test_mode(tmp_path, extra + ', excludes: [".*b\\\\.jsonl"]')
    assert excluded.status == "Success" and excluded.published == 0

    # Without incremental a finished traversal starts over and reads everything.
    full = run_test_mode(tmp_path)
    assert full.published == 1 + LINES


def _md5(text: str) -> str:

    import hashlib
    return hashlib.md5(text.encode()).hexdigest()


def test_checkpoint_options_are_validated_up_front() -> None:
    errors = lucille.validate(hocon="""
connectors: [{ name: "f", class: "FileConnector", paths: ["x"], incremental: true,
  emitDeletes: true, collapse: true, checkpoint { } }]
""")
    text = "\n".join(errors)
    assert "checkpoint.path" in text, text
    assert "collapse" in text, text
    errors = lucille.validate(hocon="""
connectors: [{ name: "f", class: "FileConnector", paths: ["x"], incremental: true }]
""")
    assert any("incremental" in e and "checkpoint" in e for e in errors), errors


def lucille_state_config(data: pathlib.Path, state: str, filters: str = "") -> str:
    # Lucille's FileConnector with its JDBC `state` block, as in its application-example.conf.
    return f"""
connectors: [{{ name: "connector2", class: "com.kmwllc.lucille.connector.FileConnector",
  pipeline: "p", paths: ["{data}"], fileHandlers {{ jsonl {{}} }},
  state {{ {state} }},
  filterOptions {{ excludes: [".*\\\\.DS_Store$"] {filters} }} }}]
pipelines: [{{ name: "p", stages: [] }}]
"""


def test_lucilles_state_block_is_kept_in_the_checkpoint_and_last_published_cutoff_skips(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text('{"id": "a1"}\n{"id": "a2"}\n')
    state = ('driver: "org.apache.derby.iapi.jdbc.AutoloadedDriver", '
             'connectionString: "jdbc:derby:lucille_state;", jdbcUser: "", jdbcPassword: "", '
             'performDeletions: false')
    conf = lucille_state_config(data, state, ', lastPublishedCutoff: "6h"')
    first = lucille.run(hocon=conf, mode="test")
    assert first.status == "Success" and sorted(d.id for d in first.documents) == ["a1", "a2"]
    # Derby's database name became a SQLite file in the working directory, keyed by connector.
    store = tmp_path / "lucille_state.sqlite"
    with sqlite3.connect(store) as c:
        rows = c.execute("SELECT connector, path, published_ms FROM units").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("connector2", str(data / "a.jsonl"))]
    assert rows[0][2] > (time.time() - 60) * 1000
    # Read less than 6 hours ago: skipped, even after a change; a new file is read.
    (data / "a.jsonl").write_text('{"id": "a1"}\n{"id": "a2"}\n{"id": "a3"}\n')
    (data / "b.jsonl").write_text('{"id": "b1"}\n')
    second = lucille.run(hocon=conf, mode="test")
    assert [d.id for d in second.documents] == ["b1"], second.summary
    # Without the cutoff every file is read again (state alone only records publish times).
    third = lucille.run(hocon=lucille_state_config(data, state), mode="test")
    assert sorted(d.id for d in third.documents) == ["a1", "a2", "a3", "b1"]


def test_lucilles_state_keys_that_cannot_apply_are_config_errors(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    errors = "\n".join(lucille.validate(hocon=lucille_state_config(
        data, 'connectionString: "jdbc:postgresql://db:5432/state", runsBeforeExpiration: 3',
        ', publishMode: "sometimes"')))
    assert "state.connectionString" in errors and "SQLite" in errors, errors
    assert "state.runsBeforeExpiration" in errors, errors
    assert "filterOptions.publishMode" in errors, errors
    # The cutoff without any state or checkpoint would silently do nothing: an error.
    conf = f"""connectors: [{{ name: "f", class: "FileConnector", pipeline: "p", paths: ["{data}"],
      filterOptions {{ lastPublishedCutoff: "6h" }} }}]
pipelines: [{{ name: "p", stages: [] }}]"""
    errors = "\n".join(lucille.validate(hocon=conf))
    assert "filterOptions.lastPublishedCutoff" in errors and "state" in errors, errors
