"""WriterLock: one writer per store directory, in this process or any other."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sowlib.errors import StoreLockedError, StorePathError
from sowlib.storage import WriterLock

from .test_log_crash import ROOT


def test_second_writer_in_this_process_gets_the_pid(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path)
    assert lock.held
    assert (tmp_path / "LOCK").read_text().strip() == str(os.getpid())
    with pytest.raises(StoreLockedError) as info:
        WriterLock(tmp_path)
    assert info.value.pid == os.getpid()
    assert info.value.path == str(tmp_path)
    lock.release()
    lock.release()  # idempotent
    assert not lock.held
    with WriterLock(tmp_path) as again:
        assert again.held
    assert not again.held


HOLDER = textwrap.dedent(
    """
    import sys
    from sowlib.storage import WriterLock
    lock = WriterLock(sys.argv[1])
    print("locked", flush=True)
    sys.stdin.read()
    """
)


@pytest.mark.slow
def test_second_writer_in_another_process_gets_its_pid(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": ROOT}
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdin is not None
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLockedError) as info:
            WriterLock(tmp_path)
        assert info.value.pid == proc.pid
        proc.stdin.close()  # the holder exits; the kernel drops its lock
        assert proc.wait() == 0
    with WriterLock(tmp_path) as lock:
        assert lock.held
        assert (tmp_path / "LOCK").read_text().strip() == str(os.getpid())


def test_lock_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(StorePathError) as info:
        WriterLock(tmp_path / "missing")
    assert isinstance(info.value, OSError)
    assert info.value.path == str(tmp_path / "missing" / "LOCK")


def test_lock_can_create_its_directory(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path / "new" / "store", create=True)
    assert (tmp_path / "new" / "store" / "LOCK").is_file()
    lock.release()
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorePathError) as info:
        WriterLock(tmp_path / "file" / "store", create=True)
    assert info.value.path == str(tmp_path / "file" / "store")
