"""``Log``: what a topic needs of its log, met by the file log and the memory log alike.

:class:`~sowlib.storage.log.AppendLog` (a memory-mapped file) and
:class:`~sowlib.storage.memory.MemoryLog` (a list, for transient topics) both satisfy
it; a test checks both with mypy and at run time. Reads that only a file can answer
(headers without the payload, batches of checked payloads, searching the bytes) are
the file log's own methods. Imports only ``storage.entries``, ``storage.format`` and
``storage.framing``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from sowlib.storage.entries import EntryList
from sowlib.storage.format import LogRecord, RecordKind
from sowlib.storage.framing import BatchItem, ScanEntry

__all__ = ["Log"]


@runtime_checkable
class Log(Protocol):
    """A topic's append log: records by offset, in sequence order."""

    path: str
    readonly: bool
    generation: int
    last_seq: int

    @property
    def end_offset(self) -> int: ...

    @property
    def file_size(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    @property
    def record_count(self) -> int: ...

    def append(
        self,
        kind: RecordKind,
        key: str,
        payload: bytes,
        *,
        timestamp: float,
        expiration: float = 0.0,
        correlation_id: bytes = b"",
        seq: int | None = None,
    ) -> LogRecord: ...

    def append_many(self, items: Iterable[BatchItem]) -> list[LogRecord]: ...

    def append_puts(
        self,
        keys: Sequence[str],
        payloads: Sequence[bytes],
        timestamp: float,
        expiration: float,
        key_ints: Sequence[int] | None = None,
    ) -> tuple[list[int], list[int], int]: ...

    def read(self, offset: int) -> LogRecord: ...

    def scan(self, start: int | None = None) -> Iterator[LogRecord]: ...

    def scan_entries(self, start: int | None = None) -> Iterator[ScanEntry]: ...

    def scan_columns(self, start: int | None = None) -> EntryList: ...

    def compact(
        self,
        keep: Callable[[LogRecord], bool] | Collection[int],
        meta: bytes | None = None,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> dict[int, int]: ...

    def load_checkpoint(self) -> tuple[bytes, int] | None: ...

    def refresh(self) -> EntryList | None: ...

    def flush(self) -> None: ...

    def check(self) -> None: ...

    def close(self, checkpoint: bytes | None = None) -> None: ...
