"""Python indexers (lucille.Indexer subclasses named by indexer.class), the CSV indexer, and the
LanceDB example: per-document results become FINISH / FAIL, order is kept, nothing is lost."""

import csv
import importlib
import pathlib
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any, Sequence


import pytest

import lucille

ROOT = pathlib.Path(__file__).resolve().parents[2]

INDEXERS_PY = """
import lucille

LOG = []

class Memory(lucille.Indexer):
    def validate_connection(self):
        LOG.append(("validate", self.config.get("label")))
    def send_batch(self, docs):
        LOG.append(("send", [d.id for d in docs]))
        return [f"rejected {d.id}" if d.get("bad") else None for d in docs]
    def delete_batch(self, ids):
        LOG.append(("delete", list(ids)))
    def delete_by_field(self, field, value):
        LOG.append(("delete_by", field, value))
    def close(self):
        LOG.append(("close",))

class ByIdErrors(lucille.Indexer):
    def send_batch(self, docs):
        return {d.id: "no title" for d in docs if not d.has("title")}

class Raises(lucille.Indexer):
    def send_batch(self, docs):
        raise ConnectionError("store is down")

class WrongLength(lucille.Indexer):
    def send_batch(self, docs):
        return [None]

class NoDeletes(lucille.Indexer):
    def send_batch(self, docs):
        return None

class CannotConnect(lucille.Indexer):
    def validate_connection(self):
        raise ConnectionError("no route to store")
    def send_batch(self, docs):
        return None

class Source(lucille.Connector):
    def execute(self, publisher):
        for spec in self.config["docs"]:
            publisher.publish(lucille.Document(spec["id"], spec.get("fields", {})))
"""


@pytest.fixture
def mod(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    (tmp_path / "idx_mod.py").write_text(INDEXERS_PY)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("idx_mod", None)
    idx_mod = importlib.import_module("idx_mod")

    idx_mod.LOG.clear()
    return idx_mod


def config(docs: Sequence[object], **indexer: Any) -> dict[str, Any]:
    return {
        "connectors": [{"name": "src", "class": "idx_mod:Source", "docs": docs}],
        "indexer": {"batchSize": 100, "batchTimeout": 20, **indexer},
    }


def fails(result: lucille.RunResult) -> set[str]:
    return {d for d, t, _ in result.events if t == "FAIL"}


def test_per_document_errors_fail_only_those_documents(mod: ModuleType) -> None:
    docs = [{"id": "a"}, {"id": "b", "fields": {"bad": True}}, {"id": "c"}]
    r = lucille.run(config=config(docs, **{"class": "idx_mod:Memory", "label": "mine"}), mode="local")
    assert (r.status, r.succeeded, r.failed) == ("Success", 2, 1)
    assert mod.LOG == [("validate", "mine"), ("send", ["a", "b", "c"]), ("close",)]


def test_failure_reasons_reach_the_events(mod: ModuleType) -> None:
    docs = [{"id": "a", "fields": {"title": "t"}}, {"id": "b"}]
    cfg = config(docs, **{"class": "idx_mod:ByIdErrors"})
    r = lucille.run(config=cfg, mode="local")
    assert (r.succeeded, r.failed) == (1, 1)
    assert r.connectors[0].failed == 1


def test_deletes_keep_batch_order(mod: ModuleType) -> None:
    docs = [
        {"id": "a"},
        {"id": "a", "fields": {"deleted": "yes"}},
        {"id": "x", "fields": {"deleted": "yes", "f": "color", "v": "red"}},
        {"id": "b"},
    ]
    cfg = config(
        docs,
        **{
            "class": "idx_mod:Memory",
            "deletionMarkerField": "deleted",
            "deletionMarkerFieldValue": "yes",
            "deleteByFieldField": "f",
            "deleteByFieldValue": "v",
        },
    )
    r = lucille.run(config=cfg, mode="local")
    assert (r.succeeded, r.failed) == (4, 0)
    assert mod.LOG[1:4] == [("send", ["a"]), ("delete", ["a"]), ("delete_by", "color", "red")]
    assert mod.LOG[4] == ("send", ["b"])


def test_an_exception_fails_every_document_of_the_call(mod: ModuleType) -> None:
    # Failed documents do not fail the run (as Lucille): the connector completed.
    r = lucille.run(config=config([{"id": "a"}, {"id": "b"}], **{"class": "idx_mod:Raises"}))
    assert (r.status, r.succeeded, r.failed) == ("Success", 0, 2)
    assert "2 docs FAILED" in r.summary


def test_a_wrong_number_of_results_fails_the_batch(mod: ModuleType) -> None:
    r = lucille.run(config=config([{"id": "a"}, {"id": "b"}], **{"class": "idx_mod:WrongLength"}))
    assert r.failed == 2


def test_deletes_on_an_indexer_without_delete_batch_fail_with_a_reason(mod: ModuleType) -> None:
    cfg = config(
        [{"id": "a", "fields": {"deleted": "yes"}}],
        **{"class": "idx_mod:NoDeletes", "deletionMarkerField": "deleted", "deletionMarkerFieldValue": "yes"},
    )
    r = lucille.run(config=cfg, mode="local")
    assert r.failed == 1


def test_validate_connection_failure_fails_the_run_up_front(mod: ModuleType) -> None:
    r = lucille.run(config=config([{"id": "a"}], **{"class": "idx_mod:CannotConnect"}))
    assert r.status == "Failure" and r.published == 0
    assert "no route to store" in r.summary or "no route to store" in str(r.connectors[0].message)


def test_bad_indexer_class_is_a_config_error(mod: ModuleType) -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config=config([{"id": "a"}], **{"class": "idx_mod:Nope"}))
    assert "indexer.class" in str(e.value)
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config=config([{"id": "a"}], **{"class": "com.kmwllc.lucille.indexer.NoSuchIndexer"}))
    assert "unknown indexer class" in str(e.value) and "com.kmwllc.lucille.indexer.SolrIndexer" in str(e.value)
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config=config([{"id": "a"}], **{"class": "com.kmwllc.lucille.pinecone.indexer.PineconeIndexer"}))
    assert "pinecone.index" in str(e.value), "Lucille's plugin indexer is built in and wants its block"


def test_indexer_class_wins_over_type_as_in_lucille(mod: ModuleType) -> None:
    r = lucille.run(config=config([{"id": "a"}], **{"class": "idx_mod:Memory", "type": "csv"}), mode="local")
    assert (r.status, r.succeeded) == ("Success", 1), r.summary
    assert ("send", ["a"]) in mod.LOG


def test_lucille_indexer_class_names_choose_the_built_in_backend(tmp_path: pathlib.Path, mod: ModuleType) -> None:
    out = tmp_path / "docs.csv"
    cfg = config([{"id": "a", "fields": {"t": "x"}}], **{"class": "com.kmwllc.lucille.indexer.CSVIndexer", "type": "solr"})
    cfg["csv"] = {"path": str(out), "columns": ["id", "t"]}
    r = lucille.run(config=cfg, mode="local")
    assert (r.status, r.succeeded) == ("Success", 1), r.summary
    assert out.read_text().splitlines() == ["id,t", "a,x"]
    for name in ["NopIndexer", "com.kmwllc.lucille.indexer.NopIndexer"]:
        r = lucille.run(config=config([{"id": "a"}], **{"class": name}), mode="local")
        assert (r.status, r.succeeded) == ("Success", 1), r.summary
    # Lucille's OpenSearchIndexer and ElasticsearchIndexer need their blocks, as the types do
    # (SolrIndexer's url is needed only to send: test_lucille_keys)
    for name, block in [("OpenSearchIndexer", "opensearch"), ("ElasticsearchIndexer", "elasticsearch")]:
        errors = lucille.validate(config=config([{"id": "a"}], **{"class": f"com.kmwllc.lucille.indexer.{name}"}))
        assert any(e.startswith(f"{block}.") for e in errors), (name, errors)


def test_csv_indexer_writes_columns_in_order(tmp_path: pathlib.Path, mod: ModuleType) -> None:
    out = tmp_path / "out" / "docs.csv"
    docs = [
        {"id": "a", "fields": {"title": "Hello, world", "tags": ["x", "y"]}},
        {"id": "b", "fields": {"title": "Two"}},
    ]
    cfg = config(docs, type="CSV")
    cfg["csv"] = {"path": str(out), "columns": ["id", "title", "tags"]}
    r = lucille.run(config=cfg, mode="local")
    assert (r.status, r.succeeded) == ("Success", 2)
    rows = list(csv.reader(out.open()))
    assert rows == [["id", "title", "tags"], ["a", "Hello, world", '["x","y"]'], ["b", "Two", ""]]


def test_csv_indexer_rejects_deletion_markers_up_front(tmp_path: pathlib.Path, mod: ModuleType) -> None:
    cfg = config([{"id": "a"}], type="csv", deletionMarkerField="d", deletionMarkerFieldValue="y")
    cfg["csv"] = {"path": str(tmp_path / "x.csv")}
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config=cfg)
    msg = str(e.value)
    assert "columns" in msg and "deletionMarkerField" in msg


def test_lancedb_example_indexes_vectors_and_queries_them_back(tmp_path: pathlib.Path) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "vectors" / "search_lancedb.py"),
         str(tmp_path / "db"), "brewed tea leaves"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "5 docs succeeded" in r.stdout
    hits = [l for l in lines if ": " in l and l.split()[0].replace(".", "").isdigit()]
    assert hits[0].split()[1] == "tea:", r.stdout
