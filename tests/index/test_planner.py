"""Which plan runs for representative filters (spec §7), pinned through ``explain``."""

from __future__ import annotations

import pytest

from sowlib.query import QueryOptions, explain, run_query
from tests.index.fakes import FakeSource, compile_filter


@pytest.fixture
def orders() -> FakeSource:
    source = FakeSource(
        keys=["/id"], hash_indexes=[["/region"], ["/zip", "/segment"]], memo=["/price"]
    )
    for i in range(200):
        source.publish(
            {
                "id": i,
                "region": ["EU", "US", "APAC", "LATAM"][i % 4],
                "zip": f"{10000 + i % 10}",
                "segment": "smb" if i % 2 else "ent",
                "price": i,
                "sym": f"S{i:03d}",
                "qty": i % 50,
            }
        )
    return source


@pytest.mark.parametrize(
    ("text", "kind", "index"),
    [
        ("/id = 5", "key_fields", None),
        ("/id IN (5, 6, 7)", "key_fields", None),
        ("/id = '05'", "key_fields", None),
        ("/id = 5 AND /price > 1", "key_fields", None),
        ("/region = 'EU'", "hash", "hash(/region)"),
        ("/region IN ('EU', 'US')", "hash", "hash(/region)"),
        ("/zip = '10001' AND /segment = 'smb'", "hash", "hash(/zip,/segment)"),
        ("/region IN ('EU', 'US') AND /qty > 10", "hash_in_first", "hash(/region)"),
        ("/price > 190", "memo", "memo(/price)"),
        ("/price BETWEEN 10 AND 12", "memo", "memo(/price)"),
        ("/price >= 10 AND /price < 12", "memo", "memo(/price)"),
        ("/sym LIKE '^S00'", "memo", "memo(/sym)"),
        ("/sym BEGINS WITH ('S01', 'S02')", "memo", "memo(/sym)"),
        # one '=' turned into LIKE disqualifies the two-field hash index
        ("/zip = '10001' AND /segment LIKE 'smb'", "memo", "memo(/zip)"),
        ("/region != 'EU'", "scan", None),
        ("/region = 'EU' OR /price > 5", "scan", None),
        ("NOT (/price > 5)", "scan", None),
        ("/price > -1", "scan", None),  # a memo probe selecting everything is no better
        ("/sym LIKE 'S00'", "scan", None),  # not anchored: no prefix
        ("/sym LIKE '^S00.'", "memo", "memo(/sym)"),  # prefix before the metacharacter
    ],
)
def test_explain_pins_the_plan(orders: FakeSource, text: str, kind: str, index: str | None) -> None:
    found = explain(orders, compile_filter(text))
    assert (found.kind, found.index) == (kind, index)
    assert found.describe().startswith(kind)


def test_sow_keys_plan_is_used_before_any_index(orders: FakeSource) -> None:
    found = explain(orders, compile_filter("/region = 'EU'"), sow_keys=["1", "2", "nope"])
    assert (found.kind, found.estimated) == ("keys", 3)
    assert sorted(found.candidates() or ()) == ["1", "2"]


def test_no_filter_is_a_scan(orders: FakeSource) -> None:
    found = explain(orders, None)
    assert (found.kind, found.estimated, found.candidates()) == ("scan", 200, None)


def test_memo_index_is_built_on_first_use_and_then_maintained(orders: FakeSource) -> None:
    assert "memo(/qty)" not in orders.indexes.names()
    flt = compile_filter("/qty = 49")
    assert explain(orders, flt).kind == "memo"
    assert "memo(/qty)" in orders.indexes.names()
    orders.publish({"id": 999, "qty": 49})
    assert "999" in (explain(orders, flt).candidates() or ())
    assert len(run_query(orders, flt)) == 5


def test_a_query_builds_no_memo_index_when_one_serves_it_and_at_most_one_otherwise(
    orders: FakeSource,
) -> None:
    assert explain(orders, compile_filter("/price < 20 AND /qty < 5")).index == "memo(/price)"
    assert "memo(/qty)" not in orders.indexes.names()
    assert explain(orders, compile_filter("/qty < 5 AND /side = 'B'")).index == "memo(/qty)"
    assert "memo(/side)" not in orders.indexes.names()


def test_hash_candidates_are_narrow(orders: FakeSource) -> None:
    found = explain(orders, compile_filter("/zip = '10001' AND /segment = 'smb'"))
    assert found.estimated == 20
    assert len(list(found.candidates() or ())) == 20


def test_two_memo_probes_are_intersected_when_cheap(orders: FakeSource) -> None:
    explain(orders, compile_filter("/qty < 5"))  # builds memo(/qty) on demand
    found = explain(orders, compile_filter("/price < 20 AND /qty < 5"))
    assert (found.kind, found.index) == ("memo", "memo(/price)+memo(/qty)")
    assert sorted(map(int, found.candidates() or ())) == [0, 1, 2, 3, 4]


def test_key_field_plan_keeps_non_canonical_keys_in_view() -> None:
    source = FakeSource(keys=["/id"])
    source.publish({"id": "05", "v": 1})  # keyed "05" but equal to 5 under the rules
    source.publish({"id": 5, "v": 2})
    flt = compile_filter("/id = 5")
    assert explain(source, flt).kind == "key_fields"
    assert sorted(r.doc["v"] for r in run_query(source, flt)) == [1, 2]


def test_hash_lookup_with_a_non_canonical_literal_still_equals_a_scan() -> None:
    source = FakeSource(hash_indexes=[["/n"]])
    for i, n in enumerate([5, "5", "05", 5.0, "5.0", "x", [1, 5], 2**60]):
        source.publish({"n": n}, sow_key=f"k{i}")
    for text, want in [
        ("/n = 5", ["k0", "k1", "k2", "k3", "k4", "k6"]),
        ("/n = '05'", ["k0", "k2", "k3", "k6"]),
        ("/n = '5'", ["k0", "k1", "k3", "k6"]),
        ("/n IN ('x', 1)", ["k5", "k6"]),
    ]:
        flt = compile_filter(text)
        assert explain(source, flt).kind == "hash", text
        assert sorted(r.sow_key for r in run_query(source, flt)) == want, text


def test_huge_literal_falls_back_to_a_scan() -> None:
    source = FakeSource(hash_indexes=[["/n"]])
    source.publish({"n": 2**60}, sow_key="big")
    flt = compile_filter(f"/n = {2**60}")
    assert explain(source, flt).kind == "scan"
    assert [r.sow_key for r in run_query(source, flt)] == ["big"]


def test_top_n_with_order_by_on_a_memo_field_does_not_sort_the_topic(orders: FakeSource) -> None:
    # A page of 3 by price touches only the first few records in memo order.
    orders.record_calls = 0
    got = run_query(
        orders, compile_filter("/qty >= 0"), QueryOptions.make(order_by="/price DESC", top_n=3)
    )
    assert [r.doc["price"] for r in got] == [199, 198, 197]
    assert orders.record_calls == 3


def test_key_field_plan_needs_maintained_indexes() -> None:
    source = FakeSource(keys=["/id"])
    source.publish({"id": "05"})
    source.indexes.clear()  # as a view that never feeds its IndexSet
    flt = compile_filter("/id = 5")
    assert explain(source, flt).kind == "scan"
    assert [r.sow_key for r in run_query(source, flt)] == ["05"]
