"""Values the topic API returns and the small argument parsers it shares.

Imports only ``errors`` and ``query``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import attrs

from sowlib.errors import InvalidSowKeyError, QueryOptionError
from sowlib.query import Record

__all__ = ["Change", "DeleteResult", "PublishResult", "parse_bookmark", "split_keys", "to_corr"]


class PublishResult(NamedTuple):
    """What ``publish`` returns: the record's key, its sequence number, insert or update.

    A named tuple: it is created once per publish, and a tuple is the cheapest value.
    """

    sow_key: str
    seq: int
    inserted: bool


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
    raise QueryOptionError("correlation_id", value, "text or bytes")


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
