"""Lucille's connector class names, including its deprecated CSVConnector, JSONConnector and
XMLConnector, which run as the FileConnector with the matching handler and their old keys."""

import time
from pathlib import Path
from typing import Any

import pytest

import lucille


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connector: dict[str, Any], mode: str = "test"
) -> lucille.RunResult:
    monkeypatch.chdir(tmp_path)
    return lucille.run(config={"connectors": [{"name": "c", **connector}]}, mode=mode)


def test_csv_connector_reads_its_one_file_with_the_csv_handler_whatever_its_extension(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data.txt").write_text("key;Title\nk1;One\nk2;Two\n")
    r = run(tmp_path, monkeypatch, {
        "class": "com.kmwllc.lucille.connector.CSVConnector", "path": "data.txt",
        "idField": "key", "separatorChar": ";", "lowercaseFields": True, "docIdPrefix": "csv-",
        "moveToAfterProcessing": "done",
    })
    assert (r.status, r.succeeded) == ("Success", 2), r.summary
    assert [d.id for d in r.documents] == ["csv-k1", "csv-k2"]
    assert r.documents[0].get("title") == "One"
    assert (tmp_path / "done" / "data.txt").exists()


def test_csv_connector_from_the_classpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = tmp_path / "src" / "test" / "resources" / "RunnerTest"
    res.mkdir(parents=True)
    (res / "singleDoc.csv").write_text("id,a\n1,x\n")
    r = run(tmp_path, monkeypatch, {"class": "CSVConnector", "idField": "id", "path": "classpath:RunnerTest/singleDoc.csv"})
    assert [d.id for d in r.documents] == ["1"], r.summary


def test_json_connector_reads_json_lines_from_json_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "in.data").write_text('{"id": "a", "x": 1}\n{"id": "b", "x": 2}\n')
    r = run(tmp_path, monkeypatch, {"class": "com.kmwllc.lucille.connector.JSONConnector", "jsonPath": "in.data"})
    assert [(d.id, d.get("x")) for d in r.documents] == [("a", 1), ("b", 2)], r.summary


def test_xml_connector_reads_file_paths_and_file_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "staff.xml").write_text(
        "<Company><staff><id>1</id><name>Ann</name></staff><staff><id>2</id><name>Bo</name></staff></Company>"
    )
    keys = {"xmlRootPath": "/Company/staff", "xmlIdPath": "/Company/staff/id", "encoding": "utf-8", "outputField": "xml"}
    r = run(tmp_path, monkeypatch, {"class": "com.kmwllc.lucille.connector.xml.XMLConnector", "filePaths": ["staff.xml"], **keys})
    assert [d.id for d in r.documents] == ["1", "2"], r.summary
    assert "<name>Ann</name>" in r.documents[0].get("xml")
    r = run(tmp_path, monkeypatch, {"class": "XMLConnector", "urlFiles": [f"file://{tmp_path / 'staff.xml'}"], **keys})
    assert [d.id for d in r.documents] == ["1", "2"], r.summary


def test_old_connectors_reject_what_lucille_rejects_and_what_is_not_done_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def errors(connector: dict[str, Any]) -> list[str]:
        return lucille.validate(config={"connectors": [{"name": "c", **connector}]})

    e = errors({"class": "com.kmwllc.lucille.connector.CSVConnector", "paths": ["a.csv"]})
    assert sorted(x.split(":")[0] for x in e) == ["connectors[0].path", "connectors[0].paths"], e
    e = errors({"class": "com.kmwllc.lucille.connector.JSONConnector", "jsonPath": "a", "idField": "x"})
    assert any("connectors[0].idField" in x for x in e), e
    keys = {"xmlRootPath": "/a/b", "xmlIdPath": "/a/b/id", "encoding": "utf-8", "outputField": "xml"}
    (one,) = errors({"class": "com.kmwllc.lucille.connector.xml.XMLConnector", "urlFiles": ["https://example.org/a.xml"], **keys})
    assert "connectors[0].urlFiles" in one and "file://" in one
    (one,) = errors({"class": "com.kmwllc.lucille.connector.xml.XMLConnector", **keys})
    assert "filePaths" in one
    e = errors({"class": "com.kmwllc.lucille.connector.xml.XMLConnector", "filePaths": ["a.xml"], "xmlRootPath": "/a/b"})
    assert {x.split(":")[0] for x in e} >= {"connectors[0].xmlIdPath", "connectors[0].encoding", "connectors[0].outputField"}, e
    (one,) = errors({"class": "com.kmwllc.lucille.connector.CSVConnector", "path": "a.csv", "separatorChar": ";;"})
    assert "connectors[0].separatorChar" in one


def test_lucille_file_connector_keys_not_done_here_say_what_to_use_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    base = {"name": "f", "class": "FileConnector", "paths": ["s3://bucket/folder/"]}
    # Lucille's file state is kept in the checkpoint (tests/python/test_file_checkpoint.py);
    # only a store that cannot be a local file is refused.
    assert lucille.validate(config={"connectors": [{
        **base, "s3": {"region": "us-east-1"},
        "state": {"driver": "org.apache.derby.iapi.jdbc.AutoloadedDriver"},
    }]}) == []
    (e,) = lucille.validate(config={"connectors": [{
        **base, "s3": {"region": "us-east-1"},
        "state": {"connectionString": "jdbc:mysql://db:3306/state"},
    }]})
    assert "connectors[0].state.connectionString" in e and "SQLite" in e, e
    # The cloud blocks are read (tests/python/test_cloud_storage.py): here only their own errors,
    # one each.
    azure, gcp = sorted(lucille.validate(config={"connectors": [{
        **base, "s3": {"region": "us-east-1"}, "gcp": {"pathToServiceKey": "k"}, "azure": {}}]}))
    assert "connectors[0].gcp.pathToServiceKey: cannot read the service key" in gcp, gcp
    assert "connectors[0].azure: needs connectionString, or accountName and accountKey" in azure, azure
    (e,) = lucille.validate(config={"connectors": [{**base, "s3": {}, "filterOptions": {"lastPublishedCutoff": "6h"}}]})
    assert e.startswith("connectors[0].filterOptions.lastPublishedCutoff") and "checkpoint" in e


def test_xml_connector_with_both_file_lists_is_rejected_and_package_names_are_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    keys = {"xmlRootPath": "/a/b", "xmlIdPath": "/a/b/id", "encoding": "utf-8", "outputField": "xml"}
    (e,) = lucille.validate(config={"connectors": [{"name": "c", "class": "com.kmwllc.lucille.connector.xml.XMLConnector",
                                                    "filePaths": ["a.xml"], "urlFiles": ["file://b.xml"], **keys}]})
    assert e.startswith("connectors[0].filePaths") and "not both" in e
    (e,) = lucille.validate(config={"connectors": [{"name": "c", "class": "com.kmwllc.lucille.connector.xml.SequenceConnector", "numDocs": 1}]})
    assert "unknown connector class" in e
    assert lucille.validate(config={"connectors": [{"name": "c", "class": "com.kmwllc.lucille.connector.SequenceConnector", "numDocs": 1}]}) == []


def test_sleep_connector_waits_between_connectors_and_publishes_nothing() -> None:
    started = time.monotonic()
    r = lucille.run(config={"connectors": [
        {"name": "first", "class": "SequenceConnector", "numDocs": 2},
        {"name": "nap", "class": "com.kmwllc.lucille.connector.SleepConnector", "duration": 300},
        {"name": "second", "class": "SequenceConnector", "numDocs": 1, "docIdPrefix": "b-"},
    ]}, mode="test")
    assert time.monotonic() - started >= 0.3
    assert (r.status, r.published, r.succeeded) == ("Success", 3, 3), r.summary
    assert [(c.name, c.published) for c in r.connectors] == [("first", 2), ("nap", 0), ("second", 1)]

    bad_configs: list[tuple[dict[str, Any], str]] = [
        ({}, "duration"), ({"duration": -5}, "duration"), ({"duration": "soon"}, "duration")]
    for bad, message in bad_configs:
        with pytest.raises(lucille.ConfigError) as e:
            lucille.run(config={"connectors": [{"name": "nap", "class": "SleepConnector", **bad}]},
                        mode="test")
        assert f"connectors[0].{message}" in str(e.value), str(e.value)
