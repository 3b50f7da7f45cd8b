"""``Record``: what a query, ``get`` and history return for one stored message.

Imports nothing from sowlib: every layer above storage may use it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Record"]


class Record(NamedTuple):
    """One query result, or one stored version of a record (immutable).

    ``expiration`` is absolute epoch seconds (None: never); ``doc`` is the
    decoded document (the raw bytes for binary payloads) and takes no part in
    equality or hashing. A named tuple rather than an attrs class: topics build
    one per published message and per first read, and ``tuple.__new__`` is the
    cheapest immutable object CPython makes.
    """

    sow_key: str
    data: bytes
    seq: int
    timestamp: float
    expiration: float | None
    topic: str
    message_type: str
    correlation_id: bytes = b""
    doc: Any = None

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
