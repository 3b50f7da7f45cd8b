"""A derived topic's trusted write: the changed groups of a view, written in one step.

A view's feed holds each changed group's document and SOW key. Published one at a
time (the reference: ``Topic.publish(doc, sow_key=)``, ``sow_delete_by_keys``), each
would be encoded, decoded and validated again, keyed, framed, appended, installed and
indexed alone. :meth:`DerivedWrites.write_derived` writes them together instead:
each document encoded once and never decoded (a subscriber's record carries a copy of
the document when its JSON reads back equal, :func:`own_doc`, else decodes its payload
when read), the puts of a run appended with one log call, one key-map update, index
upkeep a column at a time (the indexed values read out of the payloads, as
``publish_many`` reads them), the replaced records read only for a delta subscription
(the only one that looks at them); a few changes into a memory log without field
indexes (a watched view's one or two groups per publish) installed one by one with no
batch machinery. Subscribers get, in order, the message the reference would send for
each change. ``tests/views`` checks both paths agree. Imports the topic's ``writer``,
``logview`` and ``parts``; never the facade (the Topic inherits :class:`DerivedWrites`
through ``Following``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from sowlib.document import MISSING
from sowlib.errors import EncodeError
from sowlib.index.types import Key
from sowlib.storage import LogRecord, RecordKind, framed_size
from sowlib.topic.parts import Parts
from sowlib.topic.writer import Writer, payload_columns

__all__ = ["DerivedWrites", "KeySizes", "accepts", "own_doc", "write_groups"]

_PUT, _DELETE = RecordKind.PUT, RecordKind.DELETE
#: Runs of at most this many puts are appended and installed one by one (the batch
#: calls cost more than they save on a few).
_FEW = 4
#: Message types whose codec writes any document a view renders as text its decoder
#: reads back (the documents are not decoded again to check).
_TRUSTED_TYPES = frozenset({"json"})
_I64_MIN, _U64_MAX = -(2**63), 2**64 - 1
_DELTA = attrgetter("delta")

#: One change of a group: its SOW key and its new document, None for a delete.
Change = tuple[str, Any]


def accepts(writer: Writer) -> bool:
    """Whether ``writer``'s topic can take :func:`write_groups`: publisher-supplied SOW keys
    (no key fields), no history, no default expiration, a trusted message type, and
    index values kept (else the reference path, one publish per change)."""
    return _accepts(writer) is not None


def _accepts(writer: Writer) -> bool | None:
    """:func:`accepts`: None when not, else whether the topic has field indexes."""
    if (
        writer.keygen is not None
        or writer.history is not None
        or writer.config.default_ttl
        or writer.config.message_type not in _TRUSTED_TYPES
    ):
        return None
    indexes = writer.indexes
    indexes.ensure_values()
    fields = indexes.has_field_indexes
    return None if fields and not indexes.values_known else fields


#: A SOW key's text -> (its in-memory key, the framed size of its record less the
#: payload): what each write of a group's record needs, computed once per group.
KeySizes = dict[str, tuple[Key, int]]
#: :class:`KeySizes` kept by a topic is emptied past this many keys.
_KEPT_SIZES = 1 << 16


def _key_size(writer: Writer, known: KeySizes, sow_key: str) -> tuple[Key, int]:
    """``(key, framed size less the payload)`` of ``sow_key``, noted in ``known``."""
    got = known.get(sow_key)
    if got is None:
        if len(known) >= _KEPT_SIZES:
            known.clear()
        got = known[sow_key] = (writer.keys.key_of(sow_key), framed_size(sow_key, 0, 0, 0.0))
    return got


def write_groups(
    writer: Writer,
    changes: Sequence[Change],
    known: KeySizes | None = None,
    fields: bool | None = None,
) -> bool:
    """Write ``changes`` in order when :func:`accepts`; False when a document cannot be
    encoded (nothing written: the caller takes the reference path, which reports it).

    A run of puts is installed together (a delete ends the run); a SOW key repeated
    within a run takes the reference path's order by splitting the run there. In a
    memory log without field indexes a run of a few puts is installed one by one
    (:func:`_write_few`). ``known`` keeps each SOW key's in-memory key and record size
    between calls; ``fields``: whether the topic has field indexes, when known.
    """
    encode = writer.views.codec.encode
    try:
        encoded = [(k, None if d is None else encode(d), d) for k, d in changes]
    except EncodeError:
        return False
    if known is None:
        known = {}
    if fields is None:
        fields = writer.indexes.has_field_indexes
    if len(encoded) <= _FEW and not fields and not writer.log.persistent:
        _write_few(writer, encoded, known)
        return True
    run: list[tuple[str, bytes, Any]] = []
    seen: set[str] = set()
    for sow_key, payload, doc in encoded:
        if payload is not None and sow_key not in seen:
            run.append((sow_key, payload, doc))
            seen.add(sow_key)
            continue
        if run:
            _put_run(writer, run, known)
            run, seen = [], set()
        if payload is None:
            _delete(writer, sow_key)
        else:
            run.append((sow_key, payload, doc))
            seen.add(sow_key)
    if run:
        _put_run(writer, run, known)
    writer.maybe_compact()
    return True


def _delete(writer: Writer, sow_key: str) -> None:
    """``sow_delete_by_keys(sow_key)`` of one key (absent: nothing)."""
    key = writer.keys.key_of(sow_key)
    if key in writer.keys:
        writer.remove(key, _DELETE)


def own_doc(doc: Any) -> Any:
    """A copy of ``doc`` when decoding its JSON gives an equal document of the same types
    (a flat object of text, booleans, None, 64-bit integers and finite floats: what a
    view renders), else MISSING (the record decodes its payload when read)."""
    for value in doc.values():
        t = type(value)
        if t is float:
            if value - value != 0.0:  # inf, NaN: written as null
                return MISSING
        elif t is int:
            if not _I64_MIN <= value <= _U64_MAX:
                return MISSING
        elif t is not str and t is not bool and value is not None:
            return MISSING
    return doc.copy()


def _deltas(writer: Writer) -> bool:
    """Whether a subscription compares with the replaced record (a delta one)."""
    return True in map(_DELTA, writer.subs.subscriptions())


def _write_few(
    writer: Writer, encoded: list[tuple[str, bytes | None, Any]], known: KeySizes
) -> None:
    """A few changes into a memory log of a topic without field indexes, one by one: what
    ``publish(doc, sow_key=)`` and ``sow_delete_by_keys`` of each store and send (the
    subscribers' records carry the document, not decoded again, when :func:`own_doc`).
    The puts' messages go out together, before a delete's and at the end."""
    keys = writer.keys
    subs = writer.subs
    views = writer.views
    append = writer.log.log.append
    cache = views.cache
    on_put_keys = writer.indexes.on_put_keys
    counts = writer.counts
    now = writer.clock()
    active = subs.active
    deltas = active and _deltas(writer)
    cached = len(cache)
    sent: list[tuple[str, Any, Any]] = []
    record = views.put_record
    for sow_key, payload, doc in encoded:
        got = known.get(sow_key)
        key, base = _key_size(writer, known, sow_key) if got is None else got
        if payload is None:
            if sent:
                subs.on_publishes(sent)
                sent = []
            if key in keys:
                writer.remove(key, _DELETE)
            cached = len(cache)  # the callbacks may have read records
            continue
        old = views.record(key) if deltas and key in keys else None
        rec = append(_PUT, sow_key, payload, timestamp=now)
        if cached:
            cache.drop(key)
        inserted = keys.put_offset(key, rec.offset, base + len(payload))
        on_put_keys(key, (), inserted)
        counts["inserts" if inserted else "updates"] += 1
        counts["publishes"] += 1
        if active:
            sent.append((sow_key, old, record(sow_key, rec.seq, now, payload, own_doc(doc))))
    if sent:
        subs.on_publishes(sent)
    writer.maybe_compact()


def _put_run(writer: Writer, run: list[tuple[str, bytes, Any]], known: KeySizes) -> None:
    """Append and install puts of distinct SOW keys; deliver their messages in order."""
    texts = [t for t, _p, _d in run]
    payloads = [p for _t, p, _d in run]
    live = writer.keys
    got = [_key_size(writer, known, t) for t in texts]
    keys: list[Key] = [k for k, _b in got]
    sizes = [b + len(p) for (_k, b), p in zip(got, payloads, strict=True)]
    subs = writer.subs
    views = writer.views
    olds: list[Any] | None = None
    if subs.active:  # the replaced records: what a delta subscription compares with
        deltas = _deltas(writer)
        olds = [views.record(k) if deltas and k in live else None for k in keys]
    now = writer.clock()
    view = writer.log
    few = len(run) <= _FEW
    if view.persistent:
        items = [(_PUT, t, p, now, 0.0, b"") for t, p, _d in run]
        records: list[LogRecord] = view.log.append_many(items)
        heads = [view.header_of(r) for r in records]
        offsets = [h.offset for h in heads]
        seqs = [h.seq for h in heads]
        sizes = [h.size for h in heads]
    elif few:
        append = view.log.append
        appended = [append(_PUT, t, p, timestamp=now) for t, p, _d in run]
        offsets = [r.offset for r in appended]
        seqs = [r.seq for r in appended]
    else:
        offsets, _estimates, first = view.log.append_puts(texts, payloads, now, 0.0)
        seqs = list(range(first, first + len(offsets)))
    views.cache.drop_many(keys)
    if few:
        put = live.put_offset
        inserted = list(map(put, keys, offsets, sizes))
    else:
        inserted = live.put_bare(keys, offsets, sizes)
    indexes = writer.indexes
    if indexes.has_field_indexes:
        indexes.put_columns(keys, payload_columns(views, indexes, payloads), inserted)
    else:
        on_keys = indexes.on_put_keys
        for key, new in zip(keys, inserted, strict=True):
            on_keys(key, (), new)
    counts = writer.counts
    added = inserted.count(True)
    counts["inserts"] += added
    counts["updates"] += len(inserted) - added
    counts["publishes"] += len(inserted)
    if olds is not None:
        record = views.put_record
        subs.on_publishes(
            [
                (text, old, record(text, seq, now, payload, own_doc(doc)))
                for (text, payload, doc), seq, old in zip(run, seqs, olds, strict=True)
            ]
        )


class DerivedWrites:
    """The trusted write of :class:`~sowlib.topic.facade.Topic` (its attributes are set
    by the Topic's constructor)."""

    _p: Parts
    _lock: threading.RLock
    _check_writable: Callable[[str], None]  # sowlib.topic.keyreads.KeyReads
    _tick: Callable[[], None]  # sowlib.topic.keyreads.KeyReads
    __known: KeySizes | None = None  # write_groups' keys and sizes, made on first use

    def write_derived(self, changes: Sequence[Change]) -> bool:
        """Write a derived topic's changed records, in order, in one step: ``(sow_key,
        document)`` publishes (the document a dict the topic's codec encodes), ``(sow_key,
        None)`` deletes. Subscribers get what ``publish(doc, sow_key=)`` and
        ``sow_delete_by_keys(sow_key)`` of each, in order, would send them.

        Returns:
            False, with nothing written, when the topic cannot take it (key fields,
            history, a default expiration, a message type not trusted, a document the
            codec refuses): publish each change instead.
        Raises:
            ReadOnlyError, StoreClosedError: as ``publish``.
        """
        with self._lock:
            self._check_writable("publish")
            self._tick()
            writer = self._p.writer
            fields = _accepts(writer)
            if fields is None:
                return False
            known = self.__known
            if known is None:
                known = self.__known = {}
            return write_groups(writer, changes, known, fields)
