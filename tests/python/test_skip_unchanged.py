"""skipUnchanged (interface.md, "Skipping unchanged documents"): a second run over an unchanged
source processes nothing, a changed record is exactly what reaches the stages and the backend,
vanished records are deleted, failures and config changes are processed again, and a kill -9
can only cause a re-send."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lucille
from jsonl_output import ids_in
from services import service_env

# Counts every document the pipeline sees in a file beside the config (one line per call), so
# a test can tell what reached the stages.
COUNTER = """
class Count(lucille.Stage):
    def process_document(self, doc):
        with open(self.config["log"], "a") as f:
            f.write(doc.id + "\\n")
        doc.set_field("seen", True)
"""


def write_records(path: Path, n: int, changed: dict[int, str] | None = None,
                  gone: set[int] | None = None, prefix: str = "d") -> None:
    changed, gone = changed or {}, gone or set()
    with path.open("w") as f:
        for i in range(n):
            if i in gone:
                continue
            body = changed.get(i, f"text {i}")
            f.write(json.dumps({"id": f"{prefix}{i}", "body": body}) + "\n")


def config(tmp_path: Path, *, indexer: str = 'indexer { type: "jsonl", deletionMarkerField: "is_deleted", deletionMarkerFieldValue: "true" }\njsonl { path: "OUT", append: true }',
           skip: str = "true", stage_extra: str = "", connector_extra: str = "") -> str:
    (tmp_path / "counting.py").write_text("import lucille\n" + COUNTER)
    out = tmp_path / "out.jsonl"
    return f"""
connectors: [{{ name: "files", class: "FileConnector", pipeline: "p", paths: ["{tmp_path / 'data'}"],
               fileHandlers {{ jsonl {{}} }}, skipUnchanged: {skip} {connector_extra} }}]
pipelines: [{{ name: "p", stages: [
  {{ class: "{tmp_path / 'counting.py'}:Count", log: "{tmp_path / 'seen.log'}" }}
  {{ class: "CopyFields", fieldMapping: {{ body: "copy" }} {stage_extra} }}
] }}]
{indexer.replace("OUT", str(out))}
"""


def seen(tmp_path: Path) -> list[str]:
    log = tmp_path / "seen.log"
    ids = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return ids


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_second_run_over_an_unchanged_source_processes_nothing(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    write_records(tmp_path / "data" / "a.jsonl", 600)
    write_records(tmp_path / "data" / "b.jsonl", 400, prefix="b")
    conf = config(tmp_path)
    first = lucille.run(hocon=conf, progress=False)
    assert (first.status, first.succeeded, first.unchanged) == ("Success", 1000, 0)
    assert len(seen(tmp_path)) == 1000
    # The store lives beside the output.
    assert (tmp_path / "out.jsonl.unchanged.sqlite").exists()

    second = lucille.run(hocon=conf, progress=False)
    assert (second.status, second.published, second.succeeded, second.failed, second.dropped,
            second.unchanged) == ("Success", 1000, 0, 0, 0, 1000)
    assert seen(tmp_path) == []
    assert len(lines(tmp_path / "out.jsonl")) == 1000  # nothing sent again
    line = second.summary.splitlines()[1]
    assert re.fullmatch(
        r"files: complete\. 0 docs succeeded\. 0 docs failed\. 0 docs dropped\. "
        r"1000 docs unchanged\. Time: \d+\.\d\d secs\.", line), line
    assert second.connectors[0].unchanged == 1000
    # The notebook view says so too; a run without skipped documents keeps its columns.
    assert "1000 unchanged" in second._repr_html_() and "<th" in second._repr_html_()
    assert ">unchanged</th>" in second._repr_html_()
    assert ">unchanged</th>" not in first._repr_html_()


def test_only_the_changed_records_reach_the_stages_and_the_backend(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = tmp_path / "data" / "a.jsonl"
    write_records(data, 1000)
    conf = config(tmp_path)
    assert lucille.run(hocon=conf, progress=False).succeeded == 1000
    seen(tmp_path)
    before = len(lines(tmp_path / "out.jsonl"))

    # 1% changed, one record gone, one new.
    changed = {i: f"changed {i}" for i in range(0, 1000, 100)}
    write_records(data, 1000, changed=changed, gone={555})
    with data.open("a") as f:
        f.write(json.dumps({"id": "new", "body": "new"}) + "\n")
    r = lucille.run(hocon=conf, progress=False)
    expected = sorted([f"d{i}" for i in changed] + ["new"])
    assert sorted(seen(tmp_path)) == sorted(expected + ["d555"])  # the delete marker too
    assert (r.status, r.unchanged, r.succeeded, r.failed) == ("Success", 989, 12, 0)
    sent = lines(tmp_path / "out.jsonl")[before:]
    assert sorted(str(s["id"]) for s in sent if "_delete" not in s) == expected
    assert all(s["copy"] == changed[int(str(s["id"])[1:])] for s in sent if s["id"] in
               {f"d{i}" for i in changed})
    assert [s["id"] for s in sent if s.get("_delete")] == ["d555"]

    # Then nothing changed again, and d555 is forgotten.
    r = lucille.run(hocon=conf, progress=False)
    assert (r.unchanged, r.succeeded) == (1000, 0)
    assert seen(tmp_path) == []


def test_a_changed_pipeline_or_indexer_config_processes_every_document(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    write_records(tmp_path / "data" / "a.jsonl", 50)
    assert lucille.run(hocon=config(tmp_path), progress=False).succeeded == 50
    r = lucille.run(hocon=config(tmp_path, stage_extra=', updateMode: "skip"'), progress=False)
    assert (r.succeeded, r.unchanged) == (50, 0)
    r = lucille.run(hocon=config(tmp_path, stage_extra=', updateMode: "skip"'), progress=False)
    assert (r.succeeded, r.unchanged) == (0, 50)
    indexer = ('indexer { type: "jsonl", batchSize: 7, deletionMarkerField: "is_deleted", '
               'deletionMarkerFieldValue: "true" }\njsonl { path: "OUT", append: true }')
    r = lucille.run(hocon=config(tmp_path, stage_extra=', updateMode: "skip"', indexer=indexer),
                    progress=False)
    assert (r.succeeded, r.unchanged) == (50, 0)


def test_a_document_that_failed_is_processed_again_and_its_file_read_again(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = tmp_path / "data" / "a.jsonl"
    write_records(data, 20)
    with data.open("a") as f:
        f.write("{not json\n")  # a malformed record: a FAIL with its reason
    flag = tmp_path / "fail-d3"
    flag.write_text("")
    (tmp_path / "failing.py").write_text(f"""
import os, lucille
class FailD3(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "d3" and os.path.exists({str(flag)!r}):
            raise ValueError("d3 is not ready")
""")
    conf = config(tmp_path).replace(
        'stages: [', f'stages: [ {{ class: "{tmp_path / "failing.py"}:FailD3" }}', 1)
    r = lucille.run(hocon=conf, progress=False)
    assert (r.succeeded, r.failed) == (19, 2)
    seen(tmp_path)
    flag.unlink()
    r = lucille.run(hocon=conf, progress=False)
    # The file is read again (a record of it failed); only d3 and the bad line are processed.
    assert (r.succeeded, r.failed, r.unchanged) == (1, 1, 19)
    assert seen(tmp_path) == ["d3"]


def test_the_embedded_index_keeps_its_store_beside_it_and_answers_the_same(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    write_records(tmp_path / "data" / "a.jsonl", 300)
    index = tmp_path / "index"
    indexer = f'indexer {{ type: "tantivy" }}\ntantivy {{ path: "{index}" }}'
    conf = config(tmp_path, indexer=indexer)
    assert lucille.run(hocon=conf, progress=False).succeeded == 300
    hits = lucille.search(str(index), "body:\"text 42\"", limit=3)
    assert (tmp_path / "index.unchanged.sqlite").exists()
    r = lucille.run(hocon=conf, progress=False)
    assert (r.succeeded, r.unchanged) == (0, 300)
    assert lucille.search(str(index), "body:\"text 42\"", limit=3) == hits
    assert hits and hits[0]["id"] == "d42"


def test_output_mode_runs_the_stages_and_sends_only_what_changed(tmp_path: Path) -> None:
    # A stage that reads outside data (a lookup file), so the records alone cannot tell.
    lookup = tmp_path / "lookup.json"
    lookup.write_text(json.dumps({"d4": "red"}))
    (tmp_path / "lookup.py").write_text(f"""
import json, lucille
class Lookup(lucille.Stage):
    def process_document(self, doc):
        colour = json.load(open({str(lookup)!r})).get(doc.id)
        if colour:
            doc.set_field("colour", colour)
""")
    (tmp_path / "data").mkdir()
    write_records(tmp_path / "data" / "a.jsonl", 30)
    conf = config(tmp_path, skip='"output"').replace(
        'stages: [', f'stages: [ {{ class: "{tmp_path / "lookup.py"}:Lookup" }}', 1)
    assert lucille.run(hocon=conf, progress=False).succeeded == 30
    seen(tmp_path)
    r = lucille.run(hocon=conf, progress=False)
    assert (r.succeeded, r.unchanged) == (0, 30)
    assert len(seen(tmp_path)) == 30  # every document ran through the stages
    lookup.write_text(json.dumps({"d4": "blue", "d9": "green"}))
    r = lucille.run(hocon=conf, progress=False)
    assert (r.succeeded, r.unchanged) == (2, 28)
    sent = lines(tmp_path / "out.jsonl")[30:]
    assert sorted((s["id"], s["colour"]) for s in sent) == [("d4", "blue"), ("d9", "green")]


def test_a_python_connector_s_documents_are_compared_by_their_fields(tmp_path: Path) -> None:
    class Source(lucille.Connector):
        def __init__(self, bodies: dict[str, str]) -> None:
            super().__init__({"name": "py", "skipUnchanged": True})
            self.bodies = bodies

        def execute(self, publisher):  # type: ignore[no-untyped-def]
            for k, v in self.bodies.items():
                publisher.publish(lucille.Document(k, {"body": v}))

    out = tmp_path / "out.jsonl"
    conf = {
        "indexer": {"type": "jsonl"},
        "jsonl": {"path": str(out), "append": True},
    }
    r = lucille.run(config=conf, connector=Source({"a": "1", "b": "2"}), progress=False)
    assert (r.succeeded, r.unchanged) == (2, 0)
    r = lucille.run(config=conf, connector=Source({"a": "1", "b": "3"}), progress=False)
    assert (r.succeeded, r.unchanged) == (1, 1)
    assert [x["id"] for x in lines(out)] == ["a", "b", "b"]


def test_test_mode_reads_the_store_but_records_nothing(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    data = tmp_path / "data" / "a.jsonl"
    write_records(data, 10)
    conf = config(tmp_path)
    r = lucille.run(hocon=conf, mode="test", progress=False)
    assert (r.succeeded, r.unchanged) == (10, 0)
    r = lucille.run(hocon=conf, progress=False)  # test mode recorded nothing
    assert (r.succeeded, r.unchanged) == (10, 0)
    write_records(data, 10, changed={2: "x"})
    r = lucille.run(hocon=conf, mode="test", progress=False)
    assert (r.succeeded, r.unchanged) == (1, 9)
    assert [d.id for d in r.documents] == ["d2"]
    assert [e for e in r.events if e[1] == "DROP"][0][2] == (
        "unchanged since the last run that indexed it (skipUnchanged)")


def test_config_errors_name_the_key_and_say_what_to_do(tmp_path: Path) -> None:
    base = """
connectors: [
  {{ name: "a", class: "SequenceConnector", numDocs: 1, skipUnchanged: {a} }}
  {{ name: "b", class: "SequenceConnector", numDocs: 1, skipUnchanged: true }}
]
{indexer}
"""
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(hocon=base.format(a='"yes"', indexer='indexer { type: "jsonl" }\njsonl { path: "x.jsonl" }'))
    text = str(e.value)
    assert "connectors[0].skipUnchanged" in text and '"output"' in text
    assert "connectors[1].skipUnchanged" in text and "jsonl.append: true" in text
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(hocon=base.format(a="true", indexer='indexer { type: "opensearch" }\nopensearch { url: "http://127.0.0.1:9", index: "i" }'))
    assert "skipUnchangedPath" in str(e.value)
    assert str(e.value).count("skipUnchangedPath") == 2  # once per connector
    # With a path, any indexer works.
    r = lucille.run(hocon=base.format(a="true", indexer="indexer { type: \"nop\" }").replace(
        "skipUnchanged: true", f'skipUnchanged: true, skipUnchangedPath: "{tmp_path / "s.sqlite"}"'),
        progress=False)
    assert r.status == "Success"
    assert (tmp_path / "s.sqlite").exists()


KILL_SCRIPT = """
import sys, lucille
lucille.run(hocon=open(sys.argv[1]).read(), progress=False)
"""


@pytest.mark.parametrize("kill_after_lines", [2_000, 9_000])
def test_a_kill_9_mid_run_can_only_cause_a_resend(tmp_path: Path, kill_after_lines: int) -> None:
    (tmp_path / "data").mkdir()
    for k in range(4):
        write_records(tmp_path / "data" / f"{k}.jsonl", 5_000, prefix=f"f{k}-d")
    out = tmp_path / "out.jsonl"
    conf_path = tmp_path / "run.conf"
    conf_path.write_text(config(tmp_path) + "\nindexer.batchSize: 200\n")
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(conf_path)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.stat().st_size > kill_after_lines * 40:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = set(ids_in(out)) if out.exists() else set()
    assert len(written) < 20_000, "the run ended before the kill; nothing was tested"
    r = lucille.run(hocon=conf_path.read_text(), progress=False)
    assert r.status == "Success"
    # Every record is in the output, and none the first run did not write was skipped.
    everything = {f"f{k}-d{i}" for k in range(4) for i in range(5_000)}
    assert set(ids_in(out)) == everything
    assert r.unchanged <= len(written)
    assert r.unchanged + r.succeeded == 20_000


def test_a_record_that_moved_to_another_file_is_not_deleted(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    a, b = tmp_path / "data" / "a.jsonl", tmp_path / "data" / "b.jsonl"
    write_records(a, 10)
    write_records(b, 10, prefix="e")
    conf = config(tmp_path)
    assert lucille.run(hocon=conf, progress=False).succeeded == 20
    seen(tmp_path)
    before = len(lines(tmp_path / "out.jsonl"))
    # d5 moves from a.jsonl (read first) to b.jsonl, and d7 leaves for good.
    write_records(a, 10, gone={5, 7})
    with b.open("a") as f:
        f.write(json.dumps({"id": "d5", "body": "text 5"}) + "\n")
    r = lucille.run(hocon=conf, progress=False)
    sent = lines(tmp_path / "out.jsonl")[before:]
    assert [s["id"] for s in sent if s.get("_delete")] == ["d7"]
    assert [s["id"] for s in sent if not s.get("_delete")] == ["d5"]  # stored again, with b
    assert (r.succeeded, r.unchanged) == (2, 18)
    r = lucille.run(hocon=conf, progress=False)
    assert (r.succeeded, r.unchanged) == (0, 19)
    # b changes later: d5 is still known as b's, not a's.
    write_records(a, 10, gone={5, 7}, changed={0: "new"})
    r = lucille.run(hocon=conf, progress=False)
    assert (r.succeeded, r.unchanged) == (1, 18)
    assert not [s for s in lines(tmp_path / "out.jsonl") if s.get("_delete") and s["id"] == "d5"]


def db_config(tmp_path: Path, connection: str, sql: str, *, token: str | None = "version",
              others: str = "") -> str:
    (tmp_path / "counting.py").write_text("import lucille\n" + COUNTER)
    token_key = f', changeTokenColumn: "{token}"' if token else ""
    return f"""
connectors: [{{ name: "rows", class: "DatabaseConnector", pipeline: "p",
               {connection}, sql: "{sql}", idField: "id", skipUnchanged: true {token_key} {others} }}]
pipelines: [{{ name: "p", stages: [
  {{ class: "{tmp_path / 'counting.py'}:Count", log: "{tmp_path / 'seen.log'}" }}
] }}]
indexer {{ type: "jsonl", deletionMarkerField: "is_deleted", deletionMarkerFieldValue: "true" }}
jsonl {{ path: "{tmp_path / 'out.jsonl'}", append: true }}
"""


def test_a_database_change_token_skips_unchanged_rows_and_deletes_vanished_ones(
        tmp_path: Path) -> None:
    db = tmp_path / "items.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE items (id TEXT PRIMARY KEY, body TEXT, version INTEGER);"
        "CREATE TABLE tags (item TEXT, tag TEXT);"
        "INSERT INTO tags VALUES ('i001', 'red'), ('i002', 'blue');")
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)",
                     [(f"i{i:03}", f"body {i}", 1) for i in range(100)])
    conn.execute("UPDATE items SET version = NULL WHERE id = 'i099'")  # no token: its fields
    conn.commit()
    conf = db_config(tmp_path, f'connectionString: "jdbc:sqlite:{db}"',
                     "SELECT * FROM items ORDER BY id",
                     others=', otherSQLs: ["SELECT * FROM tags ORDER BY item"], '
                            'otherJoinFields: ["item"]')
    first = lucille.run(hocon=conf, progress=False)
    assert (first.status, first.succeeded, first.unchanged) == ("Success", 100, 0)
    assert len(seen(tmp_path)) == 100
    before = len(lines(tmp_path / "out.jsonl"))

    second = lucille.run(hocon=conf, progress=False)
    assert (second.status, second.published, second.succeeded, second.unchanged) == (
        "Success", 100, 0, 100)
    assert seen(tmp_path) == []

    # A row whose token moved; a field changed without its token (the token is what is
    # compared, so it stays unchanged: the column's contract); a child changed (its parent's
    # token did not, but the joined rows are part of the hash); the token-less row's field;
    # a row deleted.
    conn.execute("UPDATE items SET body = 'new 5', version = 2 WHERE id = 'i005'")
    conn.execute("UPDATE items SET body = 'silent' WHERE id = 'i006'")
    conn.execute("UPDATE tags SET tag = 'green' WHERE item = 'i002'")
    conn.execute("UPDATE items SET body = 'new 99' WHERE id = 'i099'")
    conn.execute("DELETE FROM items WHERE id = 'i050'")
    conn.commit()
    third = lucille.run(hocon=conf, progress=False)
    assert third.status == "Success", third.summary
    # i002 goes through again for its changed child; i006 is not made into a document.
    assert sorted(seen(tmp_path)) == ["i002", "i005", "i050", "i099"]
    assert (third.unchanged, third.failed) == (96, 0)
    sent = lines(tmp_path / "out.jsonl")[before:]
    assert [s["id"] for s in sent if s.get("_delete")] == ["i050"]
    assert {s["id"]: s.get("body") for s in sent
            if not s.get("_delete")} == {
        "i002": "body 2", "i005": "new 5", "i099": "new 99"}

    fourth = lucille.run(hocon=conf, progress=False)
    assert (fourth.succeeded, fourth.unchanged) == (0, 99)
    assert seen(tmp_path) == []


def test_a_change_token_needs_skip_unchanged(tmp_path: Path) -> None:
    conf = db_config(tmp_path, 'connectionString: "jdbc:sqlite:x.db"', "SELECT * FROM t")
    conf = conf.replace("skipUnchanged: true", "skipUnchanged: false")
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(hocon=conf, progress=False)
    assert "connectors[0].changeTokenColumn" in str(e.value)
    assert "needs skipUnchanged: true" in str(e.value)
    sqlite3.connect(tmp_path / "y.db").close()
    missing_column = db_config(tmp_path, f'connectionString: "jdbc:sqlite:{tmp_path / "y.db"}"',
                               "SELECT 1 AS id, 2 AS body", token="updated")
    r = lucille.run(hocon=missing_column, progress=False)
    assert r.status == "Failure"
    assert 'changeTokenColumn "updated" is not a column' in r.summary


def test_a_postgres_timestamp_as_the_change_token(tmp_path: Path) -> None:
    """The token column on a real server: an update timestamp (timestamptz)."""
    url = service_env("LUCILLE_TEST_POSTGRES_URL", "postgres.sh")

    def psql(sql: str) -> None:
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql], check=True)

    schema = f"lt_unchanged_{os.getpid()}"
    psql(f"""DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
             CREATE TABLE {schema}.product (sku text PRIMARY KEY, name text,
                                            updated timestamptz NOT NULL DEFAULT now());
             INSERT INTO {schema}.product (sku, name)
               SELECT 'p' || g, 'name ' || g FROM generate_series(1, 50) g;""")
    creds, location = url.split("://", 1)[1].split("@", 1)
    user, password = creds.split(":", 1)
    connection = (f'driver: "org.postgresql.Driver", connectionString: "jdbc:postgresql://{location}", '
                  f'jdbcUser: "{user}", jdbcPassword: "{password}"')
    conf = db_config(tmp_path, connection,
                     f"SELECT sku AS id, name, updated FROM {schema}.product ORDER BY sku",
                     token="updated")
    try:
        first = lucille.run(hocon=conf, progress=False)
        assert (first.status, first.succeeded) == ("Success", 50), first.summary
        seen(tmp_path)
        psql(f"UPDATE {schema}.product SET name = 'renamed', updated = now() + interval '1 second' "
             f"WHERE sku IN ('p7', 'p30')")
        second = lucille.run(hocon=conf, progress=False)
        assert (second.succeeded, second.unchanged) == (2, 48), second.summary
        assert sorted(seen(tmp_path)) == ["p30", "p7"]
    finally:
        psql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
