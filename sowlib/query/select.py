"""Select lists (spec §13.5): which fields of each record a query returns.

Imports ``errors`` and ``paths``.
"""

from __future__ import annotations

from typing import Any

import attrs

from sowlib.errors import FieldPathError, QueryOptionError
from sowlib.paths import parse_path

__all__ = ["SelectList"]


_DROP = object()


@attrs.frozen
class SelectList:
    """A select list (spec §13.5): ``[-/,+/id,+/bag/top]``.

    The most specific directive wins, the first of two identical directives
    counts, a field no directive covers is included, and absent fields are
    never invented.
    """

    directives: tuple[tuple[tuple[str, ...], bool], ...]

    @classmethod
    def parse(cls, text: str) -> SelectList:
        """Parse ``[+/path, -/path, ...]`` (the brackets are optional).

        Raises:
            QueryOptionError: a directive lacks ``+``/``-`` or has a bad path.
        """
        if not isinstance(text, str):
            raise QueryOptionError("select", text, "expected text such as '[+/a,-/b]'")
        body = text.strip()
        if body.startswith("[") and body.endswith("]"):
            body = body[1:-1]
        seen: dict[tuple[str, ...], bool] = {}
        for raw in body.split(","):
            item = raw.strip()
            if len(item) < 2 or item[0] not in "+-" or item[1] != "/":
                raise QueryOptionError("select", text, f"{item!r} is not '+/path' or '-/path'")
            names: tuple[str, ...] = ()
            if item[1:] != "/":
                try:
                    path = parse_path(item[1:])
                except FieldPathError as exc:
                    raise QueryOptionError("select", text, str(exc)) from None
                if any(step.index is not None for step in path.steps):
                    raise QueryOptionError("select", text, "select paths cannot index arrays")
                names = path.names
            seen.setdefault(names, item[0] == "+")
        return cls(tuple(seen.items()))

    def _include(self, path: tuple[str, ...]) -> bool:
        best, keep = -1, True
        for names, plus in self.directives:
            if len(names) > best and path[: len(names)] == names:
                best, keep = len(names), plus
        return keep

    def _below(self, path: tuple[str, ...]) -> bool:
        n = len(path)
        return any(len(names) > n and names[:n] == path for names, _ in self.directives)

    def _project(self, value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, dict) and self._below(path):
            out = type(value)() if type(value) is dict else {}
            for name, child in value.items():
                got = self._project(child, (*path, name))
                if got is not _DROP:
                    out[name] = got
            return out if out or self._include(path) else _DROP
        if isinstance(value, list) and self._below(path):
            items = [self._project(v, path) for v in value]
            kept = [v for v in items if v is not _DROP]
            return kept if kept or self._include(path) else _DROP
        return value if self._include(path) else _DROP

    def apply(self, doc: Any) -> Any:
        """The projection of ``doc``; ``doc`` itself is not modified; O(size of doc).

        Example:
            >>> SelectList.parse("[-/,+/id]").apply({"id": 5, "who": "Kim"})
            {'id': 5}
        """
        got = self._project(doc, ())
        return {} if got is _DROP else got

    def to_text(self) -> str:
        """Canonical text, e.g. ``[-/,+/id]``."""
        return (
            "["
            + ",".join(("+" if p else "-") + "/" + "/".join(n) for n, p in self.directives)
            + "]"
        )
