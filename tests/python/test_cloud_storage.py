"""The FileConnector on S3 (`paths: ["s3://bucket/prefix"]` with Lucille's `s3 { }` block) and the
ParquetConnector on S3 (`fsUri: "s3://"`), run through `lucille.run` and the `lucille` command
against a real S3-API server: moto, started by
scripts/services/s3.sh, which exports LUCILLE_TEST_S3_ENDPOINT. Skipped without it unless
LUCILLE_REQUIRE_SERVICES=1. Azure and GCS have no emulator installed here: their config and
credential handling is tested in Rust (crates/lucille-files/src/connector/file/tests/cloud.rs) and by `render` below."""

import hashlib
import json
import pathlib
import subprocess
import sys
import uuid
from typing import Any

import pytest

import lucille
from services import service_env

ENDPOINT = service_env("LUCILLE_TEST_S3_ENDPOINT", "s3.sh", module=True)
SECRET = "moto-secret-not-to-be-shown"


@pytest.fixture
def s3() -> Any:
    import boto3  # installed with moto[server]

    return boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key=SECRET)


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"lucille-py-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=name)
    return name


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def config(bucket: str, tmp: pathlib.Path, extra: str = "") -> str:
    return f"""
connectors: [{{ name: "s3files", class: "FileConnector", pipeline: "p",
  paths: ["s3://{bucket}/data/"],
  s3 {{ accessKeyId: "test", secretAccessKey: "{SECRET}", region: "us-east-1",
        endpoint: "{ENDPOINT}", maxNumOfPages: 2 }},
  fileHandlers {{ csv {{ idField: "id" }}, jsonl {{ idField: "id" }} }}
  {extra} }}]
pipelines: [{{ name: "p", stages: [] }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{tmp / 'out.jsonl'}" }}
"""


def test_s3_objects_are_read_through_handlers_then_incrementally(
        s3: Any, bucket: str, tmp_path: pathlib.Path) -> None:
    s3.put_object(Bucket=bucket, Key="data/a.jsonl", Body=b'{"id": "a1"}\n{"id": "a2"}\n{"id": "a3"}\n')
    s3.put_object(Bucket=bucket, Key="data/b.csv", Body=b"id,title\nb1,One\nb2,Two\n")
    s3.put_object(Bucket=bucket, Key="data/notes.txt", Body=b"hello from a bucket")
    s3.put_object(Bucket=bucket, Key="data/skip.log", Body=b"excluded")
    s3.put_object(Bucket=bucket, Key="elsewhere/x.txt", Body=b"outside the prefix")
    extra = (f', checkpoint {{ path: "{tmp_path / "state.sqlite"}" }}, incremental: true, '
             f'emitDeletes: true, filterOptions {{ excludes: [".*\\\\.log"] }}')
    hocon = config(bucket, tmp_path, extra)

    first = lucille.run(hocon=hocon, mode="test")
    assert first.status == "Success", first.summary
    got = {d.id: d for d in first.documents}
    notes = f"s3://{bucket}/data/notes.txt"
    assert set(got) == {"a1", "a2", "a3", "b1", "b2", md5(notes)}
    assert got["b2"].get("title") == "Two"
    assert got[md5(notes)].get("file_path") == notes
    assert got[md5(notes)].get("file_content") == "hello from a bucket"
    assert got[md5(notes)].get("file_size_bytes") == 19

    # Nothing changed in the bucket: nothing is read again.
    again = lucille.run(hocon=hocon, mode="test")
    assert again.status == "Success" and again.published == 0, again.summary

    # One object rewritten, one deleted, one added: only those are published.
    s3.put_object(Bucket=bucket, Key="data/a.jsonl", Body=b'{"id": "a-new"}\n')
    s3.delete_object(Bucket=bucket, Key="data/notes.txt")
    s3.put_object(Bucket=bucket, Key="data/new.txt", Body=b"new")
    third = lucille.run(hocon=hocon, mode="test")
    assert third.status == "Success", third.summary
    got = {d.id: d for d in third.documents}
    new = f"s3://{bucket}/data/new.txt"
    assert set(got) == {"a-new", md5(new), md5(notes)}
    assert got[md5(notes)].get("is_deleted") == "true"
    assert got[md5(new)].get("file_content") == "new"


def test_lucille_run_reads_a_bucket_and_a_missing_bucket_fails_clearly(
        s3: Any, bucket: str, tmp_path: pathlib.Path) -> None:
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"data/rows-{i}.jsonl", Body=f'{{"id": "r{i}"}}\n'.encode())
    conf = tmp_path / "s3.conf"
    conf.write_text(config(bucket, tmp_path))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = [json.loads(line)["id"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(out) == [f"r{i}" for i in range(5)]

    conf.write_text(config(f"{bucket}-missing", tmp_path))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert f"cannot list s3://{bucket}-missing/data/" in r.stdout + r.stderr
    assert SECRET not in r.stdout + r.stderr


def test_render_redacts_cloud_secrets_and_validate_names_bad_keys(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "cloud.conf"
    conf.write_text(f"""
connectors: [
  {{ name: "s3", class: "FileConnector", pipeline: "p", paths: ["s3://b/x/"],
     s3 {{ accessKeyId: "AKIAEXAMPLE", secretAccessKey: "{SECRET}" }} }},
  {{ name: "az", class: "FileConnector", pipeline: "p",
     paths: ["https://acct.blob.core.windows.net/cont/pre/"],
     azure {{ connectionString: "AccountName=acct;AccountKey=YXp1cmUta2V5LXNlY3JldA==;EndpointSuffix=core.windows.net" }} }},
  {{ name: "az2", class: "FileConnector", pipeline: "p",
     paths: ["https://acct.blob.core.windows.net/cont/"],
     azure {{ accountName: "acct", accountKey: "YW5vdGhlci1zZWNyZXQ=" }} }} ]
pipelines: [{{ name: "p", stages: [] }}]
indexer {{ type: "nop" }}
""")
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "render", str(conf)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for secret in (SECRET, "YXp1cmUta2V5LXNlY3JldA==", "YW5vdGhlci1zZWNyZXQ="):
        assert secret not in r.stdout
    assert "AKIAEXAMPLE" in r.stdout and "AccountName=acct" in r.stdout
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

    conf.write_text("""
connectors: [{ name: "s3", class: "FileConnector", pipeline: "p", paths: ["s3://b/x/"],
               s3 { accessKeyId: "AKIAEXAMPLE", maxNumOfPages: 0 } },
             { name: "gs", class: "FileConnector", pipeline: "p", paths: ["gs://b/x/"] }]
pipelines: [{ name: "p", stages: [] }]
indexer { type: "nop" }
""")
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(conf)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    text = r.stdout + r.stderr
    assert "s3.secretAccessKey" in text
    assert "s3.maxNumOfPages" in text
    assert "gcp block, which is missing" in text


def test_the_parquet_connector_reads_a_bucket_with_lucilles_keys(
    s3: Any, bucket: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lucille's vector-ingest example: fsUri "s3://", pathToStorage "bucket/folder", s3Key /
    # s3Secret; the endpoint and region come from the AWS environment, as the AWS SDKs read them.
    import io

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    for name, ids in [("parquet-stuff/b.parquet", ["3"]), ("parquet-stuff/a.parquet", ["1", "2"]),
                      ("parquet-stuff/notes.txt", None), ("elsewhere/c.parquet", ["9"])]:
        if ids is None:
            s3.put_object(Bucket=bucket, Key=name, Body=b"not parquet")
            continue
        buf = io.BytesIO()
        pq.write_table(pa.table({"pid": ids, "values": [[0.5, 1.5]] * len(ids)}), buf)
        s3.put_object(Bucket=bucket, Key=name, Body=buf.getvalue())
    monkeypatch.setenv("AWS_ENDPOINT_URL", ENDPOINT)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    connector = {"name": "pq", "class": "com.kmwllc.lucille.parquet.connector.ParquetConnector",
                 "pathToStorage": f"{bucket}/parquet-stuff", "fsUri": "s3://", "idField": "pid",
                 "s3Key": "test", "s3Secret": SECRET}
    result = lucille.run(config={"connectors": [connector]}, mode="test")
    assert result.status == "Success", result.summary
    # Only the *.parquet objects under the prefix, in name order; the id column is not a field.
    assert [d.id for d in result.documents] == ["1", "2", "3"]
    assert result.documents[0].get_list("values") == [0.5, 1.5]
    assert not result.documents[0].has("pid")
    # The same bucket named by fsUri, the prefix alone in pathToStorage.
    connector.update(fsUri=f"s3a://{bucket}", pathToStorage="/parquet-stuff/a.parquet")
    result = lucille.run(config={"connectors": [connector]}, mode="test")
    assert [d.id for d in result.documents] == ["1", "2"], result.summary
    # The secret never shows in the summary, even when the bucket is missing.
    connector.update(fsUri="s3://", pathToStorage="no-such-bucket-here/x")
    result = lucille.run(config={"connectors": [connector]}, mode="test")
    assert result.status == "Failure" and "no-such-bucket-here" in result.summary
    assert SECRET not in result.summary


def test_fetch_file_content_and_apply_file_handlers_read_objects(
    s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lucille's FetchFileContent / ApplyFileHandlers with an `s3 { }` block: a document naming
    # an s3:// object gets its bytes, or its records as children.
    import base64

    s3.put_object(Bucket=bucket, Key="in/hello.txt", Body=b"Hello, S3!")
    s3.put_object(Bucket=bucket, Key="in/rows.csv", Body=b"id,name\nr1,a\nr2,b\n")
    monkeypatch.setenv("AWS_ENDPOINT_URL", ENDPOINT)
    block = {"region": "us-east-1", "accessKeyId": "test", "secretAccessKey": SECRET}

    class Paths(lucille.Connector):
        def execute(self, publisher: Any) -> None:
            for name in ("hello.txt", "rows.csv", "missing.txt"):
                publisher.publish(lucille.Document(name, {"file_path": f"s3://{bucket}/in/{name}"}))

    stages = [
        {"class": "FetchFileContent", "s3": block,
         "conditions": [{"fields": ["file_path"], "values": [f"s3://{bucket}/in/hello.txt",
                                                             f"s3://{bucket}/in/missing.txt"]}]},
        {"class": "com.kmwllc.lucille.stage.ApplyFileHandlers", "s3": block,
         "fileHandlers": {"csv": {}}},
    ]
    result = lucille.run(config={"pipelines": [{"name": "p", "stages": stages}]},
                         connector=Paths(), mode="test")
    docs = {d.id: d for d in result.documents}
    assert base64.b64decode(docs["hello.txt"].get_string("file_content") or "") == b"Hello, S3!"
    rows = [docs[f"rows.csv-{n}"] for n in (1, 2)]
    assert [r.get("name") for r in rows] == ["a", "b"], sorted(docs)
    assert rows[0].get("source") == f"s3://{bucket}/in/rows.csv"
    assert "rows.csv" in docs
    # A missing object fails its document with its URL; the secret is not in the message.
    failed = [e for e in result.events if e[0] == "missing.txt" and e[1] == "FAIL"]
    assert failed and f"s3://{bucket}/in/missing.txt" in (failed[0][2] or ""), result.events
    assert SECRET not in result.summary and all(SECRET not in (e[2] or "") for e in result.events)
