"""``Record``: what a query, ``get`` and history return for one stored message.

Imports nothing from sowlib: every layer above storage may use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["DeferredDoc", "Record", "passing_doc"]


class DeferredDoc:
    """Stands in a Record's ``doc`` field: decode ``data`` on first access.

    One per topic, shared by every Record it builds for ``get`` (reading a record
    by key should not pay for parsing a document the caller may never look at,
    and a shared marker costs no allocation per read). The decoded document is
    kept on the Record itself, so ``rec.doc is rec.doc``.
    """

    __slots__ = ("decode",)

    def __init__(self, decode: Callable[[bytes], Any]) -> None:
        self.decode = decode

    def __repr__(self) -> str:
        return f"DeferredDoc({self.decode!r})"


class _RecordFields(NamedTuple):
    sow_key: str
    data: bytes
    seq: int
    timestamp: float
    expiration: float | None
    topic: str
    message_type: str
    correlation_id: bytes = b""
    doc: Any = None


class Record(_RecordFields):
    """One query result, or one stored version of a record (immutable).

    Fields: ``sow_key``, ``data`` (the stored bytes), ``seq``, ``timestamp``,
    ``expiration`` (absolute epoch seconds, None: never), ``topic``,
    ``message_type``, ``correlation_id`` and ``doc``, the decoded document (the
    raw bytes for binary payloads), which takes no part in equality or hashing
    and is decoded on first access when the record came from ``get``.

    A named tuple rather than an attrs class: topics build one per first read of
    a key, and ``tuple.__new__`` is the cheapest immutable object CPython makes.
    The records a topic reads from its file (queries, ``get``, ``lookup``) are not
    tracked by the cyclic garbage collector, as they hold only atomic values: do not
    store a record inside its own ``doc`` (the cycle would never be freed).
    """

    # No __slots__: an instance may get a __dict__, created only when a deferred
    # document is first decoded, to keep it (the tuple itself is immutable).

    @property
    def doc(self) -> Any:
        """The decoded document (decoded now if it was deferred, then kept)."""
        value = tuple.__getitem__(self, 8)
        if type(value) is not DeferredDoc:
            return value
        kept = self.__dict__
        try:
            return kept["doc"]
        except KeyError:
            # setdefault is atomic: threads decoding at once all get the first result.
            return kept.setdefault("doc", value.decode(tuple.__getitem__(self, 1)))

    def search(self, expression: str) -> Any:
        """The document through a JMESPath ``expression`` (see :mod:`sowlib.projection`).

        Raises:
            QueryOptionError: a bad expression.

        Example:
            >>> rec.search("{id: orderId, venue: leg.venue}")  # doctest: +SKIP
            {'id': 7, 'venue': 'XLON'}
        """
        # imported here: records are built before anything needs jmespath
        from sowlib.projection import search

        return search(expression, self.doc)

    def _asdict(self) -> dict[str, Any]:
        return {**super()._asdict(), "doc": self.doc}

    def __reduce__(self) -> tuple[Any, ...]:
        return (Record, (*self[:8], self.doc))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self[:8] == other[:8]
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self[:8] != other[:8]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self[:8])

    def __repr__(self) -> str:
        return (
            f"Record(sow_key={self.sow_key!r}, data={self.data!r}, seq={self.seq!r},"
            f" timestamp={self.timestamp!r}, expiration={self.expiration!r},"
            f" topic={self.topic!r}, message_type={self.message_type!r},"
            f" correlation_id={self.correlation_id!r})"
        )


def passing_doc(rec: Record) -> Any:
    """``rec.doc`` for a caller about to replace the record (``delta_publish``): a
    deferred document is decoded and not kept on the record, which is never read again
    through this path; a document already decoded is returned as it is."""
    value = tuple.__getitem__(rec, 8)
    if type(value) is not DeferredDoc:
        return value
    kept = rec.__dict__.get("doc", value)
    return value.decode(tuple.__getitem__(rec, 1)) if kept is value else kept
