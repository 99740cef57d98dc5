"""OpenTelemetry traces (`tracing { otlpEndpoint, sampleRatio, serviceName, headers }`), received
by a local OTLP/HTTP receiver that decodes them with the `opentelemetry-proto` package: the tree
run -> document -> stage / index with consistent trace and parent ids, sampling at 1 and 0, a
FAIL's error, a collector that is down or answers 500 (the run completes, the dropped spans are
counted), and, on the Kafka-protocol broker, one document's trace across three processes.

Each run is its own process: a process traces to the one collector it was started with."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import observed_pipeline
import otlp_receiver
from otlp_receiver import Receiver, Span

RUN = """
import json, sys, lucille
r = lucille.run(sys.argv[1], progress=False)
print(json.dumps([r.status, r.run_id, r.published, r.succeeded, r.failed, r.dropped]))
"""


def write_config(tmp_path: Path, name: str, n: int, tracing: str, extra: str = "") -> Path:
    return observed_pipeline.write_config(tmp_path, name, n, f"tracing {{ {tracing} }}\n{extra}",
                                          indexer="batchSize: 4")


def run(conf: Path, cwd: Path) -> list[object]:
    out = subprocess.run([sys.executable, "-c", RUN, str(conf)], capture_output=True, text=True,
                         cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr
    result: list[object] = json.loads(out.stdout.strip().splitlines()[-1])
    assert result[0] == "Success", out.stderr
    return result


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = otlp_receiver.start()
    yield r
    r.close()


def by_id(spans: list[Span]) -> dict[str, Span]:
    return {s.span_id: s for s in spans}


def test_every_document_is_traced_at_ratio_1_as_a_tree_under_the_run(
        tmp_path: Path, receiver: Receiver) -> None:
    conf = write_config(tmp_path, "t1", 10, f'otlpEndpoint: "{receiver.url}", sampleRatio: 1.0, '
                                             'serviceName: "lucille-test"')
    _, run_id, published, succeeded, failed, dropped = run(conf, tmp_path)
    assert (published, succeeded, failed, dropped) == (10, 10, 1, 1)
    [root] = receiver.named("run")
    assert root.parent == "" and root.attributes["lucille.run_id"] == run_id
    assert root.service == "lucille-test"
    [connector] = receiver.named("connector")
    assert connector.parent == root.span_id
    spans = receiver.spans
    assert {s.trace_id for s in spans if s.name != "index_batch"} == {root.trace_id}
    # Every document, the two children included, once: 10 published + 2 created.
    docs = {s.attributes["lucille.doc_id"]: s for s in receiver.named("document")}
    assert len(receiver.named("document")) == len(docs) == 12
    assert all(d.parent == root.span_id for d in docs.values())
    assert docs["5"].error and "poison document 5" in docs["5"].error
    assert docs["5"].attributes["lucille.outcome"] == "FAIL"
    assert docs["7"].attributes["lucille.outcome"] == "DROP" and docs["7"].error is None
    # A stage span per stage a document passed, under its document span.
    stages = Counter((s.attributes["lucille.doc_id"], s.attributes["lucille.stage"])
                     for s in receiver.named("stage"))
    assert stages[("1", "split")] == stages[("1", "copy")] == 1
    assert stages[("7", "stage_2")] == 1 and stages[("7", "copy")] == 0
    assert stages[("5", "split")] == 1 and stages[("5", "copy")] == 0
    assert stages[("0-child-0", "split")] == 0 and stages[("0-child-0", "copy")] == 1
    for s in receiver.named("stage"):
        assert s.parent == docs[s.attributes["lucille.doc_id"]].span_id
        assert s.attributes["lucille.run_id"] == run_id
    [poison] = [s for s in receiver.named("stage") if s.attributes["lucille.doc_id"] == "5"]
    assert poison.attributes["lucille.class"].endswith("splitter.py:Splitter")
    assert poison.error and "poison document 5" in poison.attributes["lucille.error"]
    # An index span for each document sent to the indexer, under its document span.
    index = {s.attributes["lucille.doc_id"]: s for s in receiver.named("index")}
    assert set(index) == set(docs) - {"5", "7"}
    assert all(s.parent == docs[d].span_id for d, s in index.items())
    batches = receiver.named("index_batch")
    assert sum(int(b.attributes["lucille.documents"]) for b in batches) == 10
    assert all(b.parent == root.span_id and b.trace_id == root.trace_id for b in batches)


def test_ratio_0_traces_the_run_and_no_document(tmp_path: Path, receiver: Receiver) -> None:
    conf = write_config(tmp_path, "t0", 10, f'otlpEndpoint: "{receiver.url}", sampleRatio: 0')
    run(conf, tmp_path)
    names = Counter(s.name for s in receiver.spans)
    assert names["run"] == names["connector"] == 1 and names["index_batch"] >= 1
    assert names["document"] == names["stage"] == names["index"] == 0


def test_sampling_is_decided_by_document_id_so_a_replay_is_sampled_alike(
        tmp_path: Path, receiver: Receiver) -> None:
    conf = write_config(tmp_path, "t5", 200, f'otlpEndpoint: "{receiver.url}", sampleRatio: 0.25')
    run(conf, tmp_path)
    first = {s.attributes["lucille.doc_id"] for s in receiver.named("document")}
    assert 20 < len(first) < 90, len(first)
    receiver.spans.clear()
    run(conf, tmp_path)
    second = {s.attributes["lucille.doc_id"] for s in receiver.named("document")}
    assert first == second


def dropped(text: str) -> float:
    for line in text.splitlines():
        if line.startswith("lucille_traces_dropped_total "):
            return float(line.split()[1])
    raise AssertionError("no lucille_traces_dropped_total")


@pytest.mark.parametrize("collector", ["answers 500", "down"])
def test_a_failing_collector_never_fails_the_run_and_its_spans_are_counted_dropped(
        tmp_path: Path, collector: str) -> None:
    receiver = otlp_receiver.start(status=500)
    url = receiver.url
    if collector == "down":
        receiver.close()
    try:
        conf = write_config(tmp_path, "tf", 30, f'otlpEndpoint: "{url}", sampleRatio: 1')
        result, text = metrics_after_run_with_port(conf, tmp_path)
        assert result[0] == "Success"
        assert dropped(text) > 0
        assert "trace export to" in text and "failed" in text
        if collector == "answers 500":
            assert receiver.requests > 0
    finally:
        if collector != "down":
            receiver.close()


def metrics_after_run_with_port(conf: Path, cwd: Path) -> tuple[list[object], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (f"import json, sys, urllib.request, lucille\n"
            f"r = lucille.run(sys.argv[1], progress=False, overrides={{'metrics.port': {port}}})\n"
            f"print(json.dumps([r.status, r.run_id, r.published, r.succeeded, r.failed, r.dropped]))\n"
            f"print(urllib.request.urlopen('http://127.0.0.1:{port}/metrics').read().decode())\n")
    out = subprocess.run([sys.executable, "-c", code, str(conf)], capture_output=True, text=True,
                         cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr
    first, _, text = out.stdout.partition("\n")
    result: list[object] = json.loads(first)
    return result, text + out.stderr


def test_a_slow_collector_never_holds_the_pipeline_back_the_spans_that_do_not_fit_are_dropped(
        tmp_path: Path) -> None:
    # Each export takes 3 s; 3000 documents at ratio 1 make ~15000 spans, more than the
    # buffer holds while the exporter waits.
    receiver = otlp_receiver.start(delay=3.0)
    try:
        conf = write_config(tmp_path, "ts", 3000, f'otlpEndpoint: "{receiver.url}", sampleRatio: 1')
        result, text = metrics_after_run_with_port(conf, tmp_path)
        assert result[0] == "Success"
        assert result[3] == 3000 and result[4] == 1, result
        assert dropped(text) > 0, text
    finally:
        receiver.close()


def test_one_document_s_trace_crosses_the_publisher_a_worker_and_an_indexer_over_kafka(
        tmp_path: Path, receiver: Receiver) -> None:
    label = f"tk_{uuid.uuid4().hex[:8]}"
    conf = write_config(tmp_path, label, 20, f'otlpEndpoint: "{receiver.url}", sampleRatio: 1',
                        extra=observed_pipeline.kafka_block(label))
    log = open(tmp_path / "procs.log", "w")
    procs = [subprocess.Popen([sys.executable, "-m", "lucille.cli", role, str(conf),
                               "--pipeline", label], stdout=log, stderr=subprocess.STDOUT)
             for role in ("worker", "indexer")]
    try:
        runner = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf),
                                 "--mode", "distributed"], capture_output=True, text=True,
                                cwd=tmp_path, timeout=180)
        assert runner.returncode == 0, runner.stdout + runner.stderr
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
    logs = (tmp_path / "procs.log").read_text()
    [root] = receiver.named("run")
    docs = {s.attributes["lucille.doc_id"]: s for s in receiver.named("document")}
    assert len(docs) == 22, logs
    doc = docs["3"]
    stages = [s for s in receiver.named("stage") if s.parent == doc.span_id]
    index = [s for s in receiver.named("index") if s.parent == doc.span_id]
    assert {s.attributes["lucille.stage"] for s in stages} == {"split", "copy"}, logs
    assert len(index) >= 1, logs
    tree = [root, doc, *stages, *index]
    assert {s.trace_id for s in tree} == {root.trace_id}
    assert doc.parent == root.span_id
    # Three processes: the run's (run and document spans), the worker's and the indexer's.
    assert root.pid == doc.pid
    assert len({root.pid, stages[0].pid, index[0].pid}) == 3, logs
    assert all(p.returncode == 0 for p in procs), logs
