"""Aggregated queries and subscriptions: a view's engine over one query, not kept as a topic.

Imports the engine and ``subscriptions``; topics are duck-typed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from sowlib.codecs import get_codec
from sowlib.errors import ConfigError, QueryOptionError
from sowlib.query.order import OrderBy
from sowlib.subscriptions import Message
from sowlib.views.definition import CompiledView, ViewSpec, compile_view
from sowlib.views.engine import GroupTable
from sowlib.views.maintain import ViewMaintainer

__all__ = [
    "AggregateRecord",
    "AggregateSubscription",
    "aggregate_records",
    "aggregate_sow",
    "aggregate_subscription",
    "aggregated",
    "grouped_sow",
    "compile_query",
    "split_fields",
]


@attrs.frozen
class AggregateRecord:
    """One group of an aggregated query, shaped like a query's ``Record``."""

    sow_key: str
    data: bytes
    doc: dict[str, Any]
    topic: str
    seq: int = 0
    timestamp: float = 0.0
    expiration: float | None = None
    correlation_id: bytes = b""


def split_fields(text: str) -> list[str]:
    """``"[/a, SUM(/b) AS /c]"`` (an AMPS ``projection=``/``grouping=`` option) -> its
    fields; commas inside parentheses or quotes do not split."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    out, depth, cur, quote = [], 0, "", ""
    for ch in body:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return [f for f in out if f]


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


def aggregate_sow(
    topic: Any,
    filter: Any,
    *,
    projection: Iterable[str] | str,
    grouping: Iterable[str] | str = (),
    order_by: str | None = None,
    top_n: int | None = None,
    skip_n: int | None = None,
    **query: Any,
) -> list[AggregateRecord]:
    """An aggregated ``sow`` of ``topic``: the records matching ``filter`` (and the other
    ``query`` options of ``Topic.sow``, such as ``sow_keys`` or ``bookmark``) grouped and
    aggregated; ``order_by``, ``skip_n`` and ``top_n`` then apply to the groups.

    Raises:
        QueryOptionError: a bad projection, grouping or ordering. FilterError: a bad filter.
    """
    view = compile_query(topic.name, projection, grouping, filter)
    table = GroupTable(view)
    table.load((r.sow_key, r.doc) for r in topic.sow(filter, **query))
    encode = get_codec(topic.message_type).encode
    out = []
    for group in table.groups.values():
        doc = table.render(group)
        out.append(AggregateRecord(group.sow_key, encode(doc), doc, topic.name))
    if order_by is not None:
        order = OrderBy.parse(order_by)
        out.sort(key=lambda r: order.sort_key(r.doc, r.sow_key))
    start = skip_n or 0
    return out[start : None if top_n is None else start + top_n]


def aggregated(topic: Any, options: Mapping[str, Any]) -> Callable[..., list[AggregateRecord]]:
    """``topic.sow`` aggregated by the ``projection``/``grouping`` of parsed AMPS options.

    Raises:
        QueryOptionError: a grouping without a projection.
    """
    if "projection" not in options:
        raise QueryOptionError("grouping", options.get("grouping"), "needs a projection")
    return functools.partial(
        aggregate_sow,
        topic,
        projection=options["projection"],
        grouping=options.get("grouping", ()),
    )


def grouped_sow(topic: Any, filter: Any, options: Mapping[str, Any]) -> list[AggregateRecord]:
    """``topic.sow(filter, **options)`` where ``options`` hold ``projection`` (and
    ``grouping``): the aggregated query of :func:`aggregate_sow`.

    Raises:
        QueryOptionError: a grouping without a projection, a bad projection or grouping.
    """
    rest = {k: v for k, v in options.items() if k not in ("projection", "grouping")}
    return aggregated(topic, options)(filter, **rest)


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


def aggregate_subscription(
    topic: Any, options: Mapping[str, Any], filter: Any, callback: Callable[[Message], object]
) -> AggregateSubscription:
    """An :class:`AggregateSubscription` from the ``projection``/``grouping`` of parsed
    AMPS options.

    Raises:
        QueryOptionError: a grouping without a projection, a bad projection or grouping.
    """
    if "projection" not in options:
        raise QueryOptionError("grouping", options.get("grouping"), "needs a projection")
    view = compile_query(topic.name, options["projection"], options.get("grouping", ()), filter)
    return AggregateSubscription(view, topic, callback)
