"""Keeping derived topics current: a view's groups and a conflated topic's pending changes.

Each maintainer subscribes (with OOF) to its underlying topic and writes into its
own transient topic, so queries, indexes and subscriptions of the derived topic are
those of any topic. Topics are duck-typed (this package sits below ``sowlib.topic``).
"""

from __future__ import annotations

import threading
from operator import methodcaller
from typing import Any

from sowlib.subscriptions import Message
from sowlib.views.definition import CompiledView
from sowlib.views.engine import Group, GroupTable

__all__ = ["ConflationMaintainer", "ViewMaintainer", "change_of", "emit", "write_change"]

_value = methodcaller("value")


_NEVER_NAN = frozenset({str, int, bool, type(None)})


def _has_nan(a: Any) -> bool:
    """Whether a value not equal to itself is in ``a`` (the common types checked inline)."""
    if isinstance(a, dict):
        values: Any = a.values()
    elif isinstance(a, list):
        values = a
    else:
        return bool(a != a)
    for v in values:
        t = type(v)
        if t is float:
            if v != v:
                return True
        elif t not in _NEVER_NAN and _has_nan(v):
            return True
    return False


def _same_typed(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_typed(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_typed(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)


def change_of(table: GroupTable, group: Group) -> tuple[str, Any] | None:
    """What writing ``group`` into the view's topic takes, noted as sent: ``(sow_key,
    message)`` when its message changed, ``(sow_key, None)`` (a delete) when its last
    member left, None when there is nothing to write."""
    members = group.members
    if not members:
        if group.rendered is not None:
            group.rendered = None
            return group.sow_key, None
        return None
    out = table.view.render(list(map(_value, group.states)), next(reversed(members.values())))
    prev = group.rendered
    # equal documents with equal value types (a SUM going from 2 to 2.0 is a change);
    # unequal ones are a change unless a NaN (never equal to itself) hides an equal one
    if prev is not None and (
        _same_typed(out, prev) if out == prev else _has_nan(out) and _same_typed(out, prev)
    ):
        return None
    group.rendered = out
    return group.sow_key, out


def write_change(target: Any, change: tuple[str, Any]) -> None:
    """Write one :func:`change_of` into the view's topic (the reference: one publish or
    one delete)."""
    sow_key, doc = change
    if doc is None:
        target.sow_delete_by_keys(sow_key)
    else:
        target.publish(doc, sow_key=sow_key)


def emit(table: GroupTable, target: Any, group: Group) -> None:
    """Write ``group``'s change into the view's topic: its new message when it changed, a
    delete when its last member left."""
    change = change_of(table, group)
    if change is not None:
        write_change(target, change)


class ViewMaintainer:
    """One view: the underlying topic's changes, aggregated into the view's topic.

    A group's record is published only when its message changes, and deleted (its
    subscribers get the OOF) when its last member leaves.
    """

    def __init__(self, view: CompiledView, source: Any, target: Any) -> None:
        self.view = view
        self.source = source
        self.target = target
        self.table = GroupTable(view)
        self._loading = False
        self.subscription = source.sow_and_subscribe(self._on_message, view.spec.filter, oof=True)

    @property
    def name(self) -> str:
        return self.view.spec.name

    def _on_message(self, msg: Message) -> None:
        command = msg.command
        if command == "group_begin":
            self._loading = True  # the initial records: publish each group once, at the end
            return
        if command == "group_end":
            self._loading = False
            for each in list(self.table.groups.values()):
                self._emit(each)
            return
        if command in ("sow", "publish"):
            touched = self.table.put(msg.sow_key or "", msg.doc)
        elif command == "oof":
            left = self.table.remove(msg.sow_key or "")
            touched = [] if left is None else [left]
        else:
            return
        if not self._loading:
            for group in touched:
                self._emit(group)

    def _emit(self, group: Group) -> None:
        emit(self.table, self.target, group)

    def close(self) -> None:
        """Stop following the underlying topic."""
        self.subscription.unsubscribe()


class ConflationMaintainer:
    """One conflated topic: the underlying topic's latest change per key, applied each interval.

    Between two intervals only the latest change of a key is kept: several updates
    become one publish, an update then a delete one delete, a delete then a publish
    one publish. An expiration of the underlying record is applied as a delete.
    """

    def __init__(self, name: str, source: Any, target: Any, filter: str | None) -> None:
        self.name = name
        self.source = source
        self.target = target
        self._pending: dict[str, bytes | None] = {}  # key -> data, None: delete
        self._lock = threading.Lock()
        self._loading = False
        self.flushes = 0
        self.subscription = source.sow_and_subscribe(self._on_message, filter, oof=True)

    def _on_message(self, msg: Message) -> None:
        command = msg.command
        if command == "group_begin":
            self._loading = True
        elif command == "group_end":
            self._loading = False
        elif command == "sow" and self._loading:  # the current state: copied at once
            self.target.publish(msg.data, sow_key=msg.sow_key)
        elif command in ("publish", "oof") and msg.sow_key is not None:
            with self._lock:
                self._pending[msg.sow_key] = msg.data if command == "publish" else None

    @property
    def pending(self) -> int:
        """How many keys have a change waiting for the next interval."""
        return len(self._pending)

    def flush(self, now: float | None = None) -> int:
        """Apply the pending changes (the interval elapsed); returns how many."""
        with self._lock:
            pending, self._pending = self._pending, {}
        deletes = [key for key, data in pending.items() if data is None]
        for key, data in pending.items():
            if data is not None:
                self.target.publish(data, sow_key=key)
        if deletes:
            self.target.sow_delete_by_keys(deletes)
        self.flushes += 1
        return len(pending)

    def close(self) -> None:
        """Stop following the underlying topic (pending changes are dropped)."""
        self.subscription.unsubscribe()
