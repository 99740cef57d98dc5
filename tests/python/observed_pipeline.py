"""The pipeline the metrics and tracing tests run: a Python stage that makes two children of
document 0 and fails on document 5, a DropDocument for document 7 and a CopyFields, into
JSONL, so every outcome and every counter or span has something to show."""

from __future__ import annotations

from pathlib import Path

from kafka_service import bootstrap

SPLITTER = '''
import lucille

class Splitter(lucille.Stage):
    def process_document(self, doc):
        if doc.id == "5":
            raise ValueError("poison document 5")
        if doc.id == "0":
            return [lucille.Document(f"0-child-{i}") for i in range(2)]
        return None
'''


def write_config(tmp_path: Path, name: str, n: int, extra: str = "", slow: float = 0.0,
                 indexer: str = "") -> Path:
    """`name`.conf in tmp_path: connector `name`-c, pipeline `name` (a first EmbeddedPython
    stage sleeping `slow` seconds per document when set), `extra` appended, `indexer` inside
    the indexer block."""
    (tmp_path / "splitter.py").write_text(SPLITTER)
    sleep = (f'{{ class: "EmbeddedPython", script: "import time\\ntime.sleep({slow})" }},'
             if slow else "")
    conf = tmp_path / f"{name}.conf"
    conf.write_text(f"""
connectors: [{{ name: "{name}-c", class: "SequenceConnector", numDocs: {n}, pipeline: "{name}" }}]
pipelines: [{{ name: "{name}", stages: [
  {sleep}
  {{ name: "split", class: "{tmp_path / 'splitter.py'}:Splitter" }},
  {{ class: "DropDocument", conditions: [{{ fields: ["id"], values: ["7"] }}] }},
  {{ name: "copy", class: "CopyFields", source: ["id"], dest: ["copied"] }}
] }}]
indexer {{ type: "jsonl", {indexer} }}
jsonl {{ path: "{tmp_path / (name + '.jsonl')}" }}
{extra}
""")
    return conf


def kafka_block(label: str) -> str:
    """A `kafka` block on the test broker, with a consumer group of its own and short session
    timeouts (for configs run by `lucille worker` / `indexer` processes)."""
    return f"""
kafka {{
  bootstrapServers: "{bootstrap()}"
  consumerGroupId: "g-{label}"
  topicPartitions: 2
  consumer {{ "session.timeout.ms": 6000, "heartbeat.interval.ms": 500 }}
}}"""
