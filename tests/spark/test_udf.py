"""Lookup UDFs enrich rows with the latest record per key, refreshed as the writer publishes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark import handles
from sowlib.spark.udf import lookup_map_in_pandas, lookup_udf
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

CUSTOMERS = [{"customerId": i, "name": f"c{i}", "tier": i % 3, "limit": i * 1.5} for i in range(50)]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    with SowStore(tmp_path / "sow") as store:
        store.create_topic("customers", keys=["/customerId"]).publish_many(CUSTOMERS)
    return tmp_path / "sow"


def test_lookup_udf_returns_latest_fields_per_key(spark: Any, store_path: Path) -> None:
    orders = spark.createDataFrame([(i, i * 7 % 60) for i in range(30)], "orderId int, cust long")
    customer = lookup_udf(store_path, "customers", ["name", "tier"])
    got = orders.select("orderId", "cust", customer("cust").alias("c")).collect()
    for row in got:
        if row["cust"] < 50:
            assert (row["c"]["name"], row["c"]["tier"]) == (f"c{row['cust']}", row["cust"] % 3)
        else:
            assert (row["c"]["name"], row["c"]["tier"]) == (None, None)
    assert len(got) == 30


def test_lookup_map_in_pandas_appends_columns(spark: Any, store_path: Path) -> None:
    df = spark.createDataFrame(
        [(1, "x"), (49, "y"), (77, "z"), (None, "n")], "cid long, tag string"
    )
    out = lookup_map_in_pandas(
        df, store_path, "customers", ["cid"], {"name": "string", "limit": "double"}
    )
    assert out.columns == ["cid", "tag", "name", "limit"]
    got = {r["tag"]: (r["name"], r["limit"]) for r in out.collect()}
    assert got == {"x": ("c1", 1.5), "y": ("c49", 73.5), "z": (None, None), "n": (None, None)}
    with pytest.raises(ConfigError) as info:
        lookup_map_in_pandas(df, store_path, "customers", ["cid"], ["tag"])
    assert info.value.where == "fields"
    with pytest.raises(ConfigError):
        lookup_map_in_pandas(df, store_path, "customers", ["nope"], ["name"])


def test_handles_are_cached_and_refreshed(store_path: Path) -> None:
    first = handles.reader(store_path)
    assert handles.reader(store_path) is first
    with SowStore(store_path) as store:
        store.topic("customers").publish({"customerId": 1, "name": "renamed"})
    topic = handles.reader(store_path).topic("customers")
    assert topic.get(topic.key_for({"customerId": 1})).doc["name"] == "renamed"  # type: ignore[union-attr]
    handles.clear()
    assert first.closed


def _old_lookup(topic: Any, build: Any, values: Any, names: list[str], kinds: list[Any]) -> Any:
    """The lookup as first written: the key of the document the values make."""
    from sowlib.spark.batches import convert_value

    rec = None
    if not any(v is None for v in values):
        try:
            rec = topic.get(topic.key_for(build(values)))
        except ValueError:
            rec = None
    doc = rec.doc if rec is not None and isinstance(rec.doc, dict) else {}
    return {n: convert_value(doc.get(n), k) for n, k in zip(names, kinds, strict=True)}


@pytest.mark.parametrize("keys", [["/customerId"], ["/region", "/customer/id"]])
def test_lookup_columns_equal_a_lookup_of_each_key_document(
    tmp_path: Path, keys: list[str]
) -> None:
    from pyspark.sql import types as T

    from sowlib.spark.udf import key_document_builder, lookup_columns

    docs: list[dict[str, Any]] = [
        {"customerId": i, "region": "EU" if i % 2 else "", "customer": {"id": i}, "v": i * 1.5}
        for i in range(12)
    ]
    docs.append({"customerId": "7", "region": "NA", "customer": {"id": "x"}, "v": "text"})
    with SowStore(tmp_path) as store:
        store.create_topic("c", keys=keys).publish_many(
            [d for d in docs if all(_has_key(d, k) for k in keys)]
        )
    with SowStore(tmp_path, readonly=True) as store:
        topic = store.topic("c")
        build = key_document_builder(keys)
        probes: list[tuple[Any, ...]] = [
            (3,),
            (3,),
            (3.0,),
            ("3",),
            ("",),
            (None,),
            (True,),
            ([3],),
            (99,),
            ("7",),
        ]
        if len(keys) == 2:
            probes = [("EU", 3), ("EU", 3), ("EU", 3.0), ("", 2), ("NA", "x"), (None, 1)]
            probes += [("EU", [5]), ("EU", 99)]
        names = ["v", "customerId", "customer", "region"]
        kinds = [T.DoubleType(), T.LongType(), T.MapType(T.StringType(), T.LongType())]
        kinds.append(T.StringType())
        got = lookup_columns(topic, keys, iter(probes), names, kinds)
        rows = [dict(zip(got, row, strict=True)) for row in zip(*got.values(), strict=True)]
        assert rows == [_old_lookup(topic, build, p, names, kinds) for p in probes]
        assert any(row["v"] is not None for row in rows)


def _has_key(doc: dict[str, Any], path: str) -> bool:
    """Whether ``path`` resolves to a non-empty value in ``doc`` (a publishable key)."""
    from sowlib.paths import FieldPath

    value = FieldPath.parse(path).resolve(doc)
    return value not in (None, "")


def test_lookups_take_key_fields_in_any_order_and_nulls_find_nothing(tmp_path: Path) -> None:
    import pandas as pd
    from pyspark.sql import types as T

    from sowlib.spark.udf import lookup_columns

    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/a", "/b"])
        t.publish({"a": 1, "b": "x", "v": 10})
        t.publish({"a": "x", "b": 1, "v": 99})
        u = store.create_topic("u", keys=["/id"])
        u.publish({"id": 5, "v": "five"})
        u.publish({"id": "NaN", "v": "a key spelled NaN"})
        u.publish({"id": "inf", "v": "a key spelled inf"})
    with SowStore(tmp_path, readonly=True) as store:
        t, u = store.topic("t"), store.topic("u")
        assert lookup_columns(t, ["/b", "/a"], iter([("x", 1)]), ["v"], [T.LongType()]) == {
            "v": [10]
        }
        assert lookup_columns(t, ["/a", "/b"], iter([(1, "x")]), ["v"], [T.LongType()]) == {
            "v": [10]
        }
        probes = [(float("nan"),), (pd.NA,), (None,), (float("inf"),), (5.0,), ("NaN",)]
        got = lookup_columns(u, ["/id"], iter(probes), ["v"], [T.StringType()])
        assert got == {"v": [None, None, None, None, "five", "a key spelled NaN"]}


def test_a_field_named_twice_is_a_config_error(store_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        lookup_udf(store_path, "customers", ["name", "name"])
    assert info.value.where == "fields"
