"""Values the topic API returns and the small argument parsers it shares.

Imports only ``errors`` and ``query``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from itertools import count
from typing import NamedTuple, overload

import attrs

from sowlib.errors import ArgumentError, InvalidSowKeyError, QueryOptionError
from sowlib.query import Record

__all__ = [
    "Change",
    "DeleteResult",
    "PublishResult",
    "PublishResults",
    "parse_bookmark",
    "split_keys",
    "to_corr",
]


class PublishResult(NamedTuple):
    """What ``publish`` returns: the record's key, its sequence number, insert or update.

    A named tuple: it is created once per publish, and a tuple is the cheapest value.
    """

    sow_key: str
    seq: int
    inserted: bool


class PublishResults(Sequence[PublishResult]):
    """What ``publish_many`` returns: one :class:`PublishResult` per message, in order.

    The results are built when read: a batch of thousands of publishes whose
    results are never looked at costs three small lists instead of one tuple
    per message. Compares equal to any sequence of the same results.

    Example:
        >>> r = PublishResults(["k1", "k2"], 7, [True, False])
        >>> r[1]
        PublishResult(sow_key='k2', seq=8, inserted=False)
    """

    __slots__ = ("_first", "_inserted", "_keys")

    def __init__(self, keys: Sequence[str], first_seq: int, inserted: Sequence[bool]) -> None:
        if len(keys) != len(inserted):
            raise ValueError("one inserted flag per key")
        self._keys = keys
        self._first = first_seq
        self._inserted = inserted

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> PublishResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[PublishResult]: ...

    def __getitem__(self, index: int | slice) -> PublishResult | list[PublishResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._keys)))]
        n = len(self._keys)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("publish result index out of range")
        return PublishResult(self._keys[index], self._first + index, self._inserted[index])

    def __iter__(self) -> Iterator[PublishResult]:
        return map(PublishResult, self._keys, count(self._first), self._inserted)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PublishResults({list(self)!r})"


class DeleteResult(int):
    """The number of records deleted, with the AMPS acknowledgement counts (spec §8)."""

    matches: int
    topic_matches: int
    records_deleted: int

    def __new__(cls, deleted: int, matches: int, topic_matches: int) -> DeleteResult:
        self = super().__new__(cls, deleted)
        self.records_deleted = deleted
        self.matches = matches
        self.topic_matches = topic_matches
        return self


@attrs.frozen
class Change:
    """One change from :meth:`Topic.replay`: ``kind`` is publish, delete or expire."""

    kind: str
    record: Record


def to_corr(value: str | bytes | None) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise ArgumentError("correlation_id", value, "text or bytes")


def split_keys(keys: Sequence[str] | str | None) -> list[str] | None:
    if keys is None:
        return None
    if isinstance(keys, str):
        return [k.strip() for k in keys.split(",") if k.strip()]
    out = list(keys)
    for k in out:
        if not isinstance(k, str):
            raise InvalidSowKeyError(k, "a SOW key is a string")
    return out


def parse_bookmark(bookmark: int | float | str | datetime) -> tuple[int | None, float | None]:
    """A bookmark is a sequence number (int), epoch seconds (float), a datetime or AMPS text."""
    if isinstance(bookmark, bool):
        raise QueryOptionError("bookmark", bookmark, "a sequence number, time or timestamp")
    if isinstance(bookmark, int):
        return bookmark, None
    if isinstance(bookmark, float):
        return None, bookmark
    if isinstance(bookmark, datetime):
        when = bookmark if bookmark.tzinfo else bookmark.replace(tzinfo=UTC)
        return None, when.timestamp()
    if isinstance(bookmark, str):
        text = bookmark.strip()
        if text.isdigit():
            return int(text), None
        for fmt in ("%Y%m%dT%H%M%S.%fZ", "%Y%m%dT%H%M%SZ", "%Y%m%dT%H%M%S.%f", "%Y%m%dT%H%M%S"):
            try:
                when = datetime.strptime(text, fmt).replace(tzinfo=UTC)
            except ValueError:
                continue
            return None, when.timestamp()
    raise QueryOptionError(
        "bookmark", bookmark, "a sequence number, epoch seconds, a datetime or YYYYMMDDTHHMMSS[Z]"
    )
