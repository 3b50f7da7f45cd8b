"""Issue 27, mapping habits: ``topic[key_values]`` reads like a dict (``KeyError`` when
absent) and ``lookup(**fields)`` takes a compound key by field names, as a user with a
``book``/``symbol`` key writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import ArgumentError, SowError, UnsupportedOperationError


@pytest.fixture(params=["persistent", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    s = SowStore(tmp_path / "s") if request.param == "persistent" else SowStore()
    yield s
    s.close()


def _positions(store: Any) -> Any:
    positions = store.create_topic("positions", keys=["/book", "/symbol"])
    for b in range(4):
        for s in range(50):
            positions.publish({"book": f"B{b}", "symbol": f"S{s:03d}", "qty": b * 100 + s})
    return positions


def test_lookup_by_field_names_as_the_user_wrote_it(store: Any) -> None:
    positions = _positions(store)
    rec = positions.lookup(book="B3", symbol="S042")
    assert rec is not None
    assert rec.doc["qty"] == 342
    # the order of the names does not matter; positional values give the same record
    assert positions.lookup(symbol="S042", book="B3") == rec
    assert positions.lookup("B3", "S042") == rec
    assert positions.lookup(book="B9", symbol="S042") is None


def test_topic_getitem_is_a_dict_read(store: Any) -> None:
    positions = _positions(store)
    assert positions["B1", "S007"].doc["qty"] == 107
    with pytest.raises(KeyError) as info:
        positions["B1", "S999"]
    assert info.value.args == (("B1", "S999"),)
    orders = store.create_topic("orders", keys=["/orderId"])
    orders.publish({"orderId": 1042, "px": 9.5})
    assert orders[1042].doc == {"orderId": 1042, "px": 9.5}
    assert orders["1042"].doc["px"] == 9.5  # 1042 and "1042" are one key (spec §6.3)
    with pytest.raises(KeyError):
        orders[1043]
    assert orders.lookup(orderId=1042) == orders[1042]
    # KeyError is no SowError: code catching SowError does not swallow an absent key
    assert not issubclass(KeyError, SowError)


def test_nested_key_fields_by_column_or_last_name(store: Any) -> None:
    t = store.create_topic("legs", keys=["/leg/venue", "/id"])
    t.publish({"id": 1, "leg": {"venue": "XNYS"}})
    rec = t.lookup(venue="XNYS", id=1)
    assert rec is not None
    assert rec.doc["id"] == 1
    assert t.lookup(**{"leg.venue": "XNYS", "id": 1}) == rec
    assert t.lookup(**{"leg/venue": "XNYS", "id": 1}) == rec


def test_bad_field_names_are_argument_errors_and_change_nothing(store: Any) -> None:
    positions = _positions(store)
    with pytest.raises(ArgumentError, match=r"not a key field.*book, symbol"):
        positions.lookup(book="B3", sym="S042")
    with pytest.raises(ArgumentError, match="no value for key field 'symbol'"):
        positions.lookup(book="B3")
    with pytest.raises(ArgumentError, match="not both"):
        positions.lookup("B3", symbol="S042")
    with pytest.raises(ArgumentError):
        positions["B3"]  # one value for a two-field key
    with pytest.raises(ArgumentError):
        positions[("B3", "S042", "extra")]
    assert len(positions) == 200


def test_topics_without_content_keys_refuse_mapping_reads(store: Any) -> None:
    t = store.create_topic("free")
    t.publish({"a": 1}, sow_key="k1")
    with pytest.raises(UnsupportedOperationError):
        t["k1"]
    with pytest.raises(UnsupportedOperationError):
        t.lookup(a=1)
    assert "k1" in t
    assert t.get("k1") is not None


def test_mapping_reads_after_reopen(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as s:
        _positions(s)
    with SowStore(tmp_path / "s", readonly=True) as s:
        positions = s.topic("positions")
        assert positions["B2", "S010"].doc["qty"] == 210
        rec = positions.lookup(book="B0", symbol="S000")
        assert rec is not None
        assert rec.doc["qty"] == 0
