"""Records and documents of live keys: read from the log, decoded, kept in a bounded cache.

The one place a :class:`~sowlib.record.Record` of a live key is built. Imports
``codecs``, ``record``, ``storage`` and sibling modules.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice
from operator import itemgetter
from typing import Any

from xxhash import xxh64_intdigest

from sowlib.codecs import Codec
from sowlib.document import MISSING
from sowlib.index.packed import PackedKeys
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.record import DeferredDoc, Record
from sowlib.storage import LogRecord, RecordKind
from sowlib.topic.cache import ADMIT, ADMIT_BITS, RecordCache, record_cost
from sowlib.topic.expiry import Expiry
from sowlib.topic.keymap import KeyMap
from sowlib.topic.logview import Header, LogView
from sowlib.topic.slots import record_reader

__all__ = ["Views"]

_new_record = partial(tuple.__new__, Record)
_getrandbits = random.getrandbits
_second = itemgetter(1)
# Keys read per batch when a query walks many records.
_CHUNK = 2048


class Views:
    """Builds Records and documents of live keys; O(1) per cached read.

    Args:
        name: the topic name.
        message_type: the topic's message type.
        codec: decodes payloads.
        keys: the key map.
        log: the log reader.
        cache: the record cache.
    """

    def __init__(
        self,
        name: str,
        message_type: str,
        codec: Codec,
        keys: KeyMap,
        log: LogView,
        cache: RecordCache,
    ) -> None:
        self.name = name
        self.message_type = message_type
        self.codec = codec
        self.keys = keys
        self.log = log
        self.cache = cache
        self.filterable = codec.supports_filter
        # What a Record read by key holds as its doc until first touched (binary
        # payloads are their own document).
        self._deferred = DeferredDoc(codec.decode) if self.filterable else None
        decode_many = getattr(codec, "decode_many", None)
        self._decode_many = decode_many if decode_many is not None and self.filterable else None
        # A cached Record's charge is base + len(payload) * factor (see record_cost).
        self._cost_base = record_cost(0, self.filterable)
        self._cost_factor = record_cost(1, self.filterable) - self._cost_base
        # The log file's one-record reader (None in memory: LogView reads those records).
        self._read_put = None if log.file is None else log.file.read_put
        self._caching = cache.budget > 0
        # The C reader of records by key, one or many (None: without the C module, for
        # keys that are not content keys, or a memory log). Its table and map are handed
        # to it by their owners, now and each time they change.
        file = log.file
        reader = (
            record_reader(
                record_type=Record,
                topic=name,
                message_type=message_type,
                doc=self._deferred,
                digest=xxh64_intdigest,  # the content key generator's
                cache_get=cache.get,
                cache_put=cache.put if self._caching else None,
                cost_base=self._cost_base,
                cost_factor=self._cost_factor,
                admit_mask=ADMIT - 1,
            )
            if keys.content and file is not None
            else None
        )
        self._reader = reader
        #: The C reader's ``rows(keys)``: ``(rows, pending)`` as :meth:`records` takes it
        #: (keys it did not read left in place, counted), NotImplemented, or None here.
        self.rows_reader = None if reader is None else reader.rows
        if reader is not None and file is not None:
            keys.watch_slots(reader.set_table)
            file.watch_map(reader.set_map)

    def decode(self, payload: bytes) -> Any:
        """The document of a payload (the bytes themselves for binary message types)."""
        return self.codec.decode(payload) if self.filterable else payload

    def decode_many(self, payloads: list[bytes]) -> list[Any]:
        """:meth:`decode` of each payload, in one batch where the codec can."""
        if self._decode_many is not None:
            return self._decode_many(payloads)  # type: ignore[no-any-return]
        return [self.decode(p) for p in payloads]

    def make(self, key: Key, head: Header, payload: bytes, doc: Any = MISSING) -> Record:
        """The Record of a live version; ``doc`` decoded on first access when not given."""
        if doc is MISSING:
            doc = payload if self._deferred is None else self._deferred
        return _new_record(
            (
                self.keys.text_of(key),
                payload,
                head.seq,
                head.timestamp,
                head.expiration or None,
                self.name,
                self.message_type,
                head.correlation_id,
                doc,
            )
        )

    def put_record(self, text: str, seq: int, timestamp: float, payload: bytes, doc: Any) -> Record:
        """:meth:`make` of a put just appended without expiration or correlation id (its
        SOW key's text given): ``doc`` decoded on first access when MISSING."""
        if doc is MISSING:
            doc = payload if self._deferred is None else self._deferred
        return _new_record(
            (text, payload, seq, timestamp, None, self.name, self.message_type, b"", doc)
        )

    def of_log(self, rec: LogRecord) -> Record:
        """A Record for a log record read directly (history, replay)."""
        return Record(
            rec.key,
            rec.payload,
            rec.seq,
            rec.timestamp,
            rec.expiration or None,
            self.name,
            self.message_type,
            rec.correlation_id,
            self.decode(rec.payload) if rec.kind == RecordKind.PUT else None,
        )

    def record(self, key: Key) -> Record | None:
        """The live Record of ``key`` or None; from the cache, else read and cached.

        The by-key read path (``get``/``lookup`` on a cache miss): one checked read of
        the record, its document left to decode on first access.
        """
        rec = self.cache.get(key)
        return rec if rec is not None else self.read(key)

    def read(self, key: Key) -> Record | None:
        """:meth:`record` of a key the cache does not hold (read, and admitted to the
        cache as :meth:`RecordCache.offer` admits).

        The by-key read of ``get``/``lookup`` when their one C call hands over: where
        the C KeyTable holds the keys, the C reader's ``rows`` of one key finds, reads and
        checks the record and builds its Record in one call; else one C call finds the
        entry and one reads the record.
        """
        rec: Record | None = NotImplemented
        reader = self._reader
        if reader is not None:
            got = reader.rows([key])
            if got is not NotImplemented:
                rows, pending = got
                rec = NotImplemented if pending else rows[0] if rows else None
        if rec is NotImplemented:
            rec = self._read_entry(key)
        # RecordCache.offer, inlined; the key is not cached (the caller just missed it).
        if rec is not None and self._caching and not _getrandbits(ADMIT_BITS):
            self.cache.put(key, rec, self._cost_base + len(rec[1]) * self._cost_factor)
        return rec

    def _read_entry(self, key: Key) -> Record | None:
        """The live Record of ``key`` read from the log (the Python path), or None."""
        slot = self.keys.slot_of(key)
        if slot is None:
            return None
        offset = slot if type(slot) is int else slot[0]  # type: ignore[index]
        read_put = self._read_put
        if read_put is not None:
            seq, stamp, expires, corr, _size, payload = read_put(offset)
        else:
            seq, stamp, expires, corr, payload = self.log.put_fields(offset)
        deferred = self._deferred
        return _new_record(
            (
                key if type(key) is str else str(key),
                payload,
                seq,
                stamp,
                expires or None,
                self.name,
                self.message_type,
                corr,
                payload if deferred is None else deferred,
            )
        )

    def key_reader(
        self, head: bytes | None, expiry: Expiry, lock: Any, *, sow_keys: bool = False
    ) -> Callable[[Any], Any] | None:
        """``Topic.lookup`` of one key value in one C call: the key's hash (``head`` + the
        value's text), a cache probe, then :meth:`read` under ``lock``, NotImplemented
        where the Python path decides (the C reader's ``lookup``); with ``sow_keys``,
        ``Topic.get`` of a SOW key's text the same way (its ``get``; ``head`` unused).
        None for a memory log, keys other than one content key field (``head`` None;
        with ``sow_keys``: other than content keys), or without the C module.

        The reader is handed the expiry queue's heap (which its owner never rebinds) and
        the lock's methods, not the objects whose attributes it would look up.
        """
        reader = self._reader
        if reader is None or (not self.keys.content if sow_keys else head is None):
            return None
        if head is None:
            reader.bind(expiry.heap, lock.acquire, lock.release)
        else:
            reader.bind(expiry.heap, lock.acquire, lock.release, head)
        return reader.get if sow_keys else reader.lookup

    def records(self, keys: Iterable[Key]) -> list[Record]:
        """The live Records of ``keys`` in order, absent keys left out; O(1) per key.

        Read in one batch, in file order (the map is read front to back, not hopping
        between pages), their documents left to decode on first access; nothing is
        added to the cache (it keeps the records read by key). Where the C KeyTable
        holds the keys, one C call does all of it (``reader.c``), leaving to
        :meth:`records_of_log` only the keys it cannot read; a saved key set
        (``PackedKeys``) is read off its positions, no list of its keys made first.
        """
        reader = self._reader
        got: Any = NotImplemented
        if type(keys) is PackedKeys and reader is not None:  # a saved key set: its positions
            # (NotImplemented when its key list is not a list: listed, then as any keys)
            got = reader.rows_at(keys.keys, keys.positions, keys.start, keys.count)  # type: ignore[arg-type]
        if got is NotImplemented:
            keys = keys if type(keys) is list else list(keys)
            got = NotImplemented if reader is None else reader.rows(keys)
        if got is not NotImplemented:
            rows, pending = got
            if not pending:
                return rows  # type: ignore[no-any-return]
            return self.records_of_log(rows)
        return self.records_of_log(keys if type(keys) is list else list(keys))

    def first_keys(self, n: int) -> list[Key]:
        """The first ``n`` live keys in the key map's order (``keys()[:n]``), listing no
        more than those: the C reader's ``head`` where the C KeyTable holds the keys
        (reference: the slice of the whole listing)."""
        reader = self._reader
        if reader is not None:
            got = reader.head(n)
            if got is not NotImplemented:
                return got  # type: ignore[no-any-return]
        slots: object = self.keys.slots
        if type(slots) is dict:
            return list(islice(slots, n))
        return self.keys.keys()[:n]

    def records_of_log(self, keys: Sequence[Key | Record]) -> list[Record]:
        """:meth:`records`, the Python path (the C reader's reference): ``keys`` may hold
        Records already read, which are kept in their place. Cached records are taken
        as they are (the same fields as a read of the log)."""
        get_cached = self.cache.get
        found: dict[Key, Record | None] = {}
        missing: list[tuple[Key, int]] = []
        offset = self.keys.offset
        for k in keys:
            if isinstance(k, tuple):
                continue  # a Record
            rec = found[k] = get_cached(k)
            if rec is None and (off := offset(k)) is not None:
                missing.append((k, off))
        if missing:
            missing.sort(key=_second)
            fields = self.log.many_put_fields([off for _k, off in missing])
            deferred = self._deferred
            text_of, name, mtype = self.keys.text_of, self.name, self.message_type
            for (key, _off), (seq, stamp, expires, corr, payload) in zip(
                missing, fields, strict=True
            ):
                rec = _new_record(
                    (
                        text_of(key),
                        payload,
                        seq,
                        stamp,
                        expires or None,
                        name,
                        mtype,
                        corr,
                        payload if deferred is None else deferred,
                    )
                )
                found[key] = rec
        return [r for k in keys if (r := k if isinstance(k, tuple) else found[k]) is not None]

    def doc(self, key: Key) -> Any:
        """The document of a live key (KeyError when absent)."""
        rec = self.record(key)
        if rec is None:
            raise KeyError(key)
        return rec.doc

    def docs(self, keys: Iterable[Key]) -> Iterator[tuple[Key, Any]]:
        """``(key, document)`` for each live key of ``keys``, in order; nothing is kept.

        Reads and decodes in batches; cached records give their documents as they are.
        """
        get_cached, offset_of = self.cache.get, self.keys.offset
        batch: list[Key] = []
        offsets: list[int] = []
        for key in keys:
            rec = get_cached(key)
            if rec is not None:
                if batch:
                    yield from self._decoded(batch, offsets)
                    batch, offsets = [], []
                yield key, rec.doc
                continue
            off = offset_of(key)
            if off is None:
                continue
            batch.append(key)
            offsets.append(off)
            if len(batch) >= _CHUNK:
                yield from self._decoded(batch, offsets)
                batch, offsets = [], []
        if batch:
            yield from self._decoded(batch, offsets)

    def live_chunks(self) -> Iterator[tuple[list[Key], list[int]]]:
        """Every live key and its record's offset, in file order, a batch at a time."""
        keys, offsets = self.keys.live_in_file_order()
        for lo in range(0, len(keys), _CHUNK):
            yield keys[lo : lo + _CHUNK], offsets[lo : lo + _CHUNK]

    def all_docs(self) -> Iterator[tuple[Key, Any]]:
        """``(key, document)`` of every live record, in file order; nothing is kept.

        The records are read front to back in batches (checksums verified) and
        decoded a batch at a time.
        """
        for keys, offsets in self.live_chunks():
            yield from self._decoded(keys, offsets)

    def field_values(self, path: FieldPath) -> Iterator[tuple[Key, Any]]:
        """``(key, value of path)`` of every live record, in file order; nothing is kept.

        A top-level field of a codec that reads one field out of many messages
        (``top_values``) is taken in C-level maps; otherwise each batch is decoded
        and the value read from each document.
        """
        steps = path.steps
        top = steps[0].name if len(steps) == 1 and steps[0].index is None else None
        top_values = getattr(self.codec, "top_values", None) if self.filterable else None
        getter = path.getter
        for keys, offsets in self.live_chunks():
            payloads = list(self.log.payloads(offsets))
            values = None
            if top is not None and top_values is not None:
                values = top_values(payloads, top)
            if values is None:
                values = list(map(getter, self.decode_many(payloads)))
            yield from zip(keys, values, strict=True)

    def _decoded(self, keys: list[Key], offsets: list[int]) -> Iterator[tuple[Key, Any]]:
        """``(key, document)`` of live ``keys`` at ``offsets``: read as :meth:`records`
        reads rows (one C call where built: a row per key, since every key is live)."""
        if self._reader is not None:
            payloads = [rec[1] for rec in self.records(keys)]
        else:
            payloads = list(self.log.payloads(offsets))
        return zip(keys, self.decode_many(payloads), strict=True)
