"""Fixtures for the append-log tests: a log path, a small-slab opener and a replay model."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sowlib.storage import AppendLog, LogRecord, RecordKind

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
