"""Views over a join of two topics: ``[orders].[/symbol] = [companies].[/ticker]``.

A joined row is the document ``{"orders": <order>, "companies": <company>}``; the
view's projection, grouping and filter name fields as ``[topic].[/path]`` (read as
``/topic/path``). Rows are kept per join value, so a change costs the rows of the
join values it touches. Topics are duck-typed.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import attrs

from sowlib.errors import ConfigError
from sowlib.expr import compile_filter
from sowlib.paths import FieldPath, parse_path
from sowlib.subscriptions import Message
from sowlib.views.aggregates import distinct_value
from sowlib.views.definition import CompiledView, ViewSpec, compile_view
from sowlib.views.engine import Group, GroupTable
from sowlib.views.maintain import emit

__all__ = ["JoinMaintainer", "JoinSpec", "parse_join", "qualify_spec"]

_REF = r"(?:\[[^\]]+\]\.)?\[([^\]]+)\]\.\[(/[^\]]*)\]"
_QUALIFIED = re.compile(_REF)
_JOIN = re.compile(rf"\s*{_REF}\s*(=|LEFT\s+JOIN|RIGHT\s+JOIN)\s*{_REF}\s*", re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-:]*\Z")
_SEP = "\x00"


@attrs.frozen
class JoinSpec:
    """Two topics joined where ``left_path`` of one equals ``right_path`` of the other;
    ``outer`` is ``"left"``/``"right"`` to keep that side's records without a partner."""

    left: str
    left_path: FieldPath
    right: str
    right_path: FieldPath
    outer: str | None = None


def parse_join(text: str) -> JoinSpec:
    """Parse ``[a].[/x] = [b].[/y]`` (``LEFT JOIN``/``RIGHT JOIN`` for ``=``: outer joins;
    a ``[message type].`` prefix on each side is allowed).

    Raises:
        ConfigError: anything else, or a topic joined with itself.
    """
    m = _JOIN.fullmatch(text)
    if m is None:
        raise ConfigError("Join", f"{text!r} is not '[topic].[/field] = [topic].[/field]'")
    left, lpath, op, right, rpath = m.groups()
    if left == right:
        raise ConfigError("Join", f"{text!r} joins {left!r} with itself")
    for name in (left, right):
        if not _NAME.match(name):
            raise ConfigError("Join", f"topic name {name!r} cannot be used in a join")
    word = op.split()[0].lower()
    outer = None if word == "=" else word
    return JoinSpec(left, parse_path(lpath), right, parse_path(rpath), outer)


def _rewrite(text: str) -> str:
    return _QUALIFIED.sub(lambda m: f"/{m.group(1)}{m.group(2)}", text)


def qualify_spec(spec: ViewSpec) -> ViewSpec:
    """``spec`` with ``[topic].[/path]`` references read as ``/topic/path``; a bare
    qualified projection field is projected to its own path (``[a].[/x]`` AS ``/x``)."""
    fields = []
    for entry in spec.projection:
        bare = _QUALIFIED.fullmatch(entry.strip())
        fields.append(f"{_rewrite(entry)} AS {bare.group(2)}" if bare else _rewrite(entry))
    return attrs.evolve(
        spec,
        projection=tuple(fields),
        grouping=tuple(_rewrite(g) for g in spec.grouping),
        filter=None if spec.filter is None else _rewrite(spec.filter),
    )


class JoinMaintainer:
    """One join view: both topics followed (with OOF), rows rebuilt per join value."""

    def __init__(self, spec: ViewSpec, join: JoinSpec, left: Any, right: Any, target: Any):
        self.join = join
        self.view: CompiledView = compile_view(qualify_spec(spec))
        qualified = self.view.spec.filter
        self._filter = None if qualified is None else compile_filter(qualified)
        self.target = target
        self.table = GroupTable(self.view)
        self._lock = threading.RLock()
        self._loading = 0
        # per side: key -> (join value, doc); join value -> keys
        self._docs: tuple[dict[str, tuple[Any, Any]], ...] = ({}, {})
        self._by_value: tuple[dict[Any, set[str]], ...] = ({}, {})
        self._rows: dict[Any, set[str]] = {}  # join value -> row ids in the table
        self._paths = (join.left_path.getter, join.right_path.getter)
        self.subscriptions = [
            left.sow_and_subscribe(lambda m: self._on_message(0, m), oof=True),
            right.sow_and_subscribe(lambda m: self._on_message(1, m), oof=True),
        ]

    @property
    def name(self) -> str:
        return self.view.spec.name

    def _on_message(self, side: int, msg: Message) -> None:
        with self._lock:
            command = msg.command
            if command == "group_begin":
                self._loading += 1
                return
            if command == "group_end":
                self._loading -= 1
                if not self._loading and side == 1:  # both sides loaded
                    for group in list(self.table.groups.values()):
                        emit(self.table, self.target, group)
                return
            key = msg.sow_key or ""
            docs, by_value = self._docs[side], self._by_value[side]
            touched: set[Any] = set()
            old = docs.pop(key, None)
            if old is not None:
                by_value[old[0]].discard(key)
                if not by_value[old[0]]:
                    del by_value[old[0]]
                touched.add(old[0])
            if command in ("sow", "publish"):
                value = distinct_value(self._paths[side](msg.doc))
                docs[key] = (value, msg.doc)
                by_value.setdefault(value, set()).add(key)
                touched.add(value)
            groups = self._rebuild(touched)
            if not self._loading:
                seen: set[int] = set()
                for group in groups:
                    if id(group) not in seen:
                        seen.add(id(group))
                        emit(self.table, self.target, group)

    def _rows_of(self, value: Any) -> dict[str, dict[str, Any]]:
        """The joined rows of one join value, by row id (unique across values)."""
        if value is None:  # NULL joins nothing (outer sides keep their records below)
            lefts: set[str] = set()
            rights: set[str] = set()
        else:
            lefts = self._by_value[0].get(value, set())
            rights = self._by_value[1].get(value, set())
        pairs: list[tuple[str | None, str | None]] = [(lk, rk) for lk in lefts for rk in rights]
        if self.join.outer == "left" and not rights:
            pairs += [(lk, None) for lk in self._by_value[0].get(value, ())]
        if self.join.outer == "right" and not lefts:
            pairs += [(None, rk) for rk in self._by_value[1].get(value, ())]
        rows: dict[str, dict[str, Any]] = {}
        for lk, rk in pairs:
            doc: dict[str, Any] = {}
            if lk is not None:
                doc[self.join.left] = self._docs[0][lk][1]
            if rk is not None:
                doc[self.join.right] = self._docs[1][rk][1]
            if self._filter is None or self._filter.matches(doc) is True:
                rows[f"{lk or ''}{_SEP}{rk or ''}{_SEP}{value!r}"] = doc
        return rows

    def _rebuild(self, values: set[Any]) -> list[Group]:
        """Recompute the rows of the join values a change touched; returns the groups touched.

        Every new and changed row goes in before any row that left comes out, so a
        group that keeps a row is never emptied (and deleted) on the way.
        """
        fresh = {value: self._rows_of(value) for value in values}
        groups: list[Group] = []
        for rows in fresh.values():
            for row, doc in rows.items():
                groups.extend(self.table.put(row, doc))
        for value, rows in fresh.items():
            for row in self._rows.pop(value, set()) - rows.keys():
                group = self.table.remove(row)
                if group is not None:
                    groups.append(group)
            if rows:
                self._rows[value] = set(rows)
        return groups

    def close(self) -> None:
        """Stop following both topics."""
        for sub in self.subscriptions:
            sub.unsubscribe()
