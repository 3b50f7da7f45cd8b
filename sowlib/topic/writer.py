"""The write path: decode -> key -> append -> index -> install, single and batch in one place.

Also deletes, expirations, log replay (refresh, history) and compaction. Callers
hold the topic's lock. Imports ``codecs``, ``keys``, ``index``, ``storage``,
``subscriptions``, ``history``, ``results`` and sibling modules; never the facade.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, cast

import xxhash

from sowlib.config import TopicConfig
from sowlib.document import MISSING
from sowlib.errors import ArgumentError, InvalidSowKeyError, MissingKeyFieldError
from sowlib.gcpause import paused_gc
from sowlib.history import History, Version
from sowlib.index import IndexSet
from sowlib.index.types import Key
from sowlib.keys import ContentKeyGenerator, validate_user_key
from sowlib.paths import FieldPath
from sowlib.results import PublishResult, PublishResults
from sowlib.storage import AppendLog, EntryList, LogRecord, MemoryLog, RecordKind
from sowlib.subscriptions import SubscriptionManager
from sowlib.topic.expiry import Expiry
from sowlib.topic.keymap import KeyMap
from sowlib.topic.logview import Header
from sowlib.topic.prepare import Batch, prepare_batch
from sowlib.topic.runcolumns import LateColumns, payload_columns
from sowlib.topic.views import Views

__all__ = ["Writer", "payload_columns"]

_PUT, _DELETE, _EXPIRE = RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE
# Runs of at most this many records are applied without pausing the cyclic collector.
_FEW = 64
# Do not compact files smaller than this: rewriting tiny files buys nothing.
_MIN_COMPACT_BYTES = 1 << 20
_digest64 = xxhash.xxh64_intdigest
COUNTERS = ("inserts", "updates", "deletes", "expirations", "queries", "publishes")


class Writer:
    """Every change to a topic's state goes through here (under the topic's lock)."""

    def __init__(
        self,
        config: TopicConfig,
        views: Views,
        indexes: IndexSet,
        expiry: Expiry,
        history: History | None,
        subs: SubscriptionManager,
        clock: Callable[[], float],
        keygen: Callable[[Any], str] | None,
        key_fields: tuple[FieldPath, ...],
    ) -> None:
        self.config = config
        self.views = views
        self.keys: KeyMap = views.keys
        self.log = views.log
        self.indexes = indexes
        self.expiry = expiry
        self.history = history
        self.subs = subs
        self.clock = clock
        self.keygen = keygen
        self.content = keygen if isinstance(keygen, ContentKeyGenerator) else None
        self._key_getters = tuple(path.getter for path in key_fields)
        # A read-only topic files a refresh's writes into its indexes when a query next
        # reads them (IndexSet.defer_columns); a writer at once.
        self._late = self.log.log.readonly
        # put_plain: the log file, when the keys are content keys (u64) of messages kept in
        # a file; write_bytes: the key field's name when it is one top-level field, and
        # how an int value of it is hashed.
        plain = self.content is not None and views.filterable and views.log.persistent
        self._file = cast("AppendLog", views.log.log) if plain else None
        self._top = self.content.top_field if self.content is not None else None
        self._int_format = self.content.int_format if self.content is not None else b""
        self.counts = dict.fromkeys(COUNTERS, 0)
        #: The topic's state when it matched the checkpoint it was opened from (see
        #: ``loader``); a close finding the same state saves that checkpoint again.
        self.saved_state: tuple[Any, ...] | None = None

    # ------------------------------------------------------------------ inputs

    def decode_input(self, data: object) -> tuple[bytes, Any]:
        """The payload bytes and document of a message as given to publish."""
        if isinstance(data, str):
            payload = data.encode("utf-8")
        elif isinstance(data, bytes | bytearray | memoryview):
            payload = bytes(data)
        else:
            payload = self.views.codec.encode(data)
        return payload, self.views.decode(payload)

    def key(self, doc: Any, sow_key: str | None, data: object) -> Key:
        """The in-memory key of a message (its SOW key as the key map holds it)."""
        name = self.config.name
        if self.keygen is not None:
            if sow_key is not None:
                raise InvalidSowKeyError(
                    sow_key,
                    f"topic {name!r} derives its keys from the message; do not pass sow_key",
                )
            top = self._top
            if top is not None and type(doc) is dict:
                value = doc.get(top)
                if type(value) is int:  # what hashes_of gives, in its int form
                    return _digest64(self._int_format % value)
            try:
                if self.content is not None:
                    return self.content.hashes_of((doc,))[0]
                key = self.keygen(doc)
            except MissingKeyFieldError as exc:
                raise MissingKeyFieldError(exc.topic, exc.field, data) from None
            if not isinstance(key, str) or not key:
                raise InvalidSowKeyError(key, "the key generator must return non-empty text")
            return self.keys.key_of(key)
        if sow_key is None:
            raise InvalidSowKeyError(
                None, f"topic {name!r} has no key fields: the publisher must pass sow_key="
            )
        return self.keys.key_of(validate_user_key(sow_key))

    def expires_at(self, expiration: float | str | None, now: float) -> float:
        """Absolute expiry for a publish at ``now`` (0.0: never); validates ``expiration``."""
        if expiration is not None:
            if isinstance(expiration, bool) or not isinstance(expiration, int | float):
                raise ArgumentError("expiration", expiration, "seconds as a number >= 0")
            if expiration < 0 or expiration != expiration:
                raise ArgumentError("expiration", expiration, "seconds as a number >= 0")
        ttl = expiration if expiration is not None else self.config.default_ttl
        return now + float(ttl) if ttl else 0.0

    # ------------------------------------------------------------------ publish

    def write(
        self,
        key: Key,
        payload: bytes,
        doc: Any,
        expiration: float | None,
        corr: bytes,
        delta_doc: Any = None,
    ) -> PublishResult:
        """Append one PUT and install it."""
        self.indexes.ensure_values()
        now = self.clock()
        if expiration is None and not self.config.default_ttl:
            expires = 0.0  # what expires_at gives, without its checks
        else:
            expires = self.expires_at(expiration, now)
        text = self.keys.text_of(key)
        view = self.log
        log = view.log
        rec = log.append(
            _PUT, text, payload, timestamp=now, expiration=expires, correlation_id=corr
        )
        if expires or corr or self.subs.active or self.history is not None:
            inserted = self._install(key, view.header_of(rec), payload, doc, delta_doc)
        else:
            # A file's record just appended ends where the log now ends.
            size = log.end_offset - rec.offset if view.persistent else view.size_of(rec)
            inserted = self._install_plain(key, rec.offset, size, doc)
        self.maybe_compact()
        return PublishResult(text, rec.seq, inserted)

    def plain(self) -> bool:
        """True when a put with no expiration or correlation id may take :meth:`put_plain`:
        content keys, a log file, no default expiration, history or subscriber, and the
        index values kept."""
        if self._file is None or self.history is not None or self.config.default_ttl:
            return False
        self.indexes.ensure_values()
        return not self.subs.active and self.indexes.values_known

    def write_bytes(self, payload: bytes) -> PublishResult | None:
        """:meth:`write` of message bytes published with no option (no ``sow_key``,
        expiration or correlation id) when :meth:`plain`; None (nothing read, nothing
        written) otherwise: the caller then takes the reference path, ``decode_input``,
        :meth:`key`, :meth:`write`, which stores the same (``tests/test_publish_fast.py``).

        Raises what the reference path raises (nothing stored).
        """
        if not self.plain():
            return None
        doc = self.views.decode(payload)
        return self.put_plain(cast(int, self.key(doc, None, payload)), payload, doc)

    def put_plain(self, key: int, payload: bytes, doc: Any) -> PublishResult:
        """:meth:`write` of a put with no expiration or correlation id when :meth:`plain`
        (the caller checks): no LogRecord, the old index values from the kept ones."""
        file = cast("AppendLog", self._file)
        offset, size, seq = file.append_put(key, payload, self.clock())
        cache = self.views.cache
        if len(cache):
            cache.drop(key)
        inserted = self.keys.put_offset(key, offset, size)
        indexes = self.indexes
        if indexes.has_field_indexes:
            indexes.put_values(key, indexes.values(doc), inserted)
        else:
            indexes.on_put_keys(key, [g(doc) for g in self._key_getters], inserted)
        counts = self.counts
        counts["inserts" if inserted else "updates"] += 1
        counts["publishes"] += 1
        if self.config.auto_compact is not None:
            self.maybe_compact()
        return PublishResult(str(key), seq, inserted)

    def _install_plain(self, key: Key, offset: int, size: int, doc: Any) -> bool:
        """:meth:`_install` of a record with no header field to keep (no expiration, no
        correlation id) on a topic with no history and no subscriber: the common publish."""
        indexes = self.indexes
        fields = indexes.has_field_indexes
        old_doc = None
        if fields and not indexes.values_known and key in self.keys:
            old_doc = self.views.doc(key)
        self.views.cache.drop(key)
        inserted = self.keys.put_offset(key, offset, size)
        if not fields:
            indexes.on_put_keys(key, [g(doc) for g in self._key_getters], inserted)
        elif old_doc is None and indexes.values_known:
            indexes.put_values(key, indexes.values(doc), inserted)
        else:
            indexes.on_put(key, None if inserted else old_doc, doc)
        counts = self.counts
        counts["inserts" if inserted else "updates"] += 1
        counts["publishes"] += 1
        return inserted

    def write_many(
        self,
        messages: Sequence[object],
        expiration: float | None,
        key_values: Sequence[Any] | None,
    ) -> PublishResults:
        """Validate a whole batch, append it with one log call, install each in order
        (the cyclic collector paused meanwhile)."""
        self.indexes.ensure_values()
        now = self.clock()
        expires = self.expires_at(expiration, now)
        # A batch allocates containers per message and per new index value, none cyclic:
        # with the collector on, full collections would rescan every index set meanwhile.
        with paused_gc():
            wanted = (
                bool(expires or self.subs.active or self.history is not None)
                or not self.indexes.values_known
            )
            batch = prepare_batch(self, messages, key_values, docs_wanted=wanted)
            if self.content is not None:  # every key an int: C-level
                texts = list(map(str, batch.keys))
            else:
                texts = list(map(self.keys.text_of, batch.keys))
            log = self.log.log
            if self.content is not None and self.log.persistent:
                # Times as the log stores them (microseconds), so a reopen reads the same.
                stamp = round(now * 1_000_000) / 1_000_000
                expires = round(expires * 1_000_000) / 1_000_000 if expires else 0.0
                ints = cast("list[int]", batch.keys)
                offsets, sizes, first = log.append_puts(texts, batch.payloads, stamp, expires, ints)

                def heads() -> list[Header]:
                    return [
                        Header(off, first + i, stamp, expires, b"", size)
                        for i, (off, size) in enumerate(zip(offsets, sizes, strict=True))
                    ]
            else:
                pairs = zip(texts, batch.payloads, strict=True)
                items = [(_PUT, t, p, now, expires, b"") for t, p in pairs]
                records: list[LogRecord] = log.append_many(items)
                made = [self.log.header_of(r) for r in records]
                offsets, sizes = [h.offset for h in made], [h.size for h in made]
                first = records[0].seq if records else self.log.log.last_seq + 1

                def heads() -> list[Header]:
                    return made

            inserted = self._install_batch(batch, offsets, sizes, heads, expires)
        self.maybe_compact()
        return PublishResults(texts, first, inserted)

    def _install_batch(
        self,
        batch: Batch,
        offsets: list[int],
        sizes: list[int],
        heads: Callable[[], list[Header]],
        expires: float,
    ) -> list[bool]:
        keys = batch.keys
        if self.subs.active or self.history is not None or expires:
            return self._install_each(batch, heads())
        indexes, views = self.indexes, self.views
        fields = batch.docs is not None and indexes.has_field_indexes
        old_docs: dict[Key, Any] = {}
        if fields and not indexes.values_known:
            # The replaced versions' field values leave the indexes: read them first.
            old_docs = dict(views.docs([k for k in dict.fromkeys(keys) if k in self.keys]))
        views.cache.drop_many(keys)
        inserted = self.keys.put_bare(keys, offsets, sizes)
        if batch.columns is not None:  # read out of the payloads (values known)
            indexes.put_columns(keys, batch.columns, inserted)
        elif batch.docs is None or not indexes.has_field_indexes:
            on_keys = indexes.on_put_keys
            if batch.key_values is not None:
                for key, vals, new in zip(keys, batch.key_values, inserted, strict=True):
                    on_keys(key, vals, new)
            else:
                docs = batch.docs or [MISSING] * len(keys)
                getters = self._key_getters
                for key, doc, new in zip(keys, docs, inserted, strict=True):
                    on_keys(key, [g(doc) for g in getters], new)
        elif indexes.values_known:
            indexes.put_columns(keys, indexes.columns(batch.docs), inserted)
        else:
            on_put = indexes.on_put
            for key, doc, new in zip(keys, batch.docs, inserted, strict=True):
                on_put(key, None if new else old_docs[key], doc)
                old_docs[key] = doc
        self._count(inserted)
        return inserted

    def _install_each(self, batch: Batch, heads: list[Header]) -> list[bool]:
        keys = batch.keys
        docs = batch.docs if batch.docs is not None else [MISSING] * len(keys)
        values: list[Sequence[Any] | None] = (
            list(batch.key_values) if batch.key_values is not None else [None] * len(keys)
        )
        out = [
            self._install(key, head, payload, doc, counted=False, values=vals)
            for key, head, payload, doc, vals in zip(
                keys, heads, batch.payloads, docs, values, strict=True
            )
        ]
        self._count(out)
        return out

    def _count(self, inserted: list[bool]) -> None:
        counts = self.counts
        added = inserted.count(True)
        counts["inserts"] += added
        counts["updates"] += len(inserted) - added
        counts["publishes"] += len(inserted)

    def _install(
        self,
        key: Key,
        head: Header,
        payload: bytes,
        doc: Any,
        delta_doc: Any = None,
        *,
        counted: bool = True,
        values: Sequence[Any] | None = None,
    ) -> bool:
        """Point ``key`` at its appended record: indexes, cache, expiry, history, subscribers."""
        subs = self.subs.active
        exists = key in self.keys
        old_rec = self.views.record(key) if subs and exists else None
        old_doc = self._old_doc(key) if exists else None
        self.views.cache.drop(key)
        inserted = self.keys.put(key, head)
        self._index_put(key, inserted, old_doc, doc, values)
        if counted:
            self._count([inserted])
        self.expiry.push(head.expiration, head.seq, key)
        if self.history is not None:
            self.history.add(key, Version(head.seq, head.timestamp, head.offset))
        if subs:
            new = self.views.make(key, head, payload, doc)
            self.subs.on_change("publish", self.keys.text_of(key), old_rec, new, delta_doc)
        return inserted

    def _old_doc(self, key: Key) -> Any:
        """The document of live ``key`` when index upkeep needs it (its kept values are
        not known: only while a load fills them), else None: nothing is read."""
        indexes = self.indexes
        if indexes.has_field_indexes and not indexes.values_known:
            return self.views.doc(key)
        return None

    def _index_put(
        self, key: Key, inserted: bool, old_doc: Any, doc: Any, values: Sequence[Any] | None = None
    ) -> None:
        """Index upkeep of a put; ``values`` are the key-field values when ``doc`` is MISSING."""
        indexes = self.indexes
        if indexes.has_field_indexes:
            if indexes.values_known:
                indexes.put_values(key, indexes.values(doc), inserted)
            else:
                indexes.on_put(key, None if inserted else old_doc, doc)
        else:
            if values is None:
                values = [g(doc) for g in self._key_getters]
            self.indexes.on_put_keys(key, values, inserted)

    # ------------------------------------------------------------------ removal

    def remove(self, key: Key, kind: RecordKind) -> None:
        """Append a tombstone for live ``key`` and forget it (delete or expire)."""
        self.indexes.ensure_values()
        old = self.views.record(key) if self.subs.active else None
        rec = self.log.log.append(kind, self.keys.text_of(key), b"", timestamp=self.clock())
        self.forget(key)
        if self.history is not None:
            self.history.add(key, Version(rec.seq, rec.timestamp, None))
        self.counts["expirations" if kind == _EXPIRE else "deletes"] += 1
        if old is not None:
            kind_text = "expire" if kind == _EXPIRE else "delete"
            self.subs.on_change(kind_text, self.keys.text_of(key), old, None)

    def forget(self, key: Key) -> None:
        """Drop live ``key`` from memory: key map, indexes, cache (no log record)."""
        self.indexes.settle()
        self.indexes.ensure_values()
        old_doc = self._old_doc(key)
        self.keys.remove(key)
        self.views.cache.drop(key)
        self.indexes.on_delete(key, old_doc)

    def process_expirations(self, now: float, readonly: bool) -> int:
        """Expire every due record (readers only hide them); returns how many."""
        count = 0
        for when, seq, key in self.expiry.pop_due(now):
            head = self.keys.header(key)
            if head is None or head.seq != seq or head.expiration != when:
                continue  # superseded by a later publish or already deleted
            if readonly:
                self.forget(key)
            else:
                self.remove(key, _EXPIRE)
            count += 1
        return count

    # ------------------------------------------------------------------ replay

    def apply(self, rec: LogRecord) -> None:
        """Replay one log record into memory (a reader's refresh, a history topic's open)."""
        self.indexes.settle()
        self.indexes.ensure_values()
        key = self.keys.key_of(rec.key)
        if rec.kind == _PUT:
            old_doc = self._old_doc(key) if key in self.keys else None
            self.views.cache.drop(key)
            head = self.log.header_of(rec)
            inserted = self.keys.put(key, head)
            self._index_put(key, inserted, old_doc, self.views.decode(rec.payload))
            self.expiry.push(rec.expiration, rec.seq, key)
            offset: int | None = rec.offset
        else:
            if key in self.keys:
                self.forget(key)
            offset = None
        if self.history is not None:
            self.history.add(key, Version(rec.seq, rec.timestamp, offset))

    def apply_entries(self, entries: EntryList) -> None:
        """:meth:`apply` of each record of a reader's refresh, in order (``entries`` as
        the log's ``refresh`` gives them: verified just now, in the current map).

        Runs of common records (a PUT with a u64 key, no expiration, no correlation id:
        all the columns hold of them) are installed a run at a time, as ``publish_many``
        installs a batch: one key-map update, the indexed fields read out of the payloads
        (by the codec's ``top_columns`` where it has one, else from the decoded
        documents), index upkeep a column at a time from the kept old values (on a
        read-only topic, left to the next read of the indexes, the fields read then:
        ``IndexSet.defer_columns`` of :class:`~sowlib.topic.runcolumns.LateColumns`).
        A run the log's refresh gave as lists (:attr:`EntryList.plain`) is taken as they
        are. Any other record is read whole and applied alone. Equal to :meth:`apply` of
        each record (``tests/test_refresh_batch.py``, ``tests/test_refresh_runs.py``).
        """
        plain = entries.plain  # a run of common records, as lists (the log's refresh)
        if plain is None and not entries:
            return
        self.indexes.ensure_values()
        read = self.log.log.read
        if self.history is not None or (
            self.indexes.has_field_indexes and not self.indexes.values_known
        ):
            for off in entries.offsets:
                self.apply(read(off))
            return
        if plain is not None and len(plain[1]) <= _FEW:
            keys = self.keys_of_words(plain[2])
            self._apply_run(keys, plain[1], plain[3], plain[0], plain[5])
            return
        offsets, sizes = entries.offsets, entries.sizes()
        if len(offsets) <= _FEW and not entries.others:  # a follower's usual refresh
            words = self.keys_of_words(entries.words)
            self._apply_run(words, offsets.tolist(), sizes.tolist(), entries.end)
            return
        # As in write_many: nothing allocated here is cyclic, and a full collection
        # meanwhile would walk every index set (a few records allocate too little).
        with paused_gc() if len(offsets) > _FEW else contextlib.nullcontext():
            start = 0
            for row in (*sorted(entries.others), len(offsets)):
                if row > start:
                    self._apply_run(
                        self.keys_of_words(entries.words[start:row]),
                        offsets[start:row].tolist(),
                        sizes[start:row].tolist(),
                        entries.end if row == len(offsets) else offsets[row],
                    )
                if row < len(offsets):
                    self.apply(read(offsets[row]))
                start = row + 1

    def keys_of_words(self, words: list[int]) -> list[Key]:
        """The in-memory keys of common records' u64 keys."""
        return cast("list[Key]", words) if self.keys.content else list(map(str, words))

    def _apply_run(
        self,
        keys: list[Key],
        offsets: list[int],
        sizes: list[int],
        end: int,
        payloads: list[bytes] | None = None,
    ) -> None:
        """Install a run of common records back to back, ending at ``end`` (``payloads``:
        theirs, when the caller read them)."""
        self.views.cache.drop_many(keys)
        inserted = self.keys.put_bare(keys, offsets, sizes)
        indexes = self.indexes
        fields = indexes.has_field_indexes
        if not fields and not self._key_getters:
            for key, new in zip(keys, inserted, strict=True):
                indexes.on_put_keys(key, (), new)
            return
        if payloads is None:
            payloads = list(self.log.verified_payloads(offsets, end))
        if fields:
            if self._late:  # read-only: the values are read when the upkeep is done
                indexes.defer_columns(keys, LateColumns(self.views, indexes, payloads), inserted)
            else:
                indexes.put_columns(keys, payload_columns(self.views, indexes, payloads), inserted)
            return
        # no field index: the index set's paths are the key fields
        rows = zip(*payload_columns(self.views, indexes, payloads), strict=True)
        for key, values, new in zip(keys, rows, inserted, strict=True):
            indexes.on_put_keys(key, values, new)

    # ------------------------------------------------------------------ compaction

    def maybe_compact(self) -> None:
        """Compact when the garbage ratio passes the topic's ``auto_compact``."""
        ratio = self.config.auto_compact
        if ratio is None or self.history is not None:
            return
        log = self.log.log
        used = log.used_bytes if isinstance(log, MemoryLog) else log.end_offset
        if used >= _MIN_COMPACT_BYTES and 1.0 - self.keys.live_bytes / used > ratio:
            self.compact()

    def compact(self, progress: Callable[[int, int | None], None] | None = None) -> None:
        """Rewrite the log with only live records (and retained history).

        ``progress(copied, total)`` is called as records are copied to the new file.
        """
        log = self.log.log
        history = self.history
        if history is not None:
            history.trim(self.clock())
            keep_offsets, keep_seqs = history.offsets(), history.seqs()

            def keep(rec: LogRecord) -> bool:
                return rec.offset in keep_offsets or rec.seq in keep_seqs

            mapping: dict[int, int] = log.compact(keep, progress=progress)
        else:
            if isinstance(log, AppendLog):  # a file: C passes where the table allows
                olds = self.keys.sorted_offsets()
                if olds is not None:
                    self.keys.remap_sorted(olds, log.compact_sorted(olds, progress=progress))
                    return
            mapping = log.compact(self.keys.live_offsets(), progress=progress)
        self.keys.remap(mapping)
        if history is not None:
            history.remap(mapping)
