"""Bringing a SOW topic in line with the journal (AMPS: the transaction log is the truth).

Imports ``errors`` and the journal's ``frames``; reaches the topic only through the
public methods of :class:`RestorableTopic`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from sowlib.errors import InvalidSowKeyError
from sowlib.journal.frames import Entry

__all__ = ["RestorableTopic", "final_state", "reconcile", "refill", "topic_id"]


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
