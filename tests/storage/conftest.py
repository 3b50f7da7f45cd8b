"""Fixtures for the append-log tests: a log path, a small-slab opener and a replay model."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sowlib.storage import AppendLog, LogRecord, RecordKind
from sowlib.storage.format import COMMIT_SLOT, COMMIT_SLOTS, decode_header, encode_commit

META = b'{"topic": "orders"}'
SLAB = 4096


def open_log(path: Path, **kwargs: Any) -> AppendLog:
    """Open (creating if needed) a log with a small slab so tests cross slab boundaries."""
    kwargs.setdefault("slab_size", SLAB)
    if not kwargs.get("readonly"):
        kwargs.setdefault("meta", META)
    return AppendLog(path, **kwargs)


def replay(records: Iterable[LogRecord], state: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Fold records into key -> latest payload (into ``state`` if given), as a topic does."""
    state = {} if state is None else state
    for rec in records:
        if rec.kind is RecordKind.PUT:
            state[rec.key] = rec.payload
        else:
            state.pop(rec.key, None)
    return state


def put(log: AppendLog, key: str, payload: bytes, ts: float = 1_700_000_000.0) -> LogRecord:
    """Append a PUT record."""
    return log.append(RecordKind.PUT, key, payload, timestamp=ts)


def uncommit(path: Path, end: int) -> None:
    """Make the file's commit slots say only ``[0, end)`` is complete: the image a writer
    killed before committing the later records leaves (what a torn-write test needs)."""
    data = bytearray(path.read_bytes())
    header = decode_header(bytes(data), len(data), str(path))
    at = header.commit_at
    data[at : at + COMMIT_SLOT.size * COMMIT_SLOTS] = bytes(COMMIT_SLOT.size * COMMIT_SLOTS)
    slot = at + COMMIT_SLOT.size * (1 % COMMIT_SLOTS)
    data[slot : slot + COMMIT_SLOT.size] = encode_commit(1, max(end, header.header_len))
    path.write_bytes(bytes(data))


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    """Path of a log file that does not exist yet."""
    return tmp_path / "orders.log"


@pytest.fixture
def new_log(log_path: Path) -> Iterator[Callable[..., AppendLog]]:
    """Factory opening logs at ``log_path``; every log it made is closed at teardown."""
    made: list[AppendLog] = []

    def factory(**kwargs: Any) -> AppendLog:
        log = open_log(log_path, **kwargs)
        made.append(log)
        return log

    yield factory
    for log in made:
        log.close()
