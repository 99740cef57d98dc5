"""The shipped examples and the command line, run as a user would."""

import pathlib
import subprocess
import sys
from typing import Optional


ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_document_tour_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "document_tour.py")],
        check=True, capture_output=True, text=True,
    ).stdout
    assert "document tour complete" in out
    assert "['article-42-1', 'article-42-2']" in out
    assert '"views":1200' in out


def run_cli(*args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lucille.cli", *args],
        capture_output=True, text=True, input=stdin,
    )


def test_cli_doc_normalises_valid_json() -> None:
    r = run_cli("doc", '{ "id": "a",  "x": [1, 2.0] }')
    assert r.returncode == 0
    assert r.stdout.strip() == '{"id":"a","x":[1,2.0]}'


def test_cli_doc_rejects_invalid_document() -> None:
    r = run_cli("doc", "-", stdin='{"x": 1}')
    assert r.returncode == 1
    assert "id" in r.stderr


def test_cli_doc_describes_a_stage_from_its_options() -> None:
    r = run_cli("doc", "com.kmwllc.lucille.stage.TruncateField")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "TruncateField (stage)"
    assert "Cuts a field's text to at most `maxSize` characters" in lines[1]
    assert "  maxSize (an integer), required: The most characters kept." in lines
    assert any(line.startswith("  destination (a string): ") for line in lines)


def test_cli_doc_describes_a_connector_with_defaults_and_ranges() -> None:
    r = run_cli("doc", "SequenceConnector")
    assert r.returncode == 0, r.stderr
    assert "  numDocs (an integer), required, at least 0: How many documents to publish." in r.stdout
    assert "  startWith (an integer), default 0: " in r.stdout


def test_cli_doc_unknown_class_suggests_the_nearest() -> None:
    r = run_cli("doc", "TruncateFeild")
    assert r.returncode == 1
    assert 'no stage, connector or indexer named "TruncateFeild" (did you mean "TruncateField"?)' in r.stderr


def test_cli_version() -> None:
    r = run_cli("--version")
    assert r.returncode == 0 and "lucille-rs" in r.stdout


def test_pipeline_example_runs_python_stage_from_the_config_folder(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "out.jsonl"
    r = subprocess.run(
        [sys.executable, "-m", "lucille.cli", "run", str(ROOT / "examples" / "pipeline.conf"),
         "--set", f"jsonl.path={out}"],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "generated: complete. 99 docs succeeded. 0 docs failed. 1 docs dropped." in r.stdout
    # Two workers: the output's order is not the publish order, so find doc-0's line.
    lines = out.read_text().splitlines()
    assert len(lines) == 99
    doc0 = next(line for line in lines if line.startswith('{"id":"doc-0",'))
    assert '"description":"article #doc-0: Hello, Lucille (14 chars)"' in doc0
    assert not any(line.startswith('{"id":"doc-13",') for line in lines)  # dropped
