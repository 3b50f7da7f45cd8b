"""The same orders in every message type, through topics: keys, indexes, queries, deltas.

Each type renders the same six orders with its own identifiers (``/orderId``,
``/Order/orderId``, ``/11``, ...); the same logical queries must return the same
order ids in every type (spec §1.4, §2.1, §15), delta publish merges per type
(§12.1), and everything survives a reopen. Binary topics (§6.4, §15) and a FIX
message built with simplefix close the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import msgpack
import pytest
import simplefix

from sowlib import SowStore, Topic, get_codec
from sowlib.errors import ConfigError, InvalidSowKeyError, UnsupportedOperationError

FIELDS = ("orderId", "symbol", "price", "qty", "side", "region")
ORDERS = [
    (1, "IBM", 120.5, 100, "B", "EU"),
    (2, "MSFT", 410.0, 20, "S", "US"),
    (3, "IBM", 119.75, 5, "S", "US"),
    (4, "AAPL", 180.25, 300, "B", "APAC"),
    (5, "AMZN", 95.5, 50, "B", "EU"),
    (6, "ORCL", 101.0, 10, "S", "US"),
]
FIX_TAGS = {"orderId": "11", "symbol": "55", "price": "44", "qty": "38", "side": "54"}
FIX_TAGS |= {"region": "207", "note": "58"}


def _xml(fields: dict[str, Any]) -> bytes:
    body = "".join(f"<{k}>{v}</{k}>" for k, v in fields.items())
    return f"<Order>{body}</Order>".encode()


def _fix(fields: dict[str, Any]) -> bytes:
    return "".join(f"{FIX_TAGS[k]}={v}|" for k, v in fields.items()).encode()


def _nvfix(fields: dict[str, Any]) -> bytes:
    return "".join(f"{k}={v}|" for k, v in fields.items()).encode()


@attrs.frozen
class Kind:
    """One message type: how a logical field becomes a path and an order becomes bytes."""

    name: str
    path: Callable[[str], str]
    render: Callable[[dict[str, Any]], bytes]
    codec_options: dict[str, Any] = attrs.field(factory=dict)


KINDS = {
    "json": Kind("json", lambda f: f"/{f}", lambda d: json.dumps(d).encode()),
    "xml": Kind("xml", lambda f: f"/Order/{f}", _xml),
    "fix": Kind("fix", lambda f: f"/{FIX_TAGS[f]}", _fix, {"separator": "|"}),
    "nvfix": Kind("nvfix", lambda f: f"/{f}", _nvfix, {"separator": "|"}),
    "msgpack": Kind("msgpack", lambda f: f"/{f}", lambda d: msgpack.packb(d)),
}


def order(row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(FIELDS, row, strict=True))


def make_topic(store: SowStore, kind: Kind) -> Topic:
    return store.create_topic(
        "orders",
        message_type=kind.name,
        keys=[kind.path("orderId")],
        hash_indexes=[[kind.path("symbol")]],
        indexes=[kind.path("price")],
        options={"codec": kind.codec_options} if kind.codec_options else None,
    )


def canonical(kind: Kind, fields: dict[str, Any]) -> bytes:
    """The bytes the topic's codec writes for these fields (JSON is written compactly)."""
    codec = get_codec(kind.name, **kind.codec_options)
    return codec.encode(codec.decode(kind.render(fields)))


def fill(topic: Topic, kind: Kind) -> None:
    for row in ORDERS:
        assert topic.publish(kind.render(order(row))).inserted


def ids(topic: Topic, kind: Kind, text: str | None, **options: Any) -> list[int]:
    """Order ids of a query written with ``{field}`` placeholders, in result order."""
    flt = None if text is None else text.format(**{f: kind.path(f) for f in (*FIELDS, "note")})
    if "order_by" in options:
        options["order_by"] = options["order_by"].format(price=kind.path("price"))
    path = kind.path("orderId")
    out = []
    for rec in topic.sow(flt, **options):
        doc = rec.doc
        for step in path.strip("/").split("/"):
            doc = doc[step]
        out.append(doc)
    return out if "order_by" in options else sorted(out)


QUERIES = [
    ("{symbol} = 'IBM'", {}, [1, 3]),
    ("{price} BETWEEN 100 AND 200", {}, [1, 3, 4, 6]),
    ("{qty} > 40", {}, [1, 4, 5]),
    ("{region} IN ('EU', 'APAC')", {}, [1, 4, 5]),
    ("{symbol} LIKE '^A'", {}, [4, 5]),
    ("{side} = 'S' AND {price} < 200", {}, [3, 6]),
    ("{symbol} IN ('IBM', 'ORCL') AND {price} > 110", {}, [1, 3]),
    ("1=1", {"order_by": "{price} DESC", "top_n": 3}, [2, 4, 1]),
    ("{qty} >= 10", {"order_by": "{price} DESC", "top_n": 2, "skip_n": 2}, [1, 6]),
    (None, {"order_by": "{price}", "top_n": 2, "skip_n": 1}, [6, 3]),
]


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> Kind:
    return KINDS[request.param]


@pytest.mark.parametrize(("text", "options", "expected"), QUERIES)
def test_same_queries_give_the_same_orders_in_every_type(
    kind: Kind, text: str | None, options: dict[str, Any], expected: list[int]
) -> None:
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        assert ids(topic, kind, text, **options) == expected


def test_indexes_on_type_specific_paths_are_used(kind: Kind) -> None:
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        symbol, price = kind.path("symbol"), kind.path("price")
        assert topic.explain(f"{symbol} = 'IBM'").kind == "hash"
        assert topic.explain(f"{price} > 400").kind == "memo"
        assert topic.explain(f"{kind.path('orderId')} = 4").kind == "key_fields"
        assert ids(topic, kind, "{orderId} = 4") == [4]


def test_select_list_keeps_only_the_chosen_fields(kind: Kind) -> None:
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        oid, price = kind.path("orderId"), kind.path("price")
        got = topic.sow(f"{oid} = 2", select=f"[-/,+{oid},+{price}]")
        assert [r.data for r in got] == [canonical(kind, {"orderId": 2, "price": 410.0})]
        codec = get_codec(kind.name, **kind.codec_options)
        assert [codec.decode(r.data) for r in got] == [r.doc for r in got]


def test_record_doc_is_the_parsed_document_and_data_the_stored_bytes(kind: Kind) -> None:
    codec = get_codec(kind.name, **kind.codec_options)
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        by_data = {r.data: r for r in topic.sow()}
        for row in ORDERS:
            raw = kind.render(order(row))
            assert by_data[raw].doc == codec.decode(raw)
            assert by_data[raw].message_type == kind.name


def _delta(kind: Kind) -> bytes:
    return kind.render({"orderId": 1, "price": 130.5, "note": "amended"})


def test_delta_publish_merges_and_queries_see_the_merged_record(kind: Kind) -> None:
    codec = get_codec(kind.name, **kind.codec_options)
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        result = topic.delta_publish(_delta(kind))
        assert not result.inserted
        merged = topic.get(result.sow_key)
        assert merged is not None
        full = order(ORDERS[0]) | {"price": 130.5, "note": "amended"}
        assert merged.doc == codec.decode(kind.render(full))
        assert merged.data == canonical(kind, full)
        assert ids(topic, kind, "{price} > 130 AND {symbol} = 'IBM'") == [1]
        assert ids(topic, kind, "{note} = 'amended' AND {qty} = 100") == [1]
        assert ids(topic, kind, "{symbol} = 'IBM'") == [1, 3]
        assert ids(topic, kind, None, order_by="{price} DESC", top_n=3) == [2, 4, 1]
        # no stored record: the delta is stored as it is
        new = topic.delta_publish(kind.render({"orderId": 9, "symbol": "HPQ"}))
        assert new.inserted
        assert ids(topic, kind, "{symbol} = 'HPQ' AND {price} IS NULL") == [9]


def test_reopen_keeps_records_merges_indexes_and_codec_options(kind: Kind, tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        topic.delta_publish(_delta(kind))
    with SowStore(tmp_path) as store:
        topic = store.topic("orders", kind.name)
        assert len(topic) == len(ORDERS)
        assert topic.config.options.get("codec", {}) == kind.codec_options
        assert ids(topic, kind, "{note} = 'amended'") == [1]
        assert ids(topic, kind, "{symbol} = 'IBM'") == [1, 3]
        assert topic.explain(f"{kind.path('symbol')} = 'IBM'").kind == "hash"
        assert ids(topic, kind, None, order_by="{price} DESC", top_n=2, skip_n=1) == [4, 1]
        # the reopened topic keeps the same keys: a republish replaces, never adds
        assert not topic.publish(kind.render(order(ORDERS[1]))).inserted
        assert len(topic) == len(ORDERS)


def test_sow_delete_by_filter_and_by_data(kind: Kind) -> None:
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        path = kind.path("region")
        assert topic.sow_delete(f"{path} = 'US'") == 3
        assert ids(topic, kind, None) == [1, 4, 5]
        assert topic.sow_delete_by_data(kind.render(order(ORDERS[3]))) == 1
        assert ids(topic, kind, None) == [1, 5]
        # by data needs only the key field
        assert topic.sow_delete_by_data(kind.render({"orderId": 5})) == 1
        assert topic.sow_delete_by_data(kind.render({"orderId": 5})) == 0
        assert ids(topic, kind, "{symbol} = 'IBM'") == [1]
        assert topic.sow_delete("1=1") == 1
        assert len(topic) == 0


def test_identifier_that_cannot_exist_in_fix_is_null_not_an_error() -> None:
    kind = KINDS["fix"]
    with SowStore() as store:
        topic = make_topic(store, kind)
        fill(topic, kind)
        assert topic.sow("/Quantity > 1") == []
        assert ids(topic, kind, "/orderId IS NULL AND {qty} > 200") == [4]


# ---------------------------------------------------------------- binary


def test_binary_topic_needs_publisher_keys_and_answers_only_1_eq_1() -> None:
    with SowStore() as store:
        blobs = store.create_topic("blobs", message_type="binary")
        with pytest.raises(InvalidSowKeyError):
            blobs.publish(b"\x00\x01")
        blobs.publish(b"\x00\x01", sow_key="a")
        blobs.publish(b"\xff", sow_key="b")
        assert sorted(r.data for r in blobs.sow("1=1")) == [b"\x00\x01", b"\xff"]
        assert [r.data for r in blobs.sow(sow_keys=["b"])] == [b"\xff"]
        with pytest.raises(UnsupportedOperationError) as info:
            blobs.sow("/a = 1")
        assert info.value.operation == "a content filter"
        with pytest.raises(UnsupportedOperationError):
            blobs.sow_delete("/a = 1")
        with pytest.raises(UnsupportedOperationError) as info:
            blobs.delta_publish(b"\x02", sow_key="a")
        assert info.value.operation == "delta_publish"
        with pytest.raises(UnsupportedOperationError):
            blobs.sow_delete_by_data(b"\x00\x01")
        assert [r.data for r in blobs.sow(sow_keys="a")] == [b"\x00\x01"]  # nothing changed
        assert blobs.sow_delete("1=1") == 2


def test_binary_topic_rejects_key_fields_at_creation() -> None:
    # spec §15: binary has "no generated keys" and §6.4: publisher-supplied keys are
    # the only way to keep binary messages; a binary topic with key fields could
    # never store a message, so the configuration itself is the error.
    with SowStore() as store, pytest.raises(ConfigError):
        store.create_topic("blobs", message_type="binary", keys=["/id"])


# ---------------------------------------------------------------- simplefix


def test_simplefix_new_order_single_round_trips_through_a_fix_topic() -> None:
    msg = simplefix.FixMessage()
    msg.append_pair(8, "FIX.4.2", header=True)
    msg.append_pair(35, "D", header=True)
    msg.append_pair(49, "BUYSIDE", header=True)
    msg.append_pair(56, "SELLSIDE", header=True)
    msg.append_pair(11, "ORD-0001")
    msg.append_pair(55, "IBM")
    msg.append_pair(54, 1)
    msg.append_pair(38, 250)
    msg.append_pair(40, 2)
    msg.append_pair(44, "120.25")
    raw = msg.encode()
    with SowStore() as store:
        topic = store.create_topic(
            "fixorders", message_type="fix", keys=["/11"], hash_indexes=[["/55"]]
        )
        topic.publish(raw)
        other = raw.replace(b"ORD-0001", b"ORD-0002").replace(b"55=IBM", b"55=HPQ")
        topic.publish(other)
        got = topic.sow("/35 = 'D' AND /55 = 'IBM' AND /38 >= 100 AND /44 > 120")
        assert len(got) == 1
        assert got[0].doc["11"] == "ORD-0001"
        assert got[0].data == raw
        parser = simplefix.FixParser()
        parser.append_buffer(got[0].data)
        back = parser.get_message()
        assert back is not None
        assert back.get(11) == b"ORD-0001"
        assert back.get(38) == b"250"
        sent = simplefix.FixParser()
        sent.append_buffer(raw)
        original = sent.get_message()
        assert original is not None
        assert back.get(10) == original.get(10)
        assert back.get(9) == original.get(9)
        assert topic.get(topic.key_for(raw)) == got[0]
