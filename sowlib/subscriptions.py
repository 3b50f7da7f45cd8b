"""In-process subscriptions: live delivery, delta subscriptions and out-of-focus (OOF) notices.

The Topic owns one :class:`SubscriptionManager` and calls :meth:`~SubscriptionManager.on_change`
for every committed change. Imports only ``errors``, ``paths`` and ``document``; never
``storage``, ``codecs``, ``expr`` or ``topic`` (records and filters are duck-typed).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs

from sowlib.document import MISSING, Element
from sowlib.errors import ArgumentError, UnsupportedFilterError
from sowlib.paths import FieldPath, parse_path

__all__ = [
    "CHANGE_KINDS",
    "FilterLike",
    "Message",
    "RecordLike",
    "Subscription",
    "SubscriptionManager",
    "changed_fields",
]

logger = logging.getLogger("sowlib.subscriptions")

#: The ``kind`` values :meth:`SubscriptionManager.on_change` accepts.
CHANGE_KINDS = ("publish", "delete", "expire")
_OOF_REASON = {"delete": "deleted", "expire": "expired"}
_ids = itertools.count(1)


class RecordLike(Protocol):
    """What the manager reads from a stored record (``sowlib.query.Record`` fits)."""

    @property
    def sow_key(self) -> str: ...
    @property
    def data(self) -> bytes: ...
    @property
    def seq(self) -> int: ...
    @property
    def timestamp(self) -> float: ...
    @property
    def expiration(self) -> float | None: ...
    @property
    def doc(self) -> Any: ...


class FilterLike(Protocol):
    """What the manager needs from a compiled filter (``sowlib.expr.Filter`` fits)."""

    @property
    def deterministic(self) -> bool: ...

    def matches(self, doc: Any, ctx: Any = None) -> bool: ...


@attrs.frozen
class Message:
    """One delivery to a subscriber callback.

    ``command`` is ``"sow"`` (initial query result), ``"publish"`` (a change),
    ``"oof"`` (the record left the subscription's focus; ``reason`` says why),
    or the ``"group_begin"``/``"group_end"`` markers around the initial results.
    """

    command: str
    topic: str
    sow_key: str | None = None
    data: bytes = b""
    seq: int = 0
    timestamp: float = 0.0
    expiration: float | None = None
    correlation_id: bytes = b""
    reason: str | None = None
    doc: Any = attrs.field(default=None, eq=False, repr=False)
    is_delta: bool = False


def _correlation(record: RecordLike) -> bytes:
    value = getattr(record, "correlation_id", b"")
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _message(command: str, topic: str, record: RecordLike, reason: str | None = None) -> Message:
    data = record.data
    corr = getattr(record, "correlation_id", b"")
    # positional: the attrs initializer binds keywords at several times the cost
    return Message(
        command,
        topic,
        record.sow_key,
        data if type(data) is bytes else bytes(data),
        record.seq,
        record.timestamp,
        record.expiration,
        corr if type(corr) is bytes else _correlation(record),
        reason,
        record.doc,
    )


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps types apart (``1``, ``1.0`` and ``True`` are different values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if isinstance(a, Element) and a.text != b.text:
            return False
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def changed_fields(old: Any, new: Any) -> Any:
    """The part of ``new`` that differs from ``old``, or ``MISSING`` when nothing changed.

    Objects are compared field by field, recursively; arrays, scalars and XML
    elements with text are compared whole (a changed one is returned whole).
    A field only present in ``old`` cannot be expressed as a delta and is
    ignored (a delta never removes a field, spec §12.1). O(size of the documents).

    Example:
        >>> changed_fields({"id": 1, "a": {"x": 1, "y": 2}}, {"id": 1, "a": {"x": 5, "y": 2}})
        {'a': {'x': 5}}
    """
    if type(old) is dict and type(new) is dict:
        out: dict[str, Any] = {}
        for name, value in new.items():
            if name not in old:
                out[name] = value
                continue
            part = changed_fields(old[name], value)
            if part is not MISSING:
                out[name] = part
        return out if out else MISSING
    return MISSING if _same(old, new) else new


def _put(target: dict[str, Any], path: FieldPath, value: Any) -> None:
    cur = target
    names = path.names
    for name in names[:-1]:
        nxt = cur.get(name)
        if type(nxt) is not dict:
            nxt = {}
            cur[name] = nxt
        cur = nxt
    cur[names[-1]] = value


def _deep_update(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for name, value in extra.items():
        here = target.get(name)
        if type(here) is dict and type(value) is dict:
            _deep_update(here, value)
        else:
            target[name] = value


@attrs.define(eq=False)
class Subscription:
    """A registered callback; returned by ``Topic.subscribe`` and ``sow_and_subscribe``.

    Use it as a context manager, or call :meth:`unsubscribe` (idempotent).

    A subscriber never fails a publisher (but one with ``raises`` set, which a
    transaction log uses to acknowledge a change): an exception from the callback, or
    from evaluating the filter on a published record (a
    :class:`~sowlib.errors.RegexTimeoutError`, any error), is counted in
    ``errors``, kept in ``error`` (the latest one), logged, and passed to
    ``on_error(exc, message)`` when given; ``publish`` returns normally. A
    record whose filter evaluation failed is counted in ``filter_errors`` and is
    neither delivered nor taken out of focus (``message`` is that record).

    Example:
        >>> with topic.subscribe(print, "/price > 10") as sub:  # doctest: +SKIP
        ...     topic.publish({"id": 1, "price": 11})
    """

    id: str
    topic: str
    callback: Callable[[Message], object] = attrs.field(repr=False)
    filter: FilterLike | None = attrs.field(repr=False)
    oof: bool = False
    delta: bool = False
    no_empties: bool = False
    on_error: Callable[[BaseException, Message], object] | None = attrs.field(
        default=None, repr=False
    )
    errors: int = 0
    delivered: int = 0
    filter_errors: int = 0
    raises: bool = False
    """Set by a transaction log: an exception from the callback is counted as above and
    then raised to the publisher, whose change is not acknowledged."""
    error: Exception | None = attrs.field(default=None, repr=False)
    _in_focus: set[str] = attrs.field(factory=set, repr=False)
    _manager: SubscriptionManager | None = attrs.field(default=None, repr=False)

    @property
    def active(self) -> bool:
        """False once :meth:`unsubscribe` has run."""
        return self._manager is not None

    @property
    def tracks_focus(self) -> bool:
        """Whether the subscription remembers which records it has received."""
        return self.oof or self.delta

    def in_focus(self, sow_key: str) -> bool:
        """Whether the record was delivered and has not gone out of focus since; O(1)."""
        return sow_key in self._in_focus

    def unsubscribe(self) -> None:
        """Stop deliveries; calling it again does nothing."""
        manager, self._manager = self._manager, None
        if manager is not None:
            manager._remove(self)
        self._in_focus.clear()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unsubscribe()

    def _matches(self, record: RecordLike, context: Callable[[RecordLike], Any] | None) -> bool:
        if self.filter is None:
            return True
        ctx = context(record) if context is not None else None
        return self.filter.matches(record.doc, ctx) is True

    def _deliver(self, message: Message) -> None:
        if self._manager is None:
            return  # unsubscribed by an earlier callback of this same change
        try:
            self.callback(message)
            self.delivered += 1
        except Exception as exc:  # a subscriber must never break the publisher...
            self._failed(exc, message, "callback raised")
            if self.raises:  # ...unless it is the journal that acknowledges the change
                raise

    def _failed(self, exc: Exception, message: Message, what: str) -> None:
        """Record ``exc`` on the subscription and hand it to ``on_error``; never raises."""
        self.errors += 1
        self.error = exc
        logger.error(
            "subscription %s on topic %r: %s on %s for key %r",
            self.id,
            self.topic,
            what,
            message.command,
            message.sow_key,
            exc_info=exc,
        )
        if self.on_error is not None:
            try:
                self.on_error(exc, message)
            except Exception:
                logger.exception("subscription %s: on_error handler raised", self.id)


class SubscriptionManager:
    """All subscriptions of one topic; notified by the Topic inside its write lock.

    Args:
        topic: the topic name carried by every :class:`Message`.
        message_type: the topic's message type (for the delta fallback decision).
        encode: renders a document to bytes (the topic codec's ``encode``); used
            for delta-subscription updates.
        keys: the topic's key fields, always included in delta updates.
        context: builds the filter's evaluation context from a record (for
            functions such as ``LAST_UPDATED()``); None passes no context.
    """

    def __init__(
        self,
        topic: str,
        message_type: str,
        encode: Callable[[Any], bytes],
        *,
        keys: Sequence[str] = (),
        context: Callable[[RecordLike], Any] | None = None,
    ) -> None:
        self.topic = topic
        self.message_type = message_type
        self.encode = encode
        self.keys = tuple(parse_path(k) for k in keys)
        self.context = context
        self._lock = threading.Lock()
        # Copy-on-write: on_change iterates a snapshot, add/remove swap the tuple.
        self._subs: tuple[Subscription, ...] = ()
        # A callback that publishes to this topic calls on_change again from inside a
        # delivery: that change waits here until every subscriber has had the current
        # one, so each subscriber sees the changes in the order they were committed.
        self._delivering: int | None = None  # the thread delivering, if any
        self._queued: deque[tuple[str, str, RecordLike | None, RecordLike | None]] = deque()

    @property
    def active(self) -> bool:
        """Whether any subscription is registered (the Topic skips all work when not)."""
        return bool(self._subs)

    def __len__(self) -> int:
        return len(self._subs)

    def subscriptions(self) -> tuple[Subscription, ...]:
        """The registered subscriptions, oldest first."""
        return self._subs

    def add(
        self,
        callback: Callable[[Message], object],
        flt: FilterLike | None,
        *,
        oof: bool = False,
        delta: bool = False,
        no_empties: bool = False,
        initial: Sequence[RecordLike] | None = None,
        on_error: Callable[[BaseException, Message], object] | None = None,
    ) -> Subscription:
        """Register ``callback``; with ``initial``, first deliver the query results.

        ``initial`` (sow_and_subscribe) is delivered as ``group_begin``, one
        ``sow`` message per record, ``group_end``; those records count as
        received for OOF. Call it while holding the topic's lock so that no
        change falls between the query and the subscription.

        Raises:
            UnsupportedFilterError: ``oof`` with a non-deterministic filter (spec §5).
        """
        if oof and flt is not None and not flt.deterministic:
            to_text = getattr(flt, "to_text", None)
            raise UnsupportedFilterError(
                construct="a non-deterministic function",
                backend="oof subscription",
                expression=to_text() if callable(to_text) else "",
                hint="OOF needs a filter whose result depends only on the record",
            )
        sub = Subscription(
            id=str(next(_ids)),
            topic=self.topic,
            callback=callback,
            filter=flt,
            oof=oof,
            delta=delta,
            no_empties=no_empties,
            on_error=on_error,
            manager=self,
        )
        with self._lock:
            self._subs = (*self._subs, sub)
        if initial is not None:
            sub._deliver(Message("group_begin", self.topic))
            for record in initial:
                if sub.tracks_focus:
                    sub._in_focus.add(record.sow_key)
                sub._deliver(_message("sow", self.topic, record))
            sub._deliver(Message("group_end", self.topic))
        return sub

    def get(self, sub_id: str) -> Subscription | None:
        """The active subscription with that id, or None; O(subscriptions)."""
        return next((s for s in self._subs if s.id == sub_id), None)

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            self._subs = tuple(s for s in self._subs if s is not sub)

    def close(self) -> None:
        """Unsubscribe everyone (the topic is closing)."""
        for sub in self._subs:
            sub.unsubscribe()

    def on_change(
        self,
        kind: str,
        key: str,
        old: RecordLike | None,
        new: RecordLike | None,
        delta_doc: Any = None,
    ) -> None:
        """Deliver one committed change to every subscription, in registration order.

        Args:
            kind: ``"publish"`` (insert, update or delta publish; ``new`` is the
                stored, merged record), ``"delete"`` or ``"expire"`` (``new`` None).
            key: the record's SOW key.
            old: the record before the change, or None for an insert.
            new: the record after the change.
            delta_doc: the delta publish's own document (informational; delta
                subscribers get the fields that differ between ``old`` and ``new``).
        Raises:
            ArgumentError: unknown ``kind`` or a publish without ``new``.
        O(subscriptions x filter cost), plus the document diff for delta subscribers.
        A change a callback causes (it publishes to this topic) is delivered after the
        current change has reached every subscription.
        """
        if kind not in CHANGE_KINDS:
            raise ArgumentError("kind", kind, f"one of {', '.join(CHANGE_KINDS)}")
        if kind == "publish" and new is None:
            raise ArgumentError("new", new, "a publish needs the new record")
        me = threading.get_ident()
        if self._delivering == me:  # re-entrant: a callback published; deliver it next
            self._queued.append((kind, key, old, new))
            return
        self._delivering = me
        try:
            self._fan_out(kind, key, old, new)
            while self._queued:
                self._fan_out(*self._queued.popleft())
        finally:
            self._delivering = None
            self._queued.clear()

    def on_publishes(self, changes: Sequence[tuple[str, RecordLike | None, RecordLike]]) -> None:
        """:meth:`on_change` of each ``(key, old, new)`` publish, in order, in one call.

        Where no subscription has a filter or takes deltas (a derived topic's usual
        subscribers), each change's one message goes to every subscription without the
        per-change dispatch; otherwise each change is :meth:`on_change`'d.
        """
        for sub in self._subs:
            if sub.filter is not None or sub.delta:
                for key, old, new in changes:
                    self.on_change("publish", key, old, new)
                return
        me = threading.get_ident()
        if self._delivering == me:  # re-entrant: delivered after the current change
            self._queued.extend([("publish", key, old, new) for key, old, new in changes])
            return
        self._delivering = me
        topic = self.topic
        queued = self._queued
        try:
            for key, _old, new in changes:
                data = new.data
                corr = getattr(new, "correlation_id", b"")
                message = Message(
                    "publish",
                    topic,
                    new.sow_key,
                    data if type(data) is bytes else bytes(data),
                    new.seq,
                    new.timestamp,
                    new.expiration,
                    corr if type(corr) is bytes else _correlation(new),
                    None,
                    new.doc,
                )
                for sub in self._subs:
                    if sub.filter is not None or sub.delta:  # subscribed by a callback
                        self._publish(sub, key, _old, new)
                        continue
                    if sub.oof:
                        sub._in_focus.add(key)
                    if sub._manager is None:
                        continue  # unsubscribed by an earlier callback of this change
                    try:  # _deliver, in line
                        sub.callback(message)
                        sub.delivered += 1
                    except Exception as exc:
                        sub._failed(exc, message, "callback raised")
                        if sub.raises:
                            raise
                while queued:
                    self._fan_out(*queued.popleft())
        finally:
            self._delivering = None
            queued.clear()

    def _fan_out(self, kind: str, key: str, old: RecordLike | None, new: RecordLike | None) -> None:
        """One change to every subscription, in registration order."""
        for sub in self._subs:
            if kind == "publish":
                assert new is not None
                self._publish(sub, key, old, new)
            elif old is not None and key in sub._in_focus:
                sub._in_focus.discard(key)
                if sub.oof:
                    sub._deliver(_message("oof", self.topic, old, _OOF_REASON[kind]))

    def _publish(
        self, sub: Subscription, key: str, old: RecordLike | None, new: RecordLike
    ) -> None:
        try:
            matched = sub._matches(new, self.context)
        except Exception as exc:  # the subscriber's filter, never the publisher's error
            sub.filter_errors += 1
            sub._failed(exc, _message("publish", self.topic, new), "filter raised")
            return
        if matched:
            was_in_focus = key in sub._in_focus
            if sub.tracks_focus:
                sub._in_focus.add(key)
            # A record that matched before this change is one the subscriber knows of
            # (AMPS: a delta against the stored record), even if it predates the subscription.
            if sub.delta and old is not None and (was_in_focus or self._matched(sub, old)):
                message = self._delta_message(sub, old, new)
                if message is not None:
                    sub._deliver(message)
                return
            sub._deliver(_message("publish", self.topic, new))
        elif key in sub._in_focus:
            sub._in_focus.discard(key)
            if sub.oof:
                sub._deliver(_message("oof", self.topic, new, "match"))

    def _matched(self, sub: Subscription, old: RecordLike) -> bool:
        try:
            return sub._matches(old, self.context)
        except Exception:  # the old record is only consulted; its filter error is not new
            return False

    def _delta_message(self, sub: Subscription, old: RecordLike, new: RecordLike) -> Message | None:
        """Key fields plus changed fields; None when suppressed by ``no_empties``."""
        if not isinstance(new.doc, dict) or not isinstance(old.doc, dict):
            return _message("publish", self.topic, new)  # no delta for this message type
        changes = changed_fields(old.doc, new.doc)
        if changes is MISSING and sub.no_empties:
            return None
        body: dict[str, Any] = {}
        for path in self.keys:
            value = path.resolve(new.doc)
            if value is not MISSING and all(s.index is None for s in path.steps):
                _put(body, path, value)
        if changes is not MISSING:
            _deep_update(body, changes)
        try:
            data = self.encode(body)
        except Exception:  # a type that cannot render a partial document: send it whole
            logger.debug("topic %r: delta encode failed, sending the full record", self.topic)
            return _message("publish", self.topic, new)
        return attrs.evolve(
            _message("publish", self.topic, new), data=data, doc=body, is_delta=True
        )
