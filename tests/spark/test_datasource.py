"""The ``sow`` data source: schema, AMPS filter option, exact pushdown, batch write, streaming."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull, LessThan, StringStartsWith

from sowlib import compile_filter
from sowlib.errors import ConfigError
from sowlib.spark.datasource import infer_schema, register, translate
from sowlib.store import SowStore

pytestmark = pytest.mark.spark


@pytest.fixture
def sow(spark: Any) -> Any:
    """The shared session with the ``sow`` data source registered."""
    register(spark)
    return spark


ORDERS = [
    {"orderId": 1, "price": 120.5, "region": "EU", "qty": 3, "tags": ["a"]},
    {"orderId": 2, "price": 80, "region": "APAC", "qty": 1},
    {"orderId": 3, "price": 300, "region": "US", "qty": 7},
    {"orderId": 4, "price": 150, "region": "APAC", "qty": None},
    {"orderId": 5, "price": 101, "region": "EU's", "qty": 2},
]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    with SowStore(tmp_path / "sow") as store:
        store.create_topic("orders", keys=["/orderId"]).publish_many(ORDERS)
    return tmp_path / "sow"


def _load(spark: Any, path: Path, **options: str) -> Any:
    reader = spark.read.format("sow").option("path", str(path)).option("topic", "orders")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_inferred_schema_and_rows(sow: Any, store_path: Path) -> None:
    df = _load(sow, store_path)
    assert df.columns == ["orderId", "price", "region", "qty", "tags", "_sow_key", "_seq"]
    kinds = {f.name: type(f.dataType) for f in df.schema.fields}
    assert [kinds[c] for c in ("orderId", "price", "tags", "_seq")] == [
        T.LongType,
        T.DoubleType,
        T.StringType,
        T.LongType,
    ]
    rows = {r["orderId"]: r for r in df.collect()}
    assert (rows[1]["tags"], rows[2]["price"], rows[4]["qty"]) == ('["a"]', 80.0, None)
    assert sorted(r["_seq"] for r in rows.values()) == [1, 2, 3, 4, 5]


def test_filter_option_and_pushdown_agree_with_sowlib(sow: Any, store_path: Path) -> None:
    amps = "/price > 100 AND /region IN ('EU','APAC')"
    by_option = _load(sow, store_path, filter=amps, schema="orderId long, price double")
    assert sorted(r["orderId"] for r in by_option.collect()) == [1, 4]
    pushed = _load(sow, store_path).where(
        (F.col("price") > 100) & F.col("region").isin("EU", "APAC") & F.col("qty").isNotNull()
    )
    assert sorted(r["orderId"] for r in pushed.collect()) == [1]
    quoted = _load(sow, store_path).where(F.col("region") == "EU's")
    assert [r["orderId"] for r in quoted.collect()] == [5]


def test_translate_takes_exact_filters_only() -> None:
    schema = T.StructType(
        [
            T.StructField("price", T.DoubleType()),
            T.StructField("region", T.StringType()),
            T.StructField("_seq", T.LongType()),
        ]
    )
    gt = translate(GreaterThan(("price",), 100), schema)
    assert gt is not None
    assert gt.amps == "/price > 100"
    assert [gt.check((101.0, None, 1)), gt.check((None, None, 1))] == [True, False]
    inlist = translate(In(("region",), ("EU", "O'K\\")), schema)
    assert inlist is not None
    assert inlist.amps == "/region IN ('EU', 'O\\'K\\\\')"
    assert compile_filter(inlist.amps).matches({"region": "O'K\\"})
    assert translate(IsNull(("region",)), schema).amps == "/region IS NULL"  # type: ignore[union-attr]
    assert translate(EqualTo(("price",), "100"), schema) is None  # type mismatch
    assert translate(LessThan(("_seq",), 3), schema) is None  # metadata column
    assert translate(StringStartsWith(("region",), "E"), schema) is None
    assert translate(EqualTo(("nested", "x"), 1), schema) is None
    assert translate(EqualTo(("price",), float("nan")), schema) is None


def test_infer_schema_widens_mixed_kinds() -> None:
    ddl = infer_schema([{"a": 1, "b": True, "c": "x"}, {"a": 2.5, "b": 1, "d": {"x": 1}}])
    assert ddl == "`a` double, `b` string, `c` string, `d` string, _sow_key string, _seq bigint"


def test_batch_write_appends_through_commit(sow: Any, tmp_path: Path) -> None:
    rows = [(i, float(i * 10), "EU" if i % 2 else "US") for i in range(40)]
    df = sow.createDataFrame(rows, "orderId long, price double, region string").repartition(3)
    path = tmp_path / "written"
    (
        df.write.format("sow")
        .option("path", str(path))
        .option("topic", "orders")
        .option("keys", "/orderId")
        .mode("append")
        .save()
    )
    with SowStore(path, readonly=True) as store:
        topic = store.topic("orders")
        assert len(topic) == 40
        assert topic.get(topic.key_for({"orderId": 7})).doc == {  # type: ignore[union-attr]
            "orderId": 7,
            "price": 70.0,
            "region": "EU",
        }
    assert not (path / "_incoming").exists()
    with pytest.raises(Exception) as info:
        df.write.format("sow").option("path", str(path)).option("topic", "orders").mode(
            "overwrite"
        ).save()
    assert "ConfigError" in str(info.value)


def test_missing_options_raise_config_error() -> None:
    from sowlib.spark.datasource import SowDataSource

    with pytest.raises(ConfigError) as info:
        SowDataSource({"path": "x"}).schema()
    assert info.value.where == "sow"


def test_stream_reads_changes_after_each_publish(sow: Any, store_path: Path) -> None:
    stream = (
        sow.readStream.format("sow")
        .option("path", str(store_path))
        .option("topic", "orders")
        .option("schema", "orderId long, price double, _sow_key string, _seq long, _change string")
        .load()
    )
    query = stream.writeStream.format("memory").queryName("sow_changes").start()
    try:
        query.processAllAvailable()
        with SowStore(store_path) as store:
            topic = store.topic("orders")
            topic.publish({"orderId": 9, "price": 1})
            topic.sow_delete_by_data({"orderId": 2})
        query.processAllAvailable()
    finally:
        query.stop()
    got = sorted(
        (r["_seq"], r["_change"], r["orderId"]) for r in sow.table("sow_changes").collect()
    )
    assert got == [
        (1, "publish", 1),
        (2, "publish", 2),
        (3, "publish", 3),
        (4, "publish", 4),
        (5, "publish", 5),
        (6, "publish", 9),
        (7, "delete", None),
    ]


def test_flat_batch_writes_stage_arrow_batches_as_the_sink_renders_them(
    sow: Any, tmp_path: Path
) -> None:
    from sowlib.spark.datasource import SowArrowWriter, SowDataSource, SowWriter
    from sowlib.spark.sink import SowSink

    flat = "orderId long, price double, region string, ok boolean, _seq long"
    options = {"path": str(tmp_path / "w"), "topic": "orders", "keys": "/orderId"}
    flat_type = T.StructType.fromDDL(flat)
    nested = T.StructType.fromDDL("orderId long, at timestamp")
    assert isinstance(flat_type, T.StructType)
    assert isinstance(nested, T.StructType)
    assert isinstance(SowDataSource(options).writer(flat_type, False), SowArrowWriter)
    assert type(SowDataSource(options).writer(nested, False)) is SowWriter

    rows: list[tuple[Any, ...]] = [
        (i, i * 1.5 if i % 4 else None, 'E"U' if i % 2 else "US", i % 3 == 0, 99) for i in range(60)
    ]
    rows.append((60, float("nan"), "x\\y", None, None))
    df = sow.createDataFrame(rows, flat).repartition(3)
    df.write.format("sow").options(**options).mode("append").save()
    with SowSink(tmp_path / "s", "orders", keys=["/orderId"]) as sink:
        sink(df.drop("_seq"), 0)
    with (
        SowStore(tmp_path / "w", readonly=True) as written,
        SowStore(tmp_path / "s", readonly=True) as sunk,
    ):
        got = {r.sow_key: r.data for r in written.topic("orders").sow()}
        assert got == {r.sow_key: r.data for r in sunk.topic("orders").sow()}
        assert len(got) == 61
    assert not (tmp_path / "w" / "_incoming").exists()
