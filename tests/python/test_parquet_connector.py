"""ParquetConnector through lucille.run and the CLI, on files written by pyarrow: row groups,
start / limit, nested and typed values, codecs, a corrupt file, other file systems rejected
(S3 buckets: tests/python/test_cloud_storage.py, on moto)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lucille

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CLASS = "com.kmwllc.lucille.parquet.connector.ParquetConnector"


def people() -> Any:
    # Lucille's ParquetConnectorTest data, with more types.
    return pa.table(
        {
            "name": ["Oliver", "Mia", "Jasper", "Mr. Meow", "Elijah", "Spot"],
            "age": pa.array([20, 35, 46, 8, 7, 3], pa.int64()),
            "net_worth": [10.0, 12.5, 7.5, 0.0, 15.3, -2.0],
            "species": ["Human", "Human", "Human", "Cat", "Human", None],
            "id": ["1", "2", "3", "4", "5", "6"],
            "hobbies": [["Reading", "Running"], ["Cooking", "Painting"], ["Gaming", "Reading"],
                        ["Sleeping", "Chasing mice"], ["Drawing", "Coding"], []],
            "born": pa.array([dt.date(2004, 2, 29)] * 6, pa.date32()),
            "seen": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)] * 6,
                             pa.timestamp("us", tz="UTC")),
            "local": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5)] * 6, pa.timestamp("ns")),
            "price": pa.array([decimal.Decimal("12.50")] * 6, pa.decimal128(10, 2)),
            "pet": pa.array([{"kind": "cat", "legs": 4}] * 6,
                            pa.struct([("kind", pa.string()), ("legs", pa.int32())])),
            "scores": pa.array([[("math", 1), ("art", 2)]] * 6, pa.map_(pa.string(), pa.int64())),
            "blob": pa.array([b"\x00\xff"] * 6, pa.binary()),
        }
    )


def config(path: Path, **keys: Any) -> dict[str, Any]:
    return {
        "connectors": [{"name": "pq", "class": CLASS, "pathToStorage": str(path), "idField": "id",
                        "fsUri": "file:///", **keys}],
    }


def test_rows_of_three_row_groups_become_documents(tmp_path: Path) -> None:
    path = tmp_path / "people.parquet"
    pq.write_table(people(), path, row_group_size=2)
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    result = lucille.run(config=config(path), mode="test")
    assert result.status == "Success", result.summary
    docs = result.documents
    assert [d.id for d in docs] == ["1", "2", "3", "4", "5", "6"]
    first = {k: v for k, v in docs[0].to_dict().items() if k != "run_id"}
    assert first == {
        "id": "1", "name": "Oliver", "age": 20, "net_worth": 10.0, "species": "Human",
        "hobbies": ["Reading", "Running"], "born": "2004-02-29",
        "seen": "2024-01-02T03:04:05.678Z", "local": "2024-01-02T03:04:05",
        "price": 12.5, "pet": {"kind": "cat", "legs": 4}, "scores": {"math": 1, "art": 2},
        "blob": "AP8=",
    }
    # Nulls and empty lists are left out.
    assert not docs[5].has("species") and not docs[5].has("hobbies")


def test_start_and_limit_as_lucille(tmp_path: Path) -> None:
    path = tmp_path / "people.parquet"
    pq.write_table(people(), path, row_group_size=2)

    def ids(**k: Any) -> list[str]:
        return [d.id for d in lucille.run(config=config(path, **k), mode="test").documents]

    assert ids(limit=3) == ["1", "2", "3"]
    assert ids(start=3) == ["4", "5", "6"]
    assert ids(start=2, limit=2) == ["3", "4"]
    assert ids(start=10) == []


def test_a_folder_of_files_with_other_codecs_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "more").mkdir(parents=True)
    table = pa.table({"id": ["a", "b"], "n": [1, 2]})
    pq.write_table(table, data / "a.parquet", compression="zstd")
    pq.write_table(pa.table({"id": ["c"], "n": [3]}), data / "more" / "c.parquet", compression="gzip")
    pq.write_table(pa.table({"id": ["d"], "n": [4]}), data / "more" / "d.parquet", compression="lz4")
    pq.write_table(pa.table({"id": ["e"], "n": [5]}), data / "more" / "e.parquet", compression="none")
    (data / "readme.txt").write_text("not parquet")
    out = tmp_path / "out.jsonl"
    conf = tmp_path / "pq.conf"
    conf.write_text(
        f"""
        connectors: [{{ name: "pq", class: "{CLASS}", pathToStorage: "{data}", idField: "id",
                        fsUri: "file:///", docIdPrefix: "p-", pipeline: "main" }}]
        pipelines: [{{ name: "main", stages: [] }}]
        indexer {{ type: "jsonl" }}
        jsonl {{ path: "{out}" }}
        """
    )
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    docs = sorted((json.loads(line) for line in out.read_text().splitlines()), key=lambda d: str(d["id"]))
    assert docs == [{"id": f"p-{k}", "n": n} for k, n in zip("abcde", range(1, 6))]


def test_a_corrupt_file_fails_the_connector_with_its_path(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    pq.write_table(people(), good)
    bad = tmp_path / "zbad.parquet"
    raw = good.read_bytes()
    bad.write_bytes(raw[: len(raw) // 2])
    result = lucille.run(config=config(tmp_path), mode="test")
    assert result.status == "Failure"
    assert "zbad.parquet" in result.summary, result.summary
    # The good file (read first, in name order) was published before the failure.
    assert result.published == 6


def test_other_file_systems_and_a_missing_id_field_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(config=config(tmp_path, fsUri="hdfs://namenode:8020", s3Key="k"), mode="test")
    text = str(e.value)
    assert "fsUri" in text and "hdfs://namenode:8020" in text and "s3://" in text, text
    assert "s3Secret" in text, text
    path = tmp_path / "people.parquet"
    pq.write_table(people(), path)
    cfg = config(path)
    cfg["connectors"][0]["idField"] = "nope"
    result = lucille.run(config=cfg, mode="test")
    assert result.status == "Failure" and "nope" in result.summary, result.summary
