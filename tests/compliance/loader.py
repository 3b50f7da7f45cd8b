"""Load the filter-language compliance cases (``tests/compliance/*.json``) for any back-end.

Each file is a list of groups ``{"comment", "messages", "cases"}`` (optional
``"contexts"``: one EvalContext field dict per message). Each case has a
``filter`` and either ``matches`` (indexes of matching messages) or
``error`` ``{"kind": syntax|unknown_function|arity|regex, "offset": n}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
ERROR_KINDS = ("syntax", "unknown_function", "arity", "regex")


def iter_cases() -> Iterator[tuple[str, str, list[Any], dict[str, Any], list[Any] | None]]:
    """Yield ``(file, comment, messages, case, contexts)`` for every case of every file."""
    for path in sorted(HERE.glob("*.json")):
        if path.name.startswith(("types_", "query_")):
            continue  # other message types / result controls: their own runners
        for group in json.loads(path.read_text(encoding="utf-8")):
            for case in group["cases"]:
                yield path.name, group["comment"], group["messages"], case, group.get("contexts")


def params() -> list[Any]:
    """``pytest.param`` objects with readable ids: ``file:comment:filter``."""
    out = []
    for file, comment, messages, case, contexts in iter_cases():
        case_id = f"{file[:-5]}:{comment[:40]}:{case['filter'][:60]}"
        out.append(pytest.param(file, comment, messages, case, contexts, id=case_id))
    return out
