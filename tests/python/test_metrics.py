"""The metrics and health endpoint (`metrics { port, host }`, `--metrics-port`): the
interface's metric names and labels, counters equal to the RUN SUMMARY, the exposition
accepted by `promtool check metrics` and by the prometheus_client parser, `/healthz` and
`/ready` (503 with a reason while starting and while draining), and a real Prometheus
(scripts/services/prometheus.sh) scraping a run and a Kafka worker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import lucille
from observed_pipeline import kafka_block, write_config
from services import service_env

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition by (name, labels), parsed by prometheus_client."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(s: Samples, name: str, **labels: str) -> float:
    return s.get((name, frozenset(labels.items())), 0.0)


def scrape(port: int) -> str:
    status, text = http_get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200, text
    return text


RUN_AND_SCRAPE = """
import json, sys, urllib.request, lucille
port = int(sys.argv[2])
r = lucille.run(sys.argv[1], progress=False, overrides={"metrics.port": port})
with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as m:
    text = m.read().decode()
print(json.dumps({"counts": [r.status, r.published, r.succeeded, r.failed, r.dropped],
                  "stages": r.stage_metrics, "metrics": text}))
"""


def test_a_run_s_counters_equal_its_summary_with_the_interface_s_names_and_labels(
        tmp_path: Path) -> None:
    name = f"m_{uuid.uuid4().hex[:8]}"
    # A process of its own: its metrics are this run's alone (a process's counters add up
    # over its runs). The endpoint outlives the run, so the final values are scraped after it.
    out = subprocess.run([sys.executable, "-c", RUN_AND_SCRAPE, str(write_config(tmp_path, name, 20)),
                          str(free_port())], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    status, published, succeeded, failed, dropped = got["counts"]
    assert status == "Success"
    assert (published, succeeded, failed, dropped) == (20, 20, 1, 1)
    s = samples(got["metrics"])
    assert value(s, "lucille_documents_total", pipeline=name, outcome="succeeded") == succeeded
    assert value(s, "lucille_documents_total", pipeline=name, outcome="failed") == failed
    assert value(s, "lucille_documents_total", pipeline=name, outcome="dropped") == dropped
    assert value(s, "lucille_documents_published_total", connector=f"{name}-c") == published
    assert value(s, "lucille_documents_created_total", pipeline=name) == 2
    assert value(s, "lucille_documents_in_flight") == 0
    stages = {m["name"]: m for m in got["stages"]}
    split = {"pipeline": name, "stage": "split", "class": f"{tmp_path / 'splitter.py'}:Splitter"}
    assert value(s, "lucille_stage_documents_total", **split) == stages["split"]["processed"] == 20
    assert value(s, "lucille_stage_errors_total", **split) == stages["split"]["errors"] == 1
    drop = {"pipeline": name, "stage": "stage_2", "class": "DropDocument"}
    assert value(s, "lucille_stage_documents_total", **drop) == 1
    copy = {"pipeline": name, "stage": "copy", "class": "CopyFields"}
    # The children go through the stages after the one that made them; 5 failed, 7 dropped.
    assert value(s, "lucille_stage_documents_total", **copy) == stages["copy"]["processed"] == 20
    assert value(s, "lucille_stage_duration_seconds_count", **copy) == 20
    assert value(s, "lucille_stage_duration_seconds_bucket", le="+Inf", **copy) == 20
    assert value(s, "lucille_indexer_documents_total", indexer="jsonl",
                 outcome="succeeded") == succeeded
    assert value(s, "lucille_indexer_documents_total", indexer="jsonl", outcome="failed") == 0
    assert value(s, "lucille_indexer_batches_total", indexer="jsonl") >= 1
    assert value(s, "lucille_indexer_batch_duration_seconds_count", indexer="jsonl") >= 1
    assert value(s, "lucille_indexer_retries_total", indexer="jsonl") == 0
    assert value(s, "lucille_build_info", version=lucille.__version__) == 1
    for queue in ("source", "destination", "events"):
        assert ("lucille_queue_depth", frozenset({("queue", queue)})) in s
    for name_ in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                  "process_open_fds", "process_start_time_seconds",
                  "lucille_documents_in_flight", "lucille_traces_dropped_total"):
        assert (name_, frozenset()) in s, name_
    assert value(s, "process_resident_memory_bytes") > 0


def test_promtool_accepts_the_exposition(tmp_path: Path) -> None:
    port = free_port()
    r = lucille.run(str(write_config(tmp_path, f"p_{uuid.uuid4().hex[:8]}", 10)), progress=False,
                    overrides={"metrics.port": port})
    assert r.status == "Success", r.summary
    text = scrape(port)
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "lucille_stage_duration_seconds_bucket" in text


def test_metrics_keys_are_validated_with_their_paths(tmp_path: Path) -> None:
    conf = write_config(tmp_path, "v", 1, extra='metrics { port: 70000, hots: "x" }')
    errors = lucille.validate(str(conf))
    assert any(e.startswith("metrics.port") for e in errors), errors
    assert any("metrics.hots" in e and "host" in e for e in errors), errors
    conf = write_config(tmp_path, "w", 1, extra='metrics { host: "127.0.0.1" }')
    assert any(e.startswith("metrics.port") for e in lucille.validate(str(conf)))


def test_a_port_in_use_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = write_config(tmp_path, "busy", 5)
        r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf),
                            "--metrics-port", str(port)], capture_output=True, text=True,
                           cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"metrics: cannot listen on 127.0.0.1:{port}" in r.stderr, r.stderr
    assert not (tmp_path / "busy.jsonl").exists(), "nothing ran"


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_ready_once_running_and_503_with_the_reason_while_draining(tmp_path: Path) -> None:
    port = free_port()
    conf = write_config(tmp_path, "drain", 400, slow=0.05,
                        extra="publisher { queueCapacity: 40 }\nworker { threads: 2 }")
    proc = subprocess.Popen([sys.executable, "-m", "lucille.cli", "run", str(conf),
                             "--metrics-port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        def answers(path: str) -> tuple[int, str]:
            try:
                return http_get(base + path)
            except (urllib.error.URLError, ConnectionError):
                return 0, ""

        wait_for(lambda: answers("/ready")[0] == 200, "/ready to answer 200")
        assert answers("/healthz")[0] == 200
        proc.send_signal(signal.SIGTERM)
        # The queue's documents finish (40 of them at 0.05 s on 2 threads): about a second.
        wait_for(lambda: answers("/ready")[0] == 503, "/ready to answer 503 while draining", 10)
        status, body = answers("/ready")
        if status == 503:
            assert "draining" in json.loads(body)["reason"]
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "RUN SUMMARY" in output, output
    assert "serving metrics at http://127.0.0.1:" in output, output


def prometheus_query(query: str) -> list[dict[str, Any]]:
    url = service_env("LUCILLE_TEST_PROMETHEUS", "prometheus.sh")
    status, body = http_get(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
    assert status == 200, body
    result: list[dict[str, Any]] = json.loads(body)["data"]["result"]
    return result


def scraped_by_prometheus(port: int, label: str) -> Path:
    """Has the test Prometheus scrape 127.0.0.1:port, its series labelled test=label."""
    targets = Path(service_env("LUCILLE_TEST_PROMETHEUS_TARGETS", "prometheus.sh"))
    path = targets / f"{label}.json"
    tmp = targets / f".{label}.tmp"
    tmp.write_text(json.dumps([{"targets": [f"127.0.0.1:{port}"], "labels": {"test": label}}]))
    tmp.rename(path)
    return path


def series(query: str) -> dict[frozenset[tuple[str, str]], float]:
    return {frozenset((k, v) for k, v in r["metric"].items() if k not in ("instance", "job", "__name__"))
            : float(r["value"][1]) for r in prometheus_query(query)}


def test_prometheus_scrapes_a_run_and_its_final_values_equal_the_summary(tmp_path: Path) -> None:
    label = f"run_{uuid.uuid4().hex[:8]}"
    port = free_port()
    conf = write_config(tmp_path, label, 60, slow=0.02)
    # A script running the config in a process that stays up after the run (as a notebook
    # does), so the run's final values are scraped; it ends when its stdin closes.
    script = (f"import json, sys, lucille\n"
              f"r = lucille.run({str(conf)!r}, progress=False, overrides={{'metrics.port': {port}}})\n"
              f"print(json.dumps([r.status, r.published, r.succeeded, r.failed, r.dropped]),"
              f" flush=True)\n"
              f"sys.stdin.read()\n")
    targets = scraped_by_prometheus(port, label)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        status, published, succeeded, failed, dropped = json.loads(proc.stdout.readline())
        assert status == "Success"
        expected = {"succeeded": succeeded, "failed": failed, "dropped": dropped}

        def final() -> bool:
            got = series(f'lucille_documents_total{{test="{label}"}}')
            return {dict(k)["outcome"]: v for k, v in got.items()} == expected

        wait_for(final, "Prometheus to scrape the final counts", 60)
        got = series(f'lucille_documents_published_total{{test="{label}"}}')
        assert got == {frozenset({("connector", f"{label}-c"), ("test", label)}): published}
        # A worker adds its stages' counts when it stops, which can be a scrape after the
        # last document's event.
        def stages_final() -> bool:
            got = series(f'lucille_stage_documents_total{{test="{label}"}}')
            return {dict(k)["stage"]: v for k, v in got.items()} == {
                "stage_1": 60, "split": 60, "stage_3": 1, "copy": 60}

        wait_for(stages_final, "Prometheus to scrape the final stage counts", 30)
        stages = series(f'lucille_stage_documents_total{{test="{label}"}}')
        assert {dict(k)["class"] for k in stages} >= {"EmbeddedPython", "DropDocument",
                                                      "CopyFields"}
        buckets = series(f'lucille_stage_duration_seconds_bucket{{test="{label}",stage="copy"}}')
        assert {dict(k)["le"] for k in buckets} >= {"0.000001", "0.01", "+Inf"}, buckets
        assert series(f'lucille_indexer_batch_duration_seconds_count{{test="{label}"}}')
        assert series(f'process_resident_memory_bytes{{test="{label}"}}')
    finally:
        targets.unlink()
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)


def test_prometheus_scrapes_a_kafka_worker_and_indexer(tmp_path: Path) -> None:
    label = f"kafka_{uuid.uuid4().hex[:8]}"
    conf = write_config(tmp_path, label, 40, extra=kafka_block(label))
    ports = {"worker": free_port(), "indexer": free_port()}
    targets = [scraped_by_prometheus(port, f"{label}-{role}") for role, port in ports.items()]
    log = open(tmp_path / "procs.log", "w")
    procs = [subprocess.Popen([sys.executable, "-m", "lucille.cli", role, str(conf),
                               "--pipeline", label, "--metrics-port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
             for role, port in ports.items()]
    try:
        for role, port in ports.items():
            wait_for(lambda: probe(port) == 200, f"the {role} to be ready", 60)
        r = lucille.run(str(conf), mode="distributed", progress=False)
        assert r.status == "Success", r.summary
        assert (r.succeeded, r.failed, r.dropped) == (40, 1, 1)

        def worker_done() -> bool:
            got = series(f'lucille_stage_documents_total{{test="{label}-worker",stage="copy"}}')
            return list(got.values()) == [40.0]

        wait_for(worker_done, "Prometheus to scrape the worker's final stage counts", 60)
        errors = series(f'lucille_stage_errors_total{{test="{label}-worker",stage="split"}}')
        assert list(errors.values()) == [1.0]

        def indexer_done() -> bool:
            got = series(f'lucille_indexer_documents_total{{test="{label}-indexer",'
                         f'outcome="succeeded"}}')
            return list(got.values()) == [40.0]

        wait_for(indexer_done, "Prometheus to scrape the indexer's final counts", 60)
    finally:
        for t in targets:
            t.unlink()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
    assert all(p.returncode == 0 for p in procs), (tmp_path / "procs.log").read_text()


def probe(port: int) -> int:
    try:
        return http_get(f"http://127.0.0.1:{port}/ready")[0]
    except (urllib.error.URLError, ConnectionError):
        return 0


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "observability.md"

# The guide's alerts on made-up series: instance a fails 3 documents a little after minute 2
# and keeps indexing; instance b has 5 documents in flight and finishes nothing.
ALERT_TESTS = """
rule_files: [lucille-alerts.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'lucille_documents_total{job="lucille",instance="a:9464",pipeline="p",outcome="failed"}'
        values: '0 0 0 3x30'
      - series: 'lucille_documents_total{job="lucille",instance="a:9464",pipeline="p",outcome="succeeded"}'
        values: '0+10x32'
      - series: 'lucille_documents_in_flight{job="lucille",instance="a:9464"}'
        values: '5x32'
      - series: 'lucille_documents_total{job="lucille",instance="b:9464",pipeline="p",outcome="failed"}'
        values: '0x32'
      - series: 'lucille_documents_total{job="lucille",instance="b:9464",pipeline="p",outcome="succeeded"}'
        values: '100x32'
      - series: 'lucille_documents_in_flight{job="lucille",instance="b:9464"}'
        values: '5x32'
    alert_rule_test:
      - eval_time: 5m
        alertname: LucilleDocumentsFailing
        exp_alerts:
          - exp_labels: {severity: warning, job: lucille, instance: "a:9464", pipeline: p}
            exp_annotations:
              summary: "p on a:9464: 3 documents failed in the last 5 minutes (see the run's dead-letter file)"
      - eval_time: 20m
        alertname: LucilleDocumentsFailing
        exp_alerts: []
      - eval_time: 4m
        alertname: LucilleRunStuck
        exp_alerts: []
      - eval_time: 20m
        alertname: LucilleRunStuck
        exp_alerts:
          - exp_labels: {severity: critical, job: lucille, instance: "b:9464"}
            exp_annotations:
              summary: "b:9464: 5 documents in flight and none finished for 15 minutes"
"""


def guide_file(name: str) -> str:
    """The text of the guide's block marked <!-- file: name -->."""
    from test_guide import blocks
    for block in blocks(GUIDE):
        if block.mark("file") == name:
            return block.text
    raise AssertionError(f"no <!-- file: {name} --> block in {GUIDE.name}")


def test_the_guide_s_scrape_config_and_alerts_pass_promtool(tmp_path: Path) -> None:
    for name in ("prometheus.yml", "lucille-alerts.yml"):
        (tmp_path / name).write_text(guide_file(name))
    check = subprocess.run(["promtool", "check", "config", "prometheus.yml"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 2 rules found" in check.stdout + check.stderr
    (tmp_path / "alerts_test.yml").write_text(ALERT_TESTS)
    test = subprocess.run(["promtool", "test", "rules", "alerts_test.yml"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert test.returncode == 0, test.stdout + test.stderr


HOLD = """
import os, time
import lucille

class Hold(lucille.Stage):
    def process_document(self, doc: lucille.Document) -> None:
        if int(doc.id) % 50 == 0:
            raise ValueError("every 50th document fails")
        if doc.id == "299":
            while not os.path.exists({release!r}):
                time.sleep(0.02)
"""

# Publishes 0..298, waits until the workers have surely taken them, then 299, which therefore
# travels alone: a document held in a stage holds back the others of its block (a Python stage
# takes whole blocks), and this test is about the counts of the others while one hangs.
SEQ = """
import time
import lucille

class Seq(lucille.Connector):
    def execute(self, publisher):
        for n in range(299):
            publisher.publish(lucille.Document(str(n)))
        time.sleep(1.0)
        publisher.publish(lucille.Document("299"))
"""


@pytest.mark.parametrize("attempt", range(int(os.environ.get("LUCILLE_FAULT_REPEAT", "1"))))
def test_a_stage_s_counts_are_true_while_a_worker_hangs_in_the_next_stage(
        tmp_path: Path, attempt: int) -> None:
    # Issue 46: the counts of a worker stuck in a stage were flushed only by its own loop, so
    # every scrape while it hung showed `copy` short of the documents that had passed it.
    release = tmp_path / "release"
    (tmp_path / "hold.py").write_text(HOLD.format(release=str(release)))
    (tmp_path / "seq.py").write_text(SEQ)
    conf = tmp_path / "hung.conf"
    conf.write_text(f"""
connectors: [{{ name: "seq", class: "{tmp_path / 'seq.py'}:Seq", pipeline: "hung" }}]
pipelines: [{{ name: "hung", stages: [
  {{ name: "copy", class: "CopyFields", fieldMapping: {{ id: "id_copy" }} }},
  {{ name: "hold", class: "{tmp_path / 'hold.py'}:Hold" }} ] }}]
indexer {{ type: "jsonl", batchSize: 10, batchTimeout: 50 }}
jsonl {{ path: "{tmp_path / 'out.jsonl'}" }}
worker {{ threads: 2 }}
""")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lucille.cli", "run", str(conf),
                             "--metrics-port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    try:
        def ended() -> float:
            try:
                s = samples(scrape(port))
            except (urllib.error.URLError, ConnectionError, AssertionError):
                return 0.0
            return sum(value(s, "lucille_documents_total", pipeline="hung", outcome=o)
                       for o in ("succeeded", "failed"))

        # Every document but the held one ends; the held one has passed `copy`.
        wait_for(lambda: ended() == 299, "299 documents to end")
        # Longer than the workers' once-a-second flush: the idle worker has flushed by now;
        # the held worker cannot.
        time.sleep(1.5)
        s = samples(scrape(port))
        assert value(s, "lucille_documents_total", pipeline="hung", outcome="succeeded") == 293
        assert value(s, "lucille_documents_total", pipeline="hung", outcome="failed") == 6
        copy = {"pipeline": "hung", "stage": "copy", "class": "CopyFields"}
        hold = {"pipeline": "hung", "stage": "hold", "class": f"{tmp_path / 'hold.py'}:Hold"}
        assert value(s, "lucille_stage_documents_total", **copy) == 300
        assert value(s, "lucille_stage_errors_total", **copy) == 0
        # The held call has not returned, so `hold` has processed the 299 others, 6 failed.
        assert value(s, "lucille_stage_documents_total", **hold) == 299
        assert value(s, "lucille_stage_errors_total", **hold) == 6
        assert value(s, "lucille_documents_in_flight") == 1
        release.touch()
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "seq: complete. 294 docs succeeded. 6 docs FAILED." in output, output
