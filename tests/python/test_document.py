"""The Document API of interface.md, line by line, including its error cases."""

import copy
import json
import pickle
from typing import Any, Callable


import numpy as np
import pytest

import lucille
from lucille import Document, UpdateMode

RESERVED = ["id", "run_id", "___dropped", "___skipped", "___children"]


def test_construct_with_id_and_fields() -> None:
    d = Document("doc1")
    assert d.id == "doc1"
    assert d.run_id is None
    assert d.field_names() == []
    d = Document("doc1", {"title": "x", "n": 2})
    assert d.get("title") == "x"
    assert d.field_names() == ["title", "n"]


@pytest.mark.parametrize("bad", ["", None, 5])
def test_id_must_be_non_empty_str(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        Document(bad)


@pytest.mark.parametrize("name", RESERVED + [""])
def test_initial_fields_reject_reserved_names(name: str) -> None:
    with pytest.raises(ValueError):
        Document("d", {name: 1})


def test_id_is_immutable() -> None:
    d = Document("d")
    with pytest.raises(AttributeError):
        d.id = "other"  # type: ignore[misc]


def test_from_json_and_from_dict() -> None:
    d = Document.from_json('{"id": "doc1", "title": "x"}')
    assert d.id == "doc1" and d.get("title") == "x"
    d2 = Document.from_dict({"id": "doc1", "title": "x"})
    assert d == d2


@pytest.mark.parametrize(
    "text",
    ['{"title": "x"}', '{"id": 3}', '{"id": ""}', "[1]", '"s"', "{bad json", "", '{"id": "a", "run_id": 1}'],
)
def test_from_json_rejects_bad_input(text: str) -> None:
    with pytest.raises(ValueError):
        Document.from_json(text)


def test_from_dict_rejects_missing_id() -> None:
    with pytest.raises(ValueError):
        Document.from_dict({"title": "x"})


def test_json_round_trip_is_exact() -> None:
    text = '{"id":"d","i":-3,"u":18446744073709551615,"f":1.0,"g":0.1,"s":"héllo ✓ 😀","n":null,"l":[1,"a",{"x":[]}],"o":{"z":1,"a":2}}'
    d = Document.from_json(text)
    assert d.to_json() == text
    assert isinstance(d.get("f"), float) and d.get("f") == 1.0
    assert isinstance(d.get("i"), int)
    assert d.get("u") == 2**64 - 1
    assert Document.from_json(d.to_json()).to_json() == text


@pytest.mark.parametrize(
    "value",
    ["s", 1, -(2**63), 2**64 - 1, 1.5, True, False, None, [1, "a"], {"a": {"b": [1]}}, (1, 2)],
)
def test_set_field_accepts_json_types(value: Any) -> None:
    d = Document("d")
    d.set_field("f", value)
    expected = list(value) if isinstance(value, tuple) else value
    assert d["f"] == expected
    assert type(d["f"]) is type(expected)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**64, object(), {1: "x"}])
def test_set_field_rejects_what_json_cannot_hold(value: object) -> None:
    d = Document("d")
    with pytest.raises((ValueError, TypeError)):
        d.set_field("f", value)
    assert not d.has("f")


def test_set_field_accepts_1d_numpy_arrays_and_scalars() -> None:
    d = Document("d")
    d.set_field("i", np.arange(3, dtype=np.int32))
    d.set_field("f", np.array([0.5, 1.25]))
    d.set_field("f32", np.array([0.1], dtype=np.float32))
    d.set_field("b", np.array([True, False]))
    d.set_field("scalar", np.float32(2.5))
    d.set_field("iscalar", np.int64(7))
    assert d["i"] == [0, 1, 2]
    assert d["f"] == [0.5, 1.25]
    assert d.to_json().count('"f32":[0.1]') == 1
    assert d["b"] == [True, False]
    assert d["scalar"] == 2.5 and d["iscalar"] == 7
    with pytest.raises(ValueError):
        d.set_field("m", np.zeros((2, 2)))
    with pytest.raises(TypeError):
        d.set_field("s", np.array(["a", "b"]))


def test_add_to_field_and_set_or_add() -> None:
    d = Document("d")
    d.add_to_field("tags", "search")
    assert d["tags"] == ["search"] and d.is_multivalued("tags")
    d.add_to_field("tags", "etl")
    assert d["tags"] == ["search", "etl"]
    d.set_field("one", "a")
    d.add_to_field("one", "b")  # a single value turns into a list
    assert d["one"] == ["a", "b"]
    d.set_or_add("x", 1)
    assert d["x"] == 1 and not d.is_multivalued("x")
    d.set_or_add("x", 2)
    assert d["x"] == [1, 2]


def test_update_modes() -> None:
    d = Document("d")
    d.update("t", UpdateMode.APPEND, "a")
    assert d["t"] == "a"  # APPEND on an absent field makes it single-valued
    d.update("t", UpdateMode.APPEND, "b", "c")
    assert d["t"] == ["a", "b", "c"]
    d.update("t", UpdateMode.OVERWRITE, "z")
    assert d["t"] == "z"
    d.update("t", UpdateMode.OVERWRITE, "p", "q")
    assert d["t"] == ["p", "q"]
    d.update("t", UpdateMode.SKIP, "never")
    assert d["t"] == ["p", "q"]
    d.update("new", UpdateMode.SKIP, "yes")
    assert d["new"] == "yes"
    d.update("t", "overwrite", "by-name")
    assert d["t"] == "by-name"
    with pytest.raises(ValueError):
        d.update("t", "sideways", 1)
    with pytest.raises(ValueError):
        d.update("id", UpdateMode.OVERWRITE, "x")


def test_get_returns_first_value_or_none() -> None:
    d = Document("d", {"l": [3, 4], "s": "x", "empty": []})
    assert d.get("l") == 3
    assert d.get("s") == "x"
    assert d.get("absent") is None
    assert d.get("empty") is None


def test_typed_getters_follow_json_text() -> None:
    d = Document("d", {"t": True, "f": 1.5, "i": 12, "s": "34", "fs": "2.5", "multi": ["7", 8], "nul": None})
    assert d.get_string("t") == "true"
    assert d.get_string("f") == "1.5"
    assert d.get_string("i") == "12"
    assert d.get_int("s") == 34
    assert d.get_float("fs") == 2.5
    assert d.get_float("i") == 12.0
    assert d.get_int("multi") == 7
    assert d.get_bool("t") is True
    assert d.get_string("absent") is None
    assert d.get_int("nul") is None
    d.set_field("big", 2**64 - 1)
    assert d.get_int("big") == 2**64 - 1


def test_wrong_type_access_raises_type_error_naming_the_field() -> None:
    d = Document("doc9", {"obj": {"a": 1}, "word": "abc"})
    with pytest.raises(TypeError, match="obj") as e:
        d.get_int("obj")
    assert "doc9" in str(e.value)
    with pytest.raises(TypeError, match="obj"):
        d.get_string("obj")
    with pytest.raises(ValueError, match="word"):
        d.get_int("word")
    with pytest.raises(ValueError, match="word"):
        d.get_bool("word")


def test_get_list() -> None:
    d = Document("d", {"l": [1, 2], "s": "x", "n": None})
    assert d.get_list("l") == [1, 2]
    assert d.get_list("s") == ["x"]
    assert d.get_list("absent") == []
    assert d.get_list("n") == [None]


def test_has_has_non_null_is_multivalued() -> None:
    d = Document("d", {"n": None, "l": [], "v": 1})
    assert d.has("n") and not d.has_non_null("n")
    assert d.has_non_null("l") and d.is_multivalued("l")
    assert not d.is_multivalued("v")
    assert not d.has("absent") and not d.has_non_null("absent")


def test_remove_and_rename() -> None:
    d = Document("d", {"a": 1, "b": 2, "c": 3})
    d.remove_field("a")
    assert d.field_names() == ["b", "c"]
    d.rename_field("b", "c", UpdateMode.APPEND)
    assert d["c"] == [3, 2] and not d.has("b")
    d.set_field("x", 9)
    d.rename_field("x", "c")  # OVERWRITE by default
    assert d["c"] == 9
    d.set_field("y", 1)
    d.rename_field("y", "c", mode=UpdateMode.SKIP)
    assert d["c"] == 9 and not d.has("y")
    d.rename_field("absent", "z")
    assert not d.has("z")


@pytest.mark.parametrize("name", RESERVED + [""])
def test_reserved_and_empty_names_rejected_on_writes(name: str) -> None:
    d = Document("d", {"a": 1})
    ops: list[Callable[[], object]] = [
        lambda: d.set_field(name, 1),
        lambda: d.add_to_field(name, 1),
        lambda: d.set_or_add(name, 1),
        lambda: d.update(name, UpdateMode.APPEND, 1),
        lambda: d.remove_field(name),
        lambda: d.rename_field(name, "b"),
        lambda: d.rename_field("a", name),
        lambda: d.set_nested(name, 1),
        lambda: d.remove_nested(name),
        lambda: d.set_vector(name, [1.0]),
    ]
    for op in ops:
        with pytest.raises(ValueError):
            op()
    assert d.id == "d" and d["a"] == 1


def test_set_or_add_all_merges_another_document() -> None:
    a = Document("a", {"x": 1, "l": [1]})
    b = Document("b", {"x": 2, "l": [2, 3], "new": "n"})
    a.set_or_add_all(b)
    assert a.to_dict() == {"id": "a", "x": [1, 2], "l": [1, 2, 3], "new": "n"}


def test_nested_paths() -> None:
    d = Document("d", {"a": {"b": [{"c": 1}]}})
    assert d.get_nested("a.b[0].c") == 1
    assert d.get_nested("a.b[3].c") is None
    d.set_nested("a.b[1].c", 2)
    d.set_nested("x.y[0].z", "new")
    assert d.to_dict()["x"] == {"y": [{"z": "new"}]}
    assert d.get_nested("a.b[1].c") == 2
    d.remove_nested("a.b[0]")
    assert d.get_nested("a.b[0].c") == 2
    for bad in ["a..b", "a[", "a[x]", "[0]", "a b", ""]:
        with pytest.raises(ValueError, match="invalid field path"):
            d.get_nested(bad)
    with pytest.raises(ValueError, match=r"a\.b\[9\]"):
        d.set_nested("a.b[9]", 1)


def test_field_names_in_insertion_order_without_reserved() -> None:
    d = Document("d")
    for name in ["z", "a", "m"]:
        d.set_field(name, 1)
    d.drop()
    d.add_child(Document("c"))
    assert d.field_names() == ["z", "a", "m"]
    assert list(d) == ["z", "a", "m"]
    assert len(d) == 3


def test_children() -> None:
    p = Document("p")
    assert not p.has_children() and p.children() == []
    c = Document("p-1", {"text": "chunk"})
    p.add_child(c)
    assert p.has_children()
    assert p.children() == [c]
    kids = p.children()
    kids[0].set_field("text", "changed")  # children() returns copies
    assert p.children()[0].get("text") == "chunk"
    round_trip = Document.from_json(p.to_json())
    assert round_trip.children() == [c]


def test_drop_and_skip() -> None:
    d = Document("d")
    assert not d.is_dropped() and not d.is_skipped()
    d.drop()
    d.skip()
    assert d.is_dropped() and d.is_skipped()
    assert Document.from_json(d.to_json()).is_dropped()


def test_evaluate_jsonata() -> None:
    d = Document("d", {"first": "Ada", "last": "Lovelace", "scores": [1, 2, 3]})
    assert d.evaluate("first & ' ' & last") == "Ada Lovelace"
    assert d.evaluate("$sum(scores)") == 6
    assert d.evaluate("nothing.here") is None
    with pytest.raises(ValueError):
        d.evaluate("((")


def test_transform_replaces_fields_and_keeps_reserved() -> None:
    d = Document("d", {"first": "Ada", "last": "Lovelace", "keep": 1})
    d.add_child(Document("d-1"))
    d.transform("{'keep': keep, 'last': $uppercase(last), 'full': first & ' ' & last}")
    assert d.field_names() == ["last", "keep", "full"]
    assert d.get("last") == "LOVELACE"
    assert d.id == "d" and d.has_children()
    before = d.to_json()
    for bad in ["'a string'", "{'id': 'other'}", "nothing.here"]:
        with pytest.raises(ValueError):
            d.transform(bad)
        assert d.to_json() == before


def test_vectors() -> None:
    d = Document("d")
    v = np.array([0.1, -2.5, 3.0], dtype=np.float32)
    d.set_vector("emb", v)
    out = d.get_vector("emb")
    assert out is not None
    assert out.dtype == np.float32
    assert np.array_equal(out, v)
    assert '"emb":[0.1,-2.5,3.0]' in d.to_json()
    d.set_vector("from_list", [1, 2])
    from_list = d.get_vector("from_list")
    assert from_list is not None and from_list.tolist() == [1.0, 2.0]
    d.set_vector("f64", np.array([0.5, 0.25]))
    f64 = d.get_vector("f64")
    assert f64 is not None and f64.tolist() == [0.5, 0.25]
    assert d.get_vector("absent") is None
    d.set_field("words", ["a"])
    with pytest.raises(TypeError):
        d.get_vector("words")
    with pytest.raises(ValueError):
        d.set_vector("nan", np.array([np.nan], dtype=np.float32))


def test_bytes_are_stored_as_base64() -> None:
    d = Document("d")
    d.set_field("raw", b"\x00\x9f\xff")
    assert d.get("raw") == "AJ//"
    assert d.get_bytes("raw") == b"\x00\x9f\xff"


def test_to_dict_copy_eq_repr() -> None:
    d = Document("d", {"b": 1, "a": [1, 2]})
    assert d.to_dict() == {"id": "d", "b": 1, "a": [1, 2]}
    assert list(d.to_dict()) == ["id", "b", "a"]
    c = d.copy()
    assert c == d and c is not d
    c.set_field("b", 2)
    assert c != d
    assert Document.from_json('{"id":"d","a":[1,2],"b":1}') == d  # order-insensitive
    assert Document("d", {"b": 1.0, "a": [1, 2]}) != d  # 1.0 vs 1 differ as JSON
    assert d != "not a document"
    assert copy.copy(d) == d and copy.deepcopy(d) == d
    r = repr(d)
    assert r.startswith('Document("d"') and '"b": 1' in r
    long = Document("big", {f"f{i}": "x" * 100 for i in range(50)})
    assert len(repr(long)) < 200
    with pytest.raises(TypeError):
        hash(d)


def test_mapping_protocol() -> None:
    d = Document("d")
    d["f"] = "v"
    assert d["f"] == "v"
    assert "f" in d and "missing" not in d
    assert "id" not in d  # reserved fields are not part of the mapping view
    del d["f"]
    assert "f" not in d
    with pytest.raises(KeyError):
        d["f"]
    with pytest.raises(KeyError):
        del d["f"]
    with pytest.raises(KeyError):
        d["id"]
    with pytest.raises(ValueError):
        d["id"] = "x"


def test_pickle_round_trips_through_json() -> None:
    d = Document("d", {"a": [1, {"b": None}]})
    d.add_child(Document("d-1"))
    d.skip()
    back = pickle.loads(pickle.dumps(d))
    assert back == d and back.to_json() == d.to_json()


def test_remove_from_array_and_duplicates() -> None:
    d = Document("d", {"l": ["a", "b", "a"]})
    assert d.remove_from_array("l", 1) == "b"
    assert d["l"] == ["a", "a"]
    with pytest.raises(ValueError):
        d.remove_from_array("l", 9)
    d.remove_duplicate_values("l")
    assert d["l"] == ["a"]


def test_package_exports() -> None:
    assert lucille.Document is Document
    assert isinstance(lucille.__version__, str)
    assert UpdateMode.OVERWRITE != UpdateMode.APPEND



@pytest.mark.parametrize(
    "expr",
    [
        "$uppercase(title)",
        "$sum(prices)",
        "$count(tags)",
        "tags[0]",
        "$join(tags, ',')",
        "{'t': title, 'n': $count(tags)}",
        "prices[$ > 2]",
        "$map(prices, function($p) { $p * 2 })",
        "$sort(tags)",
        "$string(prices[0])",
    ],
)
def test_evaluate_agrees_with_reference_jsonata(expr: str) -> None:
    jsonata = pytest.importorskip("jsonata")
    data = {"id": "d", "title": "Hello", "tags": ["b", "a", "c"], "prices": [1, 2.5, 3]}
    d = Document.from_dict(data)
    expected = jsonata.Jsonata(expr).evaluate(data)
    assert json.loads(json.dumps(d.evaluate(expr))) == json.loads(json.dumps(expected))
