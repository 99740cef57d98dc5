"""Notebook views and exports behind ``Document._repr_html_``, ``RunResult._repr_html_``,
``RunResult.to_records`` and ``RunResult.to_pandas`` (the native methods call these)."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lucille._lucille import Document, RunResult

# A value longer than this is shown cut, with the whole text folded under it.
MAX_VALUE_CHARS = 200
# Fields shown before the rest are summarised in one row.
MAX_FIELDS = 50

_TABLE = 'style="border-collapse:collapse;text-align:left;font-size:0.9em"'
_CELL = 'style="border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left"'


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _value_cell(value: Any) -> str:
    text = _text(value)
    if len(text) <= MAX_VALUE_CHARS:
        return f"<td {_CELL}><code>{html.escape(text)}</code></td>"
    head = html.escape(text[:MAX_VALUE_CHARS])
    return (
        f"<td {_CELL}><details><summary><code>{head}</code>… ({len(text)} chars)</summary>"
        f"<code>{html.escape(text)}</code></details></td>"
    )


def document_html(doc: "Document") -> str:
    """The document as a compact HTML table: id, run id, flags and children in the caption,
    one row per field (values as JSON, HTML-escaped, long ones cut and folded)."""
    caption = [f"Document <b>{html.escape(doc.id)}</b>"]
    if doc.run_id is not None:
        caption.append(f"run {html.escape(doc.run_id)}")
    children = doc.children()
    if children:
        caption.append(f"{len(children)} child{'ren' if len(children) != 1 else ''}")
    if doc.is_dropped():
        caption.append("dropped")
    if doc.is_skipped():
        caption.append("skipped")
    names = doc.field_names()
    rows = []
    for name in names[:MAX_FIELDS]:
        value = doc[name]
        kind = f" <small>[{len(value)}]</small>" if doc.is_multivalued(name) else ""
        rows.append(f"<tr><th {_CELL}>{html.escape(name)}{kind}</th>{_value_cell(value)}</tr>")
    if len(names) > MAX_FIELDS:
        rows.append(f"<tr><td {_CELL} colspan=2>… {len(names) - MAX_FIELDS} more fields</td></tr>")
    if not names:
        rows.append(f"<tr><td {_CELL} colspan=2><i>no fields</i></td></tr>")
    return (
        f"<table {_TABLE}><caption style=\"text-align:left\">{' · '.join(caption)}</caption>"
        f"{''.join(rows)}</table>"
    )


def run_result_html(result: "RunResult") -> str:
    """The run's status and totals, then one table row per connector."""
    status_color = "#2a7" if result.status == "Success" else "#c33"
    head = (
        f"<p><b style=\"color:{status_color}\">{html.escape(result.status)}</b> · "
        f"{result.published} published · {result.succeeded} succeeded · {result.failed} failed · "
        f"{result.dropped} dropped · "
        f"{f'{result.unchanged} unchanged · ' if result.unchanged else ''}{result.seconds:.2f} s"
        f"{' · interrupted' if result.interrupted else ''}</p>"
    )
    # The unchanged column only when skipUnchanged skipped something.
    unchanged = any(c.unchanged for c in result.connectors)
    cols = ["connector", "status", "published", "succeeded", "failed", "dropped"]
    cols += ["unchanged"] if unchanged else []
    cols += ["seconds", "message"]
    header = "".join(f"<th {_CELL}>{c}</th>" for c in cols)
    rows = []
    for c in result.connectors:
        cells = [c.name, c.status, c.published, c.succeeded, c.failed, c.dropped]
        cells += [c.unchanged] if unchanged else []
        cells += [f"{c.seconds:.2f}", c.message or ""]
        rows.append("<tr>" + "".join(f"<td {_CELL}>{html.escape(str(v))}</td>" for v in cells) + "</tr>")
    return f"<div>{head}<table {_TABLE}><tr>{header}</tr>{''.join(rows)}</table></div>"


def records(result: "RunResult") -> list[dict[str, Any]]:
    """Test mode: one dict per document the indexer received, in order: ``id`` then the
    fields (the run id and children, which indexers do not write as fields, left out)."""
    out = []
    for doc in result.documents:
        record: dict[str, Any] = {"id": doc.id}
        for name in doc.field_names():
            record[name] = doc[name]
        out.append(record)
    return out


def to_pandas(result: "RunResult") -> Any:
    """Test mode: :func:`records` as a ``pandas.DataFrame``, one row per document."""
    try:
        import pandas  # type: ignore[import-untyped, unused-ignore]
    except ImportError as e:
        raise ImportError(
            "RunResult.to_pandas() needs pandas, which is not installed: pip install pandas "
            "(RunResult.to_records() gives the same rows as dicts without it)"
        ) from e
    rows = records(result)
    return pandas.DataFrame.from_records(rows) if rows else pandas.DataFrame(columns=["id"])


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython with a kernel attached)."""
    import sys

    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except AttributeError:
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


class Progress:
    """The live progress of ``lucille.run`` outside a terminal: a tqdm bar (``tqdm.auto``, a
    widget in Jupyter) when tqdm is installed, else one plain line rewritten in place on stderr.
    The Rust run loop calls :meth:`update` a few times a second and :meth:`close` at the end."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._plain_width = 0
        self._tqdm: Any = None
        try:
            # tqdm's notebook widget needs ipywidgets; without it tqdm.auto would warn and fall
            # back to the text bar, which is what the plain tqdm gives at once.
            import ipywidgets  # noqa: F401

            from tqdm.auto import tqdm
        except ImportError:
            try:
                from tqdm import tqdm
            except ImportError:
                return
        self._tqdm = tqdm

    @staticmethod
    def describe(name: str, published: int, succeeded: int, failed: int, dropped: int) -> str:
        return f"{name}: {published} published, {succeeded} indexed, {failed} failed, {dropped} dropped"

    def update(self, name: str, published: int, succeeded: int, failed: int, dropped: int) -> None:
        done = succeeded + failed + dropped
        if self._tqdm is not None:
            if self._bar is None or self._bar.desc != name:
                if self._bar is not None:
                    self._bar.close()
                self._bar = self._tqdm(desc=name, unit="doc", total=None, leave=True)
            self._bar.total = max(published, done)
            self._bar.n = done
            self._bar.set_postfix(published=published, failed=failed, dropped=dropped, refresh=False)
            self._bar.refresh()
            return
        import sys

        line = self.describe(name, published, succeeded, failed, dropped)
        sys.stderr.write("\r" + line.ljust(self._plain_width))
        sys.stderr.flush()
        self._plain_width = len(line)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._plain_width:
            import sys

            sys.stderr.write("\n")
            sys.stderr.flush()
            self._plain_width = 0
