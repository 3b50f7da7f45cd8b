"""Issue 28 item 5: files planted in a store directory never hang, exhaust memory or get
followed. Anyone who can write into the directory can plant a FIFO, a device node, a
symlink or a huge sparse file under a store file's name; every opener, ``sowlib stats``
and ``sowlib verify`` must answer with a ``SowError`` (or ignore a side file) at once.
"""

from __future__ import annotations

import io
import os
import resource
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import sowlib
from sowlib import cli
from sowlib.errors import CorruptRecordError, StorePathError
from sowlib.journal import Journal

SECONDS = 20


def outcome(code: str, **names: str) -> str:
    """Run ``code`` in a child process (2 GB of address space, SECONDS of time) and return
    what it came to: "ok", the SowError's class name, "other <class>" or "hung"."""
    here = str(Path(sowlib.__file__).resolve().parent.parent)
    script = "\n".join(
        [
            "import sys, sowlib",
            "from sowlib.errors import SowError",
            "from sowlib.journal import Journal",
            "from sowlib.storage import verify",
            *(f"{name} = {value!r}" for name, value in names.items()),
            "try:",
            *(f"    {line}" for line in code.splitlines()),
            "    print('ok')",
            "except SowError as exc:",
            "    print(type(exc).__name__)",
            "except BaseException as exc:",
            "    print('other', type(exc).__name__)",
        ]
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": here}
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=SECONDS,
            preexec_fn=limit,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "hung"
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else f"other exit {done.returncode}"


def make_store(path: Path) -> str:
    with sowlib.SowStore(str(path)) as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/v"])
        topic.publish('{"id": 1, "v": 2}')
        return topic.path


def plant(path: Path, kind: str) -> None:
    """Replace ``path`` with a FIFO, a character device (/dev/zero's numbers) or a
    symlink to /dev/zero."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))
        except PermissionError:
            pytest.skip("creating a device node needs CAP_MKNOD")
    else:
        path.symlink_to("/dev/zero")


KINDS = ["fifo", "device", "symlink"]


def cli_run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    from contextlib import redirect_stderr

    with redirect_stderr(err):
        code = cli.main(list(argv), io.StringIO())
    return code, err.getvalue()


@pytest.mark.parametrize("kind", KINDS)
def test_issue28_planted_log_is_refused_by_every_opener(tmp_path: Path, kind: str) -> None:
    log = make_store(tmp_path / "s")
    plant(Path(log), kind)
    d = str(tmp_path / "s")
    assert outcome("sowlib.SowStore(d)", d=d) == "StorePathError"
    assert outcome("sowlib.SowStore(d, readonly=True)", d=d) == "StorePathError"
    assert outcome("verify(log)", log=log) == "StorePathError"
    for command in ("stats", "verify"):
        run = f"code = sowlib.cli.main([{command!r}, d])\nassert code == 2, code"
        assert outcome("import sowlib.cli\n" + run, d=d) == "ok"
        code, err = cli_run(command, d)
        assert code == 2
        assert len(err.splitlines()) == 1
        assert "Traceback" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_issue28_planted_checkpoint_is_ignored_and_the_log_scanned(
    tmp_path: Path, kind: str
) -> None:
    log = make_store(tmp_path / "s")
    plant(Path(log + ".ckpt"), kind)
    d = str(tmp_path / "s")
    reader = "with sowlib.SowStore(d, readonly=True) as s:\n    assert s.topic('t').lookup(1)"
    assert outcome(reader, d=d) == "ok"
    writer = "with sowlib.SowStore(d) as s:\n    assert len(list(s.topic('t').sow('/v = 2'))) == 1"
    assert outcome(writer, d=d) == "ok"
    assert not Path(log + ".ckpt").is_fifo()


@pytest.mark.parametrize("kind", KINDS)
def test_issue28_planted_lock_file_is_refused(tmp_path: Path, kind: str) -> None:
    make_store(tmp_path / "s")
    plant(tmp_path / "s" / "LOCK", kind)
    assert outcome("sowlib.SowStore(d)", d=str(tmp_path / "s")) == "StorePathError"


def test_issue28_sparse_huge_checkpoint_is_refused_before_it_is_read(tmp_path: Path) -> None:
    log = make_store(tmp_path / "s")
    with open(log + ".ckpt", "r+b") as fh:
        fh.truncate(3 << 30)  # 3 GiB, no blocks: reading it used 3.1 GB and 11 s
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    for readonly in (True, False):
        with pytest.raises(CorruptRecordError) as info:
            sowlib.SowStore(str(tmp_path / "s"), readonly=readonly)
        assert info.value.file == log + ".ckpt"
    assert time.monotonic() - started < 5
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200_000
    os.unlink(log + ".ckpt")  # the error says so: then the store opens
    with sowlib.SowStore(str(tmp_path / "s")) as store:
        assert store.topic("t").lookup(1) is not None


def journal_with_entries(directory: Path) -> Path:
    with Journal(directory, ["t"]) as journal:
        journal.record("publish", "t", "json", b'{"id": 1}')
    (segment,) = sorted(directory.glob("journal-*.log"))
    return segment


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["segment", "journal.id"])
def test_issue28_planted_journal_file_is_refused(tmp_path: Path, kind: str, name: str) -> None:
    segment = journal_with_entries(tmp_path)
    target = segment if name == "segment" else tmp_path / "journal.id"
    plant(target, kind)
    assert outcome("Journal(d, ['t']).close()", d=str(tmp_path)) == "StorePathError"


def test_issue28_journal_segment_symlink_to_a_real_segment_is_not_followed(
    tmp_path: Path,
) -> None:
    elsewhere = journal_with_entries(tmp_path / "other")
    segment = journal_with_entries(tmp_path / "j")
    segment.unlink()
    segment.symlink_to(elsewhere)
    with pytest.raises(StorePathError):
        Journal(tmp_path / "j", ["t"]).close()


OPENERS: dict[str, Callable[[str], object]] = {
    "writer": lambda d: sowlib.SowStore(d).close(),
    "reader": lambda d: sowlib.SowStore(d, readonly=True).close(),
}


@pytest.mark.parametrize("opener", sorted(OPENERS))
def test_issue28_a_regular_store_still_opens_after_the_checks(tmp_path: Path, opener: str) -> None:
    make_store(tmp_path / "s")
    OPENERS[opener](str(tmp_path / "s"))
