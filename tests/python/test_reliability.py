"""Faults and bad input: a run goes on, and every document ends with a reason (docs/RELIABILITY.md)."""

import logging
import pathlib
import subprocess
import sys
import textwrap

import pytest

import lucille

STAGES_PY = """
import lucille

class Spin(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "d-3":
            while True:
                pass
        doc.set_field("seen", True)
"""


def write(tmp_path: pathlib.Path, name: str, text: str) -> pathlib.Path:

    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_python_stage_stuck_in_a_loop_times_out_and_the_run_goes_on(tmp_path: pathlib.Path) -> None:
    (tmp_path / "spinstages.py").write_text(STAGES_PY)
    cfg = write(tmp_path, "spin.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 12, docIdPrefix: "d-", pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "spinstages:Spin" }] }]
        worker { threads: 2, maxProcessingSecs: 1 }
    """)
    r = lucille.run(str(cfg), mode="test")
    assert (r.published, r.succeeded, r.failed) == (12, 11, 1), r.summary
    fails = [e for e in r.events if e[1] == "FAIL"]
    assert [f[0] for f in fails] == ["d-3"]
    message = fails[0][2]
    assert message is not None
    assert "timed out" in message and "worker.maxProcessingSecs (1 s)" in message
    # The thread recovered through the interrupt (no thread was abandoned) and went on.
    assert "abandoned" not in message
    assert sorted(d.id for d in r.documents) == sorted(f"d-{i}" for i in range(12) if i != 3)
    assert all(d.get("seen") for d in r.documents)


MALFORMED_PY = """
import lucille


class Malformed(lucille.Stage):
    def process_document(self, doc):
        kind = int(doc.id.split("-")[1]) % 6
        if kind == 1:
            return 5                                          # not an iterable
        if kind == 2:
            return [lucille.Document(doc.id + "-c"), "x"]     # a good child, then junk
        if kind == 3:
            return [doc]                                      # itself as its own child
        if kind == 4:
            return [None]
        return None
"""


def test_a_stage_returning_malformed_children_fails_only_that_document(tmp_path: pathlib.Path) -> None:
    (tmp_path / "malformed.py").write_text(MALFORMED_PY)
    cfg = write(tmp_path, "malformed.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 12, docIdPrefix: "d-", pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "malformed:Malformed" }] }]
    """)
    r = lucille.run(str(cfg), mode="test")
    fails = {e[0]: e[2] or "" for e in r.events if e[1] == "FAIL"}
    assert sorted(fails) == ["d-1", "d-10", "d-2", "d-3", "d-4", "d-7", "d-8", "d-9"], fails
    assert "must return None or an iterable of Documents, returned int" in fails["d-1"]
    assert "yielded str, expected a Document" in fails["d-2"]
    assert "its own input document" in fails["d-3"]
    assert "yielded NoneType" in fails["d-4"]
    # A good child yielded before the junk was already on its way: it is indexed and counted.
    assert sorted(d.id for d in r.documents) == ["d-0", "d-11", "d-2-c", "d-5", "d-6", "d-8-c"]
    assert (r.published, r.succeeded, r.failed) == (12, 6, 8), r.summary
    assert "Some docs failed" in r.summary


SHARED_IDS_PY = """
import lucille

class Twins(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "d-1":
            return [lucille.Document("d-1", {"part": 1})]           # the parent's own id
        if doc.id == "d-2":
            return [lucille.Document("d-2-c"), lucille.Document("d-2-c")]   # one id, twice
        return None
"""


def test_children_sharing_an_id_are_counted_and_warned_about(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every copy is counted (the ledger is a multiset), but an index keeps one document per id,
    so the run says that children replaced one another."""
    (tmp_path / "twins.py").write_text(SHARED_IDS_PY)
    cfg = write(tmp_path, "twins.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 4, docIdPrefix: "d-", pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "twins:Twins" }] }]
        # One batch of all seven documents: nothing is indexed (no longer in flight) before the
        # twins appear, whatever the machine's speed.
        indexer { batchSize: 7, batchTimeout: 600000 }
        worker { threads: 1 }
    """)
    with caplog.at_level(logging.WARNING, logger="lucille"):
        r = lucille.run(str(cfg), mode="test")
    assert (r.status, r.published, r.succeeded, r.failed) == ("Success", 4, 7, 0), r.summary
    warned = [m for m in caplog.messages if "had the id of a document still in flight" in m]
    assert len(warned) == 1, caplog.messages
    assert warned[0].startswith("2 child document(s)") and 'first "d-1"' in warned[0], warned

    # Distinct ids: no warning. (Another module name: the first is imported already.)
    caplog.clear()
    (tmp_path / "distinct.py").write_text(SHARED_IDS_PY.replace('"d-1", {', '"d-1-c", {').replace(
        'lucille.Document("d-2-c")]', 'lucille.Document("d-2-d")]'))
    cfg.write_text(cfg.read_text().replace("twins:Twins", "distinct:Twins"))
    with caplog.at_level(logging.WARNING, logger="lucille"):
        r = lucille.run(str(cfg), mode="test")
    assert r.succeeded == 7, r.summary
    assert len({d.id for d in r.documents}) == 7
    assert not [m for m in caplog.messages if "still in flight" in m], caplog.messages


def test_exit_on_timeout_ends_the_process(tmp_path: pathlib.Path) -> None:
    (tmp_path / "spinstages.py").write_text(STAGES_PY)
    cfg = write(tmp_path, "exit.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 5, docIdPrefix: "d-", pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "spinstages:Spin" }] }]
        worker { maxProcessingSecs: 1, exitOnTimeout: true }
    """)
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(cfg)], capture_output=True,
                       text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 1
    assert "exitOnTimeout" in r.stderr
    assert "RUN SUMMARY" not in r.stdout


def test_max_document_bytes_fails_oversized_records_with_their_position(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    big = "x" * 5000
    (data / "a.jsonl").write_text('{"id": "j1"}\n{"id": "jbig", "body": "%s"}\n{"id": "j2"}\n' % big)
    (data / "b.csv").write_text("key,body\nc1,short\ncbig,%s\nc2,fine\n" % big)
    xml = "<r><item><k>x1</k></item><item><k>xbig</k><b>%s</b></item><item><k>x2</k></item></r>" % big
    (data / "c.xml").write_text(xml)
    cfg = write(tmp_path, "max.conf", f"""
        connectors: [{{ name: "files", class: "FileConnector", paths: ["{data}"], maxDocumentBytes: 1000,
                        fileHandlers {{ jsonl {{}}, csv {{ idField: "key" }}, xml {{ xmlRootPath: "/r/item", idField: "k" }} }} }}]
    """)
    r = lucille.run(str(cfg), mode="test")
    assert (r.published, r.succeeded, r.failed) == (9, 6, 3), r.summary
    assert sorted(d.id for d in r.documents) == ["c1", "c2", "j1", "j2", "x1", "x2"]
    reasons = sorted(e[2] or "" for e in r.events if e[1] == "FAIL")
    assert len(reasons) == 3
    assert all("larger than maxDocumentBytes (1000)" in m for m in reasons), reasons
    assert any(m.startswith(f"{data / 'a.jsonl'}: line 2:") for m in reasons), reasons
    assert any(f"{data / 'b.csv'}: line 3:" in m for m in reasons), reasons
    assert any(m.startswith(f"{data / 'c.xml'}: element at byte {xml.index('<item><k>xbig')}:") for m in reasons), reasons


def test_max_document_bytes_is_checked(tmp_path: pathlib.Path) -> None:
    cfg = write(tmp_path, "bad.conf", """
        connectors: [{ name: "files", class: "FileConnector", paths: ["."], maxDocumentBytes: 0 },
                     { name: "seq", class: "SequenceConnector", numDocs: 1, maxDocumentBytes: 10 }]
    """)
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "connectors[0].maxDocumentBytes" in r.stderr and "at least 1" in r.stderr
    assert "connectors[1]" in r.stderr and "maxDocumentBytes" in r.stderr.split("connectors[1]", 1)[1]


SLOW_PY = """
import time
import lucille

class Slow(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "d-2":
            time.sleep(600)
"""


def test_a_second_sigint_stops_now_and_reports_documents_in_flight(tmp_path: pathlib.Path) -> None:
    import signal

    (tmp_path / "slowstages.py").write_text(SLOW_PY)
    cfg = write(tmp_path, "slow.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 100, docIdPrefix: "d-", pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "slowstages:Slow" }] }]
        publisher { queueCapacity: 10 }
    """)
    p = subprocess.Popen([sys.executable, "-m", "lucille.cli", "run", str(cfg)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    seen: list[str] = []
    assert p.stderr is not None
    stderr = p.stderr

    def wait_for(text: str) -> None:
        for line in stderr:
            seen.append(line)
            if text in line:
                return
        raise AssertionError(f"never logged {text!r}: {''.join(seen)}")

    wait_for("starting run")
    p.send_signal(signal.SIGINT)
    # A graceful stop would wait ten minutes for d-2; the second signal stops now.
    wait_for("interrupt again to stop now")
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("the second SIGINT did not stop the run:\n" + "".join(seen))
    assert p.returncode == 1, "".join(seen) + err
    assert "RUN SUMMARY: Failure. 0/1 connectors complete. Some docs did not finish." in out
    line = [l for l in out.splitlines() if l.startswith("seq:")][0]
    assert "ERROR. forced stop" in line, out
    assert "documents in flight (published, not finished)" in line, out


def test_max_document_bytes_applies_to_python_connectors(tmp_path: pathlib.Path) -> None:
    (tmp_path / "bigsource.py").write_text(textwrap.dedent("""
        import lucille

        class Source(lucille.Connector):
            def execute(self, publisher):
                publisher.publish(lucille.Document("small", {"body": "x"}))
                publisher.publish(lucille.Document("big", {"body": "x" * 5000}))
                publisher.publish(lucille.Document("small2", {"body": "y"}))
    """))
    cfg = write(tmp_path, "py.conf", """
        connectors: [{ name: "src", class: "bigsource:Source", maxDocumentBytes: 1000 }]
    """)
    r = lucille.run(str(cfg), mode="test")
    assert (r.published, r.succeeded, r.failed) == (3, 2, 1), r.summary
    assert [d.id for d in r.documents] == ["small", "small2"]
    fail = [e for e in r.events if e[1] == "FAIL"][0]
    assert fail[0] == "big"
    assert (fail[2] or "").startswith(
"src: document big: the record is larger than maxDocumentBytes (1000)"), fail


def test_a_csv_row_far_over_max_document_bytes_is_never_held(tmp_path: pathlib.Path) -> None:
    # A quoted field of ~140 MB (separators, doubled quotes and newlines inside) between two
    # good rows. The handler parses it to its end without keeping it: the process never holds
    # it (its peak memory stays below the row's size), the row FAILs with its line, and the row
    # after it is read and numbered as usual.
    data = tmp_path / "data"
    data.mkdir()
    big = data / "big.csv"
    piece = 'x, ""y""\n'
    repeats = 20_000_000
    with big.open("w") as f:
        f.write("key,body\nc1,short\ncbig,\"")
        for _ in range(repeats // 1_000_000):
            f.write(piece * 1_000_000)
        f.write('"\nc2,fine\n')
    cfg = write(tmp_path, "big.conf", f"""
        connectors: [{{ name: "files", class: "FileConnector", paths: ["{data}"], maxDocumentBytes: 100000,
                        fileHandlers {{ csv {{ idField: "key", lineNumberField: "line" }} }} }}]
        indexer {{ type: "jsonl" }}
        jsonl {{ path: "{tmp_path / 'out.jsonl'}" }}
    """)
    measure = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-m', 'lucille.cli', 'run', sys.argv[1]],"
        " capture_output=True, text=True)\n"
        "print(r.returncode)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(r.stdout + r.stderr)\n"
    )
    try:
        r = subprocess.run([sys.executable, "-c", measure, str(cfg)], capture_output=True, text=True,
                           timeout=300)
    finally:
        big_size = big.stat().st_size
        big.unlink()
    code, peak_kb, output = r.stdout.split("\n", 2)
    assert code == "0", output
    parsed = repeats * (len(piece) - 2)  # a doubled quote is one byte once parsed
    assert big_size > parsed > 120 * 1024 * 1024
    assert int(peak_kb) * 1024 < parsed * 0.85, (peak_kb, parsed)
    assert "2 docs succeeded. 1 docs FAILED." in output, output
    assert f"{big}: line 3: the record is larger than maxDocumentBytes (100000)" in output, output
    import json
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(d["id"], d["line"]) for d in rows] == [("c1", 1), ("c2", 3)]


def test_an_rss_item_far_over_max_document_bytes_fails_and_the_feed_goes_on(tmp_path: pathlib.Path) -> None:
    big = "words &amp; more <![CDATA[<b>raw</b>]]> " * 100_000
    feed = (
        "<rss><channel><item><guid>g1</guid><title>one</title></item>"
        f"<item><title>two</title><description>{big}</description><guid>g2</guid></item>"
        "<item><guid>g3</guid><title>three</title></item></channel></rss>"
    )
    (tmp_path / "feed.xml").write_text(feed)
    cfg = write(tmp_path, "rss.conf", """
        connectors: [{ name: "feed", class: "RSSConnector", rssURL: "feed.xml", maxDocumentBytes: 1000 }]
    """)
    r = lucille.run(str(cfg), mode="test")
    assert (r.published, r.succeeded, r.failed) == (3, 2, 1), r.summary
    assert sorted(d.id for d in r.documents) == ["g1", "g3"]
    (fail,) = [e for e in r.events if e[1] == "FAIL"]
    assert fail[0] == "g2"
    at = feed.index("<item><title>two")
    assert f"feed.xml: the item at byte {at}: the record is larger than maxDocumentBytes (1000)" in (fail[2] or "")
