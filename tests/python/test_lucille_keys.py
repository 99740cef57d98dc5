"""Lucille keys that tune a run: pipelines[].threads, indexer.logRate, indexer.batchByteSize,
runner.metricsLoggingLevel."""

import importlib
import logging
import pathlib
import sys
from types import ModuleType
from typing import Any

import pytest

import lucille

STAGES_PY = """
import threading
import lucille

STARTS = []

class Count(lucille.Stage):
    def start(self):
        STARTS.append(threading.get_ident())
    def process_document(self, doc):
        pass
"""

INDEXER_PY = """
import lucille

BATCHES = []

class Record(lucille.Indexer):
    def send_batch(self, docs):
        BATCHES.append([d.id for d in docs])
        return [None] * len(docs)
"""


@pytest.fixture
def mods(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    (tmp_path / "keys_stages.py").write_text(STAGES_PY)
    (tmp_path / "keys_indexer.py").write_text(INDEXER_PY)
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in ("keys_stages", "keys_indexer"):
        sys.modules.pop(m, None)
    return importlib.import_module("keys_stages"), importlib.import_module("keys_indexer")


def test_pipeline_threads_overrides_worker_threads_for_that_pipeline(mods: tuple[ModuleType, ModuleType]) -> None:
    stages, _ = mods
    cfg = {
        "connectors": [
            {"name": "a", "class": "SequenceConnector", "numDocs": 20, "pipeline": "three"},
            {"name": "b", "class": "SequenceConnector", "numDocs": 20, "pipeline": "default"},
        ],
        "pipelines": [
            {"name": "three", "threads": 3, "stages": [{"class": "keys_stages:Count"}]},
            {"name": "default", "stages": [{"class": "keys_stages:Count"}]},
        ],
        "worker": {"threads": 1},
    }
    r = lucille.run(config=cfg, mode="test")
    assert (r.status, r.succeeded) == ("Success", 40), r.summary
    # one stage instance per worker thread: 3 for the first pipeline, worker.threads for the other
    assert len(stages.STARTS) == 4
    errors = lucille.validate(config={**cfg, "pipelines": [{"name": "three", "threads": 0, "stages": []},
                                                           {"name": "default", "threads": "many", "stages": []}]})
    assert [e.split(":")[0] for e in errors] == ["pipelines[0].threads", "pipelines[1].threads"], errors


def test_log_rate_logs_every_n_documents_indexed(mods: tuple[ModuleType, ModuleType], caplog: pytest.LogCaptureFixture) -> None:
    cfg = {
        "connectors": [{"name": "a", "class": "SequenceConnector", "numDocs": 10}],
        "indexer": {"class": "keys_indexer:Record", "batchSize": 2, "logRate": 4},
    }
    with caplog.at_level(logging.INFO, logger="lucille"):
        r = lucille.run(config=cfg)
    assert r.succeeded == 10, r.summary
    lines = [m for m in caplog.messages if m.startswith("Indexer: ") and "docs indexed (" in m]
    assert [line.split(" docs")[0] for line in lines] == ["Indexer: 4", "Indexer: 8"], lines
    (e,) = lucille.validate(config={**cfg, "indexer": {"logRate": 0}})
    assert e.startswith("indexer.logRate")


def test_batch_byte_size_caps_batches_by_json_size(mods: tuple[ModuleType, ModuleType]) -> None:
    _, indexer = mods
    text = "x" * 1000
    cfg: dict[str, Any] = {

        "connectors": [{"name": "a", "class": "SequenceConnector", "numDocs": 7}],
        "pipelines": [],
        "indexer": {"class": "keys_indexer:Record", "batchByteSize": 2500, "batchTimeout": 1000},
    }
    cfg["connectors"][0]["pipeline"] = "p"
    cfg["pipelines"] = [{"name": "p", "stages": [{"class": "SetStaticValues", "staticValues": {"text": text}}]}]
    r = lucille.run(config=cfg)
    assert r.succeeded == 7, r.summary
    # each document is a little over 1000 bytes of JSON: two fit under 2500, a third does not
    assert [len(b) for b in indexer.BATCHES] == [2, 2, 2, 1], indexer.BATCHES
    # with batchSize too, whichever limit comes first cuts the batch
    indexer.BATCHES.clear()
    cfg["indexer"]["batchSize"] = 1
    assert lucille.run(config=cfg).succeeded == 7
    assert [len(b) for b in indexer.BATCHES] == [1] * 7
    (e,) = lucille.validate(config={**cfg, "indexer": {"batchByteSize": "big"}})
    assert e.startswith("indexer.batchByteSize")


def test_connectors_without_a_name_are_named_by_position_as_in_lucille() -> None:
    cfg = {"connectors": [
        {"class": "SequenceConnector", "numDocs": 1},
        {"class": "SequenceConnector", "numDocs": 2, "name": "mine"},
        {"class": "SequenceConnector", "numDocs": 3},
    ]}
    r = lucille.run(config=cfg, mode="test")
    assert [(c.name, c.succeeded) for c in r.connectors] == [("connector_1", 1), ("mine", 2), ("connector_3", 3)]
    (e,) = lucille.validate(config={"connectors": [{"class": "SequenceConnector", "numDocs": 1},
                                                   {"class": "SequenceConnector", "numDocs": 1, "name": "connector_1"}]})
    assert e.startswith("connectors[1].name") and "duplicate" in e


def test_solr_url_is_needed_only_to_send_as_in_lucille() -> None:
    cfg = {"connectors": [{"name": "a", "class": "SequenceConnector", "numDocs": 3}], "indexer": {"type": "solr"}}
    assert lucille.validate(config=cfg) == []
    assert lucille.run(config=cfg, mode="test").succeeded == 3
    # sendEnabled: false runs without the backend, as Lucille's bypass
    off = {**cfg, "indexer": {"type": "solr", "sendEnabled": False}}
    r = lucille.run(config=off)
    assert (r.status, r.succeeded) == ("Success", 3), r.summary
    # a run that would send fails before its connector starts, naming the key
    r = lucille.run(config=cfg)
    assert (r.status, r.published) == ("Failure", 0), r.summary
    assert "solr.url" in r.summary and "missing" in r.summary, r.summary


def test_metrics_logging_level_sets_the_level_of_the_stage_metrics_lines(caplog: pytest.LogCaptureFixture) -> None:
    def stage_lines(cfg: dict[str, Any]) -> list[int]:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="lucille"):
            r = lucille.run(config=cfg, mode="test")
        assert r.succeeded == 2, r.summary
        return [rec.levelno for rec in caplog.records if " stage copy: 2 docs processed" in rec.getMessage()]

    cfg: dict[str, Any] = {
        "connectors": [{"name": "a", "class": "SequenceConnector", "numDocs": 2, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"name": "copy", "class": "CopyFields", "fieldMapping": {"id": "x"}}]}],
    }
    assert stage_lines(cfg) == [logging.INFO]
    assert stage_lines({**cfg, "runner": {"metricsLoggingLevel": "WARN"}}) == [logging.WARNING]
    assert stage_lines({**cfg, "runner": {"metricsLoggingLevel": "error"}}) == [logging.ERROR]
    # Below the level the run logs at (INFO), the lines are not shown.
    assert stage_lines({**cfg, "runner": {"metricsLoggingLevel": "DEBUG"}}) == []
    (e,) = lucille.validate(config={**cfg, "runner": {"metricsLoggingLevel": "LOUD"}})
    assert e.startswith("runner.metricsLoggingLevel") and "INFO" in e, e
