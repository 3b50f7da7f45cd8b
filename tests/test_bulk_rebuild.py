"""The bulk paths of a crash reopen agree with their one-at-a-time references.

Indexes filed from keys grouped by value (``add_groups``, packed or not, in any
batches) equal indexes filed one key at a time; the key map replayed a column at a
time (from the tuples, or from the columns the open's walk kept) equals the entries
applied in order; payloads read without a second checksum
equal the checked reads; and a close that finds the topic as its checkpoint left it
saves that checkpoint again instead of packing the same state.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sowlib.topic.loader
from sowlib import SowStore
from sowlib.codecs import json_fields
from sowlib.document import MISSING
from sowlib.index.hash import HashIndex
from sowlib.index.memo import MemoIndex
from sowlib.index.persist import dump_indexes, index_snapshot, load_indexes
from sowlib.index.values import KeyGroups
from sowlib.paths import parse_path
from sowlib.storage import AppendLog, RecordKind
from sowlib.topic.keymap import KeyMap
from sowlib.topic.logview import LogView
from sowlib.topic.slots import NATIVE_SLOTS

SCALARS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**60, -(2**70), 2**2000]),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, 1.0, 2.5]),
    st.booleans(),
    st.none(),
    st.sampled_from(["", "a", "b", "05", "5", "1e3", "nan", "-0", " 7"]),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.just({"x": 1}),
    st.just(MISSING),
)


def _batches(items: list[Any], cuts: list[int]) -> list[list[Any]]:
    bounds = sorted({0, len(items), *(c % (len(items) + 1) for c in cuts)})
    return [items[a:b] for a, b in itertools.pairwise(bounds)]


def _snapshot(index: HashIndex | MemoIndex) -> Any:
    """What an index holds, with each number key as (type, value) where equal
    numbers of different types share an entry (NaN compared by its text)."""
    if isinstance(index, HashIndex):
        entries, buckets, loose = index.export()
        return dict(zip(entries, map(frozenset, buckets), strict=True)), frozenset(loose)
    maps, sets, counts = index.export()
    return (
        [{repr(k) if k != k else k: frozenset(v) for k, v in m.items()} for m in maps],
        [frozenset(s) for s in sets],
        counts,
    )


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(VALUES, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    packed=st.booleans(),
)
def test_indexes_filed_from_groups_equal_indexes_filed_key_by_key(
    values: list[Any], cuts: list[int], packed: bool
) -> None:
    keys = [f"k{i}" for i in range(len(values))]
    single_hash, single_memo = HashIndex(["/v"]), MemoIndex(parse_path("/v"))
    for key, value in zip(keys, values, strict=True):
        single_hash.add_entries(key, single_hash.entries((value,)))
        single_memo.update(key, value, True)
    groups = KeyGroups()
    members = list(range(len(keys))) if packed else keys
    for part, vals in zip(_batches(members, cuts), _batches(values, cuts), strict=True):
        groups.add(part, vals)
    bulk_hash, bulk_memo = HashIndex(["/v"]), MemoIndex(parse_path("/v"))
    bulk_hash.add_groups(groups, keys if packed else None)
    bulk_memo.add_groups(groups, keys if packed else None)
    assert _snapshot(bulk_hash) == _snapshot(single_hash)
    assert _snapshot(bulk_memo) == _snapshot(single_memo)
    bulk_hash.check()


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(st.tuples(st.integers(0, 9), VALUES), max_size=15),
    second=st.lists(st.tuples(st.integers(0, 19), VALUES), max_size=15),
)
def test_groups_filed_into_a_filled_index_equal_key_by_key(
    first: list[tuple[int, Any]], second: list[tuple[int, Any]]
) -> None:
    """A bulk add into an index that already holds other keys merges with its buckets."""
    firsts = dict(first)
    seconds = {k + 100: v for k, v in second}
    single_hash, single_memo = HashIndex(["/v"]), MemoIndex(parse_path("/v"))
    bulk_hash, bulk_memo = HashIndex(["/v"]), MemoIndex(parse_path("/v"))
    for key, value in [*firsts.items(), *seconds.items()]:
        single_hash.add_entries(key, single_hash.entries((value,)))
        single_memo.update(key, value, True)
    for key, value in firsts.items():
        bulk_hash.add_entries(key, bulk_hash.entries((value,)))
        bulk_memo.update(key, value, True)
    bulk_hash.add_many(list(seconds), list(seconds.values()))
    bulk_memo.add_many(list(seconds), list(seconds.values()))
    assert _snapshot(bulk_hash) == _snapshot(single_hash)
    assert _snapshot(bulk_memo) == _snapshot(single_memo)


def test_packed_buckets_are_saved_as_they_are_and_load_back() -> None:
    """Packed key sets from a bulk build are written without unpacking and load equal."""
    from sowlib.index import IndexSet

    keys = list(range(1000, 1100))
    built = IndexSet(["/id"], [["/g"]], ["/v"])
    groups_g, groups_v = KeyGroups(), KeyGroups()
    groups_g.add(range(100), ["ab"[i % 2] for i in range(100)])
    groups_v.add(range(100), [i % 7 for i in range(100)])
    built.hashes[0].add_groups(groups_g, keys)
    memo = built.memo(parse_path("/v"))
    assert memo is not None
    memo.add_groups(groups_v, keys)
    built.restore_counts(100, set())
    blob = dump_indexes(built, keys)
    assert dump_indexes(built, [*keys, 5000]) != blob  # a longer key list: positions reused
    loaded = IndexSet(["/id"], [["/g"]], ["/v"])
    assert load_indexes(loaded, blob, keys)
    assert index_snapshot(loaded) == index_snapshot(built)
    reordered = IndexSet(["/id"], [["/g"]], ["/v"])
    assert load_indexes(reordered, dump_indexes(built, keys[::-1]), keys[::-1])
    assert index_snapshot(reordered) == index_snapshot(built)


class _Sizes:
    """A log that knows only each record's size (what a one-at-a-time replay reads)."""

    def __init__(self, sizes: dict[int, int]) -> None:
        self.sizes = sizes

    def read_entry(self, offset: int) -> tuple[int, float, float, bytes, int]:
        return 0, 0.0, 0.0, b"", self.sizes[offset]


ENTRY = st.tuples(
    st.sampled_from([RecordKind.PUT, RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE]),
    st.sampled_from(["1", "7", "42", "18446744073709551615", "18446744073709551616", "0"]),
    st.sampled_from([0.0, 0.0, 5.5]),
    st.sampled_from([b"", b"", b"c"]),
    st.integers(36, 300),
)


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(ENTRY, max_size=30),
    content=st.booleans(),
    text_keys=st.booleans(),
)
def test_a_column_replay_equals_the_entries_applied_in_order(
    entries: list[tuple[RecordKind, str, float, bytes, int]], content: bool, text_keys: bool
) -> None:
    scan = []
    offset = 100
    for seq, (kind, text, expires, corr, size) in enumerate(entries, 1):
        if text_keys:
            text = "k" + text
        scan.append((offset, kind, seq, seq / 2, expires, text, corr, size))
        offset += size
    sizes = _Sizes({e[0]: e[7] for e in scan})
    view = LogView(sizes)  # type: ignore[arg-type]  # a log that only knows sizes
    view.file = sizes  # type: ignore[assignment]  # read as a file log: headers by offset
    keymap = KeyMap(view, content=content)
    keymap.replay(scan)
    model: dict[Any, tuple[Any, int]] = {}
    for off, kind, seq, stamp, expires, text, corr, size in scan:
        key = keymap.key_of(text)
        if kind == RecordKind.PUT:
            slot = (off, seq, stamp, expires, corr, size) if expires or corr else off
            model[key] = (slot, size)
        else:
            model.pop(key, None)
    if content and NATIVE_SLOTS:  # the C table lists keys that are not u64 ints last
        model = {k: model[k] for k in sorted(model, key=lambda k: type(k) is not int)}
    assert keymap.keys() == list(model)
    assert keymap.offsets() == [
        (k, s if isinstance(s, int) else s[0]) for k, (s, _size) in model.items()
    ]
    assert keymap.live_bytes == sum(size for _slot, size in model.values())
    for key, (slot, _size) in model.items():
        if not isinstance(slot, int):
            assert tuple(keymap.header(key) or ()) == slot
    keys, offsets = keymap.live_in_file_order()
    assert offsets == sorted(offsets)
    assert sorted(zip(offsets, keys, strict=True)) == sorted((o, k) for k, o in keymap.offsets())


OPS = st.lists(
    st.tuples(
        st.sampled_from([RecordKind.PUT, RecordKind.PUT, RecordKind.PUT, RecordKind.DELETE]),
        st.sampled_from(["1", "7", "42", "18446744073709551615", "18446744073709551616", "k"]),
        st.sampled_from([0.0, 0.0, 0.0, 5e9]),
        st.sampled_from([b"", b"", b"", b"c"]),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, content=st.booleans())
def test_the_key_map_from_the_open_columns_equals_the_entries_replayed(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[RecordKind, str, float, bytes]],
    content: bool,
) -> None:
    path = tmp_path_factory.mktemp("cols") / "t.log"
    log = AppendLog(path, meta=b"{}")
    for kind, text, expires, corr in ops:
        payload = b"" if kind != RecordKind.PUT else text.encode() * 3
        log.append(kind, text, payload, timestamp=1.5, expiration=expires, correlation_id=corr)
    log.flush()
    log.close()
    log = AppendLog(path)  # its open verified the records: scan_columns takes those columns
    try:
        view = LogView(log)
        by_columns = KeyMap(view, content=content)
        by_columns.replay_columns(log.scan_columns())
        one_by_one = KeyMap(view, content=content)
        one_by_one.replay(iter(list(log.scan_entries())))
        assert by_columns.keys() == one_by_one.keys()
        assert by_columns.offsets() == one_by_one.offsets()
        assert by_columns.live_bytes == one_by_one.live_bytes
        for key in one_by_one:
            assert by_columns.header(key) == one_by_one.header(key)
        filled = KeyMap(view, content=content)  # not empty: the one-by-one path
        filled.replay(iter(list(log.scan_entries())))
        filled.replay_columns(log.scan_columns())
        assert sorted(filled.offsets(), key=repr) == sorted(one_by_one.offsets(), key=repr)
    finally:
        log.close()


def test_payloads_read_without_a_second_checksum_equal_the_checked_reads(
    tmp_path: Path,
) -> None:
    with SowStore(tmp_path) as store:
        content = store.create_topic("c", keys=["/id"])
        content.publish_many([{"id": i, "pad": "x" * (i % 5)} for i in range(300)])
        content.publish({"id": 1, "pad": "y" * 70_000})  # longer than one read ahead
        content.publish({"id": 2}, expiration=1000)
        content.sow_delete_by_data({"id": 3})
        plain = store.create_topic("p")
        plain.publish({"a": 1}, sow_key="k1")
        plain.publish({"a": 2}, sow_key="k2")
        paths = [content.path, plain.path]
    for path in paths:
        log = AppendLog(path, readonly=True)
        try:
            view = LogView(log)
            live: dict[str, int] = {}
            for off, kind, *_rest, text, _corr, _size in log.scan_entries():
                if kind == RecordKind.PUT:
                    live.pop(text, None)
                    live[text] = off
                else:
                    live.pop(text, None)
            pairs = sorted(live.items(), key=lambda p: p[1])
            texts = [t for t, _ in pairs]
            offsets = [o for _, o in pairs]
            keys: list[Any] = [int(t) if t.isdigit() else t for t in texts]
            expected = [f[5] for f in log.read_puts(offsets)]
            for batch in (1, 7, 4096):
                got = [p for chunk in view.trusted_payloads(keys, offsets, batch) for p in chunk]
                assert got == expected
            wrong = [k + 1 if isinstance(k, int) else k for k in keys]
            got = [p for chunk in view.trusted_payloads(wrong, offsets, 64) for p in chunk]
            assert got == expected  # a key that does not match: the checked read
        finally:
            log.close()


def _store(path: Path) -> None:
    with SowStore(path) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/g"]], indexes=["/v"])
        topic.publish_many([json.dumps({"id": i, "g": "ab"[i % 2], "v": i}) for i in range(200)])


def _checkpoint(path: Path) -> Path:
    (name,) = (n for n in os.listdir(path) if n.endswith(".ckpt"))
    return path / name


def test_an_unchanged_topic_saves_the_checkpoint_it_opened_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store(tmp_path)
    before = _checkpoint(tmp_path).read_bytes()

    def no_packing(*args: Any) -> bytes:
        raise AssertionError("the indexes were packed again")

    monkeypatch.setattr(sowlib.topic.loader, "dump_indexes", no_packing)
    for _ in range(2):
        with SowStore(tmp_path) as store:
            topic = store.topic("t")
            assert topic.stats()["from_checkpoint"]
            assert len(topic.sow("/g = 'a'")) == 100
            assert len(topic.sow("/v BETWEEN 10 AND 19")) == 10
            assert topic.lookup(5) is not None
        assert _checkpoint(tmp_path).read_bytes() == before


@pytest.mark.parametrize("change", ["publish", "delete", "memo", "compact", "same_value"])
def test_a_changed_topic_saves_a_new_checkpoint(tmp_path: Path, change: str) -> None:
    _store(tmp_path)
    before = _checkpoint(tmp_path).read_bytes()
    with SowStore(tmp_path) as store:
        topic = store.topic("t")
        if change == "publish":
            topic.publish({"id": 500, "g": "a", "v": 1})
        elif change == "delete":
            topic.sow_delete_by_data({"id": 7})
        elif change == "memo":
            for _ in range(3):  # a query on an unindexed field, enough to build its memo
                topic.sow("/id > 150")
        elif change == "compact":
            topic.compact()
        else:
            topic.publish({"id": 3, "g": "b", "v": 3})  # the same document again
        names = topic.stats()["indexes"]
        expected = {r.sow_key: r.data for r in topic.sow("1=1")}
    if change != "memo" or names != ["hash(/g)", "memo(/v)"]:
        assert _checkpoint(tmp_path).read_bytes() != before
    with SowStore(tmp_path) as store:
        topic = store.topic("t")
        assert topic.stats()["from_checkpoint"]
        assert topic.stats()["indexes"] == names
        assert {r.sow_key: r.data for r in topic.sow("1=1")} == expected
        topic.check()


def test_a_crash_reopen_then_close_saves_indexes_that_load_equal(tmp_path: Path) -> None:
    _store(tmp_path)
    os.unlink(_checkpoint(tmp_path))  # as a crash leaves it
    with SowStore(tmp_path) as store:
        topic = store.topic("t")
        assert not topic.stats()["from_checkpoint"]
        topic.check()
    with SowStore(tmp_path) as store:
        topic = store.topic("t")
        assert topic.stats()["from_checkpoint"]
        assert topic.explain("/g = 'a'").kind == "hash"
        assert len(topic.sow("/g = 'a'")) == 100
        topic.check()


FIELD = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**60, 10**19, 0.5, -0.0, 1e300, True, False, None]),
    st.sampled_from(["", "a", "05", "5", "1e3", " 7", "\u00e9"]),
    st.lists(st.integers(0, 2), max_size=2),
)
DOC = st.fixed_dictionaries(
    {"id": st.integers(0, 25)}, optional={"g": FIELD, "v": FIELD, "pad": st.text(max_size=4)}
)


@settings(max_examples=40, deadline=None)
@given(docs=st.lists(DOC, min_size=1, max_size=40), spaced=st.booleans())
def test_indexes_of_a_crash_reopen_equal_indexes_filed_publish_by_publish(
    tmp_path_factory: pytest.TempPathFactory, docs: list[dict[str, Any]], spaced: bool
) -> None:
    """The rebuild reads the indexed fields out of the JSON bytes where it can (the C
    form of codecs/json_fields.py) and decodes otherwise; either way the indexes equal
    those the writer kept one publish at a time."""
    path = tmp_path_factory.mktemp("crash")
    separators = (", ", ": ") if spaced else (",", ":")
    with SowStore(path) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/g"]], indexes=["/v"])
        for doc in docs:
            topic.publish(json.dumps(doc, separators=separators).encode())
        kept = index_snapshot(topic.indexes)
    for native in (json_fields.NATIVE_TOP_COLUMNS, None):
        os.unlink(_checkpoint(path))  # as a crash leaves it
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(json_fields, "NATIVE_TOP_COLUMNS", native)
            with SowStore(path) as store:
                topic = store.topic("t")
                assert not topic.stats()["from_checkpoint"]
                assert index_snapshot(topic.indexes) == kept


def test_nan_and_signed_zero_keep_their_own_entries() -> None:
    """Grouping by value keeps NaN loose and files -0.0 with 0, as one at a time does."""
    groups = KeyGroups()
    groups.add(["a", "b", "c", "d"], [math.nan, -0.0, 0, False])
    memo = MemoIndex(parse_path("/v"))
    memo.add_groups(groups)
    maps, sets, counts = memo.export()
    assert {value: set(keys) for value, keys in maps[0].items()} == {0: {"b", "c", "d"}}
    assert sets[1] == {"a"}
    assert counts[0] == 3
