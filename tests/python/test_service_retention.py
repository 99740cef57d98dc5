"""The service's retention (`lucille serve --keep-runs N --keep-days D`): ended runs past the
newest N, or older than D days, leave the history with their failures and their folder (the
dead-letter file); queued and running runs, and a schedule's last run, never do; the flags are
checked before the service starts."""

from __future__ import annotations

import pathlib
import sqlite3
import subprocess
import time

import pytest

from service_process import LUCILLE, Service, write_stages
from test_service import jsonl_config


@pytest.fixture
def stages(tmp_path: pathlib.Path) -> pathlib.Path:
    return write_stages(tmp_path)


def flaky(stages: pathlib.Path, tmp: pathlib.Path) -> str:
    return f'{{ name: "check", class: "{stages}:Flaky", every: 5, fixed: "{tmp / "never"}" }}'


def folders(data: pathlib.Path) -> set[str]:
    return {p.name for p in (data / "runs").iterdir()}


def test_the_newest_runs_are_kept_with_their_failures_and_files(
        tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    data = tmp_path / "data"
    with Service(data, "--keep-runs", "2", "--keep-days", "0") as svc:
        ids = []
        for _ in range(4):
            run_id = svc.submit(jsonl_config(tmp_path, 20, flaky(stages, tmp_path)))
            assert svc.wait(run_id)["state"] == "partial"
            ids.append(run_id)
        # Each run FAILed 4 documents into its dead-letter file; the two oldest are gone.
        listed = svc.ok("GET", "/api/runs")
        assert listed["total"] == 2
        assert [r["id"] for r in listed["runs"]] == ids[:1:-1]
        for old in ids[:2]:
            assert svc.call("GET", f"/api/runs/{old}")[0] == 404
            assert svc.call("GET", f"/api/runs/{old}/failures")[0] == 404
            assert svc.call("POST", f"/api/runs/{old}/replay")[0] == 404
        assert folders(data) == set(ids[2:])
        for kept in ids[2:]:
            assert (data / "runs" / kept / "dead-letter.jsonl").read_text().count("\n") == 4
            assert svc.ok("GET", f"/api/runs/{kept}/failures")["total"] == 4
        assert "2 run(s) removed from the history" not in svc.logs()  # one at a time
        assert svc.logs().count("run(s) removed from the history") == 2


def test_a_running_run_is_never_removed(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    slow = jsonl_config(tmp_path, 60, f'{{ class: "{stages}:Slow", seconds: 0.05 }}',
                        out="slow.jsonl", threads=1)
    with Service(tmp_path / "data", "--keep-runs", "1", "--max-concurrent-runs", "2") as svc:
        running = svc.submit(slow)
        svc.wait(running, states=("running",))
        quick = []
        for _ in range(3):
            quick.append(svc.submit(jsonl_config(tmp_path, 5)))
            assert svc.wait(quick[-1])["state"] == "succeeded"
        # Each quick run's end pruned the one before; the slow run, running, stayed.
        assert svc.run(running)["state"] == "running"
        assert [r["id"] for r in svc.ok("GET", "/api/runs")["runs"]] == [quick[-1], running]
        # Once it ends it is the older of two ended runs (the list is by submission), so it goes.
        deadline = time.time() + 60
        while svc.call("GET", f"/api/runs/{running}")[0] != 404:
            assert time.time() < deadline, svc.run(running)
            time.sleep(0.1)
        assert [r["id"] for r in svc.ok("GET", "/api/runs")["runs"]] == [quick[-1]]


def test_a_queued_run_is_never_removed(tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    data = tmp_path / "data"
    slow = jsonl_config(tmp_path, 400, f'{{ class: "{stages}:Slow", seconds: 0.05 }}',
                        out="slow.jsonl", threads=1)
    with Service(data, "--keep-runs", "1") as svc:
        first = svc.submit(jsonl_config(tmp_path, 5))
        assert svc.wait(first)["state"] == "succeeded"
        interrupted = svc.submit(slow)
        svc.wait(interrupted, states=("running",))
        queued = svc.submit(jsonl_config(tmp_path, 5))
    # Stopped: the slow run ended `interrupted`, the last one is still queued. At the next
    # start two runs have ended (one too many) and the queued one is not counted.
    with Service(data, "--keep-runs", "1") as svc:
        assert svc.call("GET", f"/api/runs/{first}")[0] == 404
        assert svc.wait(queued)["state"] == "succeeded"
        assert [r["id"] for r in svc.ok("GET", "/api/runs")["runs"]] == [queued]
        assert svc.call("GET", f"/api/runs/{interrupted}")[0] == 404


def test_runs_older_than_keep_days_go_when_the_service_starts(
        tmp_path: pathlib.Path, stages: pathlib.Path) -> None:
    data = tmp_path / "data"
    with Service(data, "--keep-days", "0") as svc:
        old, recent = (svc.submit(jsonl_config(tmp_path, 10, flaky(stages, tmp_path)))
                       for _ in range(2))
        for run_id in (old, recent):
            assert svc.wait(run_id)["state"] == "partial"
    # The first run ended 40 days ago, as far as the history knows.
    with sqlite3.connect(data / "lucille.db") as db:
        db.execute("UPDATE runs SET ended_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (old,))
    assert folders(data) == {old, recent}
    with Service(data, "--keep-days", "30") as svc:
        assert svc.call("GET", f"/api/runs/{old}")[0] == 404
        assert svc.run(recent)["state"] == "partial"
        assert folders(data) == {recent}
        with sqlite3.connect(data / "lucille.db") as db:
            left = db.execute("SELECT COUNT(*) FROM failures WHERE run_id = ?", (old,)).fetchone()
            samples = db.execute("SELECT COUNT(*) FROM progress WHERE run_id = ?", (old,)).fetchone()
            kept = db.execute("SELECT COUNT(*) FROM progress WHERE run_id = ?", (recent,)).fetchone()
        assert left == (0,) and samples == (0,), "its failures and progress samples go with it"
        assert kept[0] >= 1


def test_a_negative_limit_is_refused_before_the_service_starts(tmp_path: pathlib.Path) -> None:
    out = subprocess.run(LUCILLE + ["serve", "--port", "0", "--data-dir", str(tmp_path / "d"),
                                    "--keep-runs", "-1"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert "--keep-runs" in out.stderr and "give 0 for no limit" in out.stderr, out.stderr
    assert not (tmp_path / "d").exists()
