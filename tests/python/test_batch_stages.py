"""Python stages with process_batch and the batchSize key: the worker hands such a stage up to
batchSize documents at once, with per-document accounting and children before parents."""

import sys
from typing import Any, Iterator, Optional, Sequence


import pytest

import lucille
from lucille import Document, Pipeline
from pathlib import Path

MODULE = sys.modules[__name__]


class Batched(lucille.Stage):
    """Records its batch sizes; doc "3" gets a child; any doc with id in config["fail_on"]
    makes the whole batch raise."""

    sizes: list[int] = []

    def process_batch(self, docs: list[Document]) -> list[Optional[list[Document]]]:
        ids = [d.id for d in docs]
        if set(ids) & set(self.config.get("fail_on", [])):
            raise RuntimeError(f"model rejected batch {ids}")
        Batched.sizes.append(len(docs))
        for d in docs:
            d.set_field("batch_len", len(docs))
        return [[Document(d.id + "-child")] if d.id == "3" else None for d in docs]


class WrongLength(lucille.Stage):
    def process_batch(self, docs: list[Document]) -> list[None]:
        return [None]


class PerDocOnly(lucille.Stage):
    def process_document(self, doc: Document) -> None:
        pass


def run(
    stage_config: dict[str, Any],
    num_docs: int = 10,
    threads: int = 1,
    extra_stages: Sequence[dict[str, Any]] = (),
) -> lucille.RunResult:
    return lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": num_docs, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [stage_config, *extra_stages]}],
        "worker": {"threads": threads},
    }, mode="test")


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    Batched.sizes = []
    yield


def test_batches_of_the_configured_size_with_children_first() -> None:
    r = run({"class": f"{__name__}:Batched", "batchSize": 4},
            extra_stages=[{"class": "SetStaticValues", "staticValues": {"after": "yes"}}])
    assert Batched.sizes == [4, 4, 2]
    assert (r.status, r.published, r.succeeded, r.failed) == ("Success", 10, 11, 0)
    ids = [d.id for d in r.documents]
    assert ids == ["0", "1", "2", "3-child", "3", "4", "5", "6", "7", "8", "9"]
    docs = {d.id: d for d in r.documents}
    assert [docs[str(i)].get("batch_len") for i in range(10)] == [4] * 8 + [2] * 2
    assert all(d.get("after") == "yes" for d in r.documents), "children and parents go on downstream"
    assert not docs["3-child"].has("batch_len"), "a child only goes through later stages"
    assert [e[0] for e in r.events if e[1] == "CREATE"] == ["3-child"]


def test_default_batch_size_is_one_document_at_a_time() -> None:
    r = run({"class": f"{__name__}:Batched"}, num_docs=3)
    assert Batched.sizes == [1, 1, 1]
    assert r.succeeded == 3


def test_an_exception_fails_every_document_of_its_batch() -> None:
    r = run({"class": f"{__name__}:Batched", "batchSize": 5, "fail_on": ["7"]})
    assert (r.succeeded, r.failed) == (6, 5), "0-4 and the child of 3 succeed"
    failed = sorted(e[0] for e in r.events if e[1] == "FAIL")
    assert failed == ["5", "6", "7", "8", "9"]
    assert all("model rejected batch" in (e[2] or "") for e in r.events if e[1] == "FAIL")
    assert sorted(d.id for d in r.documents) == ["0", "1", "2", "3", "3-child", "4"]


def test_a_result_of_the_wrong_length_fails_the_batch() -> None:
    r = run({"class": f"{__name__}:WrongLength", "batchSize": 3}, num_docs=3)
    assert r.failed == 3
    fails = [e[2] or "" for e in r.events if e[1] == "FAIL"]
    assert all("one entry" in m and "1 entries for 3 documents" in m for m in fails)



def test_batch_only_stage_in_a_notebook_pipeline() -> None:
    p = Pipeline([Batched({"batchSize": 8})])
    out = p.process(Document("3"))
    assert [d.id for d in out] == ["3-child", "3"]
    assert out[1].get("batch_len") == 1


def test_bad_batch_size_is_a_config_error() -> None:
    def errors(stage: dict[str, Any]) -> list[str]:
        return lucille.validate(config={
            "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
            "pipelines": [{"name": "p", "stages": [stage]}],
        })
    (err,) = errors({"class": f"{__name__}:PerDocOnly", "batchSize": 4})
    assert "stages[0].batchSize" in err and "process_batch" in err
    (err,) = errors({"class": f"{__name__}:Batched", "batchSize": 0})
    assert "stages[0].batchSize" in err and "at least 1" in err
    with pytest.raises(ValueError, match="batchSize"):
        Pipeline([PerDocOnly({"batchSize": 2})])


class FailsFirstBatch(lucille.Stage):
    """Raises on the first batch holding document "2"; later calls succeed."""

    calls: list[list[str]] = []

    def process_batch(self, docs: list[Document]) -> None:
        ids = [d.id for d in docs]
        FailsFirstBatch.calls.append(ids)
        if "2" in ids and len(FailsFirstBatch.calls) == 1:
            raise RuntimeError("transient")
        for d in docs:
            d.set_field("ok", True)


def test_a_failed_batch_is_retried_document_by_document(tmp_path: Path) -> None:
    FailsFirstBatch.calls = []
    r = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 4, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": f"{__name__}:FailsFirstBatch", "batchSize": 4}]}],
        "worker": {"threads": 1, "maxRetries": 1, "deadLetterPath": str(tmp_path / "dead.jsonl")},
    }, mode="test")
    assert (r.succeeded, r.failed) == (4, 0)
    assert FailsFirstBatch.calls == [["0", "1", "2", "3"], ["0"], ["1"], ["2"], ["3"]]
    assert all(d.get("ok") for d in r.documents)


def test_batches_with_several_worker_threads_account_for_every_document() -> None:
    r = run({"class": f"{__name__}:Batched", "batchSize": 8}, num_docs=200, threads=2)
    assert (r.published, r.succeeded, r.failed) == (200, 201, 0)
    assert sum(Batched.sizes) == 200 and max(Batched.sizes) <= 8
    assert sorted(d.id for d in r.documents) == sorted([str(i) for i in range(200)] + ["3-child"])
