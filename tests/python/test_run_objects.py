"""lucille.run(stages=..., connector=..., indexer=...): a run built from Python objects defined
in place (as in a notebook cell), and the progress display outside a terminal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Optional, cast


import pytest

import lucille
import lucille._loader
import lucille._notebook


class Source(lucille.Connector):
    def __init__(self, n: int = 20, config: Optional[dict[str, Any]] = None) -> None:
        super().__init__(config)
        self.n = n

    def execute(self, publisher: lucille.Publisher) -> None:
        for i in range(self.n):
            publisher.publish(lucille.Document(f"d{i}", {"text": f"hello {i}"}))


def test_a_run_made_only_of_objects_defined_here() -> None:
    # Classes defined inside a function cannot be named as module:Class: only run() can use them.
    class Count(lucille.Stage):
        def __init__(self) -> None:
            super().__init__()
            self.starts = 0
            self.stops = 0
            self.seen = 0
            self.lock = threading.Lock()

        def start(self) -> None:
            self.starts += 1

        def process_document(self, doc: lucille.Document) -> None:
            with self.lock:
                self.seen += 1
            doc.set_field("upper", (doc.get_string("text") or "").upper())

        def stop(self) -> None:
            self.stops += 1

    stage = Count()
    result = lucille.run(
        config={"worker": {"threads": 3}}, stages=[stage], connector=Source(20), mode="test"
    )
    assert result.status == "Success", result.summary
    assert (result.published, result.succeeded, result.failed) == (20, 20, 0)
    assert sorted(d.get_string("upper") or "" for d in result.documents) == sorted(

        f"HELLO {i}" for i in range(20)
    )
    # One object, shared by the three worker threads: its state is the run's, and it was
    # started and stopped once.
    assert stage.seen == 20
    assert (stage.starts, stage.stops) == (1, 1)
    # The loader forgets the objects after the run.
    assert vars(lucille._loader.given) == {}


def test_builtin_stages_dicts_and_objects_mix_in_order() -> None:
    class Mark(lucille.Stage):
        def process_document(self, doc: lucille.Document) -> None:
            doc.set_field("seen_copy", doc.get_string("copy"))

    result = lucille.run(
        stages=[
            lucille.stages.CopyFields(fieldMapping={"text": "copy"}),
            Mark(),
            {"class": "DeleteFields", "fields": ["copy"]},
        ],
        connector=Source(3),
        mode="test",
    )
    assert result.status == "Success", result.summary
    for d in result.documents:
        assert d.get_string("seen_copy") == d.get_string("text")
        assert not d.has("copy")


def test_stages_replace_those_of_the_configs_one_pipeline() -> None:
    config = {
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 4, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": "DropDocument"}]}],
    }

    class Tag(lucille.Stage):
        def process_document(self, doc: lucille.Document) -> None:
            doc.set_field("tag", "yes")

    result = lucille.run(config=config, stages=[Tag()], mode="test")
    # DropDocument is gone: every document indexed, tagged by the given stage.
    assert (result.succeeded, result.dropped) == (4, 0), result.summary
    assert all(d.get_string("tag") == "yes" for d in result.documents)


def test_stages_with_several_pipelines_is_an_error_naming_the_fix() -> None:
    config = {
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1, "pipeline": "a"}],
        "pipelines": [{"name": "a", "stages": []}, {"name": "b", "stages": []}],
    }
    with pytest.raises(ValueError, match="2 pipelines"):
        lucille.run(config=config, stages=[{"class": "DropDocument"}], mode="test")


def test_a_connector_object_replaces_the_configs_connectors() -> None:
    config = {"connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 100}]}
    result = lucille.run(config=config, connector=Source(5, {"name": "mine"}), mode="test")
    assert [c.name for c in result.connectors] == ["mine"]
    assert result.published == 5


def test_an_indexer_object_receives_the_documents() -> None:
    class Collect(lucille.Indexer):
        def __init__(self) -> None:
            super().__init__({"batchSize": 4})
            self.ids: list[str] = []
            self.closed = 0

        def send_batch(self, docs: list[lucille.Document]) -> None:
            self.ids.extend(d.id for d in docs)

        def close(self) -> None:
            self.closed += 1

    sink = Collect()
    result = lucille.run(connector=Source(10), indexer=sink, progress=False)
    assert result.status == "Success", result.summary
    assert sorted(sink.ids) == sorted(f"d{i}" for i in range(10))
    assert sink.closed == 1


def test_wrong_objects_are_type_errors() -> None:
    # The stubs reject these objects too; cast to reach the run-time check.
    wrong = cast(Any, object())
    with pytest.raises(TypeError, match="stages= takes"):
        lucille.run(stages=[42], connector=Source(1), mode="test")
    with pytest.raises(TypeError, match="connector= takes"):
        lucille.run(connector=wrong, mode="test")
    with pytest.raises(TypeError, match="indexer= takes"):
        lucille.run(connector=Source(1), indexer=wrong, mode="test")
    assert vars(lucille._loader.given) == {}


def test_progress_outside_a_terminal_is_plain_text_without_tqdm(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Whether or not tqdm is installed here, the plain-text display is the fallback.
    original = lucille._notebook.Progress.__init__

    def no_tqdm(self: lucille._notebook.Progress) -> None:
        original(self)
        self._tqdm = None

    monkeypatch.setattr(lucille._notebook.Progress, "__init__", no_tqdm)
    result = lucille.run(connector=Source(7), mode="test", progress=True)
    assert result.succeeded == 7
    err = capsys.readouterr().err
    # The display ends on the final counts, on a line of its own.
    assert "7 published, 7 indexed, 0 failed, 0 dropped" in err


def test_progress_uses_tqdm_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    tqdm = pytest.importorskip("tqdm")
    bars: list[Any] = []
    real = tqdm.tqdm

    def recording(*args: Any, **kwargs: Any) -> Any:
        bar = real(*args, **kwargs)
        bars.append(bar)
        return bar

    monkeypatch.setattr(tqdm, "tqdm", recording)
    result = lucille.run(connector=Source(9), mode="test", progress=True)
    assert result.succeeded == 9
    assert bars, "no tqdm bar was made"
    assert bars[-1].n == 9 and bars[-1].total == 9


def test_no_progress_display_in_a_plain_script_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    lucille.run(connector=Source(3), mode="test")
    assert "published," not in capsys.readouterr().err


INTERRUPTED_SCRIPT = """
import json, signal, sys, time
import lucille

# As a notebook kernel has it: SIGINT delivered and raising KeyboardInterrupt, whatever this
# process inherited from the test runner's (an inherited ignored or blocked SIGINT, seen under
# pytest-xdist, would make the interrupt below never arrive).
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
signal.signal(signal.SIGINT, signal.default_int_handler)

class Source(lucille.Connector):
    def execute(self, publisher):
        for i in range(1000):
            publisher.publish(lucille.Document(f"d{i}"))

class Slow(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "d5":
            print("SLOW", flush=True)
        time.sleep(0.05)

result = lucille.run(config={"publisher": {"queueCapacity": 10}}, stages=[Slow({})],
                     connector=Source(), mode="test", progress=False)
print(json.dumps({"interrupted": result.interrupted, "status": result.status,
                  "published": result.published, "succeeded": result.succeeded,
                  "received": len(result.documents)}), flush=True)
"""


def test_an_interrupt_stops_the_run_and_returns_the_partial_result(tmp_path: Path) -> None:
    # A notebook kernel's interrupt is SIGINT to the process running lucille.run.
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED_SCRIPT)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "SLOW"
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("the interrupted run did not return")
    assert p.returncode == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    assert got["interrupted"] is True, got
    assert got["status"] == "Failure", got
    # Stopped well before the end; what was published was drained and indexed.
    assert 5 < got["published"] < 1000, got
    assert got["succeeded"] == got["published"] == got["received"], got
    assert "interrupted: stopping the run" in err
