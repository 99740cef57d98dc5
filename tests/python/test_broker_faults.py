"""Distributed mode when the broker itself fails: a rolling restart mid-run (SIGTERM, 10 s
down, started again on the same port with the same store), a broker down for 60 s, a broker
not there when a run or a worker starts, and a source-topic message that is not a document.

Each scenario runs a broker of its own (tansu with its SQLite engine, its store in the test's
folder, on a free port), so stopping it disturbs no other test. Every run: every id indexed
at least once, the counts exact, the run ends. `LUCILLE_FAULT_REPEAT=5` runs each scenario
five times in a row (the issue's acceptance); the suite runs each once."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import IO, Callable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from jsonl_output import ids_in
from kafka_service import stop_gracefully, tansu

REPEAT = int(os.environ.get("LUCILLE_FAULT_REPEAT", "1"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Broker:
    """tansu on a port of its own, its SQLite store in `folder`; stopped and started again on
    the same port with the same store, as a rolling restart does."""

    def __init__(self, folder: Path, port: int | None = None):
        self.folder, self.port = folder, port or free_port()
        folder.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        self.starts += 1
        log = open(self.folder / f"broker-{self.starts}.log", "w")
        self.proc = subprocess.Popen(
            [tansu(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "sqlite://store.db"],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.folder)
        deadline = time.time() + 30
        while not listening(self.port):
            assert self.proc.poll() is None, (self.folder / f"broker-{self.starts}.log").read_text()
            assert time.time() < deadline, "the broker did not start"
            time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        deadline = time.time() + 10
        while listening(self.port) and time.time() < deadline:
            time.sleep(0.1)


N = 4000
STAGE = """
import time
import lucille

class Slow(lucille.Stage):
    def process_document(self, doc):
        time.sleep(0.004)
"""


def write_config(tmp: Path, pipeline: str, bootstrap: str, n: int = N, extra: str = "") -> Path:
    (tmp / "slow.py").write_text(STAGE)
    conf = tmp / "run.conf"
    conf.write_text(f"""
connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: {n}, docIdPrefix: "d",
               pipeline: "{pipeline}" }}]
pipelines: [{{ name: "{pipeline}", stages: [
  {{ class: "slow.py:Slow" }},
  {{ class: "CopyFields", fieldMapping: {{ id: "id_copy" }} }} ] }}]
indexer {{ type: "jsonl", batchSize: 100, batchTimeout: 100 }}
jsonl {{ path: "{tmp / 'out.jsonl'}" }}
worker {{ threads: 1 }}
runner {{ stallWarningSecs: 20 }}
kafka {{ bootstrapServers: "{bootstrap}", consumerGroupId: "g-{pipeline}",
         maxPollIntervalSecs: 600 }}
{extra}
""")
    return conf


class Cluster:
    """One `lucille worker`, one `lucille indexer` and the run (`--mode distributed`)."""

    def __init__(self, tmp: Path, conf: Path, run: bool = True):
        self.tmp, self.conf = tmp, conf
        self.log: IO[str] = open(tmp / "procs.log", "w")
        self.procs = [subprocess.Popen([sys.executable, "-m", "lucille.cli", role, str(conf)],
                                       stdout=self.log, stderr=subprocess.STDOUT, cwd=tmp)
                      for role in ("worker", "indexer")]
        self.runner: subprocess.Popen[str] | None = None
        if run:
            self.run()

    def run(self) -> None:
        self.runner = subprocess.Popen(
            [sys.executable, "-m", "lucille.cli", "run", str(self.conf), "--mode", "distributed"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.tmp)

    def indexed(self) -> list[str]:
        return ids_in(self.tmp / "out.jsonl")

    def logs(self) -> str:
        self.log.flush()
        return (self.tmp / "procs.log").read_text()

    def wait_for(self, what: str, cond: Callable[[], bool], secs: float = 120) -> None:
        assert self.runner is not None
        deadline = time.time() + secs
        while not cond():
            assert self.runner.poll() is None, f"the run ended before {what}: {self.finish(1)}"
            assert time.time() < deadline, f"no {what} in {secs} s: {self.logs()[-5000:]}"
            time.sleep(0.05)

    def finish(self, secs: float) -> str:
        assert self.runner is not None
        try:
            output, _ = self.runner.communicate(timeout=secs)
        except subprocess.TimeoutExpired:
            self.runner.kill()
            output, _ = self.runner.communicate()
            output += "\n(the run did not end: killed by the test)"
        return str(output)

    def stop(self) -> None:
        if self.runner is not None and self.runner.poll() is None:
            self.runner.kill()
            self.runner.wait()
        stop_gracefully(self.procs)
        self.log.close()


def assert_complete(c: Cluster, output: str, n: int = N) -> None:
    logs = c.logs()
    indexed = set(c.indexed())
    missing = sorted({f"d{i}" for i in range(n)} - indexed)
    assert not missing, (f"{len(missing)} never indexed, first {missing[:10]}:\n{output}\n"
                         f"{logs[-8000:]}")
    assert c.runner is not None and c.runner.returncode == 0, output + logs[-8000:]
    assert f"seq: complete. {n} docs succeeded. 0 docs failed. 0 docs dropped." in output, \
        output + logs[-8000:]


def broker_outage(tmp_path: Path, down_secs: float) -> None:
    broker = Broker(tmp_path / "broker")
    broker.start()
    pipeline = f"bf_{uuid.uuid4().hex[:8]}"
    c = Cluster(tmp_path, write_config(tmp_path, pipeline, broker.bootstrap))
    try:
        c.wait_for("400 documents indexed", lambda: len(c.indexed()) >= 400)
        broker.stop(signal.SIGTERM)
        time.sleep(down_secs)
        broker.start()
        output = c.finish(down_secs + 300)
        assert_complete(c, output)
    finally:
        c.stop()
        broker.stop(signal.SIGKILL)


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_rolling_broker_restart_mid_run_loses_nothing(tmp_path: Path, attempt: int) -> None:
    broker_outage(tmp_path, 10)


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_broker_down_for_a_minute_mid_run_loses_nothing(tmp_path: Path, attempt: int) -> None:
    broker_outage(tmp_path, 60)


# ---------------------------------------------------------------------------------------------
# What the test broker does on SIGTERM, shown with a plain client


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_tansu_answers_produces_with_a_generic_error_while_it_shuts_down(tmp_path: Path,
                                                                        attempt: int) -> None:
    """Why a delivery that fails must be sent again, not given up. tansu's SQLite engine, on
    SIGTERM, stops its storage before its listener: for a few seconds every produce is answered
    with UNKNOWN_SERVER_ERROR, which librdkafka reports as final (no retry). Apache Kafka sends
    the same error on an unexpected broker-side failure. If this starts failing, tansu shuts
    down in another order; our side must survive it either way."""
    broker = Broker(tmp_path / "broker")
    broker.start()
    errors: list[str] = []
    delivered = 0

    def report(err, _msg):  # type: ignore[no-untyped-def]
        nonlocal delivered
        if err is None:
            delivered += 1
        else:
            errors.append(err.name())

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("probe", 1, 1)])["probe"].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    try:
        for i in range(200):
            p.produce("probe", key=f"k{i}", value=b"x", on_delivery=report)
        p.flush(30)
        assert delivered == 200 and not errors, errors[:5]
        assert broker.proc is not None
        broker.proc.send_signal(signal.SIGTERM)
        deadline = time.time() + 20
        i = 0
        while broker.proc.poll() is None and time.time() < deadline:
            p.produce("probe", key=f"s{i}", value=b"x", on_delivery=report)
            p.poll(0.005)
            i += 1
        p.flush(5)
    finally:
        broker.stop(signal.SIGKILL)
    assert "UNKNOWN" in errors, f"no UNKNOWN_SERVER_ERROR while shutting down: {errors[:10]}"


# ---------------------------------------------------------------------------------------------
# A broker that is not there when a run or a worker starts


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_run_whose_broker_is_not_there_stops_with_an_error_naming_it(tmp_path: Path,
                                                                       attempt: int) -> None:
    port = free_port()
    conf = write_config(tmp_path, "nobroker", f"127.0.0.1:{port}", 10,
                        "kafka.connectTimeoutSecs: 3")
    started = time.time()
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf), "--mode",
                        "distributed"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    took = time.time() - started
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert (f"the broker at 127.0.0.1:{port} (kafka.bootstrapServers) did not answer within 3 s "
            "(kafka.connectTimeoutSecs)") in out, out
    assert "Connection refused" in out, out
    assert took < 30, f"took {took:.0f} s"


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_worker_waits_for_its_broker_not_ready_naming_it_then_serves(tmp_path: Path,
                                                                       attempt: int) -> None:
    broker = Broker(tmp_path / "broker")
    conf = write_config(tmp_path, f"wait_{uuid.uuid4().hex[:8]}", broker.bootstrap, 20,
                        "kafka.connectTimeoutSecs: 0")
    metrics = free_port()
    log = open(tmp_path / "worker.log", "w")
    worker = subprocess.Popen([sys.executable, "-m", "lucille.cli", "worker", str(conf),
                               "--metrics-port", str(metrics)], stdout=log,
                              stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        base = f"http://127.0.0.1:{metrics}"
        deadline = time.time() + 60
        while "waiting for the Kafka broker" not in http_get(base + "/ready")[1]:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.time() < deadline, http_get(base + "/ready")
            time.sleep(0.2)
        status, body = http_get(base + "/ready")
        assert status == 503 and broker.bootstrap in body, body
        assert http_get(base + "/healthz")[0] == 200
        time.sleep(3)
        assert worker.poll() is None, "connectTimeoutSecs 0 waits for ever"
        broker.start()
        deadline = time.time() + 60
        while http_get(base + "/ready")[0] != 200:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.time() < deadline, http_get(base + "/ready")
            time.sleep(0.2)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        log.close()
        broker.stop(signal.SIGKILL)
    assert worker.returncode == 0, (tmp_path / "worker.log").read_text()


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_worker_whose_broker_does_not_come_stops_after_its_connect_timeout(
        tmp_path: Path, attempt: int) -> None:
    port = free_port()
    conf = write_config(tmp_path, "nobroker", f"127.0.0.1:{port}", 10,
                        "kafka.connectTimeoutSecs: 2")
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "worker", str(conf)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert f"the broker at 127.0.0.1:{port} (kafka.bootstrapServers) did not answer within 2 s" \
        in out, out


# ---------------------------------------------------------------------------------------------
# A message on the source topic that is not a document


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_source_message_that_is_not_a_document_is_dead_lettered_and_the_run_goes_on(
        tmp_path: Path, attempt: int) -> None:
    from kafka_service import bootstrap
    pipeline = f"junk_{uuid.uuid4().hex[:8]}"
    conf = write_config(tmp_path, pipeline, bootstrap(), 300,
                        f'worker.deadLetterPath: "{tmp_path / "dead.jsonl"}"')
    c = Cluster(tmp_path, conf, run=False)
    try:
        # Written before the run, by a producer of no run (no lucille-run header): the worker
        # reads it first on its partition.
        deadline = time.time() + 60
        while c.logs().count("serving pipeline") < 2:
            assert time.time() < deadline, c.logs()
            time.sleep(0.2)
        p = Producer({"bootstrap.servers": bootstrap()})
        p.produce(f"{pipeline}_source", key="junk-1", value=b"{not json at all")
        p.produce(f"{pipeline}_source", key="junk-2", value=b'{"no_id": true}')
        assert p.flush(30) == 0
        c.run()
        output = c.finish(180)
        assert_complete(c, output, 300)
        fail = Consumer({"bootstrap.servers": bootstrap(), "group.id": f"read-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
        fail.subscribe([f"{pipeline}_fail"])
        lines: dict[str, dict[str, object]] = {}
        deadline = time.time() + 30
        while len(lines) < 2 and time.time() < deadline:
            m = fail.poll(0.5)
            if m is not None and m.error() is None:
                line = json.loads(m.value() or b"{}")
                lines[str(line["id"])] = line
        fail.close()
    finally:
        c.stop()
    assert set(lines) == {"junk-1", "junk-2"}, lines
    assert lines["junk-1"]["text"] == "{not json at all"
    assert "not a document" in str(lines["junk-1"]["error"])
    assert f"{pipeline}_source[" in str(lines["junk-1"]["error"]), "its position is named"
    assert lines["junk-1"]["run_id"] is None
    dead = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert sorted(d["id"] for d in dead) == ["junk-1", "junk-2"], dead
