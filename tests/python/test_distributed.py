"""Distributed mode over a real Kafka-protocol broker (tansu, started by
scripts/services/kafka.sh): `--mode external`, `lucille worker` / `lucille indexer`
processes with `--mode distributed`, a worker killed mid-run, the fail topic, maxPendingDocs."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import IO

import pytest

import lucille
from jsonl_output import ids_in
from kafka_service import bootstrap, stop_gracefully



# A Python stage (runs unchanged in worker processes); one poison document fails.
STAGES = """[
  { class: "EmbeddedPython", script: \"\"\"
if doc['id'] == '13':
    raise ValueError('poison document 13')
doc['seen'] = 'yes'
\"\"\" },
  { class: "DropDocument", conditions: [{ fields: ["id"], values: ["7"] }] }
]"""


def write_config(tmp_path: Path, pipeline: str, out: Path, n: int, extra: str = "") -> Path:
    path = tmp_path / f"{pipeline}.conf"
    path.write_text(f"""
connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: {n}, pipeline: "{pipeline}" }}]
pipelines: [{{ name: "{pipeline}", stages: {STAGES} }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{out}" }}
worker {{ threads: 2 }}
kafka {{
  bootstrapServers: "{bootstrap()}"
  consumerGroupId: "g-{pipeline}"
  topicPartitions: 4
  consumer {{ "session.timeout.ms": 6000, "heartbeat.interval.ms": 500 }}
}}
{extra}
""")
    return path


def counts(r: lucille.RunResult) -> tuple[int, int, int, int]:
    return (r.published, r.succeeded, r.failed, r.dropped)


def test_external_mode_matches_local_mode(tmp_path: Path) -> None:
    pipeline = f"ext_{uuid.uuid4().hex[:8]}"
    local_out, ext_out = tmp_path / "local.jsonl", tmp_path / "ext.jsonl"
    local = lucille.run(str(write_config(tmp_path, pipeline, local_out, 60)), progress=False)
    conf = write_config(tmp_path, pipeline, ext_out, 60)
    ext = lucille.run(str(conf), mode="external", progress=False)
    assert local.status == "Success" and ext.status == "Success", ext.summary
    assert counts(ext) == counts(local) == (60, 58, 1, 1)
    assert sorted(ids_in(ext_out)) == sorted(ids_in(local_out))


def test_a_kafka_mode_without_a_kafka_block_is_a_config_error(tmp_path: Path) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text('connectors: [{ name: "s", class: "SequenceConnector", numDocs: 1 }]')
    with pytest.raises(lucille.ConfigError, match="kafka"):
        lucille.run(str(conf), mode="distributed", progress=False)
    conf.write_text('connectors: [{ name: "s", class: "SequenceConnector", numDocs: 1 }]\n'
                    'kafka { consumerGroupId: 3, maxPollIntervalSecs: 0 }')
    errors = lucille.validate(str(conf))
    assert any("kafka.bootstrapServers" in e for e in errors), errors
    assert any("kafka.maxPollIntervalSecs" in e for e in errors), errors


def test_lucille_s_zookeeper_block_is_accepted_and_logged_as_unused(tmp_path: Path) -> None:
    conf = tmp_path / "zk.conf"
    conf.write_text('connectors: [{ name: "s", class: "SequenceConnector", numDocs: 2 }]\n'
                    'worker { maxRetries: 1 }\nzookeeper { connectString: "localhost:2181" }')
    code = ("import logging, lucille\nlogging.basicConfig(level=logging.INFO)\n"
            f"print(lucille.run({str(conf)!r}, mode='test', progress=False).status)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.stdout.strip() == "Success", r.stderr
    assert "zookeeper is not used" in r.stderr and "{pipeline}_retries" in r.stderr, r.stderr


def start(role: str, conf: Path, pipeline: str, log: IO[str]) -> "subprocess.Popen[bytes]":
    return subprocess.Popen(
        [sys.executable, "-m", "lucille.cli", role, str(conf), "--pipeline", pipeline],
        stdout=log, stderr=subprocess.STDOUT)


def stop_all(procs: list["subprocess.Popen[bytes]"]) -> None:
    stop_gracefully(procs)


def test_two_worker_processes_and_an_indexer_process_match_local_mode(tmp_path: Path) -> None:
    pipeline = f"dist_{uuid.uuid4().hex[:8]}"
    local_out, dist_out = tmp_path / "local.jsonl", tmp_path / "dist.jsonl"
    local = lucille.run(str(write_config(tmp_path, pipeline, local_out, 80)), progress=False)
    conf = write_config(tmp_path, pipeline, dist_out, 80)
    log = open(tmp_path / "procs.log", "w")
    procs = [start("worker", conf, pipeline, log), start("worker", conf, pipeline, log),
             start("indexer", conf, pipeline, log)]
    try:
        r = lucille.run(str(conf), mode="distributed", progress=False)
    finally:
        stop_all(procs)
    logs = (tmp_path / "procs.log").read_text()
    assert r.status == "Success", r.summary + logs
    assert counts(r) == counts(local) == (80, 78, 1, 1)
    # The same documents, each at least once: the second worker joining the group while the
    # first has started is a rebalance, and a message the first had not finished is delivered
    # again to its new owner (at least once; the counts above stay exact, as each source
    # message is counted once, and a search index upserts by id; a JSONL file shows the line
    # twice).
    assert set(ids_in(dist_out)) == set(ids_in(local_out)), logs
    assert len(ids_in(local_out)) == len(set(ids_in(local_out)))
    assert all(p.returncode == 0 for p in procs), logs
    assert "stopped" in logs


def test_a_worker_killed_mid_run_is_replayed_and_every_document_indexed(tmp_path: Path) -> None:
    pipeline = f"kill_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(0.05)\n")
    conf = write_config(tmp_path, pipeline, out, 120)
    conf.write_text(conf.read_text().replace(
        'stages: [', f'stages: [ {{ class: "EmbeddedPython", scriptPath: "{slow}" }},', 1))
    log = open(tmp_path / "procs.log", "w")
    victim = start("worker", conf, pipeline, log)
    procs = [victim, start("worker", conf, pipeline, log), start("indexer", conf, pipeline, log)]
    runner = subprocess.Popen(
        [sys.executable, "-m", "lucille.cli", "run", str(conf), "--mode", "distributed"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Kill one worker once documents are flowing (whatever it holds is uncommitted).
        deadline = time.time() + 120
        while len(ids_in(out)) < 20 and time.time() < deadline and runner.poll() is None:
            time.sleep(0.05)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        # A supervisor restarts the dead worker at once. The dead member's partitions move
        # when its session ends (on tansu, with the patch scripts/services/kafka.sh builds).
        procs.append(start("worker", conf, pipeline, log))
        output, _ = runner.communicate(timeout=180)
    finally:
        if runner.poll() is None:
            runner.kill()
        stop_all(procs)
    assert runner.returncode == 0, output + (tmp_path / "procs.log").read_text()
    expected = {str(i) for i in range(120)} - {"7", "13"}
    indexed = ids_in(out)
    assert set(indexed) == expected, "every document indexed (replays are upserts by id)"
    assert "seq: complete." in output


def test_max_pending_docs_bounds_documents_in_flight(tmp_path: Path) -> None:
    pipeline = f"pend_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    seen = tmp_path / "published.txt"
    (tmp_path / "boundsrc.py").write_text(f"""
import lucille, json, os

class Source(lucille.Connector):
    def execute(self, publisher):
        with open({str(seen)!r}, "w") as log:
            for i in range(40):
                done = 0
                if os.path.exists({str(out)!r}):
                    with open({str(out)!r}) as f:
                        done = sum(1 for line in f if line.strip())
                log.write(f"{{i}} {{done}}\\n")
                log.flush()
                publisher.publish(lucille.Document(str(i)))
""")
    conf = write_config(tmp_path, pipeline, out, 1, extra="publisher { maxPendingDocs: 5 }")
    conf.write_text(conf.read_text().replace(
        'class: "SequenceConnector", numDocs: 1,', 'class: "boundsrc:Source",'))
    log = open(tmp_path / "procs.log", "w")
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{tmp_path}:{env_path}"
    sys.path.insert(0, str(tmp_path))
    procs = [start("worker", conf, pipeline, log), start("indexer", conf, pipeline, log)]
    try:
        r = lucille.run(str(conf), mode="distributed", progress=False)
    finally:
        stop_all(procs)
        os.environ["PYTHONPATH"] = env_path
    assert r.status == "Success", r.summary
    assert counts(r) == (40, 38, 1, 1)
    # Before publishing document i, at most 5 were in flight: all but 5 of the earlier ones
    # had reached a terminal event (2 of them, 7 and 13, are not indexed).
    for line in seen.read_text().splitlines():
        i, done = map(int, line.split())
        terminal_not_indexed = len({7, 13} & set(range(i)))
        assert done + terminal_not_indexed >= i - 5, line


def test_worker_indexer_process_and_the_fail_topic_read_by_kafka_connector(tmp_path: Path) -> None:
    pipeline = f"wi_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    conf = write_config(tmp_path, pipeline, out, 30)
    log = open(tmp_path / "procs.log", "w")
    procs = [start("worker-indexer", conf, pipeline, log)]
    try:
        r = lucille.run(str(conf), mode="distributed", progress=False)
    finally:
        stop_all(procs)
    assert r.status == "Success", r.summary + (tmp_path / "procs.log").read_text()
    assert counts(r) == (30, 28, 1, 1)
    assert sorted(ids_in(out), key=int) == [str(i) for i in range(30) if i not in (7, 13)]
    # The poison document is on {pipeline}_fail; Lucille's KafkaConnector reads it back.
    reader = tmp_path / "reader.conf"
    reader.write_text(f"""
connectors: [{{ name: "fails", class: "KafkaConnector", idField: "id", maxMessages: 1,
  kafka {{ bootstrapServers: "{bootstrap()}", topic: "{pipeline}_fail", consumerGroupId: "r-{pipeline}",
          clientId: "reader", maxPollIntervalSecs: 60 }} }}]
""")
    got = lucille.run(str(reader), mode="test", progress=False)
    assert got.status == "Success", got.summary
    assert [d.id for d in got.documents] == ["13"]
    failed = got.documents[0]
    assert "poison document 13" in (failed.get_string("error") or "")
    assert failed.get_string("pipeline") == pipeline


def test_kafka_connector_keys_are_validated() -> None:
    errors = lucille.validate(config={"connectors": [{
        "name": "k", "class": "KafkaConnector", "maxMessages": 0,
        "kafka": {"bootstrapServers": "h:1", "consumerGroupId": "g", "maxPollIntervalSecs": 5}}]})
    assert any("kafka.topic" in e for e in errors), errors


def test_a_worker_batch_mixing_two_runs_sends_each_document_s_events_to_its_own_run(
        tmp_path: Path) -> None:
    """Two runs publish the same ids to one source partition before any worker is up; the
    worker's batching stage then takes batches holding documents of both runs and gives each
    a child. Every CREATE, DROP and FINISH must reach its own run's event topic: a child's
    CREATE sent to the other run leaves that run waiting for a document it never published."""
    pipeline = f"mix_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    batches = tmp_path / "batches.txt"
    (tmp_path / "mixstages.py").write_text(f"""
import lucille

class Source(lucille.Connector):
    def execute(self, publisher):
        for i in range(30):
            publisher.publish(lucille.Document(str(i)))
        open({str(tmp_path)!r} + "/" + self.name + ".published", "w").close()

class Split(lucille.Stage):
    def process_batch(self, docs):
        with open({str(batches)!r}, "a") as f:
            f.write(" ".join(sorted({{d.run_id for d in docs}})) + "\\n")
        out = []
        for d in docs:
            if d.id == "4":
                d.drop()
            out.append([lucille.Document(d.id + "-child")])
        return out
""")
    confs = []
    for name in ("runA", "runB"):
        conf = tmp_path / f"{name}.conf"
        conf.write_text(f"""
connectors: [{{ name: "{name}", class: "mixstages:Source", pipeline: "{pipeline}" }}]
pipelines: [{{ name: "{pipeline}", stages: [{{ class: "mixstages:Split", batchSize: 25 }}] }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{out}" }}
worker {{ threads: 1 }}
kafka {{ bootstrapServers: "{bootstrap()}", consumerGroupId: "g-{pipeline}", topicPartitions: 1 }}
""")
        confs.append(conf)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}")
    runners = [subprocess.Popen(
        [sys.executable, "-m", "lucille.cli", "run", str(c), "--mode", "distributed"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
        for c in confs]
    log = open(tmp_path / "procs.log", "w")
    procs: list["subprocess.Popen[bytes]"] = []
    try:
        deadline = time.time() + 120
        while not all((tmp_path / f"{n}.published").exists() for n in ("runA", "runB")):
            assert time.time() < deadline and all(r.poll() is None for r in runners)
            time.sleep(0.1)
        procs = [subprocess.Popen(
            [sys.executable, "-m", "lucille.cli", role, str(confs[0]), "--pipeline", pipeline],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
            for role in ("worker", "indexer")]
        outputs = [r.communicate(timeout=240)[0] for r in runners]
    finally:
        for r in runners:
            if r.poll() is None:
                r.kill()
        stop_all(procs)
    logs = (tmp_path / "procs.log").read_text()
    assert any(len(line.split()) == 2 for line in batches.read_text().splitlines()), \
        "no batch held documents of both runs: " + batches.read_text()
    for r, output in zip(runners, outputs):
        assert r.returncode == 0, output + logs
        # 30 published, 30 children created; 29 parents and 30 children indexed, 1 dropped.
        assert "59 docs succeeded. 0 docs failed. 1 docs dropped." in output, output + logs
    assert len(ids_in(out)) == 2 * 59


def test_a_replay_after_a_worker_crash_counts_each_document_once(tmp_path: Path) -> None:
    """At least once: a worker killed (SIGKILL, inside a stage) before committing its source
    offsets has everything it did replayed by its replacement, so the indexer FINISHes
    documents 0-19 twice, with the same origins. The run counts each document once."""
    pipeline = f"dup_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    marker = tmp_path / "killed-once"
    script = tmp_path / "crash.py"
    script.write_text(f"""
import os, signal, time
if doc['id'] == '20' and not os.path.exists({str(marker)!r}):
    open({str(marker)!r}, 'w').close()
    # Once what documents 0-19 produced has been delivered (and indexed).
    deadline = time.time() + 60
    while time.time() < deadline and len(open({str(out)!r}).readlines() if os.path.exists({str(out)!r}) else []) < 20:
        time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGKILL)
""")
    conf = tmp_path / "dup.conf"
    conf.write_text(f"""
connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: 40, pipeline: "{pipeline}" }}]
pipelines: [{{ name: "{pipeline}", stages: [{{ class: "EmbeddedPython", scriptPath: "{script}" }}] }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{out}" }}
worker {{ threads: 1 }}
kafka {{
  bootstrapServers: "{bootstrap()}"
  consumerGroupId: "g-{pipeline}"
  topicPartitions: 1
  # Nothing is committed before the crash, so all of it is replayed.
  consumer {{ "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
             "auto.commit.interval.ms": 600000 }}
}}
""")
    log = open(tmp_path / "procs.log", "w")
    worker = start("worker", conf, pipeline, log)
    procs = [worker, start("indexer", conf, pipeline, log)]
    runner = subprocess.Popen(
        [sys.executable, "-m", "lucille.cli", "run", str(conf), "--mode", "distributed"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        worker.wait(timeout=180)
        # A supervisor restarts the dead worker.
        procs.append(start("worker", conf, pipeline, log))
        output, _ = runner.communicate(timeout=240)
    finally:
        if runner.poll() is None:
            runner.kill()
        stop_all(procs)
    logs = (tmp_path / "procs.log").read_text()
    assert worker.returncode == -signal.SIGKILL, logs
    assert runner.returncode == 0, output + logs
    indexed = ids_in(out)
    assert set(indexed) == {str(i) for i in range(40)}
    assert len(indexed) > 40, "the replay indexed documents again: " + str(indexed)
    assert "40 docs succeeded. 0 docs failed. 0 docs dropped." in output, output + logs
    assert "replayed event(s)" in output, output


@pytest.mark.parametrize("role", ["worker", "worker-indexer"])
def test_max_retries_counts_attempts_across_worker_restarts(tmp_path: Path, role: str) -> None:
    """worker.maxRetries without ZooKeeper, in a worker or a worker-indexer process:
    document 5 kills its process (SIGKILL, inside a stage) every time. Each start is counted
    in {pipeline}_retries before the document is processed, so with maxRetries 2 it is
    started 3 times (3 dead processes, each restarted by the test as a supervisor would),
    then FAILed: {pipeline}_fail, the dead-letter file, a FAIL event, and the run completes.
    Nothing is committed before the end, so documents 0-4 are replayed after every crash:
    they had been sent on, and a count never FAILs those, however often they come back."""
    pipeline = f"retry_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    script = tmp_path / "killer.py"
    seen = tmp_path / "seen.txt"
    script.write_text("import os, signal\n"
                      f"with open({str(seen)!r}, 'a') as f:\n"
                      "    f.write(doc['id'] + '\\n')\n"
                      "if doc['id'] == '5':\n"
                      "    os.kill(os.getpid(), signal.SIGKILL)\n")
    conf = tmp_path / "retry.conf"
    conf.write_text(f"""
connectors: [{{ name: "seq", class: "SequenceConnector", numDocs: 10, pipeline: "{pipeline}" }}]
pipelines: [{{ name: "{pipeline}", stages: [{{ class: "EmbeddedPython", scriptPath: "{script}" }}] }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{out}" }}
worker {{ threads: 1, maxRetries: 2 }}
kafka {{
  bootstrapServers: "{bootstrap()}"
  consumerGroupId: "g-{pipeline}"
  topicPartitions: 1
  consumer {{ "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
             "auto.commit.interval.ms": 600000 }}
}}
""")
    log = open(tmp_path / "procs.log", "w")

    def worker() -> "subprocess.Popen[bytes]":
        return subprocess.Popen(
            [sys.executable, "-m", "lucille.cli", role, str(conf), "--pipeline", pipeline],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)

    procs = [start("indexer", conf, pipeline, log)] if role == "worker" else []
    procs.append(worker())
    runner = subprocess.Popen(
        [sys.executable, "-m", "lucille.cli", "run", str(conf), "--mode", "distributed"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deaths = 0
    try:
        deadline = time.time() + 300
        while runner.poll() is None and time.time() < deadline:
            if procs[-1].poll() is not None:
                assert procs[-1].returncode == -signal.SIGKILL, (tmp_path / "procs.log").read_text()
                deaths += 1
                assert deaths <= 3, "document 5 was started more than 1 + maxRetries times"
                procs.append(worker())
            time.sleep(0.2)
        output, _ = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
        stop_all(procs)
    logs = (tmp_path / "procs.log").read_text()
    assert runner.returncode == 0, output + logs
    assert deaths == 3, logs
    assert "9 docs succeeded. 1 docs FAILED. 0 docs dropped." in output, output + logs
    indexed = ids_in(out)
    assert set(indexed) == {str(i) for i in range(10)} - {"5"}
    # Each worker started from the beginning (nothing committed): 0-4 were processed by all
    # four, 5 by the three that died on it (the fourth FAILed it unprocessed), 6-9 once.
    processed = seen.read_text().split()
    assert {i: processed.count(i) for i in set(processed)} == \
        {**{str(i): 4 for i in range(5)}, "5": 3, **{str(i): 1 for i in range(6, 10)}}, processed
    assert "started 3 times" in logs, logs
    # The last worker's final commit deleted the keys of the 10 messages it finished.
    assert f"10 message key(s) deleted from {pipeline}_retries, 0 left" in logs, logs
    dead = [json.loads(line) for line in (tmp_path / f"{pipeline}_fail.jsonl").read_text()
            .splitlines()]
    assert [(d["id"], d["attempts"]) for d in dead] == [("5", 3)]
    reader = tmp_path / "reader.conf"
    reader.write_text(f"""
connectors: [{{ name: "fails", class: "KafkaConnector", idField: "id", maxMessages: 1,
  kafka {{ bootstrapServers: "{bootstrap()}", topic: "{pipeline}_fail", consumerGroupId: "r-{pipeline}",
          clientId: "reader", maxPollIntervalSecs: 60 }} }}]
""")
    got = lucille.run(str(reader), mode="test", progress=False)
    assert [d.id for d in got.documents] == ["5"], got.summary
    assert "started 3 times" in (got.documents[0].get_string("error") or "")


def test_skip_unchanged_in_external_mode_counts_from_the_events_kafka_carries(tmp_path: Path) -> None:
    pipeline = f"skip_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "ext.jsonl"
    conf = write_config(tmp_path, pipeline, out, 60)
    text = conf.read_text().replace(f'pipeline: "{pipeline}" }}]',
                                    f'pipeline: "{pipeline}", skipUnchanged: true }}]')
    conf.write_text(text.replace(f'jsonl {{ path: "{out}" }}', f'jsonl {{ path: "{out}", append: true }}'))
    first = lucille.run(str(conf), mode="external", progress=False)
    assert (first.status, *counts(first), first.unchanged) == ("Success", 60, 58, 1, 1, 0)
    # The FINISH and DROP events came back over the event topic: 13 failed, so only it runs.
    second = lucille.run(str(conf), mode="external", progress=False)
    assert (second.status, *counts(second), second.unchanged) == ("Success", 60, 0, 1, 0, 59)
    assert len(ids_in(out)) == 58


def test_skip_unchanged_output_needs_the_indexer_in_the_process(tmp_path: Path) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text(f"""
connectors: [{{ name: "s", class: "SequenceConnector", numDocs: 1, skipUnchanged: "output" }}]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{tmp_path / 'o.jsonl'}", append: true }}
kafka {{ bootstrapServers: "{bootstrap()}" }}
""")
    with pytest.raises(lucille.ConfigError, match=r"connectors\[0\]\.skipUnchanged.*mode external"):
        lucille.run(str(conf), mode="distributed", progress=False)


def test_an_indexer_s_batch_of_terminal_events_travels_as_one_message(tmp_path: Path) -> None:
    """Events per batch of documents, not per document: the indexer sends a batch's FINISH
    events to the run's event topic as one message (a JSON array of Lucille's event objects),
    and the run counts every document exactly."""
    from confluent_kafka import Consumer
    pipeline = f"evb_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out.jsonl"
    n = 2000
    conf = write_config(tmp_path, pipeline, out, n,
                        'indexer { batchSize: 500, batchTimeout: 5000 }')
    log = open(tmp_path / "procs.log", "w")
    procs = [start("worker", conf, pipeline, log), start("indexer", conf, pipeline, log)]
    try:
        r = lucille.run(str(conf), mode="distributed", progress=False)
    finally:
        stop_all(procs)
    assert r.status == "Success", r.summary + (tmp_path / "procs.log").read_text()
    assert counts(r) == (n, n - 2, 1, 1)
    c = Consumer({"bootstrap.servers": bootstrap(), "group.id": f"read-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([f"{pipeline}_event_{r.run_id}"])
    messages, finishes = 0, 0
    deadline = time.time() + 30
    while finishes < n - 2 and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error() is not None:
            continue
        messages += 1
        events = json.loads(m.value() or b"null")
        for e in events if isinstance(events, list) else [events]:
            finishes += e["type"] == "FINISH"
    c.close()
    assert finishes == n - 2
    # Four full batches of the indexer (plus the worker's DROP and FAIL): not 2,000 messages.
    assert messages <= 12, f"{messages} event messages for {n} documents"
