"""``AppendLog``: one memory-mapped, append-only file of framed records.

The file grows in slabs; opening runs the recovery rule; read-only openers follow the tail
with ``refresh``. Not thread-safe: the topic layer serialises every call. Imports only
``sowlib.errors`` and sibling storage modules (never ``expr``, ``codecs`` or ``topic``).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import weakref
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import islice
from operator import ge

from sowlib.errors import (
    ArgumentError,
    ConfigError,
    CorruptRecordError,
    FormatVersionError,
    ReadOnlyError,
    StoreNotFoundError,
    UnsupportedOperationError,
)
from sowlib.storage.bell import Bell
from sowlib.storage.checkpoint import Checkpoint, read_checkpoint, write_checkpoint
from sowlib.storage.compaction import (
    PAGE,
    Kept,
    NewFile,
    copy_kept,
    counted,
    create_log,
    install,
    remove_leftovers,
    write_log_file,
)
from sowlib.storage.format import (
    COMMIT_SLOT,
    HEAD_BYTES,
    MAGIC,
    RECORD_HEADER,
    FileHeader,
    LogRecord,
    RecordKind,
    commit_slot_offset,
    decode_header,
    encode_commit,
    encode_header,
    record_problem,
)
from sowlib.storage.framing import (
    BatchItem,
    ScanEntry,
    frame_batch,
    frame_one,
    frame_put_u64,
    frame_puts,
    walk_records,
)
from sowlib.storage.fs import FileSystem, Progress, open_regular, os_errors, storage_error
from sowlib.storage.lock import lock_fd
from sowlib.storage.looks import DirectoryLooks
from sowlib.storage.reader import LogReader, seal_end
from sowlib.storage.recovery import RecoveryReport, recover, recover_live
from sowlib.storage.walk import EntryList

__all__ = ["MIN_SLAB_SIZE", "SLAB_HEADROOM", "AppendLog", "ScanEntry"]

MIN_SLAB_SIZE = 4096
"""Smallest accepted ``slab_size``."""
SLAB_HEADROOM = 64
"""A record may use at most ``slab_size - SLAB_HEADROOM`` bytes."""


def _seq_at(buf: mmap.mmap, offset: int) -> int:
    seq: int = RECORD_HEADER.unpack_from(buf, offset)[5]
    return seq


class AppendLog(LogReader):
    """An append-only log of PUT / DELETE / EXPIRE records in one memory-mapped file.

    Opening an existing file reads ``meta`` from its header (the ``meta`` argument is then
    ignored); a missing file is created when ``meta`` is given. A writer holds an exclusive
    ``flock`` on the file, runs recovery (zeroing a torn tail) and removes leftover temp
    files; a read-only opener never modifies anything (a partial tail is "not written yet").
    An append that returned survives the process being killed; ``flush`` (or ``sync=True``)
    makes it survive power loss. Not thread-safe.

    Args:
        path: the log file.
        meta: header bytes for a new file (the topic configuration).
        slab_size: growth increment; also bounds one record (slab_size - 64 bytes).
        readonly: open for reading only (any number of readers may follow one writer).
        sync: flush after every append / append_many.
        fs: the durability seam (tests inject failures).
        looks: a read-only store's looks at its directories (``LogReader.refresh``).
    Raises:
        StoreNotFoundError: the file does not exist and cannot be created (read-only, no
            meta); also a ``FileNotFoundError``.
        StorePathError: the file cannot be opened (permissions, a symlink...).
        StoreFullError: no room to create the file or reserve its blocks.
        FormatVersionError: not a sowlib log, or an unknown version.
        CorruptRecordError: a damaged record has intact records after it (offset given).
        StoreLockedError: another writer has the file open.

    Example:
        >>> log = AppendLog(path, meta=b"{}")  # doctest: +SKIP
        >>> log.append(RecordKind.PUT, "k1", b"payload", timestamp=1.5).seq  # doctest: +SKIP
        1
    """

    meta: bytes
    generation: int
    last_seq: int
    report: RecoveryReport

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        meta: bytes | None = None,
        slab_size: int = 1 << 20,
        readonly: bool = False,
        sync: bool = False,
        fs: FileSystem | None = None,
        looks: DirectoryLooks | None = None,
    ) -> None:
        if slab_size < MIN_SLAB_SIZE:
            raise ConfigError("slab_size", f"{slab_size} is below the minimum {MIN_SLAB_SIZE}")
        self.path = os.fspath(path)
        self.readonly = readonly
        self._sync = sync
        self._fs = fs if fs is not None else FileSystem()
        self.looks = looks if readonly else None
        self._slab = slab_size
        self._limit = slab_size - SLAB_HEADROOM
        self.mm: mmap.mmap | None = None
        self._fd = -1
        self.epoch: object | None = None
        self._ckpt: tuple[bytes, int] | None = None
        # Entries the open verified, waiting for the first scan_entries from their start
        # (start, end, entries); the list handed out is cleared when the epoch ends.
        self._pending: tuple[int, int, EntryList] | None = None
        self._handed: weakref.ref[EntryList] | None = None
        self._dirty = -1
        self._verified_from = 0
        self._commit_at = 0
        self._committed = (0, 0)  # (counter, end) of the newest commit slot
        self.bell = Bell(os.path.dirname(self.path) or ".")  # rung after appends
        if not readonly and meta is not None and not os.path.lexists(self.path):
            create_log(self._fs, self.path, bytes(meta), slab_size)
        flags = os.O_RDONLY if readonly else os.O_RDWR
        try:
            self._fd = open_regular(self.path, flags, "open the log")
        except FileNotFoundError:
            raise StoreNotFoundError(self.path) from None
        try:
            if not readonly:
                lock_fd(self._fd, self.path)
                remove_leftovers(self._fs, self.path)
            self._open_mapped()
        except BaseException:
            self._release()
            raise

    # ------------------------------------------------------------------ opening

    def _open_mapped(self) -> None:
        st = os.fstat(self._fd)
        if st.st_size == 0:
            raise FormatVersionError(self.path, b"", MAGIC)
        if not self.readonly:
            # A mapped page the file system cannot back is SIGBUS at the write: make sure
            # the whole file has its blocks (a file copied sparse, say) before mapping it.
            with os_errors(self.path, "reserve space for", st.st_size):
                self._fs.allocate(self._fd, 0, st.st_size)
        access = mmap.ACCESS_READ if self.readonly else mmap.ACCESS_WRITE
        with os_errors(self.path, "map"):
            mm = mmap.mmap(self._fd, st.st_size, access=access)
            self._set_map(mm)
        self._size, self._ino = st.st_size, (st.st_dev, st.st_ino)
        header = decode_header(mm, st.st_size, self.path)
        if header.committed > self._size:
            # A live writer grew the file and committed past the size seen above; the file
            # only grows, so it now covers the committed end.
            st = os.fstat(self._fd)
            with os_errors(self.path, "map"):
                mm = mmap.mmap(self._fd, st.st_size, access=access)
            self._set_map(mm)
            self._size = st.st_size
        self._use_header(header)
        ckpt = read_checkpoint(self._fs, self.path, mm, self._size, header, not self.readonly)
        if ckpt is not None:
            self._ckpt = (ckpt.blob, ckpt.end_offset)
        start = ckpt.end_offset if ckpt else header.header_len
        # Everything before a valid checkpoint's end was complete at a clean close too.
        committed = max(header.committed, start)
        try:
            found = (
                recover_live(mm, start, self._size, committed)
                if self.readonly
                else recover(mm, start, self._size, committed)
            )
        except CorruptRecordError as exc:  # from decoding a record's fields: name the file
            raise CorruptRecordError(self.path, exc.offset, exc.reason) from None
        if found.corrupt:
            reason = record_problem(mm, found.end, self._size) or "zeroed record"
            if found.end < committed and found.next_valid is None:
                reason += f" (before the committed end {committed})"
            raise CorruptRecordError(self.path, found.end, reason)
        self._end = found.end
        self._verified_from = start
        self._pending = (start, found.end, found.entries)
        cut = 0
        if found.garbage_end > found.end and not self.readonly:
            cut = found.garbage_end - found.end
            mm[found.end : found.garbage_end] = bytes(cut)  # zero the torn tail, durably
            self._dirty = found.end
            self.flush()
        self._records = found.records + (ckpt.records if ckpt else 0)
        self._last_off = found.last_offset or (ckpt.last_record_offset if ckpt else 0)
        tail_seq = _seq_at(mm, self._last_off) if self._last_off else 0
        self.last_seq = max(header.base_seq, tail_seq, ckpt.last_seq if ckpt else 0)
        self.report = RecoveryReport(self._records, self._end, cut, ckpt is not None)
        self.epoch = object()
        self._set_map(mm, warm=True)  # populate its page tables in the background

    def _use_header(self, header: FileHeader) -> None:
        self.meta = header.meta
        self.generation = header.generation
        self._header_len = header.header_len
        self._commit_at = header.commit_at
        self._committed = (header.commit_counter, header.committed)

    @property
    def committed_end(self) -> int:
        """End of the records the header records as complete (a clean close, a ``flush``,
        a compaction); a bad record before it is corruption, never a torn write."""
        return self._committed[1]

    def __enter__(self) -> AppendLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.mm is None else f"end={self._end} last_seq={self.last_seq}"
        mode = "readonly" if self.readonly else "writer"
        return f"AppendLog({self.path!r}, {mode}, {state})"

    # ------------------------------------------------------------------ writing

    def _writable(self, operation: str) -> mmap.mmap:
        mm = self._live()
        if self.readonly:
            raise ReadOnlyError(f"log {self.path}", operation)
        return mm

    def _grow(self, needed: int) -> mmap.mmap:
        size = -(-needed // self._slab) * self._slab
        old = self._size
        try:
            # Reserve the blocks before mapping them: a full disk is an error here, not a
            # SIGBUS when a page of a hole is first written.
            self._fs.allocate(self._fd, old, size - old)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self._fs.truncate(self._fd, old)  # give back what was reserved
            raise storage_error(exc, self.path, "grow", size - old) from exc
        # The old map is not closed: a suspended scan() may still read from it; it is
        # unmapped when its last reference goes.
        with os_errors(self.path, "map"):
            mm = mmap.mmap(self._fd, size, access=mmap.ACCESS_WRITE)
        self._set_map(mm)
        self._size = size
        return mm

    def _commit(
        self, mm: mmap.mmap, data: bytes, last: int, count: int, seq: int, tail: bytes = b""
    ) -> None:
        """Write ``data + tail`` at the end offset (growing once if needed) and advance the
        state (``last``: the offset of the last record written).

        The first record's first HEAD_BYTES go in last: until then the batch starts with
        zeros, which recovery knows as a write in flight however much of it is in place.
        """
        off = self._end
        mid = off + len(data)
        end = mid + len(tail)
        if end > self._size:
            mm = self._grow(end)
        mm[off + HEAD_BYTES : mid] = memoryview(data)[HEAD_BYTES:]
        if tail:
            mm[mid:end] = tail
        mm[off : off + HEAD_BYTES] = data[:HEAD_BYTES]
        if self._dirty < 0:
            self._dirty = off
        self._end, self._last_off = end, last
        self._records += count
        self.last_seq = seq
        if self._sync:
            self.flush()
        self.bell.ring()  # wake readers in other processes (sowlib.storage.bell)

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
    ) -> LogRecord:
        """Append one record; O(len(payload)), amortised O(1) file growth.

        Args:
            kind: PUT, DELETE or EXPIRE.
            key: the SOW key.
            payload: message bytes.
            timestamp: seconds since the epoch (kept to the microsecond).
            expiration: absolute expiry in seconds, 0.0 for never.
            correlation_id: opaque bytes.
            seq: explicit sequence number; defaults to ``last_seq + 1``.
        Returns:
            The record as stored (times rounded to microseconds).
        Raises:
            UnsupportedOperationError: ``seq`` is not above ``last_seq``, or a bad kind.
            RecordTooLargeError: the framed record exceeds ``slab_size - 64``.
            ReadOnlyError, StoreClosedError: not writable.
        """
        mm = self.mm
        if mm is None or self.readonly:
            mm = self._writable("append")
        if seq is None:
            seq = self.last_seq + 1
        elif seq <= self.last_seq:
            raise UnsupportedOperationError(
                "append", f"seq {seq} is not above the log's last seq {self.last_seq}"
            )
        off = self._end
        data, rec = frame_one(
            kind, key, payload, timestamp, expiration, correlation_id, seq, off, self._limit
        )
        self._commit(mm, data, off, 1, seq)
        return rec

    def append_put(self, key: int, payload: bytes, timestamp: float) -> tuple[int, int, int]:
        """:meth:`append` of a PUT of u64 ``key`` (a content key) with no expiration or
        correlation id, as ``(offset, framed size, seq)``, no :class:`LogRecord` made: the
        per-message publish path (same bytes as :meth:`append` of ``str(key)``)."""
        mm = self.mm
        if mm is None or self.readonly:
            mm = self._writable("append")
        seq, off = self.last_seq + 1, self._end
        body, digest = frame_put_u64(key, payload, round(timestamp * 1e6), seq, self._limit)
        self._commit(mm, body, off, 1, seq, digest)
        return off, len(body) + 8, seq

    def append_many(self, items: Iterable[BatchItem]) -> list[LogRecord]:
        """Append a batch with one growth check, one write and one sync; O(total bytes).

        Args:
            items: ``(kind, key, payload, timestamp, expiration, correlation_id)`` tuples;
                seqs are assigned ``last_seq + 1, + 2, ...``.
        Returns:
            The stored records, in order.
        Raises:
            UnsupportedOperationError: an unknown kind (nothing of the batch is written).
            RecordTooLargeError: one record is too large (nothing of the batch is written).
        """
        mm = self._writable("append")
        data, records = frame_batch(items, self.last_seq, self._end, self._limit)
        if records:
            self._commit(mm, data, records[-1].offset, len(records), records[-1].seq)
        return records

    def append_puts(
        self,
        keys: Sequence[str],
        payloads: Sequence[bytes],
        timestamp: float,
        expiration: float,
        key_ints: Sequence[int] | None = None,
    ) -> tuple[list[int], list[int], int]:
        """Append PUT records sharing a timestamp and expiration; O(total bytes).

        The publish path's batch append: one framing loop, one write, one sync.

        Args:
            keys: the SOW keys, one per payload.
            payloads: message bytes.
            timestamp: seconds since the epoch (kept to the microsecond).
            expiration: absolute expiry in seconds, 0.0 for never.
            key_ints: the keys as integers when every key is a content key (see
                ``framing.frame_puts``).
        Returns:
            ``(offsets, framed sizes, seq of the first record)``; record ``i`` has seq
            ``first + i``.
        Raises:
            RecordTooLargeError: one record is too large (nothing of the batch is written).
        """
        mm = self._writable("append")
        first = self.last_seq + 1
        data, offsets, sizes = frame_puts(
            keys, payloads, timestamp, expiration, self.last_seq, self._end, self._limit, key_ints
        )
        if offsets:
            self._commit(mm, data, offsets[-1], len(offsets), first + len(offsets) - 1)
        return offsets, sizes, first

    def flush(self) -> None:
        """msync the written range and fsync the file (power-loss durability); no-op read-only.

        Then records the end as committed in the header (see ``committed_end``): written
        only once the records before it are durable, and itself made durable by the next
        flush or the close.

        Raises:
            StoreClosedError: the log is closed.
            StorePathError: from msync/fsync (the data is still in the page cache).
        """
        mm = self._live()
        if self.readonly:
            return
        with os_errors(self.path, "flush"):
            if self._dirty >= 0:
                lo = self._dirty - self._dirty % PAGE
                self._fs.msync(mm, lo, self._end - lo)
                self._dirty = -1
            self._fs.fsync(self._fd)
        self._write_commit(mm)

    def _write_commit(self, mm: mmap.mmap) -> bool:
        """Record ``_end`` in the older commit slot; returns whether anything changed."""
        counter, end = self._committed
        if end >= self._end or not self._commit_at:
            return False
        counter += 1
        at = commit_slot_offset(self._commit_at, counter)
        mm[at : at + COMMIT_SLOT.size] = encode_commit(counter, self._end)
        self._committed = (counter, self._end)
        return True

    # ------------------------------------------------------------------ maintenance

    def compact(
        self,
        keep: Callable[[LogRecord], bool] | Collection[int],
        meta: bytes | None = None,
        progress: Progress | None = None,
    ) -> dict[int, int]:
        """Rewrite the log keeping the records ``keep`` accepts; O(file size).

        ``keep`` is a predicate over every record, or the offsets of the records to keep
        (then only those are read: O(kept), the topic layer's path).

        Kept records are copied verbatim and checked (checksum included) as they are: a
        damaged one stops the compaction before anything is installed. The header gets the
        next generation and ``meta`` (default: unchanged); the file is sized to its used
        bytes rounded up to a page. ``sowlib.storage.compaction`` has the crash rule.
        ``progress(copied, total)`` is called as kept records are copied (records).

        Returns:
            ``{old_offset: new_offset}`` for every kept record.
        Raises:
            CorruptRecordError: a kept record is damaged (the log is unchanged; run
                ``sowlib verify --repair``).
            StoreFullError: no room for the new file (the log is unchanged).
            StorePathError: a step failed. Before the rename the log is unchanged; if the
                directory fsync fails after it, the log already uses the new file
                (``generation`` changed) and the caller must rebuild its offsets from
                ``scan()``.
        """
        mapping: dict[int, int] = {}
        if callable(keep):
            self._writable("compact")
            self._verify_from(self._header_len)
            offsets = [r.offset for r in walk_records(self, self._header_len) if keep(r)]
        else:
            offsets = sorted(keep)
        self._rewrite(offsets, mapping, meta, progress)
        return mapping

    def compact_sorted(self, offsets: list[int], progress: Progress | None = None) -> list[int]:
        """:meth:`compact` keeping the records at ``offsets`` (ascending); returns the new
        offset of each, in the same order (what ``compact``'s mapping gives of them,
        without making it)."""
        if any(map(ge, offsets, islice(offsets, 1, None))):
            raise ArgumentError("offsets", offsets[:8], "record offsets in ascending order")
        news: list[int] = []
        self._rewrite(offsets, news, None, progress)
        return news

    def _rewrite(
        self, offsets: list[int], mapping: Kept, meta: bytes | None, progress: Progress | None
    ) -> None:
        """Copy the records at ``offsets`` (ascending) to a new file, filling ``mapping``
        (``compaction.copy_kept``), and install it (the body of :meth:`compact`)."""
        mm = self._writable("compact")
        meta = self.meta if meta is None else bytes(meta)
        header = encode_header(self.generation + 1, self._fs.time(), self.last_seq, meta)
        tmp = self.path + ".compact.tmp"
        if offsets and not (self._header_len <= offsets[0] and offsets[-1] < self._end):
            raise CorruptRecordError(self.path, offsets[0], "offset outside the records")
        kept = offsets if progress is None else counted(offsets, len(offsets), progress)
        chunks = copy_kept(mm, kept, len(header), mapping, self._end, self.path)
        new = write_log_file(self._fs, tmp, header, chunks, PAGE)
        news = mapping.values() if isinstance(mapping, dict) else mapping
        last = next(reversed(news)) if news else 0
        new = NewFile(new.fd, new.end, new.size, len(mapping), last)
        seal_end(mm, self._end)  # followers reading the old file look at the path
        try:
            install(self._fs, tmp, self.path)
        except BaseException:
            if os.fstat(new.fd).st_nlink == 0 or os.path.exists(tmp):
                seal_end(mm, self._end, sealed=False)
                os.close(new.fd)  # the rename did not happen: keep the old file
            else:
                self._swap(new)
            raise
        self._swap(new)

    def _swap(self, new: NewFile) -> None:
        self._end_epoch()
        old_mm, old_fd = self.mm, self._fd
        self._fd = new.fd
        mm = mmap.mmap(new.fd, new.size, access=mmap.ACCESS_WRITE)
        self._end, self._records, self._last_off = new.end, new.records, new.last_offset
        self._set_map(mm, warm=True)
        st = os.fstat(new.fd)
        self._size, self._ino = new.size, (st.st_dev, st.st_ino)
        self._use_header(decode_header(mm, new.size, self.path))
        self._verified_from = self._header_len  # every record was checked as it was copied
        self._dirty, self._ckpt, self.epoch = -1, None, object()
        self._fs.close_replaced(old_fd, old_mm)  # (its last link: freeing it takes a while)

    # ------------------------------------------------------------------ closing

    def close(self, checkpoint: bytes | None = None) -> None:
        """Flush and close; idempotent. A writer given ``checkpoint`` saves it beside the log.

        The side file ``<path>.ckpt`` is written atomically (temp + fsync + rename) and
        tagged with the generation, end offset, record count and last seq. The end is
        committed in the header first, durably. The file and its lock are released whatever
        fails (a second ``close`` is a no-op).

        Raises:
            StoreFullError, StorePathError: a flush or the checkpoint failed (every
                appended record is still in the page cache: it survives the process).
        """
        mm = self.mm
        if mm is None:
            return
        try:
            if not self.readonly:
                self.flush()
                with os_errors(self.path, "flush"):
                    self._fs.msync(mm, 0, min(PAGE, self._size))  # the commit slot's page
                    self._fs.fsync(self._fd)
                if checkpoint is not None:
                    ckpt = Checkpoint(
                        self.generation,
                        self._end,
                        self._records,
                        self.last_seq,
                        self._last_off,
                        bytes(checkpoint),
                    )
                    write_checkpoint(self._fs, self.path, ckpt)
        finally:
            self._release()

    def __del__(self) -> None:
        # An abandoned writer must not keep its flock (and fd) until interpreter exit.
        if getattr(self, "mm", None) is not None:
            self._release()

    def _release(self) -> None:
        self.bell.close()
        self._end_epoch()
        mm, self.epoch = self.mm, None
        self._set_map(None)
        if mm is not None:
            mm.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
