"""Aggregated queries and subscriptions: a view's engine over one query, not kept as a topic.

Imports the engine and ``subscriptions``; topics are duck-typed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sowlib.errors import ConfigError, QueryOptionError
from sowlib.subscriptions import Message
from sowlib.views.definition import CompiledView, ViewSpec, compile_view
from sowlib.views.engine import GroupTable
from sowlib.views.maintain import ViewMaintainer

__all__ = ["AggregateSubscription", "aggregate_records", "compile_query"]


def compile_query(
    topic: str, projection: Iterable[str] | str, grouping: Iterable[str] | str, filter: Any
) -> CompiledView:
    """Compile the ``projection``/``grouping`` options of a query over ``topic``.

    Raises:
        QueryOptionError: a bad projection or grouping (naming the entry).
    """
    text = filter if isinstance(filter, str) or filter is None else filter.text
    try:
        return compile_view(ViewSpec.make(topic, topic, projection, grouping, text))
    except ConfigError as exc:
        option = "grouping" if exc.where.startswith("Grouping") else "projection"
        raise QueryOptionError(option, exc.where, exc.reason) from None


def aggregate_records(view: CompiledView, records: Iterable[Any]) -> list[dict[str, Any]]:
    """One message per group of ``records`` (each with ``sow_key`` and ``doc``), by first
    appearance of the group."""
    table = GroupTable(view)
    table.load((r.sow_key, r.doc) for r in records)
    return [table.render(group) for group in table.groups.values()]


class _Deliver:
    """A view's target that hands each group change to a callback as a :class:`Message`."""

    def __init__(self, topic: str, callback: Callable[[Message], object]) -> None:
        self.topic = topic
        self.callback = callback
        self.command = "sow"  # while the initial groups are delivered

    def publish(self, doc: dict[str, Any], *, sow_key: str) -> None:
        data = json.dumps(doc, separators=(",", ":")).encode()
        self.callback(Message(self.command, self.topic, sow_key, data, doc=doc))

    def sow_delete_by_keys(self, keys: str | Sequence[str]) -> None:
        for key in [keys] if isinstance(keys, str) else keys:
            self.callback(Message("oof", self.topic, key, reason="deleted"))


class AggregateSubscription:
    """A live aggregated query: the groups now (``sow`` messages between ``group_begin``
    and ``group_end``), then every change of a group's message (``publish``) and the
    OOF of a group whose last record left. Messages are JSON.

    Use it as a context manager or call :meth:`unsubscribe`.
    """

    def __init__(
        self, view: CompiledView, source: Any, callback: Callable[[Message], object]
    ) -> None:
        self.topic = source.name
        deliver = _Deliver(self.topic, callback)
        deliver.callback(Message("group_begin", self.topic))
        self._maintainer = ViewMaintainer(view, source, deliver)
        deliver.callback(Message("group_end", self.topic))
        deliver.command = "publish"

    @property
    def active(self) -> bool:
        """False once unsubscribed."""
        return bool(self._maintainer.subscription.active)

    def unsubscribe(self) -> None:
        """Stop deliveries; idempotent."""
        self._maintainer.close()

    def __enter__(self) -> AggregateSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unsubscribe()
