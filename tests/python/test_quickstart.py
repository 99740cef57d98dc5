"""The README's main job end to end: `lucille run examples/quickstart.conf` indexes the shipped
corpus into the embedded Tantivy index, then `lucille search` finds known records."""

import json
import pathlib
import subprocess
import sys

import lucille

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "data" / "stdlib-reference.jsonl"


def cli(*args: str) -> subprocess.CompletedProcess[str]:

    return subprocess.run(
        [sys.executable, "-m", "lucille.cli", *args], capture_output=True, text=True
    )


def test_quickstart_indexes_the_corpus_and_search_finds_a_known_record(tmp_path: pathlib.Path) -> None:
    index = tmp_path / "quickstart-index"
    records = sum(1 for _ in CORPUS.open(encoding="utf-8"))
    r = cli("run", str(ROOT / "examples" / "quickstart.conf"), "--set", f"tantivy.path={index}")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert f"{records} docs succeeded. 0 docs failed." in out, out
    assert "lucille search" in out  # the hint

    s = cli("search", str(index), "serialize obj JSON formatted str", "--limit", "5", "--json")
    assert s.returncode == 0, s.stderr
    hits = [json.loads(line) for line in s.stdout.splitlines() if line.strip()]
    assert 0 < len(hits) <= 5
    assert "json.dumps" in [h["id"] for h in hits], hits
    top = hits[0]
    assert top["score"] > 0
    # Fields from the built-in stages and the Python stage were indexed.
    dumps = next(h for h in hits if h["id"] == "json.dumps")
    assert dumps["package"] == "json"
    assert dumps["title"].startswith("json.dumps(obj")
    assert "python" not in dumps  # DeleteFields ran

    # The Python API reads the same index.
    api = lucille.search(str(index), "id:\"json.dumps\"", limit=3)
    assert api and api[0]["id"] == "json.dumps"

    # Human output names the record too.
    h = cli("search", str(index), "dumps")
    assert h.returncode == 0 and "json.dumps" in h.stdout
