"""Lucille's chunking recipe (ChunkText, then EmitNestedChildren) gives Lucille's result."""

import json
import pathlib

import lucille

RECIPE = """
connectors: [ { name: "f", class: "FileConnector", paths: ["%(input)s"], fileHandlers { jsonl {} }, pipeline: "p" } ]
pipelines: [ { name: "p", stages: [
    { name: "chunk", class: "com.kmwllc.lucille.stage.ChunkText", source: "text", dest: "chunk" }
    { name: "mark", class: "SetStaticValues", staticValues { seen_between: true } }
    { name: "emit", class: "com.kmwllc.lucille.stage.EmitNestedChildren", dropParent: %(drop)s,
      fieldsToCopy { title: "parent_title" } }
] } ]
"""


def run(tmp_path: pathlib.Path, drop: str) -> lucille.RunResult:
    data = tmp_path / "in.jsonl"
    rows = [
        {"id": "a", "title": "Alpha", "text": "First sentence. Second sentence."},
        {"id": "b", "title": "Beta", "text": "Only one sentence."},
        {"id": "c", "title": "Empty"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return lucille.run(hocon=RECIPE % {"input": data, "drop": drop}, mode="test")


def test_drop_parent_indexes_the_chunks_with_copied_fields_only(tmp_path: pathlib.Path) -> None:
    r = run(tmp_path, "true")
    assert r.status == "Success"
    docs = {d.id: d for d in r.documents}
    # "c" has no text: no chunks, so EmitNestedChildren leaves it alone (not dropped).
    assert sorted(docs) == ["a-1", "a-2", "b-1", "c"]
    assert docs["a-2"].get("chunk") == "Second sentence."
    assert docs["a-2"].get("parent_title") == "Alpha"
    assert docs["a-1"].get("parent_id") == "a"
    # The chunks were attached while SetStaticValues ran, as in Lucille: it saw the parents only.
    assert not docs["a-1"].has("seen_between")
    assert docs["c"].get("seen_between") is True
    assert (r.published, r.succeeded, r.dropped, r.failed) == (3, 4, 2, 0)


def test_keeping_the_parent_indexes_parent_and_chunks(tmp_path: pathlib.Path) -> None:
    r = run(tmp_path, "false")
    docs = {d.id: d for d in r.documents}
    assert sorted(docs) == ["a", "a-1", "a-2", "b", "b-1", "c"]
    assert not docs["a"].has("___children"), "the chunks were detached from the parent"
    assert docs["b-1"].get("parent_title") == "Beta"
