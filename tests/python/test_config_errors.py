"""Config errors read cleanly through `lucille validate`: each once, with its key path and a suggestion."""

import subprocess
import sys
import textwrap
from pathlib import Path


def validate(tmp_path: Path, name: str, text: str) -> tuple[int, str]:

    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(p)], capture_output=True,
                       text=True, cwd=tmp_path)
    return r.returncode, r.stderr


def test_an_include_cycle_is_one_plain_error(tmp_path: Path) -> None:
    (tmp_path / "b.conf").write_text('include "a.conf"\nx: 1\n')
    code, err = validate(tmp_path, "a.conf", """
        include "b.conf"
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1 }]
    """)
    assert code == 1
    assert err.count("config error") == 1, err
    assert err.startswith(f"1 config error:\n  - {tmp_path / 'b.conf'}:1:1: include \"a.conf\": include cycle"), err


def test_each_error_once_with_suggestions(tmp_path: Path) -> None:
    code, err = validate(tmp_path, "t.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1, pipeline: "p" }]
        pipelines: [{ name: "p", stages: [
            { class: "CopyFeilds", fieldMapping: { a: "b" } },
            { class: "ParseDate", source: 5 }
        ] }]
        worker { threads: "two" }
    """)
    assert code == 1
    lines = [l for l in err.splitlines() if l.startswith("  - ")]
    assert err.startswith(f"{len(lines)} config errors:"), err
    assert len(lines) == 4, err
    assert 'pipelines[0].stages[0].class: unknown stage class "CopyFeilds" (did you mean "CopyFields"?)' in err
    assert "pipelines[0].stages[1].source: must be a string or a list of strings, found a number (5)" in err
    assert 'pipelines[0].stages[1].dest: missing required key "dest"' in err
    assert sum("worker.threads" in l for l in lines) == 1, err


def test_a_name_far_from_every_stage_gets_no_guess(tmp_path: Path) -> None:
    code, err = validate(tmp_path, "f.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1, pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "Frobnicate" }] }]
    """)
    assert code == 1
    assert "did you mean" not in err and "use a built-in stage name" in err, err


def test_render_hides_secret_keys_matched_as_words(tmp_path: Path) -> None:
    p = tmp_path / "r.conf"
    p.write_text(textwrap.dedent("""
        connectors: []
        opensearch { url: "http://localhost:9200", index: "docs", password: "hunter2" }
        typesense { apiKey: "abc123" }
        tokenizer { "max-token-count": 512, FAIL_ON_TRAILING_TOKENS: true, authToken: "t0k3n", secret: "s" }
    """))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "render", str(p), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout)
    assert out["tokenizer"]["max-token-count"] == 512
    assert out["tokenizer"]["FAIL_ON_TRAILING_TOKENS"] is True
    for block, key in [("opensearch", "password"), ("typesense", "apiKey"), ("tokenizer", "authToken"), ("tokenizer", "secret")]:
        assert out[block][key] == "***REDACTED***", (block, key)
    assert "hunter2" not in r.stdout and "abc123" not in r.stdout and "t0k3n" not in r.stdout


def test_a_wrong_typed_secret_is_reported_without_its_value(tmp_path: Path) -> None:
    code, err = validate(tmp_path, "s.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1 }]
        indexer { type: "opensearch" }
        opensearch { url: "http://localhost:9200", index: "docs", username: "u", password: ["hunter2"] }
    """)
    assert code == 1
    assert "opensearch.password: must be a string, found a list (value hidden" in err, err
    assert "hunter2" not in err
