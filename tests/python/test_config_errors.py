"""Config errors read cleanly through `lucille validate`: each once, with its key path and a suggestion."""

import subprocess
import sys
import textwrap


def validate(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "validate", str(p)], capture_output=True,
                       text=True, cwd=tmp_path)
    return r.returncode, r.stderr


def test_an_include_cycle_is_one_plain_error(tmp_path):
    (tmp_path / "b.conf").write_text('include "a.conf"\nx: 1\n')
    code, err = validate(tmp_path, "a.conf", """
        include "b.conf"
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1 }]
    """)
    assert code == 1
    assert err.count("config error") == 1, err
    assert err.startswith(f"1 config error:\n  - {tmp_path / 'b.conf'}:1:1: include \"a.conf\": include cycle"), err


def test_each_error_once_with_suggestions(tmp_path):
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


def test_a_name_far_from_every_stage_gets_no_guess(tmp_path):
    code, err = validate(tmp_path, "f.conf", """
        connectors: [{ name: "seq", class: "SequenceConnector", numDocs: 1, pipeline: "p" }]
        pipelines: [{ name: "p", stages: [{ class: "Frobnicate" }] }]
    """)
    assert code == 1
    assert "did you mean" not in err and "use a built-in stage name" in err, err
