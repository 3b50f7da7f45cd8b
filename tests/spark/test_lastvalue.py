"""last_value keeps the true latest row per key, whatever the partitioning."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark.lastvalue import last_value

pytestmark = pytest.mark.spark


def test_last_value_keeps_latest_row_per_key_on_shuffled_data(spark: Any) -> None:
    rng = random.Random(3)
    rows = [(i % 37, i, f"v{i}", float(rng.random())) for i in range(2_000)]
    rng.shuffle(rows)
    df = spark.createDataFrame(rows, "k int, seq long, val string, x double").repartition(7)
    got = {r["k"]: r.asDict() for r in last_value(df, ["k"], "seq").collect()}
    expected: dict[int, tuple[Any, ...]] = {}
    for row in sorted(rows, key=lambda r: r[1]):
        expected[row[0]] = row
    assert set(got) == set(expected)
    for k, (_, seq, val, x) in expected.items():
        assert got[k] == {"k": k, "seq": seq, "val": val, "x": x}
    assert last_value(df, "k", "seq").columns == df.columns


def test_last_value_orders_by_several_columns_lexicographically(spark: Any) -> None:
    rows = [("a", 1, 9, "old"), ("a", 2, 0, "new"), ("a", 1, 10, "mid"), ("b", None, 5, "null")]
    df = spark.createDataFrame(rows, "k string, major int, minor int, tag string")
    got = {r["k"]: r["tag"] for r in last_value(df, ["k"], ["major", "minor"]).collect()}
    assert got == {"a": "new", "b": "null"}


def test_last_value_rejects_unknown_key(spark: Any) -> None:
    df = spark.createDataFrame([(1, 2)], "a int, b int")
    with pytest.raises(ConfigError) as info:
        last_value(df, ["nope"], "b")
    assert info.value.where == "keys"
    with pytest.raises(ConfigError):
        last_value(df, [], "b")
