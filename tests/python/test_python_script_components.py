"""PythonConnector and PythonIndexer: a connector or indexer class given inline (`script`) or
by file (`scriptPath`) in the config, as EmbeddedPython does for stages."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import lucille

SOURCE = textwrap.dedent(
    '''
    import lucille

    class Numbers(lucille.Connector):
        def execute(self, publisher):
            for i in range(int(self.config.get("count", 3))):
                publisher.publish(lucille.Document(f"n{i}", {"n": i}))
    '''
)

SINK = textwrap.dedent(
    '''
    import json
    import lucille

    class Helper:                     # not an Indexer: ignored when choosing the class
        pass

    class FileSink(lucille.Indexer):
        def send_batch(self, docs):
            with open(self.config["out"], "a") as f:
                for d in docs:
                    f.write(json.dumps({"id": d.id, "n": d.get_int("n")}) + "\\n")
    '''
)


def hocon_str(text: str) -> str:
    return json.dumps(text)


def test_an_inline_connector_and_an_indexer_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "sink.py").write_text(SINK)
    out = tmp_path / "out.jsonl"
    conf = tmp_path / "run.conf"
    conf.write_text(
        f"""
        connectors: [{{ name: "numbers", class: "PythonConnector", count: 4,
                        script: {hocon_str(SOURCE)} }}]
        indexer {{ class: "PythonIndexer", scriptPath: "sink.py", out: {hocon_str(str(out))} }}
        """
    )
    result = lucille.run(str(conf), progress=False)
    assert result.status == "Success", result.summary
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["id"], r["n"]) for r in rows) == [("n0", 0), ("n1", 1), ("n2", 2), ("n3", 3)]


def test_script_errors_are_config_errors_with_their_key_and_line(tmp_path: Path) -> None:
    two = SOURCE + "\nclass Other(lucille.Connector):\n    def execute(self, publisher):\n        pass\n"
    config = {
        "connectors": [
            {"name": "broken", "class": "PythonConnector", "script": "import lucille\n\nclass X(:\n"},
            {"name": "two", "class": "PythonConnector", "script": two},
            {"name": "named", "class": "PythonConnector", "script": two, "className": "Missing"},
            {"name": "none", "class": "PythonConnector"},
        ],
        "indexer": {"class": "PythonIndexer", "scriptPath": "no/such/file.py"},
    }
    errors = lucille.validate(config=config)
    text = "\n".join(errors)
    assert any("connectors[0].script" in e and "line 3" in e for e in errors), text
    assert any("connectors[1]" in e and "found: Numbers, Other" in e for e in errors), text
    assert any("connectors[2].className" in e and "'Missing'" in e for e in errors), text
    assert any("connectors[3].script" in e and "missing the code" in e for e in errors), text
    assert any("indexer.scriptPath" in e and "not found" in e for e in errors), text


def test_class_name_picks_one_of_several(tmp_path: Path) -> None:
    two = SOURCE + "\nclass Other(lucille.Connector):\n    def execute(self, publisher):\n        pass\n"
    result = lucille.run(
        config={"connectors": [{"name": "n", "class": "PythonConnector", "script": two,
                                "className": "Numbers", "count": 2}]},
        mode="test",
    )
    assert sorted(d.id for d in result.documents) == ["n0", "n1"]
