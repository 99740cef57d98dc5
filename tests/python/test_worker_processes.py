"""worker.processes: the pipeline runs in worker processes (Python stages on several cores),
with the same accounting as worker threads."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

import lucille

STAGES = '''
import os
import lucille


class Pid(lucille.Stage):
    def start(self):
        folder = self.config.get("pidDir")
        if folder:
            open(os.path.join(folder, str(os.getpid())), "w").close()

    def process_document(self, doc):
        print("a print in a stage must not break the protocol")
        doc.set_field("pid", os.getpid())
        n = int(doc.id.split("-")[1])
        if n % 10 == 3:
            raise ValueError(f"no threes: {doc.id}")
        if n % 10 == 5:
            doc.drop()
        if n % 10 == 7:
            return [lucille.Document(f"{doc.id}-child", {"parent": doc.id})]
        return None


class Crash(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "doc-13":
            os._exit(7)


class Hog(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "doc-3" and self.config.get("native"):
            # 200 MiB in Python, within the limit; its two copies into the core are not
            big = "x" * (200 << 20)
            doc.set_field("big", big)
            doc.set_field("big_too", big)
        elif doc.id == "doc-3":  # Python allocating without bound
            hoard = []
            while True:
                hoard.append(bytearray(8 << 20))
        doc.set_field("ok", True)
'''


def write(tmp_path: Path, stages: str, worker: str, n: int = 60) -> Path:
    (tmp_path / "procstages.py").write_text(STAGES)
    conf = tmp_path / "run.conf"
    conf.write_text(
        textwrap.dedent(
            f"""
            connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: {n}, docIdPrefix: "doc-",
                            pipeline: "p" }}]
            pipelines: [{{ name: "p", stages: [{stages}] }}]
            worker {{ {worker} }}
            """
        )
    )
    return conf


def outcome(result: Any) -> list[tuple[str, str]]:
    return sorted((doc_id, kind) for doc_id, kind, _ in result.events)


def test_two_processes_give_the_same_events_as_threads(tmp_path: Path) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    stage = '{ class: "procstages.py:Pid", pidDir: "%s" }' % pid_dir
    threads = lucille.run(str(write(tmp_path, stage, "threads: 2")), mode="test", progress=False)
    for f in pid_dir.iterdir():  # the threads run started its pipelines in this process
        f.unlink()
    procs = lucille.run(str(write(tmp_path, stage, "processes: 2")), mode="test", progress=False)
    assert procs.status == threads.status
    assert outcome(procs) == outcome(threads)
    assert (procs.published, procs.succeeded, procs.failed, procs.dropped) == (
        threads.published,
        threads.succeeded,
        threads.failed,
        threads.dropped,
    )
    assert (procs.failed, procs.dropped) == (6, 6)
    messages = [m for _, kind, m in procs.events if kind == "FAIL"]
    assert all(m is not None and "no threes" in m for m in messages), messages
    # The stage ran in processes other than this one: two were started (each started its
    # pipeline), and the documents were processed there (which of the two took how many
    # depends on timing).
    started = {int(p.name) for p in pid_dir.iterdir()}
    pids = {d.get_int("pid") for d in procs.documents if d.has("pid")}
    assert os.getpid() not in started and len(started) == 2, started
    assert pids and pids <= started, (pids, started)


def test_a_process_that_dies_fails_only_its_document_with_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the dead-letter file (p_fail.jsonl) goes here
    conf = write(tmp_path, '{ class: "procstages.py:Crash" }', "processes: 2, maxRetries: 1", n=30)
    result = lucille.run(str(conf), mode="test", progress=False)
    # doc-13 kills its process on every attempt; the documents sent with it are retried one by
    # one in a new process and succeed; nothing is lost.
    failed = [(i, m) for i, kind, m in result.events if kind == "FAIL"]
    assert [i for i, _ in failed] == ["doc-13"], failed
    assert failed[0][1] is not None and "worker process" in failed[0][1]
    assert (result.published, result.succeeded, result.failed) == (30, 29, 1)
    assert "doc-13" in (tmp_path / "p_fail.jsonl").read_text()


def test_a_stage_allocating_without_bound_fails_its_document_under_max_process_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    worker = f"processes: 1, maxRetries: 1, maxProcessMemoryBytes: {512 << 20}"
    for native in (False, True):
        stage = '{ class: "procstages.py:Hog", native: %s }' % str(native).lower()
        result = lucille.run(str(write(tmp_path, stage, worker, n=8)), mode="test", progress=False)
        failed = dict((i, m or "") for i, kind, m in result.events if kind == "FAIL")
        assert list(failed) == ["doc-3"], failed
        if native:
            # The core's allocator cannot fail softly: the process ends, its document FAILs
            # with how it ended, and a new process takes the rest.
            assert "worker process" in failed["doc-3"], failed
            assert "maxProcessMemoryBytes" in failed["doc-3"], failed
        else:
            # Python gets a MemoryError at the limit: only that document FAILs.
            assert "MemoryError" in failed["doc-3"], failed
        assert (result.published, result.succeeded, result.failed) == (8, 7, 1)
        assert all(d.get("ok") for d in result.documents)


def test_max_process_memory_needs_processes_and_a_sane_size() -> None:
    errors = lucille.validate(hocon="worker { maxProcessMemoryBytes: 1000000000 }\nconnectors: []")
    assert any("worker.maxProcessMemoryBytes" in e and "worker.processes" in e for e in errors), errors
    errors = lucille.validate(
        hocon="worker { processes: 1, maxProcessMemoryBytes: 1000 }\nconnectors: []"
    )
    assert any("worker.maxProcessMemoryBytes" in e and "at least" in e for e in errors), errors


def test_processes_and_threads_must_agree() -> None:
    errors = lucille.validate(hocon='worker { threads: 3, processes: 2 }\nconnectors: []')
    assert any("worker.processes" in e and "must agree" in e for e in errors), errors


def test_objects_given_to_run_cannot_go_to_processes() -> None:
    class Here(lucille.Stage):
        def process_document(self, doc: lucille.Document) -> None:
            pass

    class One(lucille.Connector):
        def execute(self, publisher: lucille.Publisher) -> None:
            publisher.publish(lucille.Document("a"))

    with pytest.raises(ValueError, match="worker processes"):
        lucille.run(config={"worker": {"processes": 2}}, stages=[Here()], connector=One(), mode="test")
