"""Notebook niceties: HTML views of Documents and RunResults, to_records and to_pandas."""

import sys

import pytest

import lucille
from lucille import Document
from pathlib import Path


def test_document_html_escapes_counts_children_and_folds_long_values() -> None:
    d = Document("a<b>", {"title": "<script>alert(1)</script>", "tags": ["x", "y"], "long": "z" * 1000})
    d.add_child(Document("c1"))
    d.add_child(Document("c2"))
    h = d._repr_html_()
    assert h.startswith("<table") and h.endswith("</table>")
    assert "<script>" not in h and "&lt;script&gt;alert(1)&lt;/script&gt;" in h
    assert "a&lt;b&gt;" in h
    assert "2 children" in h
    assert "tags <small>[2]</small>" in h and "[&quot;x&quot;, &quot;y&quot;]" in h
    assert "<details>" in h and "(1000 chars)" in h
    assert h.index("title") < h.index("tags") < h.index("long"), "fields in order"
    assert "no fields" in Document("e")._repr_html_()


def test_document_html_caps_the_number_of_fields() -> None:
    d = Document("d", {f"f{i}": i for i in range(60)})
    h = d._repr_html_()
    assert "f49" in h and "f50" not in h and "10 more fields" in h


def run_test_mode() -> lucille.RunResult:
    return lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 3, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [
            {"class": "EmbeddedPython", "script": "doc.n = int(doc.id) * 2\nif doc.id == '1':\n    doc.extra = ['a', 'b']\nif doc.id == '2':\n    raise ValueError('<bad>')\n"},
        ]}],
    }, mode="test")


def test_run_result_html_has_summary_and_connector_rows() -> None:
    r = run_test_mode()
    h = r._repr_html_()
    assert "Success" in h and "3 published" in h and "2 succeeded" in h and "1 failed" in h
    assert "<td" in h and ">seq<" in h and ">complete<" in h


def test_to_records_is_what_the_indexer_received() -> None:
    r = run_test_mode()
    assert r.to_records() == [{"id": "0", "n": 0}, {"id": "1", "n": 2, "extra": ["a", "b"]}]


def test_to_pandas_and_its_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    r = run_test_mode()
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["id", "n", "extra"]
    assert list(df["id"]) == ["0", "1"] and list(df["n"]) == [0, 2]
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="needs pandas.*pip install pandas"):
        r.to_pandas()


def test_records_only_in_test_mode(tmp_path: Path) -> None:
    r = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 1}],
        "indexer": {"type": "nop"},
    })
    with pytest.raises(RuntimeError, match="test"):
        r.to_records()
    assert "Success" in r._repr_html_()


@pytest.mark.parametrize("cls", [lucille.Document, lucille.RunResult, lucille.ConnectorResult, lucille.Pipeline])
def test_every_public_method_has_a_docstring(cls: type) -> None:
    assert (cls.__doc__ or "").strip(), f"{cls.__name__} has no docstring"
    names = [n for n in dir(cls) if not n.startswith("_") or n == "_repr_html_"]
    assert names
    missing = [n for n in names if not (getattr(cls, n).__doc__ or "").strip()]
    assert missing == [], f"{cls.__name__} methods without a docstring: {missing}"


def test_help_shows_the_docstring() -> None:
    import pydoc
    text = pydoc.plain(pydoc.render_doc(lucille.Document.set_field))

    assert "Sets a field to a value" in text
