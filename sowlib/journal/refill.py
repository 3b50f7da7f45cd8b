"""Bringing a SOW topic in line with the journal (AMPS: the transaction log is the truth).

Imports ``errors``, ``attrs`` and the journal's ``frames``/``bookmarks``/``log``;
reaches the topic only through the public methods of :class:`RestorableTopic`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import attrs

from sowlib.errors import InvalidSowKeyError
from sowlib.journal.bookmarks import Position
from sowlib.journal.frames import Entry
from sowlib.journal.log import JournalLog

__all__ = [
    "RestorableTopic",
    "bring_in_line",
    "entries_of",
    "final_state",
    "reconcile",
    "refill",
    "topic_id",
]


class RestorableTopic(Protocol):
    """The part of a SOW topic the journal watches and writes through."""

    name: str

    @property
    def message_type(self) -> str: ...

    def sow_and_subscribe(self, callback: Any, filter: Any = None, *, oof: bool = False) -> Any: ...

    def __len__(self) -> int: ...

    def publish(
        self, data: bytes, *, expiration: float | None = None, sow_key: str | None = None
    ) -> Any: ...

    def sow_delete_by_keys(self, sow_keys: Sequence[str]) -> Any: ...

    def get(self, sow_key: str) -> Any: ...

    def sow(self) -> Iterable[Any]: ...


def topic_id(name: str, message_type: str) -> str:
    """How the state file names a topic."""
    return f"{message_type}:{name}"


def _put(topic: RestorableTopic, entry: Entry, lifetime: float | None) -> None:
    try:
        topic.publish(entry.data, expiration=lifetime)
    except InvalidSowKeyError:  # publisher-supplied keys
        topic.publish(entry.data, expiration=lifetime, sow_key=entry.sow_key)


def _lifetime(entry: Entry, now: float) -> float | None:
    return None if entry.expiration is None else entry.expiration - now


def refill(topic: RestorableTopic, entries: Iterator[Entry], now: float) -> int:
    """Apply ``entries`` (the topic's, in order) through the topic's API; returns how many.

    Records whose stored expiration has passed are removed.
    """
    applied = 0
    for entry in entries:
        lifetime = _lifetime(entry, now)
        if entry.kind == "publish" and (lifetime is None or lifetime > 0):
            _put(topic, entry, lifetime)
        elif entry.sow_key:
            topic.sow_delete_by_keys([entry.sow_key])
        applied += 1
    return applied


def final_state(entries: Iterator[Entry]) -> dict[str, Entry]:
    """The last entry of every SOW key among ``entries``."""
    last: dict[str, Entry] = {}
    for entry in entries:
        if entry.sow_key:
            last[entry.sow_key] = entry
    return last


def _data(record: Any) -> bytes:
    data = record.data
    return data if isinstance(data, bytes) else str(data).encode()


def reconcile(
    topic: RestorableTopic, final: dict[str, Entry], now: float, *, complete: bool
) -> int:
    """Make ``topic`` hold what ``final`` (see :func:`final_state`) says; returns the changes.

    Every key the journal mentions gets its journalled state (a publish whose
    expiration has passed counts as removed). With ``complete`` (the journal holds
    every change of the topic), keys the journal does not mention are removed: they
    were written to the SOW but never journalled, so never acknowledged.
    """
    changes = 0
    for key, entry in final.items():
        lifetime = _lifetime(entry, now)
        record = topic.get(key)
        if entry.kind == "publish" and (lifetime is None or lifetime > 0):
            if record is None or _data(record) != entry.data:
                _put(topic, entry, lifetime)
                changes += 1
        elif record is not None:
            topic.sow_delete_by_keys([key])
            changes += 1
    if complete:
        extra = [rec.sow_key for rec in topic.sow() if rec.sow_key not in final]
        if extra:
            topic.sow_delete_by_keys(extra)
            changes += len(extra)
    return changes


def entries_of(log: JournalLog, topic: RestorableTopic, start: Position) -> Iterator[Entry]:
    """The entries of ``topic`` in ``log`` from ``start`` on, oldest first."""
    for entry in log.read(start.after):
        if entry.topic != topic.name or entry.message_type != topic.message_type:
            continue
        if start.since is not None and entry.timestamp < start.since:
            continue
        yield entry


def bring_in_line(
    log: JournalLog,
    topic: RestorableTopic,
    ident: str,
    position: Callable[[str], Position],
    now: float,
) -> int:
    """Reconcile ``topic`` (state-file name ``ident``) with ``log``; returns the changes.

    A topic the journal holds (``log.state.owned``: the bookmark its replay starts from)
    with nothing of it trimmed is complete: keys the journal does not mention go. For a
    topic with records, entries at or before ``log.state.trimmed`` are not used (what
    retention or a lossy repair removed may have replaced them). The topic is listed in
    ``log.state.refilling`` meanwhile, so a crash in between makes the next open redo it.
    """
    state = log.state
    start_text = state.owned.get(ident)
    start = position(start_text) if start_text is not None else Position(after=0)
    complete = start_text is not None and state.trimmed <= start.after
    if len(topic):
        start = attrs.evolve(start, after=max(start.after, state.trimmed))
    state.refilling = [*state.refilling, ident]
    log.save_state()
    changes = reconcile(topic, final_state(entries_of(log, topic, start)), now, complete=complete)
    state.refilling = [r for r in state.refilling if r != ident]
    log.save_state()
    return changes
