"""The C form of a read-only store's look at its directories (``storage.dirtimes``)
against its reference ``store_files.same_times``: the same answer for directories
unchanged, changed, removed, replaced by a file, unreadable names, and any times."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.store_files import NATIVE_SAME_TIMES, TopicFiles, same_times

dirtimes = pytest.importorskip("sowlib.storage.dirtimes")


def _both(dirs: list[str], times: list[int]) -> bool:
    want = same_times(tuple(dirs), tuple(times))
    got = dirtimes.same_times(tuple(map(os.fsencode, dirs)), tuple(times))
    assert got is want
    return want


@settings(max_examples=60, deadline=None)
@given(
    shifts=st.lists(st.sampled_from([0, 0, 0, 1, -1, 10**9]), min_size=0, max_size=4),
    gone=st.sets(st.integers(0, 3)),
)
def test_the_c_look_agrees_with_the_reference(
    tmp_path_factory: pytest.TempPathFactory, shifts: list[int], gone: set[int]
) -> None:
    root = tmp_path_factory.mktemp("dirs")
    dirs = [str(root / f"d{i}") for i in range(len(shifts))]
    times = []
    for i, (folder, shift) in enumerate(zip(dirs, shifts, strict=True)):
        os.mkdir(folder)
        times.append(os.stat(folder).st_mtime_ns + shift)
        if i in gone:
            os.rmdir(folder)
            Path(folder).write_bytes(b"")  # a file where the directory was: its own time
            times[-1] = os.stat(folder).st_mtime_ns + shift
            os.unlink(folder)  # then nothing: cannot be looked at
    expect = all(s == 0 for s in shifts) and not gone & set(range(len(dirs)))
    assert _both(dirs, times) is expect


def test_names_no_directory_has(tmp_path: Path) -> None:
    t = os.stat(tmp_path).st_mtime_ns
    assert _both([str(tmp_path)], [t])
    assert not _both([str(tmp_path / "missing")], [t])
    assert not _both([str(tmp_path) + "\udcff"], [t])  # undecodable, not there
    assert dirtimes.same_times((os.fsencode(str(tmp_path)) + b"\0x",), (t,)) is False
    assert _both([], [])
    with pytest.raises(ValueError, match="as many"):
        dirtimes.same_times((b"/",), ())
    with pytest.raises(TypeError):
        dirtimes.same_times([b"/"], [t])


def test_a_store_looks_through_the_c_form_where_it_is_built(tmp_path: Path) -> None:
    """A settled walk, then the directory changed: the store's look says so by either form."""
    (tmp_path / "a.sow").write_bytes(b"")
    past = os.stat(tmp_path).st_mtime_ns - 60 * 10**9
    os.utime(tmp_path, ns=(past, past))
    files = TopicFiles()
    files.changed(str(tmp_path))
    files.changed(str(tmp_path))  # the second walk sees the same settled directories
    if not os.environ.get("SOWLIB_PURE_PYTHON"):
        assert NATIVE_SAME_TIMES is dirtimes.same_times
    assert files.unchanged()
    (tmp_path / "b.sow").write_bytes(b"")
    assert not files.unchanged()
