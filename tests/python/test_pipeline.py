"""Python stages, lucille.stages.* and lucille.Pipeline (interface.md, issue: stages and pipeline)."""

import importlib.util
import pathlib
import sys
import threading
from typing import Any, Iterator


import pytest

import lucille
from lucille import Document, Pipeline, Stage, StageError

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Enrich(Stage):
    def start(self) -> None:
        self.started = getattr(self, "started", 0) + 1

    def process_document(self, doc: Document) -> None:
        doc.set_field("len", len(doc.get_string("body") or ""))


class Chunk(Stage):
    """Yields one child per word, lazily."""

    def process_document(self, doc: Document) -> Iterator[Document]:
        for i, word in enumerate((doc.get_string("body") or "").split(), start=1):
            yield Document(f"{doc.id}-{i}", {"word": word})


class ListChildren(Stage):
    def process_document(self, doc: Document) -> list[Document]:
        return [Document(doc.id + "-a"), Document(doc.id + "-b")]


class Tag(Stage):
    def process_document(self, doc: Document) -> None:
        doc.add_to_field("trail", self.name)


class Boom(Stage):
    def process_document(self, doc: Document) -> None:
        if doc.id == "bad":
            raise KeyError("no such thing")


def test_python_stage_modifies_in_place() -> None:
    p = Pipeline([Enrich({})])
    d = Document("d", {"body": "hello"})
    out = p.process(d)
    assert out == [d]
    assert out[0] is d, "the parent comes back as the same object"
    assert d.get("len") == 5


def test_self_config_and_default_names() -> None:
    e = Enrich({"threshold": 3})
    t = Tag({}, name="tagger")
    p = Pipeline([e, lucille.stages.CopyFields(fieldMapping={"body": "copy"}), t])
    assert e.config == {"threshold": 3}
    assert p.stage_names == ["stage_1", "stage_2", "tagger"]
    assert e.name == "stage_1"
    (doc,) = p.process(Document("d", {"body": "x"}))
    assert doc.get_list("trail") == ["tagger"]
    assert doc.get("copy") == "x"


def test_generator_children_are_lazy_and_come_first() -> None:
    seen = []

    class Record(Stage):
        def process_document(self, doc: Document) -> None:
            seen.append(doc.id)

    p = Pipeline([Chunk({}), Record({}), Tag({})])
    it = p.process_iter(Document("d", {"body": "a b c"}))
    first = next(it)
    assert first.id == "d-1" and first.get("word") == "a"
    assert seen == ["d-1"], "only the first child has been produced and processed"
    rest = list(it)
    assert [x.id for x in rest] == ["d-2", "d-3", "d"]
    assert seen == ["d-1", "d-2", "d-3", "d"]
    assert all(x.get_list("trail") == ["stage_3"] for x in [first] + rest)


def test_list_of_children_and_run_id_copy() -> None:
    p = Pipeline([ListChildren({}), Tag({})])
    out = p.process(Document("p"))
    assert [d.id for d in out] == ["p-a", "p-b", "p"]


def test_children_only_flow_downstream() -> None:
    p = Pipeline([Tag({}, name="before"), Chunk({}), Tag({}, name="after")])
    out = p.process(Document("d", {"body": "x y"}))
    assert [(d.id, d.get_list("trail")) for d in out] == [
        ("d-1", ["after"]),
        ("d-2", ["after"]),
        ("d", ["before", "after"]),
    ]


def test_exception_raises_stage_error_with_traceback() -> None:
    p = Pipeline([Boom({}, name="boom")])
    assert p.process(Document("ok"))[0].id == "ok"
    with pytest.raises(StageError) as e:
        p.process(Document("bad"))
    msg = str(e.value)
    assert '"boom"' in msg and '"bad"' in msg
    assert "KeyError" in msg and "Traceback" in msg and "no such thing" in msg
    # The pipeline keeps working afterwards.
    assert p.process(Document("ok2"))[0].id == "ok2"
    m = {x["name"]: x for x in p.metrics()}
    assert m["boom"]["errors"] == 1 and m["boom"]["processed"] == 3


def test_bad_return_and_bad_yield() -> None:
    # Deliberately wrong return values (the stage API rejects them), hence the Any returns.
    class ReturnsDoc(Stage):
        def process_document(self, doc: Document) -> Any:
            return doc

    class YieldsStr(Stage):
        def process_document(self, doc: Document) -> Any:
            yield "nope"

    class YieldsSelf(Stage):
        def process_document(self, doc: Document) -> Iterator[Document]:
            yield doc

    d = Document("self", {"keep": 1})
    with pytest.raises(StageError, match="its own input document"):
        Pipeline([YieldsSelf({})]).process(d)
    assert d.id == "self" and d.get("keep") == 1, "the input survives"
    with pytest.raises(StageError, match="iterable of Documents"):
        Pipeline([ReturnsDoc({})]).process(Document("d"))
    with pytest.raises(StageError, match="expected a Document"):
        Pipeline([YieldsStr({})]).process(Document("d"))


def test_generator_error_midway_fails_parent() -> None:
    class Half(Stage):
        def process_document(self, doc: Document) -> Iterator[Document]:
            yield Document(doc.id + "-1")
            raise RuntimeError("generator died")

    it = Pipeline([Half({})]).process_iter(Document("d"))
    assert next(it).id == "d-1"
    with pytest.raises(StageError, match="generator died"):
        next(it)


def test_dropped_documents_are_returned_flagged() -> None:
    p = Pipeline([lucille.stages.DropDocument(), Tag({})])
    (d,) = p.process(Document("d"))
    assert d.is_dropped() and not d.has("trail")


def test_conditions_on_python_and_builtin_stages() -> None:
    cond = [{"fields": ["kind"], "values": ["a"]}]
    p = Pipeline([
        Tag({"conditions": cond}, name="py"),
        lucille.stages.SetStaticValues(staticValues={"hit": True}, conditions=cond, conditionPolicy="any"),
    ])
    (a,) = p.process(Document("1", {"kind": "a"}))
    (b,) = p.process(Document("2", {"kind": "b"}))
    assert a.get_list("trail") == ["py"] and a.get("hit") is True
    assert b.to_dict() == {"id": "2", "kind": "b"}


def test_builtin_stage_config_errors_list_everything() -> None:
    with pytest.raises(ValueError) as e:
        lucille.stages.CopyFields(fieldMaping={"a": "b"}, updateMode="sideways")
    msg = str(e.value)
    assert "fieldMaping" in msg and "updateMode" in msg and "2 config errors" in msg
    with pytest.raises(AttributeError):
        getattr(lucille.stages, "NoSuchStage")
    with pytest.raises(ValueError, match="duplicate stage name"):
        Pipeline([Tag({}, name="x"), Tag({}, name="x")])
    with pytest.raises(ValueError):
        Pipeline([object()])


def test_start_once_and_close_calls_stop() -> None:
    class Life(Stage):
        events = []

        def start(self) -> None:
            self.events.append("start")

        def process_document(self, doc: Document) -> None:
            self.events.append(doc.id)

        def stop(self) -> None:
            self.events.append("stop")

    with Pipeline([Life({})]) as p:
        p.process(Document("a"))
        p.process(Document("b"))
    assert Life.events == ["start", "a", "b", "stop"]


def test_rust_stages_run_without_the_gil() -> None:
    # One long Pipeline.process call (a Rust stage emitting many children) runs in another
    # thread; if it held the GIL this thread could not run Python meanwhile.
    p = Pipeline([lucille.stages.CreateChildrenStage(numChildren=300000)])
    started, done = threading.Event(), threading.Event()
    out: list[Document] = []

    def work() -> None:
        started.set()
        out.extend(p.process(Document("d")))
        done.set()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    ticks = 0
    while not done.is_set():
        ticks += 1
    t.join()
    assert len(out) == 300001
    assert ticks > 1000, f"only {ticks} Python steps ran during the Rust call"


def test_stages_stub_lists_every_builtin() -> None:
    spec = importlib.util.spec_from_file_location("gen_stage_stubs", ROOT / "scripts" / "gen_stage_stubs.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    stub = (ROOT / "python" / "lucille" / "stages.pyi").read_text()
    assert stub == gen.render(), "python/lucille/stages.pyi is stale: run scripts/gen_stage_stubs.py"
    for name in lucille._lucille.builtin_stage_names():
        assert callable(getattr(lucille.stages, name))
    assert sorted(dir(lucille.stages)) == sorted(lucille._lucille.builtin_stage_names())


def test_metrics_shape() -> None:
    p = Pipeline([Enrich({}), Chunk({})])
    p.process(Document("d", {"body": "a b"}))
    m = p.metrics()
    assert [x["name"] for x in m] == ["stage_1", "stage_2"]
    assert m[1]["children"] == 2 and m[1]["processed"] == 1
    assert m[0]["total_seconds"] >= 0 and m[0]["mean_seconds"] >= 0


DATA = ROOT / "tests" / "python" / "data"


def test_from_config_with_python_stages_by_module_and_file() -> None:
    p = Pipeline.from_config(
        [
            {"class": "mystages:Shout", "name": "by_module", "field": "a"},
            {"class": "mystages.py:Shout", "field": "b"},
            {"class": "com.kmwllc.lucille.stage.CopyFields", "fieldMapping": {"a": "c"}},
        ],
        base_dir=str(DATA),
    )
    assert p.stage_names == ["by_module", "stage_2", "stage_3"]
    (d,) = p.process(Document("d", {"a": "x", "b": "y"}))
    assert d.get("shout") == "Y" and d.get("stage_name") == "stage_2"
    assert d.get("c") == "x"


def test_from_config_reports_every_error() -> None:
    with pytest.raises(ValueError) as e:
        Pipeline.from_config(
            [
                {"class": "mystages:NotAStage"},
                {"class": "nosuchmodule:Thing"},
                {"class": "mystages.py:Missing"},
                {"class": "CopyFields"},
                {"class": "Nope"},
            ],
            base_dir=str(DATA),
        )
    msg = str(e.value)
    assert "5 config errors" in msg
    for part in ["stages[0].class", "not a stage class", "stages[1].class", "nosuchmodule",
                 "stages[2].class", "Missing", "stages[3].fieldMapping", "stages[4].class: unknown stage class"]:
        assert part in msg, (part, msg)
    with pytest.raises(ValueError, match="cannot start"):
        Pipeline.from_config([{"class": "mystages:FailsInInit"}], base_dir=str(DATA))


def test_builtin_stages_carry_their_config_keys_in_their_docstrings() -> None:
    import pydoc

    text = pydoc.plain(pydoc.render_doc(lucille.stages.CopyFields))
    assert "fieldMapping: an object" in text, text
    assert "updateMode" in text and "conditions" in text
    doc = lucille.stages.QueryDatabase.__doc__ or ""
    assert "keyFields (required)" in doc and "connectionRetries" in doc, doc
