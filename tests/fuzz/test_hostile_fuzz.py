"""Fuzz: hostile files in a store directory and hostile CLI input (issue 28).

Every planted file (a FIFO, a device node, a symlink, a sparse or huge file, random
bytes, a directory) under any store file's name either opens or raises a SowError,
within seconds and without reading megabytes it does not need; every ``sowlib import``
and ``sowlib query --project`` input exits 0 or 2 with at most one line on standard
error and no traceback. ``SOWLIB_FUZZ_FULL=1`` runs more seeded cases
(``SOWLIB_FUZZ_SEED`` picks the seed).
"""

from __future__ import annotations

import io
import json
import os
import random
import resource
import signal
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sowlib
from sowlib.cli import main
from sowlib.errors import SowError
from sowlib.journal import Journal

FULL = os.environ.get("SOWLIB_FUZZ_FULL") == "1"
SEED = int(os.environ.get("SOWLIB_FUZZ_SEED", "20261127"))
FILE_CASES = 400 if FULL else 40
LIMIT_SECONDS = 10


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """A case that blocks (a FIFO opened for reading) fails instead of hanging."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"blocked for {LIMIT_SECONDS} s")

    old = signal.signal(signal.SIGALRM, expire)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _fifo(path: Path, rng: random.Random) -> None:
    os.mkfifo(path)


def _device(path: Path, rng: random.Random) -> None:
    try:  # /dev/zero's or /dev/null's numbers
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, rng.choice([3, 5])))
    except PermissionError:
        path.symlink_to("/dev/zero")


def _symlink_device(path: Path, rng: random.Random) -> None:
    path.symlink_to(rng.choice(["/dev/zero", "/dev/null", "/dev/urandom"]))


def _symlink_file(path: Path, rng: random.Random) -> None:
    target = path.with_name(path.name + ".target")
    target.write_bytes(rng.randbytes(rng.randrange(0, 4096)))
    path.symlink_to(target)


def _sparse(path: Path, rng: random.Random) -> None:
    with open(path, "wb") as fh:
        fh.truncate(rng.choice([1 << 30, 3 << 30, 17 << 30]))


def _random_bytes(path: Path, rng: random.Random) -> None:
    path.write_bytes(rng.randbytes(rng.randrange(0, 8192)))


def _directory(path: Path, rng: random.Random) -> None:
    path.mkdir()


PLANTS: dict[str, Callable[[Path, random.Random], None]] = {
    "fifo": _fifo,
    "device": _device,
    "symlink-device": _symlink_device,
    "symlink-file": _symlink_file,
    "sparse": _sparse,
    "random": _random_bytes,
    "directory": _directory,
}


def _store(root: Path) -> tuple[str, dict[str, Path]]:
    directory = root / "s"
    with sowlib.SowStore(str(directory)) as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/v"])
        for i in range(20):
            topic.publish({"id": i, "v": i % 3})
        log = Path(topic.path)
    with Journal(root / "j", ["t"]) as journal:
        journal.record("publish", "t", "json", b'{"id": 1}')
    (segment,) = sorted((root / "j").glob("journal-*.log"))
    names = {
        "log": log,
        "checkpoint": Path(str(log) + ".ckpt"),
        "lock": directory / "LOCK",
        "segment": segment,
        "journal.id": root / "j" / "journal.id",
    }
    return str(directory), names


def _open_all(directory: str, root: Path) -> None:
    with sowlib.SowStore(directory, readonly=True) as reader:
        for topic in reader.topics():
            len(topic)
    with sowlib.SowStore(directory) as writer:
        writer.stats()
    Journal(root / "j", ["t"]).close()


@pytest.mark.parametrize("case", range(FILE_CASES))
def test_fuzz_planted_store_file_opens_or_raises_a_sow_error(tmp_path: Path, case: int) -> None:
    rng = random.Random(SEED * 1000 + case)
    directory, names = _store(tmp_path)
    name = rng.choice(sorted(names))
    kind = rng.choice(sorted(PLANTS))
    target = names[name]
    if target.exists() or target.is_symlink():
        target.unlink()
    PLANTS[kind](target, rng)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    signal.alarm(LIMIT_SECONDS)
    try:
        _open_all(directory, tmp_path)
    except SowError:
        pass
    finally:
        signal.alarm(0)
    assert time.monotonic() - started < LIMIT_SECONDS, (name, kind)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 300_000, (name, kind, grown_kib)


@pytest.mark.parametrize("gib", [3, 17])
def test_sparse_file_under_a_segment_name_is_refused_without_reading_it(
    tmp_path: Path, gib: int
) -> None:
    _directory, names = _store(tmp_path)
    segment = names["segment"]
    segment.unlink()
    with open(segment, "wb") as fh:
        fh.truncate(gib << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(SowError):
        Journal(tmp_path / "j", ["t"]).close()
    assert time.monotonic() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000


# ---------------------------------------------------------------------------- CLI input


def run(*argv: str | Path) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err):
        status = main([str(a) for a in argv], out=io.StringIO())
    return status, err.getvalue()


def assert_clean_exit(status: int, err: str) -> None:
    assert status in (0, 2), err
    assert "Traceback" not in err
    assert len(err.splitlines()) <= 1, err[:2000]
    assert len(err) < 1000


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)
_HOSTILE_LINES = st.sampled_from(
    [
        b'{"id": 1, "v": NaN}',
        b'{"id": 1, "v": -Infinity}',
        b'{"id": 1, "v": "=HYPERLINK(\\"x\\")"}',
        b'{"id": ' + b"9" * 5000 + b"}",
        b'{"id": 1, "v": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"id": 1, "v": "\\ud800"}',
        b'{"id": "caf\xe9"}',
        b"\xff\xfe",
        b"",
        b"[1, 2]",
    ]
)
_LINES = st.one_of(
    _HOSTILE_LINES,
    st.binary(max_size=200),
    _VALUES.map(lambda v: json.dumps({"id": 1, "v": v}).encode()),
)


@settings(
    max_examples=200 if FULL else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(_LINES, min_size=1, max_size=5), csv=st.booleans())
def test_fuzz_import_exits_0_or_2_in_one_line(
    tmp_path: Path, lines: list[bytes], csv: bool
) -> None:
    source = tmp_path / ("in.csv" if csv else "in.jsonl")
    body = b"\n".join(lines) + b"\n"
    source.write_bytes(b"id,v\n" + body if csv else body)
    status, err = run("import", tmp_path / "s", "t", source, "--keys", "/id", "--no-progress")
    assert_clean_exit(status, err)


_PROJECTION_PARTS = ["{a:@,b:@}", "[@,@]", "[]", "[*]", "@", "id", "v", "sort(@)", "length(@)"]


@settings(
    max_examples=200 if FULL else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    parts=st.lists(st.sampled_from(_PROJECTION_PARTS), min_size=1, max_size=45),
    joins=st.lists(st.sampled_from(["|", ".", ""]), min_size=45, max_size=45),
)
def test_fuzz_projection_exits_0_or_2_quickly(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str], joins: list[str]
) -> None:
    directory = tmp_path_factory.getbasetemp() / "projection-store"
    if not directory.exists():
        with sowlib.SowStore(str(directory)) as store:
            store.create_topic("t", keys=["/id"]).publish({"id": 1, "v": [1, 2, 3]})
    expression = parts[0] + "".join(j + p for j, p in zip(joins, parts[1:], strict=False))
    started = time.monotonic()
    status, err = run("query", directory, "t", "--project", expression)
    assert time.monotonic() - started < 5, expression
    assert_clean_exit(status, err)
