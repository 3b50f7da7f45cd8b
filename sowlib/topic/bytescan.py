"""A scan that reads raw bytes: the live records whose JSON may match a filter.

For a filter no index serves, :func:`byte_plan` searches the log file's bytes with the
patterns of :mod:`sowlib.index.rawscan` (necessary conditions: a matching message
always holds a match) and returns only the live records found, for the query to
decode and test in full. One regular expression runs over the mapped file at C
speed instead of decoding every message in Python.

It is used only when it pays: the file must be mostly live records (the search
reads superseded versions too) and, for a file over twice :data:`SAMPLE_BYTES`, a
sample of the file must show the pattern to be selective. A smaller file is searched
whole at planning time, once per pattern, and the count of the records holding
every pattern is the plan's estimate (the query reuses the search). Imports
``index``, ``storage`` and sibling modules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sowlib.index.rawscan import ESCAPE
from sowlib.index.types import Key
from sowlib.storage import RecordKind
from sowlib.topic.keymap import KeyMap
from sowlib.topic.logview import LogView

__all__ = ["byte_plan"]

#: Bytes at the start of the file searched to choose the most selective pattern.
SAMPLE_BYTES = 4 << 20
#: A pattern found in more than this fraction of the sampled records is not worth it.
MAX_FRACTION = 0.02
#: Below this fraction of live bytes in the file, a byte search reads mostly dead data.
MIN_LIVE = 0.5


def byte_plan(
    log: LogView, keys: KeyMap, patterns: Sequence[re.Pattern[bytes]]
) -> tuple[int, Callable[[], list[Key]]] | None:
    """``(estimated candidates, fetch)`` for a byte search, or None when it would not pay.

    ``fetch()`` returns the live keys whose record holds a match of the chosen
    pattern or an escape, in file order: a superset of the keys matching the filter.
    """
    low, end = log.span
    total = end - low
    if not patterns or total <= 0 or not len(keys):
        return None
    if keys.live_bytes < total * MIN_LIVE:
        return None
    if total <= 2 * SAMPLE_BYTES:
        # Sampling would read as much as the search: search the whole file now, once
        # per pattern, and keep the records holding a match of every one (or an
        # escape). Their count (dead versions too, under half the file) bounds the
        # candidates, and the query reuses the search.
        starts = _starts(log, patterns)
        return len(starts), lambda: _live_of(log, keys, starts)
    sampled = len(keys) * SAMPLE_BYTES / total
    counts = []
    for pattern in patterns:
        found = log.records_matching(pattern, low, low + SAMPLE_BYTES)
        counts.append((len(found) if found is not None else len(keys), pattern))
    hits, best = min(counts, key=lambda c: c[0])
    if hits > sampled * MAX_FRACTION:
        return None
    estimate = round(hits * total / SAMPLE_BYTES)

    def fetch() -> list[Key]:
        return _live_of(log, keys, _starts(log, [best]))

    return estimate, fetch


def _starts(log: LogView, patterns: Sequence[re.Pattern[bytes]]) -> set[int]:
    """Offsets of the records holding a match of every one of ``patterns``, or an escape."""
    starts = set(log.records_matching(patterns[0]) or ())
    for pattern in patterns[1:]:
        if starts:
            starts.intersection_update(log.records_matching(pattern) or ())
    starts.update(log.records_matching(ESCAPE) or ())
    return starts


def _live_of(log: LogView, keys: KeyMap, starts: set[int]) -> list[Key]:
    """The live keys whose current record starts at one of ``starts``, in file order."""
    out: list[Key] = []
    key_of, offset_of = keys.key_of, keys.offset
    for start in sorted(starts):
        rec = log.read(start)
        if rec.kind != RecordKind.PUT:
            continue
        key = key_of(rec.key)
        if offset_of(key) == start:
            out.append(key)
    return out
