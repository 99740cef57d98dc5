"""Lucille's own configs, run here unchanged: a ratchet on how many of them Lucille-rs accepts.

The corpus is `../shared/conformance/lucille` (Lucille's example run configs, its core test run
configs and the stage confs its unit tests load; `manifest.json` says which Lucille accepts). It
is other projects' data and is read in place; where it is absent the test skips.

Every config Lucille accepts is validated as Lucille would see it: from the folder Lucille is
started in (`cwd` in the manifest: an example's root, `lucille-core` for test resources). A
stage conf is validated as the only stage of a pipeline, with the class Lucille's test builds.
Example configs that validate are also run in test mode (the indexer bypassed, as their backends
cannot be installed here), with the environment variables their READMEs tell users to set
pointing at local stand-ins (`EXAMPLE_ENV`: a small Enron-style mail folder, buckets on the moto
S3 server). The counts only go up: lower the floors below never, raise them when more configs
pass. `NOT_RUNNABLE` lists the examples that cannot run here or in Lucille, each checked to fail
for that reason and no other.
"""

import io
import json
import os
import pathlib
import uuid
from typing import Any, Callable

import pytest

import lucille

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = (ROOT / ".." / "shared" / "conformance" / "lucille").resolve()

# The ratchet: counts reached so far (validated run configs, example configs that ran in test
# mode, validated stage confs). A change that lowers one fails.
FLOOR_RUN_VALID = 24
FLOOR_EXAMPLES_RAN = 6
FLOOR_STAGES_VALID = 187


def report(name: str, rows: list[tuple[str, int, int]]) -> None:
    """Writes counts for the conformance table (scripts/conformance_table.py, run at the end of
    scripts/test.sh), beside the Rust suites' counts."""
    folder = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "tmp" / "conformance"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"lucille-{name}.json").write_text(json.dumps(
        [{"name": n, "passed": p, "total": t} for (n, p, t) in rows]))


S3_ENDPOINT = os.environ.get("LUCILLE_TEST_S3_ENDPOINT", "")

MAIL = """Message-ID: <{n}.JavaMail.evans@thyme>
Date: Mon, 14 May 2001 16:39:00 -0700 (PDT)
From: phillip.allen@enron.com
To: tim.belden@enron.com
Subject: Forecast {n}
Mime-Version: 1.0
Content-Type: text/plain; charset=us-ascii
X-From: Phillip K Allen
X-To: Tim Belden
X-Folder: \\Phillip_Allen_Jan2002_1\\Allen, Phillip K.\\Inbox

Here is our forecast, number {n}.
"""


def enron(tmp: pathlib.Path) -> dict[str, str]:
    """The opensearch example's PATH_TO_ENRON: a maildir of the Enron corpus's shape."""
    inbox = tmp / "enron" / "maildir" / "allen-p" / "inbox"
    inbox.mkdir(parents=True)
    for n in (1, 2, 3):
        (inbox / f"{n}.").write_text(MAIL.format(n=n))
    return {"PATH_TO_ENRON": str(tmp / "enron")}


def s3_bucket() -> tuple[Any, str, dict[str, str]]:
    """A fresh bucket on the moto server and the AWS variables that reach it."""
    import boto3

    env = {"AWS_ENDPOINT_URL": S3_ENDPOINT, "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    client = boto3.client("s3", endpoint_url=S3_ENDPOINT, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    bucket = f"lucille-examples-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=bucket)
    return client, bucket, env


def s3_files(tmp: pathlib.Path) -> dict[str, str]:
    """The s3 example's PATH_TO_STORAGE: mails and a text file in a bucket."""
    client, bucket, env = s3_bucket()
    for n in (1, 2):
        client.put_object(Bucket=bucket, Key=f"files/mail-{n}.eml", Body=MAIL.format(n=n).encode())
    client.put_object(Bucket=bucket, Key="files/notes.txt", Body=b"Quarterly notes.")
    return {**env, "PATH_TO_STORAGE": f"s3://{bucket}/files"}


def s3_parquet(tmp: pathlib.Path) -> dict[str, str]:
    """The vector example's PARQUET_PATH (fsUri s3://): MS MARCO-style rows with vectors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    client, bucket, env = s3_bucket()
    table = pa.table({"pid": ["p1", "p2"], "docid": ["d1", "d2"], "text": ["a passage", ""],
                      "values": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    client.put_object(Bucket=bucket, Key="parquet-stuff/part-0.parquet", Body=buf.getvalue())
    return {**env, "PARQUET_PATH": f"{bucket}/parquet-stuff", "S3_KEY": "test", "S3_SECRET": "test"}


# The variables each example's README asks users to set, pointed at local stand-ins (those on
# S3 need the moto server; without it they are not run).
EXAMPLE_ENV: dict[str, tuple[bool, Callable[[pathlib.Path], dict[str, str]]]] = {
    "lucille-examples/lucille-opensearch-ingest-example/conf/opensearch.conf": (False, enron),
    "lucille-examples/lucille-s3-ingest-example/conf/s3-opensearch.conf": (True, s3_files),
    "lucille-examples/lucille-vector-ingest-example/conf/10M-parquet-pinecone.conf": (True, s3_parquet),
}

# Examples that cannot run here, nor in Lucille, and the error that says why (checked).
REACHABLE_ELSEWHERE = {
    "lucille-examples/lucille-joining-db-connector-example/conf/joining-db-connector-example.conf",
    "lucille-examples/lucille-rss-example/conf/incremental.conf",
    "lucille-examples/lucille-rss-example/conf/single.conf",
}
NOT_RUNNABLE = {
    # Lucille's own FileConnector spec requires gcp.pathToServiceKey; with GCP_SERVICE_KEY_PATH
    # unset the block is empty (the file is an annotated list of every option).
    "application-example.conf": "gcp.pathToServiceKey",
    # The generator's `input_data_path` is not an AddRandomString key: Lucille's validation of
    # the generator (at stage start) fails the same way; here it is caught before the run.
    "lucille-examples/lucille-document-generation-example/conf/test-documents.conf": '"input_data_path" (did you mean "inputDataPath"?)',
    # Sources on hosts the example names: a MySQL server called `server`, CNBC's feed (where
    # the host is reachable, as CNBC's may be from a machine with internet access, they run).
    "lucille-examples/lucille-joining-db-connector-example/conf/joining-db-connector-example.conf": "cannot connect to MySQL server:3306",
    "lucille-examples/lucille-rss-example/conf/incremental.conf": "cannot read the feed https://www.cnbc.com/",
    "lucille-examples/lucille-rss-example/conf/single.conf": "cannot read the feed https://www.cnbc.com/",
}


def manifest() -> dict[str, Any]:
    path = CORPUS / "manifest.json"
    if not path.is_file():
        pytest.skip(f"Lucille's configs are not here ({CORPUS}); the conformance corpus lives beside the repository as ../shared")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def only_fixtures(m: dict[str, Any], errors: list[str]) -> bool:
    """Whether every error names a class that exists only in Lucille's test code."""
    fixtures = m["test_fixture_classes"]
    return bool(errors) and all(
        any(f'.{f}"' in e or f'"{f}"' in e for f in fixtures) for e in errors
    )


def run_configs(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in m["configs"] if c["kind"] == "run" and c["lucille_expects"] == "valid"]


def stage_configs(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in m["configs"] if c["kind"] == "stage" and c["lucille_expects"] == "accept"]


def validate_run_config(c: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    monkeypatch.chdir(CORPUS / c["cwd"])
    rel = os.path.relpath(CORPUS / c["path"], CORPUS / c["cwd"])
    return rel, lucille.validate(rel)


def test_lucille_run_configs_validate_and_examples_run(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    m = manifest()
    configs = run_configs(m)
    valid = ran = examples = fixtures = 0
    failures = []
    for c in configs:
        with monkeypatch.context() as env:
            if c["path"] in EXAMPLE_ENV:
                needs_s3, make = EXAMPLE_ENV[c["path"]]
                if needs_s3 and not S3_ENDPOINT:
                    assert os.environ.get("LUCILLE_REQUIRE_SERVICES") != "1", "LUCILLE_TEST_S3_ENDPOINT is not set"
                    failures.append(f"{c['path']}: not run: no S3 server (scripts/services/s3.sh)")
                    continue
                folder = tmp_path / str(len(failures) + valid)
                folder.mkdir()
                for k, v in make(folder).items():
                    env.setenv(k, v)
            rel, errors = validate_run_config(c, env)
            fixtures += only_fixtures(m, errors)
            if errors:
                failures.append(f"{c['path']}: {errors[0]}")
            else:
                valid += 1
            if c["source"] != "example":
                continue
            examples += 1
            why = NOT_RUNNABLE.get(c["path"])
            if errors:
                assert why and any(why in e for e in errors), (c["path"], errors)
                continue
            result = lucille.run(rel, mode="test", progress=False)
            if result.status == "Success":
                assert why is None or c["path"] in REACHABLE_ELSEWHERE, f"{c['path']} runs now: take it out of NOT_RUNNABLE"
                assert result.documents, c["path"]
                ran += 1
            else:
                assert why and why in result.summary, (c["path"], result.summary)
                failures.append(f"{c['path']}: run: {result.summary.splitlines()[1:2]}")
    print(
        f"\nLucille run configs: {valid}/{len(configs)} validated; "
        f"examples: {ran}/{examples} ran in test mode; "
        f"{fixtures} fail only on classes of Lucille's test code"
    )
    for f in failures:
        print("  " + f[:300])
    report("run", [("Lucille's run configs (examples and core tests) that validate", valid, len(configs)),
                   ("Lucille's example configs that run (test mode)", ran, examples)])
    assert valid >= FLOOR_RUN_VALID, f"run configs validated: {valid}, was {FLOOR_RUN_VALID}"
    assert ran >= FLOOR_EXAMPLES_RAN, f"examples ran: {ran}, was {FLOOR_EXAMPLES_RAN}"


def test_lucille_stage_confs_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    m = manifest()
    configs = stage_configs(m)
    valid = fixtures = 0
    failures = []
    for c in configs:
        monkeypatch.chdir(CORPUS / c["cwd"])
        rel = os.path.relpath(CORPUS / c["path"], CORPUS / c["cwd"])
        try:
            stage = json.loads(lucille.render(rel, json=True))
        except lucille.ConfigError as e:
            failures.append(f"{c['path']}: {e}")
            continue
        # StageFactory builds the class the test names, whatever the conf's own `class` says.
        stage["class"] = c["stage"]
        config = {
            "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
            "pipelines": [{"name": "p", "stages": [stage]}],
        }
        errors = lucille.validate(config=config, base_dir=str((CORPUS / c["path"]).parent))
        fixtures += only_fixtures(m, errors)
        if errors:
            failures.append(f"{c['path']}: {errors[0]}")
        else:
            valid += 1
    print(
        f"\nLucille stage confs: {valid}/{len(configs)} validated; "
        f"{fixtures} fail only on classes of Lucille's test code"
    )
    for f in failures:
        print("  " + f[:300])
    report("stages", [("Lucille's stage confs (its unit tests') that validate", valid, len(configs))])
    assert valid >= FLOOR_STAGES_VALID, f"stage confs validated: {valid}, was {FLOOR_STAGES_VALID}"
