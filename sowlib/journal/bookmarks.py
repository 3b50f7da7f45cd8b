"""AMPS bookmarks for the journal: ``<journal id>|<sequence>|``, EPOCH, NOW, timestamps.

Imports only ``errors``.
"""

from __future__ import annotations

import calendar
import time

import attrs

from sowlib.errors import QueryOptionError

__all__ = ["EPOCH", "MOST_RECENT", "NOW", "Position", "format_bookmark", "parse_bookmark"]

EPOCH = "0"
NOW = "0|1|"
MOST_RECENT = "recent"

_TIME_FORMATS = ("%Y%m%dT%H%M%S", "%Y-%m-%dT%H:%M:%S")


@attrs.frozen
class Position:
    """Where a replay starts: after sequence ``after``, at time ``since``, or live only."""

    after: int = 0
    since: float | None = None
    live_only: bool = False


def format_bookmark(journal_id: int, seq: int) -> str:
    """The bookmark of the entry ``seq`` of journal ``journal_id``.

    Example:
        >>> format_bookmark(42, 7)
        '42|7|'
    """
    return f"{journal_id}|{seq}|"


def _parse_time(text: str) -> float | None:
    body = text[:-1] if text.endswith("Z") else text
    whole, _, frac = body.partition(".")
    for fmt in _TIME_FORMATS:
        try:
            parsed = time.strptime(whole, fmt)
        except ValueError:
            continue
        if frac and not frac.isdigit():
            return None
        return calendar.timegm(parsed) + (float(f"0.{frac}") if frac else 0.0)
    return None


def _one(text: str, journal_id: int) -> Position:
    text = text.strip()
    low = text.lower()
    if low in (EPOCH, "epoch"):
        return Position()
    if low in (NOW, "now"):
        return Position(live_only=True)
    parts = text.split("|")
    if len(parts) == 3 and parts[2] == "" and parts[0].isdigit() and parts[1].isdigit():
        if int(parts[0]) != journal_id:
            raise QueryOptionError(
                "bookmark", text, f"not a bookmark of this transaction log (id {journal_id})"
            )
        return Position(after=int(parts[1]))
    if text.isdigit():
        raise QueryOptionError(
            "bookmark",
            text,
            "a bare number is not a bookmark (a SOW sequence number is not a journal position);"
            " pass Message.get_bookmark() of a bookmark subscription, or 0 for EPOCH",
        )
    stamp = _parse_time(text)
    if stamp is None:
        raise QueryOptionError(
            "bookmark", text, "expected 0 (epoch), 0|1| (now), 'id|seq|' or a YYYYMMDDTHHMMSS time"
        )
    return Position(since=stamp)


def parse_bookmark(text: str, journal_id: int) -> Position:
    """Parse a bookmark (or a comma-separated list: the earliest wins) for ``journal_id``.

    Raises:
        QueryOptionError: a malformed bookmark or one from another journal.

    Example:
        >>> parse_bookmark("42|7|", 42)
        Position(after=7, since=None, live_only=False)
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryOptionError("bookmark", text, "expected a bookmark string")
    positions = [_one(part, journal_id) for part in text.split(",") if part.strip()]
    if len(positions) == 1:
        return positions[0]
    if any(p.since is not None or p.live_only for p in positions):
        raise QueryOptionError("bookmark", text, "a list may only hold 'id|seq|' bookmarks")
    return Position(after=min(p.after for p in positions))
