"""JSON log lines (interface: "Metrics, health, traces, logs"): `--log-format json` on the
command line and `log { format: json }` in the config, for `lucille run`, `lucille.run(...)` and
the long-running processes; one JSON object per line with timestamp, level, target, message,
run id and the event's fields."""

import json
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from typing import Any

import lucille
from kafka_service import bootstrap

STAGES_PY = """
import lucille

class Picky(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "3":
            raise ValueError("three is bad")
"""


def write_config(tmp_path: pathlib.Path, log_block: str = "") -> pathlib.Path:
    (tmp_path / "stages.py").write_text(STAGES_PY)
    conf = tmp_path / "run.conf"
    conf.write_text(textwrap.dedent(f"""
        connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: 6, pipeline: "p" }}]
        pipelines: [{{ name: "p", stages: [{{ class: "stages.py:Picky" }}] }}]
        indexer {{ type: "jsonl" }}
        jsonl {{ path: "{tmp_path / 'out.jsonl'}" }}
        {log_block}
    """))
    return conf


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every stderr line as a JSON object: a line that is not one fails the test."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing was logged"
    out = []
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}\n{stderr}")
        assert isinstance(obj, dict), line
        out.append(obj)
    return out


def check_run_lines(lines: list[dict[str, Any]], stderr: str) -> None:
    for obj in lines:
        assert {"timestamp", "level", "target", "message"} <= obj.keys(), obj
        assert obj["timestamp"].endswith("Z") and "T" in obj["timestamp"], obj
        assert obj["level"] in ("DEBUG", "INFO", "WARNING", "ERROR"), obj
    start = next(o for o in lines if o["message"].startswith("starting run with 1 connector"))
    run_id = start["run_id"]
    assert run_id and "run_id" not in start.get("fields", {}), start
    # Every line of the run (the connector's, the workers', the indexer's, the summary)
    # carries the run's id, whichever thread logged it.
    assert all(o.get("run_id") == run_id for o in lines), stderr
    assert any(o["message"].startswith("RUN SUMMARY: Partial success") for o in lines), stderr
    # The FAIL of document 3 is logged as an error with the reason; the event's fields are
    # kept apart from the message.
    fail = [o for o in lines if o["level"] == "ERROR" and o["message"].startswith("Document FAILED")]
    assert len(fail) == 1 and "three is bad" in fail[0]["message"], stderr
    assert fail[0]["fields"] == {"doc_id": "3"}, fail[0]
    assert all(o["target"].startswith("lucille") for o in lines), stderr


def test_cli_log_format_json_writes_one_object_per_line(tmp_path: pathlib.Path) -> None:
    conf = write_config(tmp_path)
    p = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf), "--log-format", "json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr  # a FAILed document does not fail the run
    check_run_lines(json_lines(p.stderr), p.stderr)
    # The summary printed at the end is output, not a log line.
    assert "RUN SUMMARY: Partial success" in p.stdout


def test_config_log_format_json_in_a_python_run(tmp_path: pathlib.Path) -> None:
    conf = write_config(tmp_path, 'log { format: "json" }')
    script = textwrap.dedent(f"""
        import logging, lucille
        logging.basicConfig(level=logging.INFO, format="TEXT %(message)s")
        r = lucille.run({str(conf)!r})
        logging.getLogger("lucille").info("after the run")
        print(r.status)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    # Lines during the run are JSON (and not also written as text by the root handler); the
    # logger is as it was after the run.
    during, after = p.stderr.split("TEXT after the run")
    check_run_lines(json_lines(during), p.stderr)
    assert not after.strip(), p.stderr


def test_the_command_line_wins_over_the_config(tmp_path: pathlib.Path) -> None:
    conf = write_config(tmp_path, 'log { format: "json" }')
    p = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf), "--log-format", "text"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "starting run with 1 connector(s) run_id=" in p.stderr, p.stderr
    assert not any(line.startswith("{") for line in p.stderr.splitlines()), p.stderr


def test_a_bad_log_format_is_a_config_error_with_its_key() -> None:
    errors = lucille.validate(hocon='log { format: "xml" }\nconnectors: []\npipelines: []')
    assert any("log.format" in e and "json" in e for e in errors), errors


def test_a_worker_process_logs_json_lines(tmp_path: pathlib.Path) -> None:
    pipeline = f"logs_{uuid.uuid4().hex[:8]}"
    conf = tmp_path / "procs.conf"
    conf.write_text(textwrap.dedent(f"""
        connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: 1, pipeline: "{pipeline}" }}]
        pipelines: [{{ name: "{pipeline}", stages: [] }}]
        indexer {{ type: "jsonl" }}
        jsonl {{ path: "{tmp_path / 'out.jsonl'}" }}
        kafka {{ bootstrapServers: "{bootstrap()}", consumerGroupId: "g-{pipeline}" }}
    """))
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        p = subprocess.Popen([sys.executable, "-m", "lucille.cli", "worker", str(conf),
                              "--log-format", "json"], stdout=out, stderr=subprocess.STDOUT,
                             cwd=tmp_path)
    try:
        deadline = time.time() + 60
        while "serving pipeline" not in log.read_text():
            assert p.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 0, log.read_text()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = json_lines(log.read_text())
    serving = next(o for o in lines if "serving pipeline" in o["message"])
    assert serving["level"] == "INFO" and serving["target"].startswith("lucille"), serving
    # A worker process serves documents of any run: its own lines belong to none.
    assert "run_id" not in serving, serving
    assert any(o["message"] == "stopped" for o in lines), lines


def test_overlapping_runs_share_the_json_logger_and_restore_it_after_the_last() -> None:
    """Two runs of one process (threads) that overlap: lines stay JSON until both are over,
    then the logger is as it was."""
    import logging

    from lucille import _logging

    logger = logging.getLogger("lucille")
    before = (list(logger.handlers), logger.propagate, logger.level)
    first, second = _logging.attach_json(), _logging.attach_json()
    json_handlers = [h for h in logger.handlers if isinstance(h.formatter, _logging.JsonFormatter)]
    assert len(json_handlers) == 1 and logger.propagate is False
    first.detach()
    assert json_handlers[0] in logger.handlers and logger.propagate is False
    second.detach()
    second.detach()  # a second detach of the same run changes nothing
    assert (list(logger.handlers), logger.propagate, logger.level) == before
