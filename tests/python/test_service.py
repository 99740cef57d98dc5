"""`lucille serve` (issue 29), driven over HTTP as a client would: a real service process on a
free port, real runs (the runner, the accounting, a JSONL or Tantivy sink), its SQLite history
across restarts and a kill -9."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from service_process import LUCILLE, Service, write_stages


def jsonl_config(tmp: pathlib.Path, docs: int, stages: str = "", out: str = "out.jsonl",
                 threads: int = 2) -> str:
    return f"""
connectors: [{{ name: "numbers", class: "SequenceConnector", numDocs: {docs},
               docIdPrefix: "doc-", pipeline: "p" }}]
pipelines: [{{ name: "p", stages: [
  {{ name: "mark", class: "SetStaticValues", staticValues: {{ source: "service" }} }}
  {stages}
] }}]
indexer {{ type: "jsonl", batchSize: 10 }}
jsonl {{ path: "{tmp / out}", append: true }}
worker {{ threads: {threads} }}
"""


SMALL_QUEUE = "publisher { queueCapacity: 20 }\n"


def lines(path: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def stages(tmp_path: pathlib.Path) -> pathlib.Path:
    return write_stages(tmp_path)


def test_submit_poll_list_and_read_a_run(tmp_path: pathlib.Path) -> None:
    with Service(tmp_path / "data") as svc:
        run_id = svc.submit(jsonl_config(tmp_path, 120), name="numbers")
        run = svc.wait(run_id)
        assert run["state"] == "succeeded", run
        assert run["name"] == "numbers" and run["mode"] == "local"
        assert run["counts"] == {"published": 120, "succeeded": 120, "failed": 0, "dropped": 0,
                                 "unchanged": 0}
        assert run["connectors"] == [{"name": "numbers", "state": "complete", "published": 120,
                                      "succeeded": 120, "failed": 0, "dropped": 0,
                                      "unchanged": 0}]
        assert [(s["pipeline"], s["name"], s["class"], s["documents"], s["errors"])
                for s in run["stages"]] == [("p", "mark", "SetStaticValues", 120, 0)]
        assert run["stages"][0]["seconds"] >= 0
        assert run["summary"].startswith("RUN SUMMARY: Success")
        assert run["error"] is None and run["scheduleId"] is None and run["replayOf"] is None
        for key in ("submittedAt", "startedAt", "endedAt"):
            assert run[key].endswith("Z"), run[key]
        assert run["submittedAt"] <= run["startedAt"] <= run["endedAt"]
        assert len(lines(tmp_path / "out.jsonl")) == 120

        second = svc.submit(jsonl_config(tmp_path, 5), mode="test")
        assert svc.wait(second)["mode"] == "test"
        listed = svc.ok("GET", "/api/runs")
        assert listed["total"] == 2
        assert [r["id"] for r in listed["runs"]] == [second, run_id], "newest first"
        page = svc.ok("GET", "/api/runs?limit=1&offset=1")
        assert [r["id"] for r in page["runs"]] == [run_id] and page["total"] == 2
        assert svc.call("GET", "/api/runs?limit=x")[0] == 400
        status, body = svc.call("GET", "/api/runs/no-such-run")
        assert status == 404 and "error" in body
        # A test-mode run writes nothing: the sink still has the first run's lines only.
        assert len(lines(tmp_path / "out.jsonl")) == 120


def test_a_second_run_with_skip_unchanged_counts_its_documents_unchanged(
        tmp_path: pathlib.Path) -> None:
    conf = jsonl_config(tmp_path, 40).replace('pipeline: "p" }]', 'pipeline: "p", skipUnchanged: true }]')
    assert conf != jsonl_config(tmp_path, 40)
    with Service(tmp_path / "data") as svc:
        first = svc.wait(svc.submit(conf))
        second = svc.wait(svc.submit(conf))
    assert first["counts"] == {"published": 40, "succeeded": 40, "failed": 0, "dropped": 0,
                               "unchanged": 0}
    assert second["counts"] == {"published": 40, "succeeded": 0, "failed": 0, "dropped": 0,
                                "unchanged": 40}
    assert second["connectors"][0]["unchanged"] == 40
    assert "40 docs unchanged." in second["summary"]
    assert len(lines(tmp_path / "out.jsonl")) == 40


def test_a_config_with_errors_is_refused_with_every_error_at_its_key(tmp_path: pathlib.Path) -> None:
    bad = """
connectors: [{ name: "n", class: "SequenceConnector", numDocs: 3, pipeline: "p" }]
pipelines: [{ name: "p", stages: [
  { class: "CopyFields", fieldMaping: { a: "b" } },
  { class: "NoSuchStage" }
] }]
indexer { type: "jsonl" }
"""
    with Service(tmp_path / "data") as svc:
        status, body = svc.call("POST", "/api/runs", {"config": bad})
        assert status == 400, body
        by_path = {e["path"]: e for e in body["errors"]}
        typo = by_path["pipelines[0].stages[0].fieldMaping"]
        assert typo["message"] == 'unknown key "fieldMaping"'
        assert typo["suggestion"] == 'did you mean "fieldMapping"?'
        assert "pipelines[0].stages[1].class" in by_path
        assert any(p.startswith("jsonl") for p in by_path), by_path  # jsonl.path is required
        # Each error once.
        assert len(body["errors"]) == len({(e["path"], e["message"]) for e in body["errors"]})
        assert svc.ok("GET", "/api/runs")["total"] == 0, "nothing was queued"

        checked = svc.ok("POST", "/api/validate", {"config": bad})
        assert checked["valid"] is False and checked["errors"] == body["errors"]
        good = svc.ok("POST", "/api/validate", {"config": jsonl_config(tmp_path, 3)})
        assert good == {"valid": True, "errors": []}
        status, body = svc.call("POST", "/api/validate", {"config": "connectors: [ {"})
        assert status == 200 and body["valid"] is False and body["errors"][0]["message"]

        for payload, key in (({}, "config"), ({"config": 3}, "config"),
                             ({"config": "a: 1", "configPath": "x"}, "config"),
                             ({"config": "a: 1", "mode": "distributed"}, "mode")):
            status, body = svc.call("POST", "/api/runs", payload)
            assert status == 400 and body["errors"][0]["path"] == key, (payload, body)
        status, body = svc.call("POST", "/api/runs", raw=b"not json")
        assert status == 400 and "JSON" in body["error"]
        status, body = svc.call("POST", "/api/runs", {"configPath": str(tmp_path / "missing.conf")})
        assert status == 400 and body["errors"][0]["path"] == "configPath"


def test_a_config_path_runs_relative_to_its_file(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "conf" / "numbers.conf"
    conf.parent.mkdir()
    conf.write_text(jsonl_config(tmp_path, 7))
    with Service(tmp_path / "data") as svc:
        status, body = svc.call("POST", "/api/runs", {"configPath": str(conf)})
        assert status == 201
        run = svc.wait(body["id"])
        assert run["state"] == "succeeded" and run["name"] == "numbers"
        assert run["counts"]["succeeded"] == 7


def test_cancel_drains_a_slow_run_and_loses_nothing(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    slow = f'{{ name: "slow", class: "{stages}:Slow", seconds: 0.02 }}'
    with Service(tmp_path / "data") as svc:
        # A small source queue: the connector is still publishing when the run is cancelled.
        run_id = svc.submit(jsonl_config(tmp_path, 5000, slow) + SMALL_QUEUE)
        queued = svc.submit(jsonl_config(tmp_path, 5, out="other.jsonl"))
        deadline = time.time() + 60
        while svc.run(run_id)["counts"]["succeeded"] < 20:
            assert time.time() < deadline
            time.sleep(0.05)
        # The second run waits for the first (one at a time): cancelled at once.
        status, body = svc.call("POST", f"/api/runs/{queued}/cancel")
        assert status == 202 and body["state"] == "cancelled", body
        status, body = svc.call("POST", f"/api/runs/{run_id}/cancel")
        assert status == 202 and body["id"] == run_id
        run = svc.wait(run_id)
        assert run["state"] == "cancelled", run
        c = run["counts"]
        assert 0 < c["published"] < 5000, c
        assert c["published"] == c["succeeded"] + c["failed"] + c["dropped"], "nothing in flight lost"
        assert len(lines(tmp_path / "out.jsonl")) == c["succeeded"]
        assert not (tmp_path / "other.jsonl").exists()
        status, body = svc.call("POST", f"/api/runs/{run_id}/cancel")
        assert status == 409 and "cancelled" in body["error"]
        assert svc.call("POST", "/api/runs/nope/cancel")[0] == 404


def test_progress_streams_as_server_sent_events(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    slow = f'{{ name: "slow", class: "{stages}:Slow", seconds: 0.01 }}'
    with Service(tmp_path / "data") as svc:
        run_id = svc.submit(jsonl_config(tmp_path, 300, slow))
        events = list(svc.events(run_id))
        kinds = [e for e, _ in events]
        assert kinds[-1] == "end" and kinds.count("end") == 1, kinds
        assert kinds.count("progress") >= 2, kinds
        published = [d["counts"]["published"] for e, d in events if e == "progress"]
        assert published == sorted(published), "counts only grow"
        end = events[-1][1]
        assert end["state"] == "succeeded" and end["counts"]["succeeded"] == 300
        # A run that has ended: one end event at once.
        assert [e for e, _ in svc.events(run_id)] == ["end"]


def test_the_timeline_holds_the_progress_samples_of_a_run(tmp_path: pathlib.Path,
                                                           stages: pathlib.Path) -> None:
    slow = f'{{ name: "slow", class: "{stages}:Slow", seconds: 0.01 }}'
    flaky = f'{{ name: "check", class: "{stages}:Flaky", every: 10, fixed: "{tmp_path / "fixed"}" }}'
    with Service(tmp_path / "data") as svc:
        run_id = svc.submit(jsonl_config(tmp_path, 400, slow + "\n" + flaky))
        run = svc.wait(run_id)
        points = svc.ok("GET", f"/api/runs/{run_id}/timeline")["points"]
        # Written about once a second while it ran (~2 s on two workers), and at its end.
        assert len(points) >= 2, points
        assert {p["connector"] for p in points} == {"numbers"}
        ts = [p["t"] for p in points]
        assert ts == sorted(ts) and ts[0] >= 0
        for key in ("published", "succeeded", "failed"):
            series = [p[key] for p in points]
            assert series == sorted(series), (key, series)
        last = points[-1]
        c = run["counts"]
        assert (last["published"], last["succeeded"], last["failed"], last["dropped"]) == (
            c["published"], c["succeeded"], c["failed"], c["dropped"]) == (400, 360, 40, 0)
        assert points[0]["succeeded"] + points[0]["failed"] < 400, "a sample from before its end"
        assert svc.call("GET", "/api/runs/nope/timeline")[0] == 404


def test_failures_are_listed_and_replayed_exactly(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    fixed = tmp_path / "fixed"
    flaky = f'{{ name: "check", class: "{stages}:Flaky", every: 5, fixed: "{fixed}" }}'
    with Service(tmp_path / "data") as svc:
        run_id = svc.submit(jsonl_config(tmp_path, 50, flaky))
        run = svc.wait(run_id)
        # FAILed documents do not fail the run: every connector completed, so "partial".
        assert run["state"] == "partial", run
        assert run["summary"].startswith("RUN SUMMARY: Partial success."), run["summary"]
        assert run["counts"] == {"published": 50, "succeeded": 40, "failed": 10, "dropped": 0,
                                 "unchanged": 0}
        assert [s["errors"] for s in run["stages"]] == [0, 10]
        failures = svc.ok("GET", f"/api/runs/{run_id}/failures")
        assert failures["total"] == 10
        assert sorted(f["id"] for f in failures["failures"]) == sorted(
            f"doc-{n}" for n in range(0, 50, 5))
        for f in failures["failures"]:
            assert f["stage"] == "check"
            assert "is not wanted" in f["reason"], f
        page = svc.ok("GET", f"/api/runs/{run_id}/failures?limit=4&offset=8")
        assert len(page["failures"]) == 2 and page["total"] == 10

        fixed.write_text("yes")
        status, body = svc.call("POST", f"/api/runs/{run_id}/replay")
        assert status == 201, body
        replay = svc.wait(body["id"])
        assert replay["replayOf"] == run_id and replay["state"] == "succeeded", replay
        assert replay["counts"] == {"published": 10, "succeeded": 10, "failed": 0,
                                    "dropped": 0, "unchanged": 0}
        out = lines(tmp_path / "out.jsonl")
        assert len(out) == 50 and len({d["id"] for d in out}) == 50
        replayed = [d for d in out if d["id"] in {f"doc-{n}" for n in range(0, 50, 5)}]
        # Each replayed document went through the whole pipeline once, from its original.
        assert all(d["source"] == "service" and d["checked"] is True for d in replayed), replayed

        status, body = svc.call("POST", f"/api/runs/{replay['id']}/replay")
        assert status == 409 and "no failed documents" in body["error"]


def test_replay_cli_reprocesses_a_dead_letter_file(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    fixed = tmp_path / "fixed"
    flaky = f'{{ name: "check", class: "{stages}:Flaky", every: 4, fixed: "{fixed}" }}'
    conf = tmp_path / "run.conf"
    conf.write_text(jsonl_config(tmp_path, 20, flaky)
                    + f'worker {{ deadLetterPath: "{tmp_path / "dead.jsonl"}" }}\n')
    first = subprocess.run(LUCILLE + ["run", str(conf)], capture_output=True, text=True)
    assert "5 docs FAILED" in first.stdout, first.stdout + first.stderr
    dead = lines(tmp_path / "dead.jsonl")
    assert sorted(d["id"] for d in dead) == sorted(f"doc-{n}" for n in range(0, 20, 4))
    assert all("checked" not in d["document"] for d in dead), "the document as it entered"
    fixed.write_text("yes")
    again = subprocess.run(LUCILLE + ["replay", str(tmp_path / "dead.jsonl"), str(conf)],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "5 docs succeeded. 0 docs failed" in again.stdout, again.stdout
    assert len(lines(tmp_path / "out.jsonl")) == 20
    # A dead-letter file of a pipeline the config does not have: refused before anything runs.
    other = tmp_path / "other.conf"
    other.write_text(conf.read_text().replace('name: "p"', 'name: "q"').replace('pipeline: "p"', 'pipeline: "q"'))
    refused = subprocess.run(LUCILLE + ["replay", str(tmp_path / "dead.jsonl"), str(other)],
                             capture_output=True, text=True)
    assert refused.returncode == 1 and '"p"' in refused.stderr, refused.stderr


TOKEN = "t0ken-for-the-service-tests"


def test_a_token_guards_every_route_but_the_probes(tmp_path: pathlib.Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with Service(tmp_path / "data", "--token-file", str(token_file), token=TOKEN) as svc:
        for method, path in (("GET", "/api/runs"), ("POST", "/api/validate"), ("GET", "/metrics"),
                             ("GET", "/api/schedules"), ("GET", "/api/runs/x/events")):
            status, body = svc.call(method, path, {} if method == "POST" else None, token=None)
            assert status == 401 and "token" in body["error"], (path, status, body)
            status, body = svc.call(method, path, {} if method == "POST" else None, token="wrong")
            assert status == 401 and body["error"] == "the token is wrong", (path, body)
        assert svc.call("GET", "/api/runs", token=TOKEN + "x")[0] == 401
        assert svc.call("GET", "/api/runs", token=TOKEN[:-1])[0] == 401
        assert svc.call("GET", "/api/runs")[0] == 200
        assert svc.call("GET", "/healthz", token=None)[0] == 200
        assert svc.call("GET", "/ready", token=None)[0] == 200
        # The console's page loads without it (a browser cannot send it); its data needs it.
        status, page = svc.call("GET", "/", token=None)
        assert status == 200 and "Lucille-rs" in page
        run_id = svc.submit(jsonl_config(tmp_path, 3))
        assert svc.wait(run_id)["state"] == "succeeded"


def test_the_token_can_come_from_the_environment(tmp_path: pathlib.Path) -> None:
    with Service(tmp_path / "data", token=TOKEN, env={"LUCILLE_TOKEN": TOKEN}) as svc:
        assert svc.call("GET", "/api/runs", token=None)[0] == 401
        assert svc.call("GET", "/api/runs")[0] == 200


def test_a_public_address_without_a_token_is_refused(tmp_path: pathlib.Path) -> None:
    r = subprocess.run(LUCILLE + ["serve", "--host", "0.0.0.0", "--port", "0",
                                  "--data-dir", str(tmp_path / "data")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r
    assert "without a token" in r.stderr and "0.0.0.0" in r.stderr, r.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    r = subprocess.run(LUCILLE + ["serve", "--port", "0", "--token-file", str(empty),
                                  "--data-dir", str(tmp_path / "data")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "empty" in r.stderr, r.stderr


def test_a_body_over_the_cap_is_refused(tmp_path: pathlib.Path) -> None:
    with Service(tmp_path / "data", "--max-body-bytes", "2000") as svc:
        big = {"config": "a: \"" + "x" * 4000 + "\""}
        status, body = svc.call("POST", "/api/runs", big)
        assert status == 413 and "max-body-bytes" in body["error"], body
        assert svc.call("POST", "/api/validate", big)[0] == 413
        assert svc.call("POST", "/api/runs", {"config": jsonl_config(tmp_path, 2)})[0] == 201


SECRET = "S3cret-Passw0rd-zz"


def test_secrets_never_appear_in_responses_or_logs(tmp_path: pathlib.Path) -> None:
    # An OpenSearch nobody listens on: the run fails, and its error names the URL it tried.
    config = f"""
connectors: [{{ name: "n", class: "SequenceConnector", numDocs: 3, pipeline: "p" }}]
pipelines: [{{ name: "p", stages: [] }}]
indexer {{ type: "opensearch" }}
opensearch {{ url: "http://admin:{SECRET}@127.0.0.1:9/", index: "x", username: "admin", password: "{SECRET}" }}
"""
    invalid = config + f'\npipelines: [{{ name: "p", stages: [{{ class: "SetStaticValues", staticValues: "{SECRET}" }}] }}]\n'
    with Service(tmp_path / "data") as svc:
        seen: list[Any] = []
        status, body = svc.call("POST", "/api/runs", {"config": config, "name": f"run {SECRET}"})
        assert status == 201
        run = svc.wait(body["id"])
        assert run["state"] == "failed" and run["error"], run
        assert "REDACTED" in run["error"] or "127.0.0.1:9" in run["error"], run["error"]
        seen.append(run)
        seen.append(svc.ok("GET", "/api/runs"))
        seen.append(svc.ok("GET", f"/api/runs/{run['id']}/failures"))
        seen.append(list(svc.events(run["id"])))
        seen.append(svc.call("POST", "/api/runs", {"config": invalid})[1])
        seen.append(svc.ok("POST", "/api/validate", {"config": invalid}))
        seen.append(svc.call("POST", "/api/schedules", {"config": invalid, "everySecs": 60})[1])
        text = json.dumps(seen)
        assert SECRET not in text, text
        assert "staticValues" in text, "the invalid config was refused"
    assert SECRET not in svc.logs()


def test_a_schedule_fires_again_and_never_overlaps_its_runs(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    slow = f'{{ name: "slow", class: "{stages}:Slow", seconds: 0.1 }}'
    config = jsonl_config(tmp_path, 20, slow, threads=1)  # about 2 s a run
    with Service(tmp_path / "data") as svc:
        status, body = svc.call("POST", "/api/schedules", {"config": config, "everySecs": 1,
                                                           "name": "often"})
        assert status == 201, body
        sched = body["id"]
        listed = svc.ok("GET", "/api/schedules")["schedules"]
        assert listed[0]["id"] == sched and listed[0]["everySecs"] == 1 and listed[0]["cron"] is None
        assert listed[0]["nextRunAt"] and listed[0]["paused"] is False
        deadline = time.time() + 90
        while True:
            runs = [r for r in svc.ok("GET", "/api/runs")["runs"] if r["scheduleId"] == sched]
            if sum(r["state"] == "succeeded" for r in runs) >= 2:
                break
            assert time.time() < deadline, runs
            time.sleep(0.2)
        paused = svc.ok("POST", f"/api/schedules/{sched}/pause")
        assert paused["paused"] is True and paused["nextRunAt"] is None
        for r in runs:
            svc.wait(r["id"])
        runs = [svc.run(r["id"]) for r in runs]
        spans = sorted((r["startedAt"], r["endedAt"]) for r in runs)
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end <= start, f"runs overlap: {spans}"
        assert all(r["counts"]["succeeded"] == 20 for r in runs)
        assert svc.ok("GET", "/api/schedules")["schedules"][0]["lastRunId"] in {r["id"] for r in runs}
        count = svc.ok("GET", "/api/runs")["total"]
        time.sleep(2.5)
        assert svc.ok("GET", "/api/runs")["total"] == count, "a paused schedule does not fire"
        assert svc.ok("POST", f"/api/schedules/{sched}/resume")["paused"] is False
        assert svc.call("DELETE", f"/api/schedules/{sched}")[0] == 200
        assert svc.call("POST", f"/api/schedules/{sched}/pause")[0] == 404
        assert svc.ok("GET", "/api/schedules")["schedules"] == []
        for body, key in (({"config": config}, "cron"), ({"config": config, "cron": "nope"}, "cron"),
                          ({"config": config, "everySecs": 0}, "everySecs"),
                          ({"config": config, "cron": "* * * * *", "everySecs": 5}, "everySecs")):
            status, refused = svc.call("POST", "/api/schedules", body)
            assert status == 400 and refused["errors"][0]["path"] == key, (body, refused)
        status, body = svc.call("POST", "/api/schedules", {"config": config, "cron": "*/5 * * * *"})
        assert status == 201
        assert svc.ok("GET", "/api/schedules")["schedules"][0]["cron"] == "*/5 * * * *"


def test_a_schedule_reads_its_file_each_time_and_records_a_broken_one(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "scheduled.conf"
    conf.write_text(jsonl_config(tmp_path, 3))
    with Service(tmp_path / "data") as svc:
        sched = svc.ok("POST", "/api/schedules", {"configPath": str(conf), "everySecs": 1})["id"]
        deadline = time.time() + 60
        while not any(r["scheduleId"] == sched and r["state"] == "succeeded"
                      for r in svc.ok("GET", "/api/runs")["runs"]):
            assert time.time() < deadline
            time.sleep(0.1)
        conf.write_text(jsonl_config(tmp_path, 3).replace("staticValues", "staticValuez"))
        while True:
            broken = [r for r in svc.ok("GET", "/api/runs")["runs"]
                      if r["scheduleId"] == sched and r["state"] == "failed"]
            if broken:
                break
            assert time.time() < deadline
            time.sleep(0.1)
        assert "the config is not valid" in broken[0]["error"]
        assert "staticValuez" in broken[0]["error"], broken[0]["error"]
        svc.ok("DELETE", f"/api/schedules/{sched}")


def test_history_survives_a_restart_and_a_kill_leaves_the_run_interrupted(
        tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    data = tmp_path / "data"
    slow = f'{{ name: "slow", class: "{stages}:Slow", seconds: 0.05 }}'
    with Service(data) as svc:
        done = svc.submit(jsonl_config(tmp_path, 30), name="before")
        before = svc.wait(done)
        sched = svc.ok("POST", "/api/schedules", {"config": jsonl_config(tmp_path, 1),
                                                  "cron": "0 3 * * *", "name": "nightly"})["id"]
    with Service(data) as svc:
        assert svc.run(done) == before
        assert [s["id"] for s in svc.ok("GET", "/api/schedules")["schedules"]] == [sched]
        running = svc.submit(jsonl_config(tmp_path, 2000, slow, out="slow.jsonl") + SMALL_QUEUE,
                             name="killed")
        queued = svc.submit(jsonl_config(tmp_path, 4, out="later.jsonl"), name="waiting")
        svc.wait(running, states=("running",))
        deadline = time.time() + 60
        while svc.run(running)["counts"]["succeeded"] < 10:
            assert time.time() < deadline
            time.sleep(0.1)
        time.sleep(1.2)  # the numbers reach the store once a second
        svc.kill()
    with Service(data) as svc:
        run = svc.run(running)
        assert run["state"] == "interrupted", run
        assert run["endedAt"] and "stopped" in run["error"]
        assert run["counts"]["succeeded"] >= 10, run
        # The run queued behind it was never started: it runs now.
        assert svc.wait(queued)["state"] == "succeeded"
        assert len(lines(tmp_path / "later.jsonl")) == 4
        assert svc.ok("GET", "/api/runs")["total"] == 3


def test_a_killed_run_resubmitted_resumes_from_its_checkpoint(
        tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    data = tmp_path / "data"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "records.jsonl").write_text(
        "".join(json.dumps({"id": f"rec-{i}", "n": i}) + "\n" for i in range(600)))
    config = f"""
connectors: [{{ name: "files", class: "FileConnector", pipeline: "p", paths: ["{corpus}"],
  fileHandlers {{ jsonl {{ }} }}, checkpoint {{ path: "{tmp_path / 'state.sqlite'}" }} }}]
pipelines: [{{ name: "p", stages: [{{ class: "{stages}:Slow", seconds: 0.01 }}] }}]
indexer {{ type: "tantivy", batchSize: 20 }}
tantivy {{ path: "{tmp_path / 'index'}", commitEverySecs: 1 }}
publisher {{ queueCapacity: 20 }}
"""
    svc = Service(data).start()
    first = svc.submit(config)
    deadline = time.time() + 60
    while svc.run(first)["counts"]["succeeded"] < 100:
        assert time.time() < deadline
        time.sleep(0.1)
    time.sleep(1.5)
    svc.kill()
    with Service(data) as again:
        assert again.run(first)["state"] == "interrupted"
        second = again.wait(again.submit(config))
        assert second["state"] == "succeeded", second
        # Resumed: the records acknowledged before the kill are not published again.
        assert second["counts"]["published"] < 600, second["counts"]
    import lucille
    hits = lucille.search(str(tmp_path / "index"), "*", limit=1000)
    assert sorted(h["id"] for h in hits) == sorted(f"rec-{i}" for i in range(600)), "every record indexed"


def test_sigterm_interrupts_the_running_run_and_keeps_the_queue(
        tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    data = tmp_path / "data"
    slow = f'{{ name: "slow", class: "{stages}:Slow", seconds: 0.05 }}'
    svc = Service(data).start()
    running = svc.submit(jsonl_config(tmp_path, 2000, slow) + SMALL_QUEUE)
    queued = svc.submit(jsonl_config(tmp_path, 3, out="later.jsonl"))
    svc.wait(running, states=("running",))
    time.sleep(0.5)
    assert svc.stop() == 0
    with Service(data) as again:
        run = again.run(running)
        assert run["state"] == "interrupted", run
        c = run["counts"]
        assert c["published"] == c["succeeded"] + c["failed"] + c["dropped"], "drained"
        assert again.wait(queued)["state"] == "succeeded"


def test_fifty_runs_at_once_with_twenty_pollers(tmp_path: pathlib.Path) -> None:
    with Service(tmp_path / "data", "--max-concurrent-runs", "2") as svc:
        ids: list[str] = []
        lock = threading.Lock()

        def submit(k: int) -> None:
            run_id = svc.submit(jsonl_config(tmp_path, 40 + k, out=f"out-{k}.jsonl", threads=1))
            with lock:
                ids.append(run_id)

        submitters = [threading.Thread(target=submit, args=(k,)) for k in range(50)]
        for t in submitters:
            t.start()
        for t in submitters:
            t.join()
        assert len(ids) == 50
        stop = threading.Event()
        errors: list[str] = []

        def poll(n: int) -> None:
            while not stop.is_set():
                try:
                    if n % 5 == 0:
                        for _ in svc.events(ids[n], timeout=120):
                            pass
                    else:
                        status, body = svc.call("GET", "/api/runs?limit=20")
                        assert status == 200 and body["total"] == 50
                        assert svc.call("GET", f"/api/runs/{ids[n]}")[0] == 200
                except Exception as e:  # noqa: BLE001: reported below
                    errors.append(repr(e))
                    return

        pollers = [threading.Thread(target=poll, args=(n,)) for n in range(20)]
        for t in pollers:
            t.start()
        runs = [svc.wait(run_id, timeout=300) for run_id in ids]
        stop.set()
        for t in pollers:
            t.join()
        assert errors == []
        by_docs: dict[int, dict[str, Any]] = {}
        for run in runs:
            assert run["state"] == "succeeded", run
            c = run["counts"]
            assert c["published"] == c["succeeded"] and c["failed"] == c["dropped"] == 0
            by_docs[c["published"]] = run
        assert sorted(by_docs) == list(range(40, 90)), "each run its own exact count"
        for k in range(50):
            assert len(lines(tmp_path / f"out-{k}.jsonl")) == 40 + k


def test_metrics_and_probes_on_the_same_port(tmp_path: pathlib.Path) -> None:
    with Service(tmp_path / "data") as svc:
        svc.wait(svc.submit(jsonl_config(tmp_path, 12)))
        import urllib.request
        with urllib.request.urlopen(svc.url + "/metrics") as r:
            text = r.read().decode()
        assert 'lucille_documents_total{outcome="succeeded",pipeline="p"} 12' in text, text[:2000]
        assert svc.call("GET", "/ready")[0] == 200
        assert svc.call("GET", "/healthz")[0] == 200


def test_json_logs_carry_the_run_id(tmp_path: pathlib.Path) -> None:
    svc = Service(tmp_path / "data", "--log-format", "json").start()
    run_id = svc.submit(jsonl_config(tmp_path, 5))
    svc.wait(run_id)
    assert svc.stop() == 0
    records = [json.loads(line) for line in svc.logs().splitlines() if line.strip()]
    assert any("listening on" in r["message"] for r in records)
    assert any(r.get("run_id") == run_id and "RUN SUMMARY" in r["message"] for r in records), records
