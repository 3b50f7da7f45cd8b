"""The read side of ``AppendLog``: ``read``, ``scan``, ``refresh``, ``adopt``, ``check``.

A mixin over the attributes ``AppendLog`` maintains (its map, end offset, epoch...), kept
apart so each module stays small. Imports only ``sowlib.errors`` and sibling storage
modules (never ``log``).
"""

from __future__ import annotations

import itertools
import mmap
import os
import re
import struct
import weakref
from collections.abc import Callable, Iterator

from sowlib.errors import ArgumentError, CorruptRecordError, StoreClosedError
from sowlib.storage.entries import NATIVE_TAIL_RUN, verify_columns
from sowlib.storage.format import (
    KIND_MASK,
    KINDS,
    MARKER_BYTES,
    PREFIX,
    RECORD_HEADER,
    RECORD_MARKER,
    RECORD_OVERHEAD,
    LogRecord,
    decode_fields,
    decode_header,
    decode_record,
    record_problem,
)
from sowlib.storage.fs import close_replaced, os_errors, storage_error
from sowlib.storage.looks import DirectoryLooks
from sowlib.storage.native import NATIVE_READ_PUT
from sowlib.storage.recovery import RecoveryReport, check_records, garbage_end
from sowlib.storage.walk import (
    EntryList,
    PutFields,
    ScanEntry,
    read_put,
    read_puts,
    verify_entries,
    walk_entries,
    walk_records,
)
from sowlib.storage.warm import Warmer

__all__ = ["SEAL", "LogReader", "seal_end", "written_at"]

_LENGTH = struct.Struct("<I")  # a record's first field
#: What a writer writes at the end of its records before it renames another file over
#: its own (a compaction): a length no record has, which sends a follower reading the
#: old file to the file system (:meth:`LogReader.refresh`). Recovery sees it as a torn
#: tail (a crash before the rename), which the next writer zeroes.
SEAL = _LENGTH.pack(0xFFFFFFFF)


def written_at(mm: mmap.mmap, offset: int, size: int) -> bool:
    """Whether a record may start at ``offset`` (the end of the records read): its
    length field there is not zero (a writer writes a batch's first bytes last; a
    :data:`SEAL`), or the map ends before it could be read."""
    return offset + _LENGTH.size > size or _LENGTH.unpack_from(mm, offset)[0] != 0


def seal_end(mm: mmap.mmap, end: int, sealed: bool = True) -> None:
    """Write :data:`SEAL` at ``end`` (the writer's end, before replacing its file), or
    zeros again (``sealed=False``: the file was not replaced); nothing where the file
    ends first (a follower then looks at the file system anyway)."""
    if end + len(SEAL) <= len(mm):
        mm[end : end + len(SEAL)] = SEAL if sealed else bytes(len(SEAL))


class LogReader:
    """Reading methods of :class:`~sowlib.storage.log.AppendLog` (not used on its own)."""

    path: str
    readonly: bool
    last_seq: int
    #: The file's current memory map, None once closed. A map that growth replaced
    #: is not closed (it maps the same file, so what it holds stays right); one that
    #: compaction or closing replaced is closed.
    mm: mmap.mmap | None
    _fd: int
    _size: int
    _ino: tuple[int, int]
    _end: int
    _header_len: int
    _records: int
    _last_off: int
    #: An object that changes when the log is closed or compacted: walks started
    #: before then stop (read on every record of a walk, so a plain attribute).
    epoch: object | None
    _ckpt: tuple[bytes, int] | None
    # Entries the open verified, waiting for the first scan_entries from their start:
    # (start, end, entries); the list handed out is cleared when the epoch ends.
    _pending: tuple[int, int, EntryList] | None
    _handed: weakref.ref[EntryList] | None
    # Records from here to the end were checked (checksums) by the open, a refresh or
    # the writer itself; a valid checkpoint lets the open trust the records before it.
    _verified_from: int
    # The header's fields, and what the open found (the log's own; :meth:`adopt` takes
    # another's).
    meta: bytes
    generation: int
    _commit_at: int
    _committed: tuple[int, int]
    _dirty: int
    report: RecoveryReport
    # Called with the map each time the log maps the file anew or closes it (watch_map).
    _map_watchers: tuple[Callable[[mmap.mmap | None], None], ...] = ()
    #: A read-only store's looks at its directories (:mod:`sowlib.storage.looks`), and
    #: their epoch when this log last found its file at its path.
    looks: DirectoryLooks | None = None
    _looked: object | None = None
    _none: EntryList | None = None  # what a refresh finding nothing new gives
    #: Populating the map an open or a compaction made (:mod:`sowlib.storage.warm`).
    _warmer: Warmer | None = None

    def watch_map(self, watcher: Callable[[mmap.mmap | None], None]) -> None:
        """Call ``watcher(mm)`` with the current map now, and again each time the log
        replaces it (growth, compaction, a read-only opener's refresh) or closes (None),
        before the log uses the new one: for a reader that holds the map (the C reader
        of records by key), so that it never reads one the log has replaced."""
        self._map_watchers = (*self._map_watchers, watcher)
        watcher(self.mm)

    def _set_map(self, mm: mmap.mmap | None, warm: bool = False) -> None:
        """Make ``mm`` the current map and tell every watcher; any warmer of the map it
        replaces stops first (before the caller may close that map). ``warm``: populate
        ``mm`` in the background (an open's or a compaction's map, not a growth's)."""
        warmer, self._warmer = self._warmer, None
        if warmer is not None:
            warmer.stop()
        self.mm = mm
        if warm:
            self._warmer = Warmer.start(mm, self._end)
        for watcher in self._map_watchers:
            watcher(mm)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self.mm is None

    @property
    def mapped(self) -> mmap.mmap | None:
        """The current map of the file, None once closed (an append may replace it)."""
        return self.mm

    @property
    def file_size(self) -> int:
        """Current size of the (slab-aligned) file in bytes."""
        return self._size

    @property
    def end_offset(self) -> int:
        """Offset where the next record goes (end of the last intact record)."""
        return self._end

    @property
    def record_count(self) -> int:
        """Records in the file (every kind, superseded versions included)."""
        return self._records

    @property
    def header_len(self) -> int:
        """Offset of the first record."""
        return self._header_len

    def _live(self) -> mmap.mmap:
        mm = self.mm
        if mm is None:
            raise StoreClosedError(f"log {self.path}")
        return mm

    def read(self, offset: int) -> LogRecord:
        """Return the record at ``offset`` after verifying its checksum; O(record size).

        Raises:
            CorruptRecordError: no intact record starts at ``offset``.
        """
        mm = self._live()
        if not self._header_len <= offset < self._end:
            raise CorruptRecordError(self.path, offset, "offset outside the written records")
        return decode_record(mm, offset, self._end, self.path)

    def read_puts(self, offsets: list[int]) -> list[PutFields]:
        """What :meth:`read` verifies, for the PUT records at ``offsets``; O(their bytes).

        Returns:
            ``(seq, timestamp, expiration, correlation_id, length, payload)`` per offset,
            in order; times in seconds (expiration 0.0: none), ``length`` the bytes the
            record occupies.

        Raises:
            CorruptRecordError: no intact record starts at one of ``offsets``.
        """
        mm = self._live()
        low, end = self._header_len, self._end
        for off in offsets:
            if not low <= off < end:
                raise CorruptRecordError(self.path, off, "offset outside the written records")
        native = NATIVE_READ_PUT
        if native is None:
            return read_puts(mm, offsets, end, self.path)
        path = self.path
        return [native(mm, off, end) or read_put(mm, off, end, path) for off in offsets]

    def read_payload(self, offset: int) -> bytes:
        """Return only the payload at ``offset``, without the checksum; O(len(payload)).

        Raises:
            CorruptRecordError: ``offset`` is not a record boundary.
        """
        mm, head, fields = self._fields_at(offset)
        start, size = fields[3], head[4]
        if start + size <= self._end:
            return mm[start : start + size]
        raise CorruptRecordError(self.path, offset, "not a record boundary")

    def read_put(self, offset: int) -> PutFields:
        """:meth:`read_puts` of one offset; O(record size).

        Raises:
            CorruptRecordError: no intact record starts at ``offset``.
        """
        mm, end = self.mm, self._end
        if mm is None:
            raise StoreClosedError(f"log {self.path}")
        if not self._header_len <= offset < end:
            raise CorruptRecordError(self.path, offset, "offset outside the written records")
        native = NATIVE_READ_PUT
        if native is not None and (fields := native(mm, offset, end)) is not None:
            return fields
        return read_put(mm, offset, end, self.path)

    def records_matching(
        self, pattern: re.Pattern[bytes], start: int = 0, stop: int | None = None
    ) -> list[int]:
        """Offsets of the intact records holding a match of ``pattern``, ascending.

        The regular expression runs over the written bytes from ``start`` to ``stop``
        (default: all of them) at C speed; each match is mapped to the record around
        it by searching back for the record marker, a byte UTF-8 text never holds,
        and checking that an intact record starts there and spans the match. The
        search goes on back to the first intact record that ends before the match,
        so a record-like run of bytes inside a payload adds an offset (which is never
        a live one) but never hides the record around it. Superseded and deleted
        records are included: the caller knows which are live. O(bytes searched +
        matches).
        """
        mm = self._live()
        low, end = self._header_len, self._end
        stop = end if stop is None else min(stop, end)
        found: list[int] = []
        last, last_end = -1, -1  # the innermost record the previous match fell in
        for match in pattern.finditer(mm, max(start, low), stop):
            pos = match.start()
            if last <= pos < last_end:
                continue
            probe, inner = pos, False
            while True:
                marker = mm.rfind(MARKER_BYTES, low, probe)
                if marker < 0:
                    break
                begin = marker - 4
                if begin >= low and record_problem(mm, begin, end) is None:
                    size = PREFIX.unpack_from(mm, begin)[0]
                    if begin + size <= pos:
                        break  # an intact record that ends before the match
                    found.append(begin)
                    if not inner:
                        inner, last, last_end = True, begin, begin + size
                probe = marker
        return sorted(set(found))

    def read_entry(self, offset: int) -> tuple[int, float, float, bytes, int]:
        """The header fields of the record at ``offset``, checksum verified; O(record size).

        A record trusted from a checkpoint is read here first: its fields (seq, times,
        flags) are returned only once its checksum matches.

        Returns:
            ``(seq, timestamp, expiration, correlation_id, length)``; times in seconds
            (expiration 0.0: none), ``length`` the bytes the record occupies.

        Raises:
            CorruptRecordError: no intact record starts at ``offset``.
        """
        mm = self._live()
        if not self._header_len <= offset < self._end:
            raise CorruptRecordError(self.path, offset, "offset outside the written records")
        problem = record_problem(mm, offset, self._end)
        if problem is not None:
            raise CorruptRecordError(self.path, offset, problem)
        _mm, (length, _m, _kb, _k, _p, seq, ts), (exp, corr, _key, _pos) = self._fields_at(offset)
        return seq, ts / 1e6, exp / 1e6, corr, length

    def _fields_at(
        self, offset: int
    ) -> tuple[mmap.mmap, tuple[int, ...], tuple[int, bytes, str, int]]:
        """The map, the fixed header and the variable fields of the record at ``offset``.

        Checks only that a record starts there (marker, length within the written part).
        """
        mm = self._live()
        if self._header_len <= offset <= self._end - RECORD_OVERHEAD:
            head = RECORD_HEADER.unpack_from(mm, offset)
            if head[1] == RECORD_MARKER and offset + head[0] <= self._end:
                return mm, head, decode_fields(mm, offset, head[2], head[3], self.path)
        raise CorruptRecordError(self.path, offset, "not a record boundary")

    def _start(self, start: int | None) -> int:
        mm = self._live()
        off = self._header_len if start is None else start
        if off != self._end and (
            not self._header_len <= off <= self._end - RECORD_OVERHEAD
            or PREFIX.unpack_from(mm, off)[1] != RECORD_MARKER
            or KINDS[mm[off + PREFIX.size] & KIND_MASK] is None
        ):
            raise CorruptRecordError(self.path, off, "not a record boundary")
        self._verify_from(off)
        return off

    def _verify_from(self, off: int) -> None:
        """Check the records trusted from a checkpoint before a walk decodes them; O(bytes)
        the first time, then O(1).

        Raises:
            CorruptRecordError: a record in ``[off, verified part)`` is damaged.
        """
        if off >= self._verified_from:
            return
        stop, _last, _entries = verify_entries(self._live(), off, self._verified_from)
        if stop != self._verified_from:
            problem = record_problem(self._live(), stop, self._end) or "damaged record"
            raise CorruptRecordError(self.path, stop, problem)
        self._verified_from = off

    def scan(self, start: int | None = None) -> Iterator[LogRecord]:
        """Yield records in file order from ``start`` (default: the first); O(records).

        Records were verified when they were recovered, refreshed or written, so the scan
        does not recheck checksums (``read`` and ``check`` do). Records appended while the
        iterator is suspended are yielded too.

        Raises:
            CorruptRecordError: ``start`` is not a record boundary.
            StoreClosedError: the log was closed (or compacted) while iterating.
        """
        off = self._start(start)
        self._pending = None
        return walk_records(self, off)

    def scan_entries(self, start: int | None = None) -> Iterator[ScanEntry]:
        """Yield ``(offset, kind, seq, timestamp, expiration, key, correlation_id, size)``.

        The same walk as :meth:`scan` (file order, no checksum recheck, follows appends made
        while suspended) but yields plain tuples and never copies a payload: what a caller
        rebuilding its key map on open needs. Times are float seconds, as in LogRecord;
        ``size`` is the record's framed size in bytes, what it occupies in the file
        (``read_payload`` fetches the payload). O(1) per record (no payload copy).

        The first call after an open, from the offset the open's recovery started at (the
        first record, or the checkpoint's end offset), hands out the entries recovery built
        while it verified the checksums, so a reopen reads the file once.

        Raises:
            CorruptRecordError: ``start`` is not a record boundary.
            StoreClosedError: the log was closed (or compacted) while iterating.
        """
        off = self._start(start)
        pending, self._pending = self._pending, None
        epoch = self.epoch
        if pending is None or pending[0] != off:
            return walk_entries(self, off, epoch)
        entries = pending[2]
        self._handed = weakref.ref(entries)
        return itertools.chain(entries, walk_entries(self, pending[1], epoch))

    def scan_columns(self, start: int | None = None) -> EntryList:
        """What :meth:`scan_entries` yields from ``start`` to the current end, as columns
        (a snapshot: later appends are not in it); O(records).

        The first call after an open, from the offset its recovery started at, takes the
        columns recovery built while it verified the checksums.

        Raises:
            CorruptRecordError: ``start`` is not a record boundary.
        """
        off = self._start(start)
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] == off:
            entries, off = pending[2], pending[1]
        else:
            entries = EntryList(self._live())
        for entry in walk_entries(self, off, self.epoch):
            entries.append(entry)
        return entries

    def _end_epoch(self) -> None:
        """Forget the open's entries and end an iterator still handing them out."""
        self._pending = None
        handed = self._handed() if self._handed is not None else None
        if handed is not None:
            handed.clear()
        self._handed = None

    def refresh(self) -> EntryList | None:
        """The records appended by the writer since the last refresh; O(new bytes).

        Returns:
            Their entries as columns, checksums checked (:func:`verify_columns`: the
            first record that is not intact is "not written yet"); an empty list for a
            writer, which sees its own appends; None when the file was replaced
            (compaction or repair): reopen it. :meth:`read` gives a record whole.

        [R] No system call while the map shows new records: when the bytes at the end
        hold a record's length, the records from there are verified in the current map,
        and the file is looked at (one ``stat`` of the path: replaced? grown past the
        map?) only when nothing new is mapped (and the store's look at the directory,
        :attr:`looks`, does not tell it unchanged), or when something follows the last record
        read: a record not wholly in the map, one being written, or the :data:`SEAL` a
        writer leaves before it replaces the file (then, as when the file is looked at
        first, None: the records just read are not taken). Agrees with
        :meth:`refresh_reference` (``tests/storage/test_refresh_fast.py``).

        [R] The common case, a run of common records (PUTs with a u64 key, nothing
        optional) followed by nothing written yet, is one C call (``tail_run``) whose
        lists are kept in the result (:attr:`EntryList.plain`) for the topic to apply;
        the same call says when nothing is written at the end (an empty tuple), so a
        refresh finding nothing new while the store's look found its directories
        unchanged is that call and :meth:`DirectoryLooks.unchanged_since`.
        """
        mm = self._live()
        if not self.readonly:
            return EntryList()
        end, size = self._end, self._size
        native = NATIVE_TAIL_RUN
        run = None if native is None else native(mm, end, size)
        if run:
            self._last_off = run[1][-1]
            self._end = run[0]
            self._records += len(run[1])
            if run[4] > self.last_seq:
                self.last_seq = run[4]
            return EntryList.of_run(mm, run)
        new = None
        state = (end, self._records, self._last_off, self.last_seq)
        looks = self.looks
        if run is None and written_at(mm, end, size):
            new = self._verify_new(mm)
            if new and not written_at(mm, self._end, size):
                return new
        elif looks is not None and looks.unchanged_since(self._looked):
            return self._nothing_new(mm)  # nothing mapped, and the path names this file
        try:
            if looks is not None:
                self._looked = looks.epoch  # read before the look it covers
            same = self._same_file()
        except OSError as exc:
            raise storage_error(exc, exc.filename or self.path, "refresh") from exc
        if not same:  # as if the records just read were not: the topic loads the new file
            if new:
                self._end, self._records, self._last_off, self.last_seq = state
            return None
        more = self._verify_new(self._live())
        if new:
            new.extend(more)
            return new
        return more

    def _nothing_new(self, mm: mmap.mmap) -> EntryList:
        """What :meth:`refresh` gives when nothing new is mapped: an empty list ending
        where the records read end (as :func:`verify_columns` leaves one), made once per
        map and handed out again (a refresh's caller only reads it)."""
        none = self._none
        if none is None or none.buf is not mm:
            none = self._none = EntryList(mm)
        none.end = self._end
        return none

    def refresh_reference(self) -> EntryList | None:
        """:meth:`refresh` by looking at the file first, every time (its reference)."""
        self._live()
        if not self.readonly:
            return EntryList()
        with os_errors(self.path, "refresh"):
            if not self._same_file():
                return None
        return self._verify_new(self._live())

    def _same_file(self) -> bool:
        """Whether the path still names the mapped file; maps it anew when it grew.

        Raises:
            OSError: the path cannot be looked at (other than missing).
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        if (st.st_dev, st.st_ino) != self._ino:
            return False
        if st.st_size > self._size:  # the same file: its size is the mapped file's
            self._set_map(mmap.mmap(self._fd, st.st_size, access=mmap.ACCESS_READ))
            self._size = st.st_size
        return True

    def _verify_new(self, mm: mmap.mmap) -> EntryList:
        """The intact records from the end in ``mm`` (the current map), taken as read."""
        end, new = verify_columns(mm, self._end, self._size)
        if new:
            self._last_off = new.offsets[-1]
            self._end = end
            self._records += len(new)
            self.last_seq = max(self.last_seq, RECORD_HEADER.unpack_from(mm, self._last_off)[5])
        return new

    def adopt(self, other: LogReader) -> None:
        """Continue on ``other``'s file: a read-only log whose file the writer replaced
        (:meth:`refresh` gave None), ``other`` a read-only log just opened on the file now
        at the same path. This log takes over its file, map and state as they are (a
        scan of it goes on where ``other``'s would), closes its own, and tells its map
        watchers; ``other`` is left closed. Every earlier walk of this log ends.

        Raises:
            ArgumentError: either log is not read-only, or the paths differ.
        """
        if not (self.readonly and other.readonly) or other.path != self.path:
            raise ArgumentError("other", other, "a read-only log of the same path")
        self._end_epoch()
        self._looked = None
        old_mm, old_fd = self.mm, self._fd
        self._fd, other._fd = other._fd, -1
        self._size, self._ino, self._ckpt = other._size, other._ino, other._ckpt
        self.meta, self.generation = other.meta, other.generation
        self._header_len = other._header_len
        self._commit_at, self._committed = other._commit_at, other._committed
        self._pending, other._pending = other._pending, None
        self._handed, other._handed = other._handed, None
        self._verified_from, self._end, self._records = (
            other._verified_from,
            other._end,
            other._records,
        )
        self._last_off, self.last_seq, self.report = other._last_off, other.last_seq, other.report
        self._dirty, self.epoch, other.epoch = -1, object(), None
        self._set_map(other.mm)
        self._warmer, other._warmer, other.mm = other._warmer, None, None
        if old_fd >= 0:  # (maybe the replaced file's last link: slow to free)
            close_replaced(old_fd, old_mm)
        elif old_mm is not None:
            old_mm.close()

    def check(self) -> None:
        """Assert every invariant: header, each record's checksum, increasing seqs, end.

        O(file size); backs ``SowStore.check`` and ``sowlib verify``.

        Raises:
            CorruptRecordError: a header or record fails its checks.
            AssertionError: an in-memory field disagrees with the file.
        """
        mm, path, end, size = self._live(), self.path, self._end, self._size
        header = decode_header(mm, size, path)
        if (header.generation, header.header_len) != (self.generation, self._header_len):
            raise AssertionError(f"{path}: header changed under the open log")
        count, top = check_records(mm, path, self._header_len, end)
        if count != self._records:
            raise AssertionError(f"{path}: {count} records, expected {self._records}")
        if self.last_seq < max(top, header.base_seq):
            raise AssertionError(f"{path}: last_seq {self.last_seq} below {top}")
        if os.fstat(self._fd).st_size < size:
            raise AssertionError(f"{path}: file shorter than its mapping")
        if not self.readonly and garbage_end(mm, end, size) != end:
            raise AssertionError(f"{path}: non-zero bytes after end offset {end}")

    def load_checkpoint(self) -> tuple[bytes, int] | None:
        """Return ``(blob, end_offset_at_close)`` from the clean-close checkpoint, if valid.

        The caller restores its state from ``blob`` and replays ``scan(start=end_offset)``.
        A writer read (and deleted) the side file when it opened; after a compaction there
        is no valid checkpoint.
        """
        self._live()
        return self._ckpt
