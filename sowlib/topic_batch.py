"""Batch publishing for :class:`~sowlib.topic_core.TopicCore`: ``publish_many``'s fast path.

Decode, key, frame and install a whole batch stage by stage, in C-level maps where
the data allows. Functions over a TopicCore (callers hold its lock). Imports what
topic_core imports; never ``topic`` or ``store``.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import repeat
from operator import is_, itemgetter
from typing import TYPE_CHECKING, Any, cast

from sowlib.errors import SowError
from sowlib.record import Record
from sowlib.results import PublishResults
from sowlib.topic_entries import SIZE, Entry, Slot

if TYPE_CHECKING:
    from sowlib.topic_core import TopicCore

__all__ = ["publish_batch"]

_new_record = partial(tuple.__new__, Record)
_SIZE = itemgetter(SIZE)


def publish_batch(
    core: TopicCore,
    messages: Sequence[object],
    expiration: float | None,
    known: tuple[str, Sequence[Any]] | None = None,
) -> PublishResults | None:
    """publish_many's fast path: one pass per stage over the whole batch.

    Decode, key, frame and install without per-message method calls. ``known`` is
    a top-level field and its value in each message, trusted: when the key is that
    one field and the topic keeps no documents, the keys come from the values and
    the messages are not parsed. Returns
    None, having changed nothing, when the batch needs the general path (a
    history topic, active subscribers, a message that is not str/bytes, a
    generator other than content keys, or any error, which the general path
    then raises with its full context).
    """
    content = core._content_keys
    if (
        core._history is not None
        or core._subs.active
        or content is None
        or core._keygen is not content
        or not core._codec.supports_filter
    ):
        return None
    kinds = set(map(type, messages))
    payloads: list[bytes]
    if kinds <= {bytes}:
        payloads = list(cast(Sequence[bytes], messages))
    elif kinds <= {str}:
        payloads = [m.encode() for m in cast(Sequence[str], messages)]
    else:
        return None
    hashes = None
    docs: list[Any] | None = None
    top_values = getattr(core._codec, "top_values", None)
    top = content.top_field
    if not core._indexed and top is not None:
        if (
            known is not None
            and known[0] == top
            and len(known[1]) == len(payloads)
            and core.message_type == "json"  # the values were read from JSON text
        ):
            hashes = content.hashes_of_values(known[1])
        if hashes is None and top_values is not None:
            # No document is kept: parse, take the key field and let each go at once.
            values = top_values(payloads, top)
            hashes = None if values is None else content.hashes_of_values(values)
    if hashes is None:
        decode_many = getattr(core._codec, "decode_many", None)
        try:
            docs = decode_many(payloads) if decode_many else [*map(core._codec.decode, payloads)]
            hashes = content.hashes_of(docs)
        except SowError:
            return None
    keys = list(map(str, hashes))
    now = core._clock()
    expires = core._expires_at(expiration, now)
    # Times as the log stores them (microseconds), so a reopen reads the same values.
    stamp = round(now * 1_000_000) / 1_000_000
    expires = round(expires * 1_000_000) / 1_000_000 if expires else 0.0
    offsets, sizes, seq = core._log.append_puts(keys, payloads, stamp, expires, hashes)
    first = seq
    if core._indexed or core._docs or len(set(keys)) != len(keys):
        inserted = _install_each(core, keys, payloads, docs, offsets, sizes, seq, stamp, expires)
    else:
        inserted = _install_all(core, keys, payloads, offsets, sizes, seq, stamp, expires)
    results = PublishResults(keys, first, inserted)
    counts = core._counts
    inserts = inserted.count(True)
    counts["inserts"] += inserts
    counts["updates"] += len(keys) - inserts
    counts["publishes"] += len(keys)
    if expires and core.config.expiration_enabled:
        push, heap = heapq.heappush, core._expiry
        for i, key in enumerate(keys):
            push(heap, (expires, first + i, key))
    core._maybe_compact()
    return results


def _install_each(
    core: TopicCore,
    keys: list[str],
    payloads: list[bytes],
    docs: list[Any] | None,
    offsets: list[int],
    sizes: list[int],
    seq: int,
    stamp: float,
    expires: float,
) -> list[bool]:
    """Point each key at its appended record, in order; returns the inserted flags."""
    entries, docs_map = core._entries, core._docs
    get_entry = entries.get
    # Unindexed topics cache only Records read since their key's last write
    # (lock-free readers may add one at any time, so always drop it).
    forget = None if core._indexed else core._records.pop
    # Decoded documents are kept once queries need them (the first content
    # query builds the indexes); until then a publish-only topic keeps none.
    on_put = core.indexes.on_put if core._indexed else None
    drop_doc = docs_map.pop if docs_map else None
    # Indexed topics keep a Record per key: queries return them as they are.
    records, make_record = core._records, _new_record
    name, mtype, shown_exp = core.name, core.message_type, expires or None
    inserted: list[bool] = []
    flag = inserted.append
    live = core._live_bytes
    for key, payload, doc, offset, size in zip(
        keys, payloads, repeat(None) if docs is None else docs, offsets, sizes, strict=False
    ):
        old = get_entry(key)
        entries[key] = (offset, seq, stamp, expires, b"", size, payload)
        if old is None:
            live += size
            flag(True)
        else:
            live += size - (core._size_at(old) if isinstance(old, int) else old[SIZE])
            flag(False)
            if forget is not None:
                forget(key, None)
        if on_put is not None:
            on_put(key, docs_map.get(key) if old is not None else None, doc)
            docs_map[key] = doc
            records[key] = make_record((key, payload, seq, stamp, shown_exp, name, mtype, b"", doc))
        elif drop_doc is not None:
            drop_doc(key, None)
        seq += 1
    core._live_bytes = live
    return inserted


def _install_all(
    core: TopicCore,
    keys: list[str],
    payloads: list[bytes],
    offsets: list[int],
    sizes: list[int],
    seq: int,
    stamp: float,
    expires: float,
) -> list[bool]:
    """:meth:`_install_each` for distinct keys of an unindexed topic, in C-level maps."""
    entries = core._entries
    olds = list(map(entries.get, keys))
    entries.update(
        zip(
            keys,
            # zip's tuples are the entries (a tuple zip has handed out and that
            # is still referenced is never reused).
            cast(
                "Iterator[Entry]",
                zip(
                    offsets,
                    range(seq, seq + len(keys)),
                    repeat(stamp),
                    repeat(expires),
                    repeat(b""),
                    sizes,
                    payloads,
                    strict=False,  # repeat() is endless; the lists have one length
                ),
            ),
            strict=True,
        )
    )
    # Lock-free readers may have cached a Record of an old version: drop them.
    records = core._records
    deque(map(records.pop, keys, repeat(None)), maxlen=0)
    replaced = cast(list[Slot], list(filter(None, olds)))
    try:
        old_bytes = sum(map(_SIZE, cast(list[Entry], replaced)))
    except TypeError:  # a bare offset (a key not touched since a checkpoint load)
        old_bytes = sum(map(core._slot_size, replaced))
    core._live_bytes += sum(sizes) - old_bytes
    return list(map(is_, olds, repeat(None)))
