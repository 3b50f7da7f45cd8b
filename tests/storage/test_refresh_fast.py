"""A read-only log's refresh (which reads new records out of its map without looking at
the file, nor at all when a store's look found its directory unchanged) against its
reference ``refresh_reference`` (which looks at the file first): two followers of one
writer must find the same records, and both must learn of a replaced file in the same
refresh."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sowlib.storage import AppendLog, EntryList, FileSystem, RecordKind
from sowlib.storage.entries import NATIVE_TAIL_RUN
from sowlib.storage.format import HEAD_BYTES, encode_record
from sowlib.storage.reader import SEAL, seal_end, written_at
from sowlib.store_files import TopicFiles

from .conftest import open_log, put, replay

KEYS = st.sampled_from(["a", "b", "c"])


def _compact(log: AppendLog) -> None:
    """Compact keeping each key's latest PUT."""
    latest = {rec.key: rec.offset for rec in log.scan()}
    log.compact(lambda rec: latest[rec.key] == rec.offset and rec.kind is RecordKind.PUT)


def _same(fast: EntryList | None, ref: EntryList | None) -> None:
    assert (fast is None) == (ref is None)
    if fast is not None and ref is not None:
        assert fast.offsets.tolist() == ref.offsets.tolist()
        assert fast.words == ref.words
        assert fast.others == ref.others
        assert fast.end == ref.end
        assert list(fast) == list(ref)
        if fast.plain is not None:  # the one-call path: its lists are the same records
            end, offsets, words, sizes, seq, _payloads = fast.plain
            assert (end, offsets, words) == (ref.end, ref.offsets.tolist(), ref.words)
            assert (sizes, seq) == (ref.sizes().tolist(), ref.seq_at(len(ref) - 1))
            assert not ref.others


class FastVsReference(RuleBasedStateMachine):
    """A writer appends, is caught half way through a record, compacts and reopens; two
    read-only followers refresh, one by each method, and must agree at every step. The
    fast one refreshes as a store's topic does, after the store's look at the directory
    (whose time a rule moves back, as time passing settles it)."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="refreshfast"))
        self.path = self.dir / "t.log"
        self.writer = open_log(self.path)
        self.files = TopicFiles()
        self.files.changed(str(self.dir))
        self.fast = open_log(self.path, readonly=True, looks=self.files.looks)
        self.ref = open_log(self.path, readonly=True)
        self.applied: dict[str, bytes] = {}
        self.model: dict[str, bytes] = {}

    def teardown(self) -> None:
        for log in (self.writer, self.fast, self.ref):
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(key=KEYS, value=st.binary(max_size=600))
    def put(self, key: str, value: bytes) -> None:
        put(self.writer, key, value)
        self.model[key] = value

    @rule(word=st.integers(0, 2**64 - 1), size=st.integers(0, 900))
    def put_u64(self, word: int, size: int) -> None:  # the common form of a record
        self.writer.append_put(word, b"x" * size, 1.0)
        self.model[str(word)] = b"x" * size

    @rule(
        k=st.sampled_from([1, 10]),
        first=st.integers(0, 2**64 - 11),
        size=st.integers(0, 300),
    )
    def put_u64_run(self, k: int, first: int, size: int) -> None:
        """k common records in one batch (a publish_many of k messages): a refresh that
        finds only them takes the one-call path (``EntryList.plain``)."""
        words = list(range(first, first + k))
        payloads = [b"%d" % w + b"y" * size for w in words]
        self.writer.append_puts([str(w) for w in words], payloads, 2.0, 0.0, key_ints=words)
        self.model.update(zip(map(str, words), payloads, strict=True))

    @rule(values=st.lists(st.tuples(KEYS, st.binary(max_size=400)), max_size=12))
    def put_many(self, values: list[tuple[str, bytes]]) -> None:  # may cross slabs
        self.writer.append_many([(RecordKind.PUT, k, v, 3.0, 0.0, b"") for k, v in values])
        self.model.update(values)

    @rule(key=KEYS)
    def delete(self, key: str) -> None:
        self.writer.append(RecordKind.DELETE, key, b"", timestamp=2.0)
        self.model.pop(key, None)

    @rule(head=st.booleans(), cut=st.integers(1, 100))
    def in_flight(self, head: bool, cut: int) -> None:
        """A record being written at the end (without its first bytes, as a writer
        writes them last, or cut short): neither follower may take it."""
        end = self.writer.end_offset
        seq = self.writer.last_seq + 1
        record = encode_record(RecordKind.PUT, b"z", b"", b"p" * 200, seq, 0, 0)
        part = record[: len(record) * cut // 101] if head else record[HEAD_BYTES:]
        if end + len(record) > self.writer.file_size:
            return
        at = end if head else end + HEAD_BYTES
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.pwrite(fd, part, at)
            self.refresh()
            os.pwrite(fd, bytes(len(part)), at)  # as the writer's next append would
        finally:
            os.close(fd)

    @rule()
    def compact(self) -> None:
        _compact(self.writer)

    @rule()
    def reopen_writer(self) -> None:
        self.writer.close()
        self.writer = open_log(self.path)

    @rule()
    def settle(self) -> None:
        """Time passes: the directory's last change is long enough ago to be trusted."""
        past = time.time_ns() - 5_000_000_000
        os.utime(self.dir, ns=(past, past))

    @rule()
    def refresh(self) -> None:
        got: list[EntryList | None] = []

        fast_log = self.fast

        class Topic:
            def refresh(self) -> int:
                got.append(fast_log.refresh())
                return 0

        _, walk = self.files.refresh_all(str(self.dir), (Topic(),))
        if walk:
            self.files.changed(str(self.dir))
        fast, ref = got[0], self.ref.refresh_reference()
        _same(fast, ref)
        if fast is None:
            for log in (self.fast, self.ref):
                log.adopt(open_log(self.path, readonly=True))
            self.applied = replay(self.fast.scan())
        else:
            if fast.plain is not None:
                assert fast.plain[5] == [self.ref.read(off).payload for off in fast.plain[1]]
            # what the subscribers of a followed topic get, unchecked: the checked reads
            assert fast.records(str(self.path)) == [self.ref.read(off) for off in fast.offsets]
            replay((self.fast.read(off) for off in fast.offsets), self.applied)

    @invariant()
    def followers_agree(self) -> None:
        for field in ("end_offset", "last_seq", "record_count", "file_size"):
            assert getattr(self.fast, field) == getattr(self.ref, field), field
        assert replay(self.fast.scan()) == replay(self.ref.scan()) == self.applied


FastVsReference.TestCase.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)
test_fast_refresh_agrees_with_its_reference = FastVsReference.TestCase


def test_a_refresh_after_records_and_a_compaction_reports_the_new_file(tmp_path: Path) -> None:
    """Records appended, then the file compacted, before one refresh: the follower is
    told of the new file (the writer's seal), not given the old file's records."""
    path = tmp_path / "t.log"
    writer = open_log(path)
    reader = open_log(path, readonly=True)
    try:
        for i in range(5):
            put(writer, f"k{i % 2}", str(i).encode())
        _compact(writer)
        put(writer, "after", b"1")
        assert reader.refresh() is None
        assert reader.end_offset == reader.header_len  # nothing taken from the old file
        reader.adopt(open_log(path, readonly=True))
        assert replay(reader.scan()) == {"k0": b"4", "k1": b"3", "after": b"1"}
        got = reader.refresh()
        assert got is not None
        assert len(got) == 0
    finally:
        writer.close()
        reader.close()


def test_a_seal_left_by_a_crash_before_the_rename_is_a_torn_tail(tmp_path: Path) -> None:
    """A writer that sealed its file and died before replacing it: followers find
    nothing new, and the next writer zeroes the seal and appends over it."""
    path = tmp_path / "t.log"
    writer = open_log(path)
    put(writer, "a", b"1")
    end = writer.end_offset
    reader = open_log(path, readonly=True)
    mapped = writer.mapped
    assert mapped is not None
    seal_end(mapped, end)
    assert written_at(mapped, end, writer.file_size)
    assert mapped[end : end + len(SEAL)] == SEAL
    got = reader.refresh()
    assert got is not None
    assert len(got) == 0
    writer.close()
    again = open_log(path)
    try:
        assert again.end_offset == end
        assert again.report.truncated_bytes == len(SEAL)
        put(again, "b", b"2")
        got = reader.refresh()
        assert got is not None
        assert [reader.read(off).key for off in got.offsets] == ["b"]
    finally:
        again.close()
        reader.close()


class _NoRename(FileSystem):
    def rename(self, src: str, dst: str) -> None:
        raise OSError("injected rename failure")


def test_a_compaction_that_fails_at_the_rename_unseals(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    open_log(path).close()
    writer = open_log(path, fs=_NoRename())
    reader = open_log(path, readonly=True)
    try:
        put(writer, "a", b"1")
        with pytest.raises(OSError, match="injected"):
            _compact(writer)
        mapped = writer.mapped
        assert mapped is not None
        assert not written_at(mapped, writer.end_offset, writer.file_size)
        got = reader.refresh()
        assert got is not None
        assert len(got) == 1
        put(writer, "b", b"2")
        got = reader.refresh()
        assert got is not None
        assert [reader.read(off).key for off in got.offsets] == ["b"]
    finally:
        writer.close()
        reader.close()


@pytest.mark.parametrize("k", [1, 10])
def test_a_run_of_common_records_is_taken_in_one_call(tmp_path: Path, k: int) -> None:
    """k common records then nothing written: the refresh gives them as lists (where
    the C form is built), the same records its reference finds; a record of another
    form after them sends the next refresh down the general walk."""
    path = tmp_path / "t.log"
    writer = open_log(path)
    fast, ref = open_log(path, readonly=True), open_log(path, readonly=True)
    try:
        for round_ in range(3):
            words = list(range(round_ * k, round_ * k + k))
            writer.append_puts([str(w) for w in words], [b"{}"] * k, 1.0, 0.0, key_ints=words)
            got, want = fast.refresh(), ref.refresh_reference()
            _same(got, want)
            assert got is not None
            assert (got.plain is not None) == (NATIVE_TAIL_RUN is not None)
            assert len(got) == k
        put(writer, "a", b"v")
        writer.append_puts(["7"], [b"{}"], 1.0, 0.0, key_ints=[7])
        got, want = fast.refresh(), ref.refresh_reference()
        _same(got, want)
        assert got is not None
        assert got.plain is None
        assert len(got) == 2
        assert fast.last_seq == ref.last_seq == writer.last_seq
    finally:
        for log in (writer, fast, ref):
            log.close()


def test_a_refresh_finding_nothing_new_gives_an_empty_list_at_the_end(tmp_path: Path) -> None:
    """Nothing new: an empty list ending where the records end, each time (one list per
    map, handed out again); the records written next come in a list of their own."""
    path = tmp_path / "t.log"
    files = TopicFiles()
    writer = open_log(path)
    put(writer, "a", b"1")
    past = time.time_ns() - 5_000_000_000
    os.utime(tmp_path, ns=(past, past))
    files.changed(str(tmp_path))
    files.changed(str(tmp_path))  # the second walk of the same directories settles
    reader = open_log(path, readonly=True, looks=files.looks)
    try:
        firsts: list[EntryList | None] = []

        class Topic:
            def refresh(self) -> int:
                firsts.append(reader.refresh())
                return 0

        for _ in range(3):
            assert files.refresh_all(str(tmp_path), (Topic(),)) == (0, False)
        for got in firsts:
            assert got is not None
            assert len(got) == 0
            assert got.plain is None
            assert got.end == reader.end_offset == writer.end_offset
        writer.append_put(7, b"x", 1.0)
        files.refresh_all(str(tmp_path), (Topic(),))
        new = firsts[-1]
        assert new is not None
        assert [rec.payload for rec in new.records()] == [b"x"]
        assert all(len(got) == 0 for got in firsts[:-1] if got is not None)
    finally:
        reader.close()
        writer.close()
