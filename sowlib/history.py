"""Historical versions of a topic's records (spec §11) and the as-of query view.

Keeps, per key, the log offsets of saved versions (and deletions) inside the
history window, honouring the granularity. Imports ``query`` and ``index`` types only.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs

from sowlib.index.types import Key
from sowlib.paths import FieldPath

__all__ = ["History", "Version"]


@attrs.frozen
class Version:
    """One saved state of a key: a record (``offset``) or a deletion (``offset`` is None)."""

    seq: int
    timestamp: float
    offset: int | None


@attrs.define
class History:
    """Versions per key, oldest first; the newest version is always kept.

    ``window`` seconds of history are kept; within it, a superseded version is
    kept only when it is at least ``granularity`` seconds newer than the
    previous kept one (AMPS saves at most one copy per interval). O(1)
    amortised per write; queries are O(keys · log versions).
    """

    window: float
    granularity: float = 0.0
    _versions: dict[Key, list[Version]] = attrs.field(factory=dict)

    def add(self, key: Key, version: Version) -> None:
        """Record a new current version (or deletion) of ``key``."""
        versions = self._versions.setdefault(key, [])
        if (
            self.granularity > 0
            and len(versions) >= 2
            and versions[-1].timestamp - versions[-2].timestamp < self.granularity
        ):
            # The current version falls inside the previous saved one's
            # interval: it is replaced rather than saved (spec §11 granularity).
            versions.pop()
        versions.append(version)

    def trim(self, now: float) -> None:
        """Forget versions older than the window, keeping each key's newest
        version at or before the cutoff unless it is a deletion (spec §11)."""
        cutoff = now - self.window
        empty = []
        for key, versions in self._versions.items():
            cut = 0
            while cut + 1 < len(versions) and versions[cut + 1].timestamp <= cutoff:
                cut += 1
            if cut:
                del versions[:cut]
            if (
                len(versions) == 1
                and versions[0].offset is None
                and versions[0].timestamp <= cutoff
            ):
                empty.append(key)
        for key in empty:
            del self._versions[key]

    def as_of(
        self, seq: int | None, timestamp: float | None, now: float
    ) -> Iterator[tuple[Key, Version]]:
        """Yield ``(key, version)`` live at that point: the newest version with
        ``seq``/``timestamp`` at or before it that is not a deletion. A time
        before the window yields nothing."""
        if timestamp is not None and timestamp < now - self.window:
            return
        for key, versions in self._versions.items():
            if seq is not None:
                pos = bisect.bisect_right([v.seq for v in versions], seq)
            else:
                assert timestamp is not None
                pos = bisect.bisect_right([v.timestamp for v in versions], timestamp)
            if pos and versions[pos - 1].offset is not None:
                yield key, versions[pos - 1]

    def offsets(self) -> set[int]:
        """Every log offset a historical query may still read (for compaction)."""
        return {v.offset for vs in self._versions.values() for v in vs if v.offset is not None}

    def seqs(self) -> set[int]:
        """Sequence numbers of every retained version and deletion."""
        return {v.seq for vs in self._versions.values() for v in vs}

    def remap(self, mapping: dict[int, int]) -> None:
        """Apply compaction's old -> new offsets."""
        for versions in self._versions.values():
            for i, v in enumerate(versions):
                if v.offset is not None:
                    versions[i] = Version(v.seq, v.timestamp, mapping[v.offset])

    def clear(self) -> None:
        """Forget everything (reload)."""
        self._versions.clear()


class HistoricalSource:
    """A read-only :class:`~sowlib.query.QuerySource` over a topic as of a point in time."""

    def __init__(
        self,
        topic: Any,
        versions: Sequence[tuple[Key, Version]],
        make_record: Callable[[Key, Version], Any],
    ) -> None:
        from sowlib.index import IndexSet  # local: history sits beside topic, below query

        self._topic = topic
        self._versions = dict(versions)
        self._make = make_record
        self._records: dict[Key, Any] = {}
        self.name = topic.name
        self.message_type = topic.message_type
        self.key_fields = topic.key_fields
        self.indexes = IndexSet(topic.key_fields, (), ())

    def keys(self) -> Iterator[Key]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)

    def record(self, key: Key) -> Any:
        if key not in self._versions:
            return None
        rec = self._records.get(key)
        if rec is None:
            rec = self._records[key] = self._make(key, self._versions[key])
        return rec

    def doc(self, key: Key) -> Any:
        rec = self.record(key)
        return None if rec is None else rec.doc

    def docs(self, keys: Iterable[Key]) -> Iterator[tuple[Key, Any]]:
        for key in keys:
            rec = self.record(key)
            if rec is not None:
                yield key, rec.doc

    def scan(self) -> Iterator[tuple[Key, Any]]:
        return self.docs(list(self._versions))

    def field_values(self, path: FieldPath) -> Iterator[tuple[Key, Any]]:
        getter = path.getter
        for key, doc in self.docs(list(self._versions)):
            yield key, getter(doc)

    def byte_plan(self, node: Any) -> None:
        """None: past versions are searched through their documents."""
        return None

    def key_for_values(self, values: Sequence[Any]) -> Key | None:
        return self._topic.key_for_values(values)  # type: ignore[no-any-return]

    def encode(self, doc: Any) -> bytes:
        return self._topic.encode(doc)  # type: ignore[no-any-return]

    def context(self, key: Key) -> Any:
        return self._topic.context(key, self.record(key))
