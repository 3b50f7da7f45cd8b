"""Every bad input gets a clear error from the SowError tree and loses no data (DESIGN §4).

Each case checks the exception kind, the builtin it also is (so ``except ValueError``
works), its structured fields (offsets, option names, never message wording), and
that every stored record, every topic and every file is unchanged afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import msgpack
import pytest

from sowlib import SowStore, Topic
from sowlib.errors import (
    ArgumentError,
    ConfigError,
    CorruptRecordError,
    DecodeError,
    FieldPathError,
    FilterArityError,
    FilterError,
    FilterSyntaxError,
    FormatVersionError,
    InvalidSowKeyError,
    MissingKeyFieldError,
    QueryOptionError,
    ReadOnlyError,
    RecordTooLargeError,
    SowError,
    StorageError,
    StoreClosedError,
    StoreLockedError,
    TopicExistsError,
    UnknownFunctionError,
    UnknownTopicError,
    UnsupportedOperationError,
)
from sowlib.storage import AppendLog
from sowlib.store import topic_file_name

SOH = "\x01"


@attrs.define
class Env:
    """A persistent store with one topic per message type, two records in each."""

    store: SowStore
    path: Path

    def __getitem__(self, name: str) -> Topic:
        return self.store.topic(name)


SLAB = "64KB"  # small files keep the per-test store cheap to create


def build(path: Path) -> SowStore:
    store = SowStore(path)
    orders = store.create_topic("orders", keys=["/id"], indexes=["/price"], slab_size=SLAB)
    orders.publish_many(['{"id": 1, "price": 10}', '{"id": 2, "price": 20}'])
    xml = store.create_topic("xorders", message_type="xml", keys=["/o/id"], slab_size=SLAB)
    xml.publish("<o><id>1</id><qty>5</qty></o>")
    xml.publish("<o><id>2</id><qty>6</qty></o>")
    fix = store.create_topic("fix", message_type="fix", keys=["/11"], slab_size=SLAB)
    fix.publish(f"35=D{SOH}11=A1{SOH}38=100{SOH}")
    fix.publish(f"35=D{SOH}11=A2{SOH}38=200{SOH}")
    packed = store.create_topic("packed", message_type="msgpack", keys=["/id"], slab_size=SLAB)
    packed.publish(msgpack.packb({"id": 1, "v": "a"}))
    packed.publish(msgpack.packb({"id": 2, "v": "b"}))
    raw = store.create_topic("raw", message_type="binary", slab_size=SLAB)
    raw.publish(b"\x00\x01", sow_key="r1")
    raw.publish(b"\x02\x03", sow_key="r2")
    users = store.create_topic("users", slab_size=SLAB)
    users.publish('{"name": "ann"}', sow_key="u1")
    users.publish('{"name": "bob"}', sow_key="u2")
    hist = store.create_topic(
        "hist", keys=["/id"], history={"window": "1d", "granularity": "0s"}, slab_size=SLAB
    )
    hist.publish('{"id": 1, "v": 1}')
    hist.publish('{"id": 1, "v": 2}')
    small = store.create_topic("small", keys=["/id"], slab_size="4KB")
    small.publish('{"id": 1}')
    return store


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    store = build(tmp_path / "store")
    yield Env(store, tmp_path / "store")
    store.close()


Snapshot = tuple[dict[tuple[str, str], list[tuple[str, bytes, int]]], list[str]]


def snapshot(store: SowStore) -> Snapshot:
    """Every record of every topic (key, data, seq) and the files of the store directory."""
    records = {
        (t.name, t.message_type): sorted((r.sow_key, bytes(r.data), r.seq) for r in t.sow())
        for t in store.topics()
    }
    files = sorted(os.listdir(store.path)) if store.path else []
    return records, files


def file_bytes(path: Path) -> dict[str, bytes]:
    """The log files of a store directory (checkpoints and the lock file excluded)."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.name.endswith(".sow")}


@attrs.frozen
class Bad:
    """One bad input: what to do, what it must raise, and the fields the error must carry."""

    action: Callable[[Env], object]
    kind: type[SowError]
    builtin: type[Exception] | None
    fields: dict[str, Any] = attrs.field(factory=dict)


def _create(name: str, **kwargs: Any) -> Callable[[Env], object]:
    return lambda e: e.store.create_topic(name, **kwargs)


CASES: dict[str, Bad] = {
    # ------------------------------------------------------------ malformed messages
    "json-truncated": Bad(
        lambda e: e["orders"].publish('{"id": 3,'), DecodeError, ValueError, {"offset": 9}
    ),
    "json-not-utf8": Bad(lambda e: e["orders"].publish(b"\xff\xfe"), DecodeError, ValueError),
    "json-top-level-array": Bad(lambda e: e["orders"].publish("[1, 2]"), DecodeError, ValueError),
    "json-delta-truncated": Bad(
        lambda e: e["orders"].delta_publish('{"id": 1'), DecodeError, ValueError
    ),
    "xml-unclosed": Bad(lambda e: e["xorders"].publish("<o><id>3</id>"), DecodeError, ValueError),
    "xml-external-entity": Bad(
        lambda e: e["xorders"].publish(
            '<!DOCTYPE o [<!ENTITY x SYSTEM "file:///etc/hostname">]><o><id>&x;</id></o>'
        ),
        DecodeError,
        ValueError,
    ),
    "xml-to-json-topic": Bad(
        lambda e: e["orders"].publish("<o><id>1</id></o>"), DecodeError, ValueError
    ),
    "fix-field-without-equals": Bad(
        lambda e: e["fix"].publish(f"11=A3{SOH}35"), DecodeError, ValueError, {"offset": 6}
    ),
    "fix-garbage": Bad(lambda e: e["fix"].publish("garbage"), DecodeError, ValueError),
    "msgpack-reserved-byte": Bad(lambda e: e["packed"].publish(b"\xc1"), DecodeError, ValueError),
    "msgpack-not-a-map": Bad(
        lambda e: e["packed"].publish(msgpack.packb([1, 2])), DecodeError, ValueError
    ),
    "batch-with-one-bad-message": Bad(
        lambda e: e["orders"].publish_many(['{"id": 7}', '{"id": ', '{"id": 8}']),
        DecodeError,
        ValueError,
    ),
    # ------------------------------------------------------------ keys
    "missing-key-field": Bad(
        lambda e: e["orders"].publish('{"price": 1}'),
        MissingKeyFieldError,
        ValueError,
        {"topic": "orders", "field": "/id"},
    ),
    "null-key-field": Bad(
        lambda e: e["orders"].publish('{"id": null}'), MissingKeyFieldError, ValueError
    ),
    "missing-fix-key-tag": Bad(
        lambda e: e["fix"].publish(f"35=D{SOH}38=5{SOH}"),
        MissingKeyFieldError,
        ValueError,
        {"field": "/11"},
    ),
    "missing-key-in-delta": Bad(
        lambda e: e["orders"].delta_publish('{"price": 99}'), MissingKeyFieldError, ValueError
    ),
    "missing-key-in-batch": Bad(
        lambda e: e["orders"].publish_many(['{"id": 9}', '{"x": 1}']),
        MissingKeyFieldError,
        ValueError,
    ),
    "user-key-empty": Bad(
        lambda e: e["users"].publish("{}", sow_key=""), InvalidSowKeyError, ValueError, {"key": ""}
    ),
    "user-key-missing": Bad(
        lambda e: e["users"].publish("{}"), InvalidSowKeyError, ValueError, {"key": None}
    ),
    "user-key-not-base64": Bad(
        lambda e: e["users"].publish("{}", sow_key="u 1"), InvalidSowKeyError, ValueError
    ),
    "delete-by-keys-one-malformed": Bad(
        lambda e: e["users"].sow_delete_by_keys("u1,u!2"),
        InvalidSowKeyError,
        ValueError,
        {"key": "u!2"},
    ),
    "sow-keys-not-strings": Bad(
        lambda e: e["orders"].sow(sow_keys=[1]),  # type: ignore[list-item]
        InvalidSowKeyError,
        ValueError,
    ),
    # ------------------------------------------------------------ filters
    "filter-syntax": Bad(
        lambda e: e["orders"].sow("/price = = 1"), FilterSyntaxError, ValueError, {"offset": 9}
    ),
    "filter-unterminated-string": Bad(
        lambda e: e["orders"].sow("/a = 'x"), FilterSyntaxError, ValueError
    ),
    "filter-unknown-function": Bad(
        lambda e: e["orders"].sow("/a = 1 AND NOPE(/b) = 1"),
        UnknownFunctionError,
        ValueError,
        {"offset": 11, "name": "NOPE"},
    ),
    "filter-wrong-arity": Bad(
        lambda e: e["orders"].sow("UPPER(/a, /b) = 'X'"),
        FilterArityError,
        ValueError,
        {"offset": 0, "got": 2},
    ),
    "filter-bad-regex": Bad(
        lambda e: e["orders"].sow("/a LIKE '('"), FilterSyntaxError, ValueError, {"offset": 8}
    ),
    "filter-in-sow-delete": Bad(
        lambda e: e["orders"].sow_delete("/id = = 1"), FilterSyntaxError, ValueError
    ),
    "filter-in-subscribe": Bad(
        lambda e: e["orders"].subscribe(lambda m: None, "/id >"), FilterSyntaxError, ValueError
    ),
    "filter-across-topics": Bad(
        lambda e: e.store.sow("ord.*", "/id = = 1"), FilterSyntaxError, ValueError
    ),
    # ------------------------------------------------------------ query options
    "top-n-negative": Bad(
        lambda e: e["orders"].sow(top_n=-1), QueryOptionError, ValueError, {"option": "top_n"}
    ),
    "skip-n-without-top-n": Bad(
        lambda e: e["orders"].sow(skip_n=1), QueryOptionError, ValueError, {"option": "skip_n"}
    ),
    "order-by-bad-modifier": Bad(
        lambda e: e["orders"].sow(order_by="/price SIDEWAYS"),
        QueryOptionError,
        ValueError,
        {"option": "order_by"},
    ),
    "order-by-bad-path": Bad(
        lambda e: e["orders"].sow(order_by="price"),
        QueryOptionError,
        ValueError,
        {"option": "order_by"},
    ),
    "select-without-sign": Bad(
        lambda e: e["orders"].sow(select="[/price]"),
        QueryOptionError,
        ValueError,
        {"option": "select"},
    ),
    "bookmark-unparseable": Bad(
        lambda e: e["hist"].sow(bookmark="yesterday"),
        QueryOptionError,
        ValueError,
        {"option": "bookmark"},
    ),
    "batch-size-zero": Bad(lambda e: e["orders"].sow(batch_size=0), QueryOptionError, ValueError),
    "correlation-id-not-text": Bad(
        lambda e: e["orders"].publish('{"id": 5}', correlation_id=5),  # type: ignore[arg-type]
        ArgumentError,
        ValueError,
    ),
    "expiration-negative": Bad(
        lambda e: e["orders"].publish('{"id": 5}', expiration=-5), ArgumentError, ValueError
    ),
    "topic-regex-invalid": Bad(lambda e: e.store.sow("ord(", None), ConfigError, ValueError),
    # ------------------------------------------------------------ configuration
    "bad-durability": Bad(
        _create("c", keys=["/id"], durability="forever"),
        ConfigError,
        ValueError,
        {"where": "durability"},
    ),
    "bad-expiration-unit": Bad(
        _create("c", keys=["/id"], expiration="10parsecs"),
        ConfigError,
        ValueError,
        {"where": "expiration"},
    ),
    "slab-size-too-small": Bad(
        _create("c", keys=["/id"], slab_size="1KB"), ConfigError, ValueError, {"where": "slab_size"}
    ),
    "slab-size-not-a-size": Bad(
        _create("c", keys=["/id"], slab_size="lots"), ConfigError, ValueError
    ),
    "history-unknown-key": Bad(
        _create("c", keys=["/id"], history={"windw": "1d"}),
        ConfigError,
        ValueError,
        {"where": "history"},
    ),
    "history-not-a-duration": Bad(
        _create("c", keys=["/id"], history="forever"), ConfigError, ValueError
    ),
    "key-path-without-slash": Bad(
        _create("c", keys=["id"]), ConfigError, ValueError, {"where": "keys[0]"}
    ),
    "key-path-empty-step": Bad(
        _create("c", keys=["/id", "/a//b"]), ConfigError, ValueError, {"where": "keys[1]"}
    ),
    "hash-index-empty": Bad(_create("c", keys=["/id"], hash_indexes=[[]]), ConfigError, ValueError),
    "keys-and-generator": Bad(
        _create("c", keys=["/id"], key_generator=lambda doc: "k"), ConfigError, ValueError
    ),
    "unknown-message-type": Bad(
        _create("c", message_type="yaml", keys=["/id"]),
        ConfigError,
        ValueError,
        {"where": "message_type"},
    ),
    "topic-exists-differently": Bad(
        _create("orders", keys=["/other"]), TopicExistsError, ValueError, {"topic": "orders"}
    ),
    "bad-xml-config": Bad(
        lambda e: SowStore.from_config(
            "<AMPSConfig><SOW><Topic><Name>t</Name><MessageType>json</MessageType>"
            "<Key>/id</Key><Expiration>3 fortnights</Expiration></Topic></SOW></AMPSConfig>"
        ),
        ConfigError,
        ValueError,
    ),
    # ------------------------------------------------------------ topics and operations
    "unknown-topic": Bad(
        lambda e: e.store.topic("nope"), UnknownTopicError, KeyError, {"topic": "nope"}
    ),
    "wrong-message-type-for-topic": Bad(
        lambda e: e.store.topic("orders", "xml"), UnknownTopicError, KeyError
    ),
    "delta-publish-on-binary": Bad(
        lambda e: e["raw"].delta_publish(b"\x09", sow_key="r1"),
        UnsupportedOperationError,
        ValueError,
        {"operation": "delta_publish"},
    ),
    "content-filter-on-binary": Bad(
        lambda e: e["raw"].sow("/a = 1"), UnsupportedOperationError, ValueError
    ),
    "content-filter-delete-on-binary": Bad(
        lambda e: e["raw"].sow_delete("/a = 1"), UnsupportedOperationError, ValueError
    ),
    "delete-by-data-with-user-keys": Bad(
        lambda e: e["users"].sow_delete_by_data('{"name": "ann"}'),
        UnsupportedOperationError,
        ValueError,
    ),
    "record-larger-than-slab": Bad(
        lambda e: e["small"].publish({"id": 2, "pad": "x" * 10_000}),
        RecordTooLargeError,
        ValueError,
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_a_sow_error_and_changes_nothing(env: Env, case: Bad) -> None:
    before = snapshot(env.store)
    with pytest.raises(case.kind) as info:
        case.action(env)
    exc = info.value
    assert isinstance(exc, SowError)
    if case.builtin is not None:
        assert isinstance(exc, case.builtin)
    for name, value in case.fields.items():
        assert getattr(exc, name) == value, name
    assert str(exc)  # renders without raising
    assert snapshot(env.store) == before
    env.store.check()


def test_matrix_covers_every_input_kind_the_design_names() -> None:
    kinds = {case.kind for case in CASES.values()}
    expected = {
        DecodeError,
        MissingKeyFieldError,
        InvalidSowKeyError,
        FilterSyntaxError,
        UnknownFunctionError,
        FilterArityError,
        ArgumentError,
        QueryOptionError,
        ConfigError,
        UnknownTopicError,
        UnsupportedOperationError,
    }
    assert expected <= kinds
    assert all(issubclass(k, FilterError) for k in (FilterSyntaxError, FilterArityError))


def test_failed_publishes_leave_the_files_unchanged_after_reopen(env: Env) -> None:
    before = snapshot(env.store)
    for name in ("json-truncated", "missing-key-field", "batch-with-one-bad-message"):
        with pytest.raises(SowError):
            CASES[name].action(env)
    env.store.close()
    with SowStore(env.path) as again:
        assert snapshot(again) == before


# ---------------------------------------------------------------------------- store state


def test_second_writer_is_refused_and_the_first_keeps_working(env: Env) -> None:
    before = snapshot(env.store)
    with pytest.raises(StoreLockedError) as info:
        SowStore(env.path)
    assert isinstance(info.value, StorageError)
    assert info.value.path == str(env.path)
    assert snapshot(env.store) == before
    result = env["orders"].publish('{"id": 3, "price": 30}')
    assert result.inserted


@pytest.mark.parametrize(
    "action",
    [
        lambda s: s.topic("orders"),
        lambda s: s.create_topic("new", keys=["/id"]),
        lambda s: s.topics(),
        lambda s: s.sow("orders"),
        lambda s: s.refresh(),
    ],
    ids=["topic", "create-topic", "topics", "sow", "refresh"],
)
def test_closed_store_raises_store_closed(env: Env, action: Callable[[SowStore], object]) -> None:
    before = snapshot(env.store)
    env.store.close()
    with pytest.raises(StoreClosedError):
        action(env.store)
    with SowStore(env.path) as again:
        assert snapshot(again) == before


@pytest.mark.parametrize(
    "action",
    [
        lambda t: t.publish('{"id": 9}'),
        lambda t: t.delta_publish('{"id": 1, "price": 1}'),
        lambda t: t.sow(),
        lambda t: t.sow_delete("1=1"),
        lambda t: t.get("x"),
        lambda t: len(t),
        lambda t: t.compact(),
    ],
    ids=["publish", "delta-publish", "sow", "sow-delete", "get", "len", "compact"],
)
def test_topic_of_a_closed_store_raises_store_closed(
    env: Env, action: Callable[[Topic], object]
) -> None:
    topic = env["orders"]
    before = snapshot(env.store)
    env.store.close()
    with pytest.raises(StoreClosedError):
        action(topic)
    with SowStore(env.path) as again:
        assert snapshot(again) == before


@pytest.mark.parametrize(
    "action",
    [
        lambda s: s.topic("orders").publish('{"id": 9}'),
        lambda s: s.topic("orders").sow_delete("1=1"),
        lambda s: s.create_topic("new", keys=["/id"]),
    ],
    ids=["publish", "sow-delete", "create-topic"],
)
def test_read_only_store_refuses_writes(env: Env, action: Callable[[SowStore], object]) -> None:
    env.store.close()
    with SowStore(env.path, readonly=True) as reader:
        before = snapshot(reader)
        with pytest.raises(ReadOnlyError):
            action(reader)
        assert snapshot(reader) == before


# ---------------------------------------------------------------------------- damaged files


def _corrupt_third_record(path: Path) -> int:
    with AppendLog(str(path), readonly=True) as log:
        records = [(rec.offset, rec.payload) for rec in log.scan()]
    offset, payload = records[2]
    data = bytearray(path.read_bytes())
    at = data.index(payload, offset)
    data[at + 2] ^= 0x01  # "1" <-> "0": still valid JSON, only the checksum can tell
    path.write_bytes(bytes(data))
    return offset


def _five_order_store(path: Path) -> Path:
    with SowStore(path) as store:
        orders = store.create_topic("orders", keys=["/id"])
        for i in range(5):
            orders.publish({"id": i, "v": "x" * 16})
    return path / topic_file_name("orders", "json")


@pytest.mark.parametrize("readonly", [False, True], ids=["writer", "reader"])
def test_corrupt_middle_record_after_a_crash(tmp_path: Path, readonly: bool) -> None:
    log = _five_order_store(tmp_path / "store")
    os.unlink(f"{log}.ckpt")  # a crash leaves no clean-close checkpoint
    offset = _corrupt_third_record(log)
    before = file_bytes(tmp_path / "store")
    with pytest.raises(CorruptRecordError) as info:
        SowStore(tmp_path / "store", readonly=readonly)
    assert info.value.file == str(log)
    assert info.value.offset == offset
    assert isinstance(info.value, StorageError)
    assert file_bytes(tmp_path / "store") == before


def test_corrupt_middle_record_after_a_clean_close(tmp_path: Path) -> None:
    log = _five_order_store(tmp_path / "store")
    offset = _corrupt_third_record(log)
    with pytest.raises(CorruptRecordError) as info, SowStore(tmp_path / "store") as store:
        store.topic("orders").sow()
    assert info.value.offset == offset


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: b"NOTASOW!" + data[8:], id="bad-magic"),
        pytest.param(lambda data: data[:8] + b"\x63\x00" + data[10:], id="future-version"),
        pytest.param(lambda data: b"", id="empty-file"),
    ],
)
def test_file_with_a_bad_header(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    log = _five_order_store(tmp_path / "store")
    os.unlink(f"{log}.ckpt")
    log.write_bytes(damage(log.read_bytes()))
    before = file_bytes(tmp_path / "store")
    with pytest.raises(FormatVersionError) as info:
        SowStore(tmp_path / "store")
    assert info.value.file == str(log)
    assert file_bytes(tmp_path / "store") == before


def test_file_cut_inside_its_header_is_corrupt_at_offset_0(tmp_path: Path) -> None:
    log = _five_order_store(tmp_path / "store")
    os.unlink(f"{log}.ckpt")
    log.write_bytes(log.read_bytes()[:20])  # the magic survives, the rest of the header does not
    before = file_bytes(tmp_path / "store")
    with pytest.raises(CorruptRecordError) as info:
        SowStore(tmp_path / "store")
    assert (info.value.file, info.value.offset) == (str(log), 0)
    assert file_bytes(tmp_path / "store") == before


def test_field_path_errors_carry_the_offset() -> None:
    from sowlib import parse_path

    with pytest.raises(FieldPathError) as info:
        parse_path("/a//b")
    assert isinstance(info.value, ValueError)
    assert info.value.offset == 3
