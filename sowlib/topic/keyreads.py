"""The by-key reads of a topic: ``get``, ``lookup`` (by values or by field names),
``lookup_many``, ``topic[values]``, and the guards every topic method runs first.

:class:`~sowlib.topic.facade.Topic` inherits :class:`KeyReads`. Imports ``errors``,
``config``, ``index.types``, ``paths``, ``record`` and the sibling ``parts``/``slots``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MethodType
from typing import Any

from xxhash import xxh64_intdigest

from sowlib.config import TopicConfig
from sowlib.errors import ArgumentError, ReadOnlyError, StoreClosedError
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.record import Record
from sowlib.storage.native import optional_module
from sowlib.topic.follow import expire_announced
from sowlib.topic.parts import Parts, key_of_values

__all__ = ["KeyReads", "field_names"]

_MODULE = optional_module("sowlib.topic.keytable")
#: The C front a topic binds as its ``lookup`` (``reader.c``), or None.
_BY_KEY: Callable[[Callable[..., Any], Callable[[Any], Any]], Any] | None = (
    None if _MODULE is None else _MODULE.ByKey
)


def field_names(key_fields: Sequence[FieldPath]) -> dict[str, int]:
    """The keyword names of each key field, to its position in key order.

    A field ``/book`` is ``book``; a nested ``/leg/venue`` is ``leg.venue`` (its
    ``to_pandas`` column) or ``leg/venue``, and ``venue`` too when no other key
    field ends with that name.
    """
    names: dict[str, int] = {}
    last: dict[str, list[int]] = {}
    for at, field in enumerate(key_fields):
        steps = field.names
        names[".".join(steps)] = at
        names["/".join(steps)] = at
        last.setdefault(steps[-1], []).append(at)
    for name, where in last.items():
        if len(where) == 1:
            names.setdefault(name, where[0])
    return names


class KeyReads:
    """Reads of one record by its key; O(1) each. Mixed into the ``Topic``."""

    # Set by the Topic's constructor.
    name: str
    config: TopicConfig
    key_fields: tuple[FieldPath, ...]
    _p: Parts
    _lock: threading.RLock
    _closed: bool
    _readonly: bool
    _clock: Callable[[], float]
    _int_key: bytes | None
    _read_key: Callable[[Any], Any] | None
    _read_sow_key: Callable[[Any], Any] | None
    _materialize: Callable[[], None] | None  # sowlib.topic.following.Following

    # ------------------------------------------------------------------ guards

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"topic {self.name!r}")

    def _check_writable(self, operation: str) -> None:
        self._check_open()
        if self._readonly:
            raise ReadOnlyError(f"topic {self.name!r}", operation)

    def _tick(self) -> None:
        """Process due expirations (lazily, on every operation; spec §10), after bringing
        a lazily written topic up to date."""
        if self._materialize is not None:
            self._materialize()
        now = self._clock()
        if self._p.expiry.due(now):
            self._expire(now)

    def _expire(self, now: float) -> int:
        """Expire what is due; a followed reader announces each to its subscribers."""
        if self._readonly and self._p.subs.active:
            return expire_announced(self._p, now)
        return self._p.writer.process_expirations(now, self._readonly)

    def _point_fronts(self) -> None:
        """Bind the C front of ``lookup`` in the instance (once, where the C module is
        built) and point it at the C reader, or at none while the topic is closed or
        written lazily (the Python method then decides).

        The front is the by-key read with no Python frame between the caller and the C
        reader: one positional value goes to the reader, and where it hands over to the
        Python path after it; any other call to the Python method (the reference), as it
        was made. It saves about 20% of a ``lookup``; ``get``, where a front saved about
        12%, stays a method (the bar for a fast path is 20%). Called under the lock by the
        constructor, a reopen, ``close`` and ``defer_writes``.
        """
        if _BY_KEY is None:
            return
        fronts = self.__dict__
        if "lookup" not in fronts:
            fronts["lookup"] = _BY_KEY(MethodType(KeyReads.lookup, self), self._lookup_value)
        live = not self._closed and self._materialize is None
        fronts["lookup"].point(self._read_key if live else None)

    def _key_of(self, sow_key: object) -> Key | None:
        return self._p.keys.key_of(sow_key) if type(sow_key) is str else None

    # ------------------------------------------------------------------ reads by key

    def get(self, sow_key: str) -> Record | None:
        """The record stored under ``sow_key``, or None; O(1), a dict lookup when cached."""
        read = self._read_sow_key if self._materialize is None else None
        rec = NotImplemented if read is None else read(sow_key)  # in C
        if rec is not NotImplemented:
            return rec  # type: ignore[no-any-return]
        key = self._key_of(sow_key)
        return None if key is None else self._get(key)

    def _get(self, key: Key) -> Record | None:
        # Lock-free when cached: writers drop a key from the cache under the lock before
        # changing it. The clock is asked only when an expiration is pending.
        p = self._p
        pending = self._materialize is not None or (p.expiry.heap and p.expiry.due(self._clock()))
        if not pending and (cached := p.cache.get(key)) is not None and not self._closed:
            return cached
        with self._lock:
            if self._closed or pending:  # the checks inline: this is the by-key read path
                self._check_open()
                self._tick()
            return p.views.read(key)

    def lookup(self, *key_values: Any, **fields: Any) -> Record | None:
        """The record whose key fields hold these values, or None; O(1).

        Give the values in key order (``lookup("B3", "S042")``) or by field name
        (``lookup(book="B3", symbol="S042")``; a nested ``/leg/venue`` is
        ``**{"leg.venue": v}``, or ``venue=`` when no other key field ends so).
        Hashed directly as the content key generator does (no message is built).

        Example:
            >>> orders.lookup(1042)  # doctest: +SKIP
        Raises:
            UnsupportedOperationError: the topic's keys are not content keys.
            ArgumentError: not one value per key field, an unknown field name, or
                values given both ways.
        """
        if fields:
            key_values = self._values_of_fields(key_values, fields)
        # the steps below in one call (not for a lazily written topic: see _get)
        read = self._read_key if len(key_values) == 1 and self._materialize is None else None
        rec = NotImplemented if read is None else read(key_values[0])
        if rec is not NotImplemented:
            return rec  # type: ignore[no-any-return]
        return self._lookup_values(key_values)

    def _lookup_value(self, value: Any) -> Record | None:
        """:meth:`lookup` of one value, the Python path (after the C reader handed over)."""
        return self._lookup_values((value,))

    def _lookup_values(self, key_values: tuple[Any, ...]) -> Record | None:
        """:meth:`lookup`'s Python path: the key hashed here, then :meth:`_get`."""
        int_key = self._int_key
        if int_key is not None and len(key_values) == 1 and type(key_values[0]) is int:
            return self._get(xxh64_intdigest(int_key % key_values[0]))
        key = key_of_values(self._p, self.name, key_values)
        return None if key is None else self._get(key)

    def _values_of_fields(
        self, key_values: tuple[Any, ...], fields: Mapping[str, Any]
    ) -> tuple[Any, ...]:
        if key_values:
            raise ArgumentError(
                "lookup", key_values, "give the key values in key order or by field name, not both"
            )
        if self._p.content is None:
            key_of_values(self._p, self.name, key_values)  # raises: no content keys
        names = field_names(self.key_fields)
        values: dict[int, Any] = {}
        for name, value in fields.items():
            at = names.get(name)
            if at is None:
                known = ", ".join(".".join(f.names) for f in self.key_fields) or "none"
                raise ArgumentError(
                    "lookup", name, f"not a key field of topic {self.name!r} (key fields: {known})"
                )
            if at in values:
                raise ArgumentError("lookup", name, "names a key field already given")
            values[at] = value
        missing = [".".join(f.names) for at, f in enumerate(self.key_fields) if at not in values]
        if missing:
            raise ArgumentError("lookup", sorted(fields), f"no value for key field {missing[0]!r}")
        return tuple(values[at] for at in range(len(self.key_fields)))

    def __getitem__(self, key_values: Any) -> Record:
        """``topic[1042]``, ``positions["BOOK1", "MSFT"]``: :meth:`lookup` by key values.

        A tuple is the values of a compound key in key order.

        Raises:
            KeyError: no record holds these key values (like a dict).
            UnsupportedOperationError: the topic's keys are not content keys.
            ArgumentError: not one value per key field.
        """
        values = key_values if type(key_values) is tuple else (key_values,)
        rec = self.lookup(*values)
        if rec is None:
            raise KeyError(key_values)
        return rec

    def key_for_values(self, values: Sequence[Any]) -> str | None:
        """The SOW key of a message with key fields ``values``; None: a NULL, no content keys."""
        content = self._p.content
        return None if content is None else content.key_for_values(values)

    def lookup_many(self, rows: Iterable[Sequence[Any]]) -> list[Record | None]:
        """:meth:`lookup` of each row of key values (a tuple or list), in order.

        Raises:
            ArgumentError: ``rows`` or a row is not a sequence of key values.
        """
        if isinstance(rows, str | bytes) or not isinstance(rows, Iterable):
            raise ArgumentError("rows", rows, "an iterable of key-value tuples")
        rows = list(rows)
        for row in rows:
            if not isinstance(row, tuple | list):
                raise ArgumentError("rows", row, "a tuple of key values per row")
        return [self.lookup(*row) for row in rows]
