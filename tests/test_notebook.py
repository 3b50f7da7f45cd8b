"""``examples/notebook.ipynb`` is kept without outputs (``nox -s notebook`` executes it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"


def _cells() -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    return cells


def test_no_cell_has_outputs() -> None:
    code = [c for c in _cells() if c["cell_type"] == "code"]
    assert code
    assert [c["outputs"] for c in code] == [[] for _ in code]
    assert [c["execution_count"] for c in code] == [None for _ in code]


def test_the_notebook_shows_what_issue_17_promises() -> None:
    source = "\n".join("".join(c["source"]) for c in _cells() if c["cell_type"] == "code")
    for needle in ("SowStore(", ".sow(", ".lookup(", "to_pandas()", "matplotlib", 'format("sow")'):
        assert needle in source
    assert "register(" not in source  # the Spark read needs no set-up call
