"""Both logs satisfy the ``Log`` protocol the topic package is written against."""

from __future__ import annotations

from pathlib import Path

from sowlib.storage import AppendLog, Log, MemoryLog

# Checked by mypy (the typecheck session runs it over tests/): both classes conform.
_FILE: type[Log] = AppendLog
_MEMORY: type[Log] = MemoryLog


def test_both_logs_are_logs_at_run_time(tmp_path: Path) -> None:
    log = AppendLog(str(tmp_path / "t.sow"), meta=b"{}")
    try:
        assert isinstance(log, Log)
        assert isinstance(MemoryLog(), Log)
    finally:
        log.close()
