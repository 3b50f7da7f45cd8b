"""The machinery under :class:`~sowlib.topic.Topic`: in-memory state over one log.

Loading and replay, writes, deletes, expirations, compaction, the doc cache
and the QuerySource methods the query engine calls. Callers hold the lock.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any, cast

from sowlib.codecs import Codec, get_codec
from sowlib.config import TopicConfig
from sowlib.document import MISSING
from sowlib.errors import (
    InvalidSowKeyError,
    MissingKeyFieldError,
    QueryOptionError,
    ReadOnlyError,
    StoreClosedError,
    UnsupportedOperationError,
)
from sowlib.expr import EvalContext, Filter, compile_filter
from sowlib.gcpause import paused_gc
from sowlib.history import History, Version
from sowlib.index import IndexSet
from sowlib.keys import ContentKeyGenerator, validate_user_key
from sowlib.paths import FieldPath, parse_path
from sowlib.query import Record
from sowlib.record import DeferredDoc
from sowlib.results import PublishResult, PublishResults
from sowlib.storage import LogRecord, RecordKind
from sowlib.storage.framing import framed_size
from sowlib.subscriptions import SubscriptionManager
from sowlib.topic_batch import publish_batch
from sowlib.topic_entries import (
    BODY,
    CORR,
    EXPIRES,
    OFFSET,
    SEQ,
    SIZE,
    STAMP,
    Entry,
    Slot,
    entries_from_checkpoint,
    replay_entries,
)

__all__ = ["TopicCore"]


# Do not compact files smaller than this: rewriting tiny files buys nothing.
_MIN_COMPACT_BYTES = 1 << 20
_PUT, _DELETE, _EXPIRE = RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE
_new_record = partial(tuple.__new__, Record)


def _entry_of(rec: LogRecord, body: bool | bytes) -> Entry:
    """The key map entry of a PUT record read back or just appended."""
    size = framed_size(rec.key, len(rec.correlation_id), len(rec.payload), rec.expiration)
    return (rec.offset, rec.seq, rec.timestamp, rec.expiration, rec.correlation_id, size, body)


class TopicCore:
    """State and write machinery shared by every topic; not public."""

    def __init__(
        self,
        config: TopicConfig,
        log: Any,
        *,
        clock: Callable[[], float],
        readonly: bool = False,
        key_generator: Callable[[Any], str] | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.message_type = config.message_type
        self._log = log
        self._clock = clock
        self._readonly = readonly
        self._lock = threading.RLock()
        self._codec: Codec = get_codec(config.message_type, **dict(config.options.get("codec", {})))
        # What a Record read by key holds as its doc until first touched (binary
        # payloads are their own document).
        self._deferred = DeferredDoc(self._codec.decode) if self._codec.supports_filter else None
        self.key_fields: tuple[FieldPath, ...] = tuple(parse_path(k) for k in config.keys)
        self._content_keys = (
            ContentKeyGenerator(config.keys, domain=config.domain, topic=config.name)
            if config.keys
            else None
        )
        self._keygen: Callable[[Any], str] | None = key_generator or self._content_keys
        # sow_key -> Entry, or a bare log offset for a record loaded from a
        # checkpoint and not touched since (see _entry).
        self._entries: dict[str, Slot] = {}
        self._docs: dict[str, Any] = {}
        # Records built for queries, kept until the key changes: a Record is
        # immutable, and rebuilding one per result dominated indexed queries.
        self._records: dict[str, Record] = {}
        self._indexed = False  # every live doc decoded and every index built
        self.indexes = IndexSet(self.key_fields, config.hash_indexes, config.indexes)
        self._subs = SubscriptionManager(
            config.name, config.message_type, self._codec.encode, keys=config.keys
        )
        self._expiry: list[tuple[float, int, str]] = []
        self._history = (
            History(config.history_window, config.history_granularity)
            if config.history_window is not None
            else None
        )
        self._live_bytes = 0
        self._counts = dict.fromkeys(
            ("inserts", "updates", "deletes", "expirations", "queries", "publishes"), 0
        )
        self._closed = False
        self._load()

    # ------------------------------------------------------------------ loading

    def _load(self) -> None:
        # Reopening allocates per record; the cyclic GC would rescan the
        # growing heap again and again while nothing here can form a cycle.
        with paused_gc():
            self._load_entries()

    def _load_entries(self) -> None:
        checkpoint = None if self._history is not None else self._log.load_checkpoint()
        start = None
        if checkpoint is not None:
            blob, end = checkpoint
            loaded = entries_from_checkpoint(blob)
            if loaded is not None:
                (self._entries, self._live_bytes), start = loaded, end
        if self._history is None:
            scan = self._log.scan_entries(start)
            self._live_bytes += replay_entries(self._entries, scan, self._size_at)
        else:
            for rec in self._log.scan(start):
                self._apply(rec)
        if self.config.expiration_enabled:
            # Bare offsets never expire: a checkpoint keeps records with an
            # expiration as entries, and replay builds entries.
            self._expiry = [
                (e[EXPIRES], e[SEQ], k)
                for k, e in self._entries.items()
                if not isinstance(e, int) and e[EXPIRES] > 0
            ]
            heapq.heapify(self._expiry)
            self._tick()

    def _apply(self, rec: LogRecord) -> None:
        """Replay one log record into memory (open and refresh)."""
        key = rec.key
        old = self._entry(key)
        if old is not None:
            self._live_bytes -= old[SIZE]
        old_doc = self._docs.pop(key, None) if old is not None else None
        self._records.pop(key, None)
        if rec.kind == _PUT:
            entry = _entry_of(rec, True)
            self._entries[key] = entry
            self._live_bytes += entry[SIZE]
            if self._indexed:
                doc = self._decode_payload(rec.payload)
                self._docs[key] = doc
                self.indexes.on_put(key, old_doc, doc)
                self._records[key] = self._record_with(key, entry, rec.payload, doc)
            if rec.expiration > 0 and self.config.expiration_enabled and self._expiry is not None:
                heapq.heappush(self._expiry, (rec.expiration, rec.seq, key))
            offset: int | None = rec.offset
        else:
            if old is not None:
                del self._entries[key]
                if self._indexed and old_doc is not None:
                    self.indexes.on_delete(key, old_doc)
            offset = None
        if self._history is not None:
            self._history.add(key, Version(rec.seq, rec.timestamp, offset))

    # ------------------------------------------------------------------ helpers

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"topic {self.name!r}")

    def _check_writable(self, operation: str) -> None:
        self._check_open()
        if self._readonly:
            raise ReadOnlyError(f"topic {self.name!r}", operation)

    def _entry(self, key: str) -> Entry | None:
        """The entry of ``key`` (None when absent), reading a bare offset's header
        fields from the log and keeping the entry; O(1). Callers hold the lock."""
        slot = self._entries.get(key)
        if not isinstance(slot, int):
            return slot
        seq, stamp, expires, corr, size = self._log.read_entry(slot)
        entry: Entry = (slot, seq, stamp, expires, corr, size, False)
        self._entries[key] = entry
        return entry

    def _size_at(self, offset: int) -> int:
        """Bytes the record at ``offset`` occupies in the log (a bare offset's size)."""
        return self._log.read_entry(offset)[4]  # type: ignore[no-any-return]

    def _slot_size(self, slot: Slot) -> int:
        """Bytes the live record of a key map slot occupies in the log."""
        return self._size_at(slot) if isinstance(slot, int) else slot[SIZE]

    def _payload(self, key: str, entry: Entry) -> bytes:
        """The stored bytes of a live entry; verifies the checksum on first read."""
        body = entry[BODY]
        if type(body) is bytes:
            return body
        if body:
            return self._log.read_payload(entry[OFFSET])  # type: ignore[no-any-return]
        payload: bytes = self._log.read(entry[OFFSET]).payload
        self._entries[key] = (*entry[:BODY], True)
        return payload

    def _decode_payload(self, payload: bytes) -> Any:
        return self._codec.decode(payload) if self._codec.supports_filter else payload

    def _decode_input(self, data: object) -> tuple[bytes, Any]:
        if isinstance(data, str):
            payload = data.encode("utf-8")
        elif isinstance(data, bytes | bytearray | memoryview):
            payload = bytes(data)
        else:
            payload = self._codec.encode(data)
        return payload, self._decode_payload(payload)

    def _key(self, doc: Any, sow_key: str | None, data: object) -> str:
        if self._keygen is not None:
            if sow_key is not None:
                raise InvalidSowKeyError(
                    sow_key,
                    f"topic {self.name!r} derives its keys from the message; do not pass sow_key",
                )
            try:
                key = self._keygen(doc)
            except MissingKeyFieldError as exc:
                raise MissingKeyFieldError(exc.topic, exc.field, data) from None
            if not isinstance(key, str) or not key:
                raise InvalidSowKeyError(key, "the key generator must return non-empty text")
            return key
        if sow_key is None:
            raise InvalidSowKeyError(
                None, f"topic {self.name!r} has no key fields: the publisher must pass sow_key="
            )
        return validate_user_key(sow_key)

    def _expires_at(self, expiration: float | str | None, now: float) -> float:
        if expiration is not None:
            if isinstance(expiration, bool) or not isinstance(expiration, int | float):
                raise QueryOptionError("expiration", expiration, "seconds as a number >= 0")
            if expiration < 0 or expiration != expiration:
                raise QueryOptionError("expiration", expiration, "seconds as a number >= 0")
        ttl = expiration if expiration is not None else self.config.default_ttl
        if not ttl:
            return 0.0
        return now + float(ttl)

    def _record(self, key: str, entry: Entry, doc: Any = MISSING) -> Record:
        body = entry[BODY]
        payload = body if type(body) is bytes else self._payload(key, entry)
        return self._record_with(key, entry, payload, doc)

    def _record_with(self, key: str, entry: Entry, payload: bytes, doc: Any = MISSING) -> Record:
        if doc is MISSING:
            doc = self._docs.get(key, MISSING)
            if doc is MISSING:
                # Decoded when the caller first reads ``rec.doc``: a read by key
                # often wants only the bytes.
                deferred = self._deferred
                doc = payload if deferred is None else deferred
        return _new_record(
            (
                key,
                payload,
                entry[SEQ],
                entry[STAMP],
                entry[EXPIRES] or None,
                self.name,
                self.message_type,
                entry[CORR],
                doc,
            )
        )

    def _record_of(self, rec: LogRecord) -> Record:
        """A :class:`Record` for a log record read directly (history, replay)."""
        return Record(
            rec.key,
            rec.payload,
            rec.seq,
            rec.timestamp,
            rec.expiration or None,
            self.name,
            self.message_type,
            rec.correlation_id,
            self._decode_payload(rec.payload) if rec.kind == _PUT else None,
        )

    def _tick(self) -> None:
        """Process due expirations (lazily, on every operation; spec §10)."""
        if self._expiry and self._expiry[0][0] <= self._clock():
            self._process_expirations(self._clock())

    def _process_expirations(self, now: float) -> int:
        count = 0
        while self._expiry and self._expiry[0][0] <= now:
            when, seq, key = heapq.heappop(self._expiry)
            entry = self._entry(key)
            if entry is None or entry[SEQ] != seq or entry[EXPIRES] != when:
                continue  # superseded by a later publish or already deleted
            if self._readonly:
                self._forget(key, entry)  # readers hide it; the writer writes the tombstone
            else:
                self._remove(key, entry, _EXPIRE)
            count += 1
        return count

    def _forget(self, key: str, entry: Entry) -> None:
        del self._entries[key]
        self._live_bytes -= entry[SIZE]
        doc = self._docs.pop(key, None)
        self._records.pop(key, None)
        if self._indexed and doc is not None:
            self.indexes.on_delete(key, doc)

    def _remove(self, key: str, entry: Entry, kind: RecordKind) -> None:
        old = self._record(key, entry) if self._subs.active else None
        rec = self._log.append(kind, key, b"", timestamp=self._clock())
        self._forget(key, entry)
        if self._history is not None:
            self._history.add(key, Version(rec.seq, rec.timestamp, None))
        self._counts["expirations" if kind == _EXPIRE else "deletes"] += 1
        if old is not None:
            self._subs.on_change("expire" if kind == _EXPIRE else "delete", key, old, None)

    def _write(
        self,
        key: str,
        payload: bytes,
        doc: Any,
        expiration: float | None,
        corr: bytes,
        delta_doc: Any = None,
    ) -> PublishResult:
        now = self._clock()
        expires = self._expires_at(expiration, now)
        rec = self._log.append(
            _PUT, key, payload, timestamp=now, expiration=expires, correlation_id=corr
        )
        result = self._install(key, doc, rec, delta_doc)
        self._maybe_compact()
        return result

    def _write_many(
        self, prepared: list[tuple[str, bytes, Any]], expiration: float | None
    ) -> list[PublishResult]:
        """Append a batch with one log call, then install each record in order."""
        now = self._clock()
        expires = self._expires_at(expiration, now)
        records = self._log.append_many(
            [(_PUT, key, payload, now, expires, b"") for key, payload, _ in prepared]
        )
        install = self._install
        results = [
            install(key, doc, rec) for (key, _, doc), rec in zip(prepared, records, strict=True)
        ]
        self._maybe_compact()
        return results

    def _publish_batch(
        self,
        messages: Sequence[object],
        expiration: float | None,
        known: tuple[str, Sequence[Any]] | None = None,
    ) -> PublishResults | None:
        """publish_many's fast path (see :func:`sowlib.topic_batch.publish_batch`)."""
        return publish_batch(self, messages, expiration, known)

    def _install(self, key: str, doc: Any, rec: LogRecord, delta_doc: Any = None) -> PublishResult:
        """Point ``key`` at the appended record ``rec``; indexes, expiry, history, subscribers."""
        old = self._entry(key)
        subs = self._subs.active
        # The old version is still readable: the log is append-only.
        old_rec = self._record(key, old) if subs and old is not None else None
        entry = _entry_of(rec, rec.payload)
        size = entry[SIZE]
        self._entries[key] = entry
        self._records.pop(key, None)
        counts = self._counts
        if old is not None:
            self._live_bytes += size - old[SIZE]
            counts["updates"] += 1
        else:
            self._live_bytes += size
            counts["inserts"] += 1
        counts["publishes"] += 1
        if self._indexed:
            old_doc = self._docs.get(key) if old is not None else None
            self._docs[key] = doc
            self.indexes.on_put(key, old_doc, doc)
            self._records[key] = self._record_with(key, entry, rec.payload, doc)
        else:
            self._docs.pop(key, None)  # kept once a query needs documents
        if rec.expiration and self.config.expiration_enabled:
            heapq.heappush(self._expiry, (rec.expiration, rec.seq, key))
        if self._history is not None:
            self._history.add(key, Version(rec.seq, rec.timestamp, rec.offset))
        if subs:
            self._subs.on_change("publish", key, old_rec, self._record(key, entry, doc), delta_doc)
        return PublishResult(key, rec.seq, old is None)

    def _maybe_compact(self) -> None:
        ratio = self.config.auto_compact
        if ratio is None or self._history is not None:
            return
        used = self._log.end_offset
        if used < _MIN_COMPACT_BYTES:
            return
        if 1.0 - self._live_bytes / used > ratio:
            self._compact()

    def _ensure_indexed(self) -> None:
        """Decode every live document, build the indexes and a Record per key (first query).

        From then on the topic keeps all three current on every change, so
        queries return stored Records instead of building them.
        """
        if self._indexed:
            return
        docs, records, entries = self._docs, self._records, self._entries
        # A document, a Record and index entries per key: many containers, no cycles.
        with paused_gc():
            bare = [(k, s) for k, s in entries.items() if type(s) is int]
            if bare:
                self._load_bare(bare)
            loaded = {k for k, _s in bare}
            for key in list(entries):
                if key in loaded:
                    continue
                entry = self._entry(key)
                assert entry is not None
                payload = self._payload(key, entry)
                doc = docs.get(key, MISSING)
                if doc is MISSING:
                    doc = docs[key] = self._decode_payload(payload)
                records[key] = self._record_with(key, entry, payload, doc)
            if self._codec.supports_filter:
                for key, doc in self._docs.items():
                    self.indexes.on_put(key, None, doc)
        self._indexed = True

    def _load_bare(self, bare: list[tuple[str, int]]) -> None:
        """Entries, documents and Records of keys held as bare offsets, read in one batch.

        Each record's checksum is verified (as a first :meth:`_payload` would), and the
        documents are decoded together where the codec can (``decode_many``). Called
        by :meth:`_ensure_indexed`, with the cyclic GC paused.
        """
        fields = self._log.read_puts([off for _key, off in bare])
        payloads = [f[5] for f in fields]
        decode_many = getattr(self._codec, "decode_many", None)
        if not self._codec.supports_filter:
            decoded: list[Any] = payloads
        elif decode_many is not None:
            decoded = decode_many(payloads)
        else:
            decoded = [self._codec.decode(p) for p in payloads]
        entries, docs, records = self._entries, self._docs, self._records
        for (key, off), (seq, stamp, expires, corr, size, payload), doc in zip(
            bare, fields, decoded, strict=True
        ):
            entry: Entry = (off, seq, stamp, expires, corr, size, True)
            entries[key] = entry
            docs[key] = doc
            records[key] = self._record_with(key, entry, payload, doc)

    def _compile(self, flt: str | Filter | None) -> Filter | None:
        if flt is None:
            return None
        compiled = compile_filter(flt)
        if not self._codec.supports_filter and compiled.fields:
            raise UnsupportedOperationError(
                "a content filter",
                f"topic {self.name!r} holds {self.message_type} messages, which cannot be"
                " filtered; use '1=1' or sow_keys=",
            )
        return compiled

    # ------------------------------------------------------------------ QuerySource

    def keys(self) -> Iterator[str]:
        """Every live SOW key (QuerySource); O(1) per key."""
        return iter(list(self._entries))

    def records_of(self, keys: Iterable[str]) -> list[Record]:
        """The live records of ``keys``, in order, absent keys left out (QuerySource);
        one C-level pass over the Record cache when it holds them all (indexed topics)."""
        keys = list(keys)
        recs = list(map(self._records.get, keys))
        if None not in recs:
            return cast("list[Record]", recs)
        record = self.record
        return [r for k, c in zip(keys, recs, strict=True) if (r := c or record(k)) is not None]

    def record(self, key: str) -> Record | None:
        """The live record stored under ``key`` (QuerySource), or None; cached per key."""
        rec = self._records.get(key)
        if rec is None:
            entry = self._entry(key)
            if entry is None:
                return None
            rec = self._records[key] = self._record(key, entry)
        return rec

    def doc(self, key: str) -> Any:
        """The decoded document of a live key (QuerySource); cached after the first decode."""
        doc = self._docs.get(key, MISSING)
        if doc is MISSING:
            entry = self._entry(key)
            if entry is None:
                raise KeyError(key)
            doc = self._docs[key] = self._decode_payload(self._payload(key, entry))
        return doc

    def key_for_values(self, values: Sequence[Any]) -> str | None:
        """The key content-keyed messages with these key-field values get (QuerySource)."""
        if self._content_keys is None or self._keygen is not self._content_keys:
            return None
        return self._content_keys.key_for_values(values)

    def encode(self, doc: Any) -> bytes:
        """Encode a document in this topic's message type (QuerySource)."""
        return self._codec.encode(doc)

    def context(self, key: str, record: Record | None = None) -> EvalContext:
        """The evaluation context for context functions such as SOW_KEY() (QuerySource)."""
        rec = record if record is not None else self.record(key)
        if rec is None:
            return EvalContext(sow_key=key, topic=self.name, now=self._clock())
        return EvalContext(
            sow_key=key,
            topic=self.name,
            message_size=len(rec.data),
            correlation_id=rec.correlation_id.decode("utf-8", "replace") or None,
            timestamp=rec.timestamp,
            seq=rec.seq,
            now=self._clock(),
        )

    def _compact(self) -> None:
        if self._history is not None:
            self._history.trim(self._clock())
            keep_offsets = self._history.offsets()
            keep_seqs = self._history.seqs()

            def keep(rec: LogRecord) -> bool:
                return rec.offset in keep_offsets or rec.seq in keep_seqs

            mapping = self._log.compact(keep)
        else:
            mapping = self._log.compact(
                [e if isinstance(e, int) else e[OFFSET] for e in self._entries.values()]
            )
        self._entries = {
            k: mapping[e] if isinstance(e, int) else (mapping[e[OFFSET]], *e[SEQ:])
            for k, e in self._entries.items()
        }
        if self._history is not None:
            self._history.remap(mapping)
