"""kill -9 mid-run with checkpoints on, repeated at seeded random points (issue 17): the runs
resume from the checkpoint, and the union of them indexes every document exactly once by id.

The sink is Tantivy, which upserts by id (reliable-scan-pattern.txt: a replay is safe because
the sink de-duplicates on the unit's key). "Exactly once" is then checkable in the final index:
as many hits as documents, no id twice, every id present. Two properties of the killed runs are
checked after each kill as well: every record below a file's watermark (acknowledged) is in the
index (a Tantivy FINISH is held until its commit lands), and watermarks never go back. A JSONL
sink appends, so a record whose acknowledgement was lost with the process is written again by
the next run: it shows replays, not exactly-once, and is not used here."""

import json
import os
import pathlib
import random
import signal
import sqlite3
import subprocess
import sys
import time

import lucille

FILES = {"a.jsonl": 2500, "b.jsonl": 2000, "c.csv": 1500}
KILLS = 3
SEED = 17


def write_corpus(folder: pathlib.Path) -> list[str]:
    folder.mkdir(parents=True)
    ids: list[str] = []
    for name, count in FILES.items():
        stem = name.split(".")[0]
        rows = [f"{stem}-{i}" for i in range(count)]
        ids += rows
        if name.endswith(".csv"):
            text = "id,n,title\n" + "".join(f'{r},{i},"row {i}, of {stem}"\n' for i, r in enumerate(rows))
        else:
            text = "".join(json.dumps({"id": r, "n": i, "title": f"row {i} of {stem}"}) + "\n"
                           for i, r in enumerate(rows))
        (folder / name).write_text(text)
    return ids


def config(tmp: pathlib.Path) -> str:
    return f"""
connectors: [{{ name: "files", class: "FileConnector", pipeline: "p",
  paths: ["{tmp / 'data'}"], fileHandlers {{ jsonl {{}}, csv {{ idField: "id" }} }},
  checkpoint {{ path: "{tmp / 'state.sqlite'}" }}, readerThreads: 2 }}]
pipelines: [{{ name: "p", stages: [{{ class: "slow.py:Slow" }}] }}]
indexer {{ type: "tantivy", batchSize: 40 }}
tantivy {{ path: "{tmp / 'index'}", commitEverySecs: 1 }}
worker {{ threads: 2 }}
"""


def acked(db: pathlib.Path) -> dict[str, int]:
    """Each file's watermark; {} while the store is not there yet or is locked by its writer."""
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.5) as c:
            return {pathlib.Path(p).name: n for p, n in c.execute("SELECT path, acked FROM units")}
    except sqlite3.OperationalError:
        return {}


def acked_ids(marks: dict[str, int]) -> set[str]:
    return {f"{name.split('.')[0]}-{i}" for name, n in marks.items() for i in range(n)}


def indexed(index: pathlib.Path) -> list[str]:
    if not (index / "meta.json").exists():
        return []
    return [h["id"] for h in lucille.search(index, "*", limit=100_000)]


def test_repeated_kill_9_then_a_final_run_index_every_document_exactly_once(tmp_path: pathlib.Path) -> None:
    everything = write_corpus(tmp_path / "data")
    total = len(everything)
    (tmp_path / "slow.py").write_text(
        "import time, lucille\n"
        "class Slow(lucille.Stage):\n"
        "    def process_document(self, doc):\n"
        "        time.sleep(0.002)\n"
    )
    conf = tmp_path / "run.conf"
    conf.write_text(config(tmp_path))
    db, index = tmp_path / "state.sqlite", tmp_path / "index"
    rng = random.Random(SEED)
    cmd = [sys.executable, "-m", "lucille.cli", "run", str(conf)]

    previous: dict[str, int] = {}
    killed_mid_run = 0
    for _ in range(KILLS):
        # Kill once the watermarks moved a random number of records past the last kill, then
        # after a random extra delay, so that the kill lands anywhere in a commit interval.
        target = sum(previous.values()) + rng.randint(150, 500)
        pause = rng.uniform(0.0, 0.4)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and sum(acked(db).values()) < target:
                assert time.monotonic() < deadline, "no progress within 120 s"
                time.sleep(0.02)
            time.sleep(pause)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                killed_mid_run += 1
            proc.wait(timeout=60)

        marks = acked(db)
        assert marks, "the checkpoint store is readable after a kill"
        for name, n in previous.items():
            assert marks.get(name, 0) >= n, (name, previous, marks)
        ids = indexed(index)
        assert len(ids) == len(set(ids)), "an id indexed twice after a kill"
        # Acknowledged means indexed and committed: what the checkpoint skips is in the index.
        assert acked_ids(marks) <= set(ids), sorted(acked_ids(marks) - set(ids))[:5]
        previous = marks
        print(f"kill: {sum(marks.values())} of {total} acknowledged, {len(ids)} in the index")

    assert killed_mid_run >= 2, f"only {killed_mid_run} of {KILLS} runs were killed mid-run"
    assert sum(previous.values()) < total

    final = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stdout + final.stderr
    # The final run publishes exactly the records past each file's watermark.
    expected = total - sum(previous.values())
    assert f"{expected} docs succeeded. 0 docs failed." in final.stdout, final.stdout

    ids = indexed(index)
    assert len(ids) == total, (len(ids), total)
    assert len(set(ids)) == total and set(ids) == set(everything)
    for probe in ("a-0", "b-1999", "c-1499", "c-17"):
        hits = lucille.search(index, f'id:"{probe}"', limit=5)
        assert [h["id"] for h in hits] == [probe]
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*) FROM units WHERE complete = 1").fetchone()[0] == len(FILES)
        assert c.execute("SELECT finished FROM traversals").fetchone()[0] == 1
