"""examples/notebook.ipynb runs from top to bottom under a real Jupyter kernel (nbclient), so
the notebook never rots: its cells assert what they show."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import nbclient
import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_example_notebook_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # nbformat ships no type hints.
    nb = cast(Any, nbformat).read(EXAMPLES / "notebook.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if a cell fails
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # The test-mode result rendered as HTML (RunResult._repr_html_).
    html = [o for o in outputs if o.output_type == "execute_result" and "text/html" in o.data]
    assert any("RUN SUMMARY" in o.data["text/html"] or "succeeded" in o.data["text/html"] for o in html)
