"""A full disk under the service's data directory (a small tmpfs mounted there): the running run
is stopped and fails with an error naming the directory, the service stays up and answers (a
submission gets 507 and says why), no failure vanishes, and once space is back the run's end is
recorded and new runs go. `LUCILLE_FAULT_REPEAT=5` runs it five times in a row."""

from __future__ import annotations

import errno
import os
import pathlib
import subprocess
import time
from typing import Iterator

import pytest

from service_process import Service, write_stages
from test_service import jsonl_config

REPEAT = int(os.environ.get("LUCILLE_FAULT_REPEAT", "1"))


@pytest.fixture
def small_disk(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A 4 MiB tmpfs: mounting needs root (as on this project's machines and CI)."""
    data = tmp_path / "data"
    data.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(data)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {mounted.stderr.strip()}")
    try:
        yield data
    finally:
        for _ in range(50):
            if subprocess.run(["umount", str(data)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)


def fill(folder: pathlib.Path) -> pathlib.Path:
    filler = folder / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return filler


@pytest.mark.parametrize("attempt", range(REPEAT))
def test_a_full_data_directory_fails_the_run_and_the_service_recovers(
        tmp_path: pathlib.Path, small_disk: pathlib.Path, attempt: int) -> None:
    stages = write_stages(tmp_path)
    work = (f'{{ name: "check", class: "{stages}:Flaky", every: 5, fixed: "{tmp_path / "no"}" }}\n'
            f'{{ class: "{stages}:Slow", seconds: 0.002 }}')
    # A small publisher queue, so the connector is still publishing when the disk fills.
    config = jsonl_config(tmp_path, 5000, work, threads=1) + "publisher { queueCapacity: 20 }\n"
    svc = Service(small_disk).start()
    try:
        run_id = svc.submit(config)
        deadline = time.time() + 60
        while svc.ok("GET", f"/api/runs/{run_id}/failures?limit=1")["total"] == 0:
            assert time.time() < deadline, svc.run(run_id)
            time.sleep(0.1)
        filler = fill(small_disk)

        run = svc.wait(run_id, timeout=60)
        assert run["state"] == "failed", run
        assert f"cannot write to its data directory {small_disk}" in run["error"], run["error"]
        assert "disk is full" in run["error"], run["error"]
        counts = run["counts"]
        # Stopped, not run to the end; what was published finished and is counted.
        assert 0 < counts["published"] < 5000, counts
        assert counts["succeeded"] + counts["failed"] == counts["published"], counts
        assert counts["failed"] > 0
        # The service answers; every failure is listed (some only in memory for now).
        assert svc.call("GET", "/healthz")[0] == 200
        assert svc.ok("GET", "/api/runs")["runs"][0]["state"] == "failed"
        assert svc.ok("GET", f"/api/runs/{run_id}/failures?limit=10000")["total"] == counts["failed"]
        status, body = svc.call("POST", "/api/runs", {"config": jsonl_config(tmp_path, 10)})
        assert status == 507, (status, body)
        assert "cannot write to its data directory" in body["error"], body
        assert svc.call("POST", f"/api/runs/{run_id}/cancel")[0] == 409  # it has ended

        # Space is back: the run's end is written, and runs go again.
        filler.unlink()
        deadline = time.time() + 30
        while (answer := svc.call("POST", "/api/runs",
                                  {"config": jsonl_config(tmp_path, 10)}))[0] != 201:
            assert time.time() < deadline, answer
            time.sleep(0.2)
        assert svc.wait(answer[1]["id"])["state"] == "succeeded"
        assert "the run's end (failed) is recorded" in svc.logs()
    finally:
        svc.stop()
    # Recorded, not lost: after a restart the run is still `failed` with all its failures.
    with Service(small_disk) as again:
        run = again.run(run_id)
        assert run["state"] == "failed" and run["counts"] == counts, run
        total = again.ok("GET", f"/api/runs/{run_id}/failures?limit=10000")["total"]
        assert total == counts["failed"]
