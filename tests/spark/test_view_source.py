"""The ``sow`` data source's ``config`` option: a configuration's views read as DataFrames."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import GreaterThan

from sowlib.errors import ConfigError
from sowlib.spark import handles
from sowlib.spark.configured import read_topic
from sowlib.spark.datasource import SowDataSource, register
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

VIEW = "customer-order-totals"

CONFIG = """<AMPSConfig><SOW>
  <Topic>
    <Name>orders</Name><MessageType>json</MessageType><Key>/orderId</Key>
    <FileName>./sow/%n.sow</FileName>
  </Topic>
  <Topic>
    <Name>scratch</Name><MessageType>json</MessageType><Key>/id</Key>
    <Durability>transient</Durability>
  </Topic>
  <View>
    <Name>customer-order-totals</Name>
    <UnderlyingTopic>orders</UnderlyingTopic>
    <MessageType>json</MessageType>
    <Projection>
      <Field>/customer</Field>
      <Field>SUM(/quantity * /price) AS /total</Field>
      <Field>COUNT(*) AS /orders</Field>
    </Projection>
    <Grouping><Field>/customer</Field></Grouping>
  </View>
  <ConflatedTopic>
    <Name>orders-1s</Name><UnderlyingTopic>orders</UnderlyingTopic>
    <MessageType>json</MessageType><Interval>1s</Interval>
  </ConflatedTopic>
</SOW></AMPSConfig>
"""


def _orders(n: int) -> list[dict[str, Any]]:
    rng = random.Random(24)
    return [
        {
            "orderId": i,
            "customer": f"c{rng.randrange(12)}",
            "quantity": rng.randrange(1, 50),
            "price": round(rng.uniform(1, 100), 2),
        }
        for i in range(n)
    ]


@pytest.fixture
def sow(spark: Any) -> Any:
    register(spark)
    return spark


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[SowStore]:
    """The configuration's writer store (kept open: a reader needs no lock), 300 orders
    published, 10 of them then deleted."""
    config = tmp_path / "amps.xml"
    config.write_text(CONFIG)
    with SowStore.from_config(config) as store:
        orders = store.topic("orders")
        orders.publish_many(_orders(300))
        orders.sow_delete("/orderId < 10")
        store.flush()
        yield store


def _load(spark: Any, config: Path, topic: str, **options: str) -> Any:
    reader = spark.read.format("sow").option("config", str(config)).option("topic", topic)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def _own_sow(store: SowStore, flt: str | None = None) -> set[tuple[Any, ...]]:
    view = store.topic(VIEW)
    return {(r.doc["customer"], r.doc["total"], r.doc["orders"], r.sow_key) for r in view.sow(flt)}


def _read_directly(reader: Any) -> set[tuple[Any, ...]]:
    """The rows a reader's one partition gives (Arrow batches), read in this process."""
    [partition] = reader.partitions()
    batches = list(reader.read(partition))
    rows = pa.Table.from_batches(batches).to_pylist()
    return {(r["customer"], r["total"], r["orders"], r["_sow_key"]) for r in rows}


def test_view_reads_as_its_own_sow(sow: Any, writer: SowStore, tmp_path: Path) -> None:
    df = _load(sow, tmp_path / "amps.xml", VIEW)
    kinds = {f.name: type(f.dataType) for f in df.schema.fields}
    assert kinds == {
        "customer": T.StringType,
        "total": T.DoubleType,
        "orders": T.LongType,
        "_sow_key": T.StringType,
        "_seq": T.LongType,
    }
    rows = {(r["customer"], r["total"], r["orders"], r["_sow_key"]) for r in df.collect()}
    assert rows == _own_sow(writer)
    assert sum(r[2] for r in rows) == 290
    # a conflated topic answers like its underlying topic
    assert _load(sow, tmp_path / "amps.xml", "orders-1s").count() == 290


def test_writes_after_a_read_show_in_the_next(sow: Any, writer: SowStore, tmp_path: Path) -> None:
    first = {r["customer"]: r["orders"] for r in _load(sow, tmp_path / "amps.xml", VIEW).collect()}
    writer.topic("orders").publish({"orderId": 1000, "customer": "new", "quantity": 2, "price": 1})
    writer.flush()
    again = {r["customer"]: r["orders"] for r in _load(sow, tmp_path / "amps.xml", VIEW).collect()}
    assert "new" not in first
    assert again == {**first, "new": 1}


def test_filters_on_a_view(sow: Any, writer: SowStore, tmp_path: Path) -> None:
    totals = sorted(r[1] for r in _own_sow(writer))
    cut = totals[len(totals) // 2]
    expected = _own_sow(writer, f"/total > {cut!r}")
    assert 0 < len(expected) < len(totals)

    def rows(df: Any) -> set[tuple[Any, ...]]:
        return {(r["customer"], r["total"], r["orders"], r["_sow_key"]) for r in df.collect()}

    config = tmp_path / "amps.xml"
    assert rows(_load(sow, config, VIEW).where(F.col("total") > cut)) == expected
    assert rows(_load(sow, config, VIEW, filter=f"/total > {cut!r}")) == expected

    # the Spark filter is taken by the source: sowlib applies it to the view
    source = SowDataSource({"config": str(config), "topic": VIEW})
    reader: Any = source.reader(_struct(source.schema()))
    assert list(reader.pushFilters([GreaterThan(("total",), cut)])) == []
    assert _read_directly(reader) == expected


def test_unknown_view_is_a_clear_error(sow: Any, writer: SowStore, tmp_path: Path) -> None:
    with pytest.raises(Exception) as info:
        _load(sow, tmp_path / "amps.xml", "no-such-view").collect()
    text = str(info.value)
    assert "ConfigError" in text
    assert "'no-such-view'" in text
    assert "create_view" in text


def _by_customer(rows: Any) -> dict[str, int]:
    return {r["customer"]: r["n"] for r in rows}


def test_a_view_made_in_python_reads_through_the_cached_reader(
    sow: Any, writer: SowStore, tmp_path: Path
) -> None:
    """create_view keeps the definition in the store directory: a read with ``path`` or
    with ``config`` reads it through the process's cached reader, built once, then kept
    current by each read's refresh (not rebuilt per read)."""
    view = writer.create_view(
        "by-customer", "orders", projection=["/customer", "COUNT(*) AS /n"], grouping=["/customer"]
    )
    own = {r.doc["customer"]: r.doc["n"] for r in view.sow()}
    by_path = sow.read.format("sow").option("path", str(tmp_path)).option("topic", "by-customer")
    assert _by_customer(by_path.load().collect()) == own
    assert _by_customer(_load(sow, tmp_path / "amps.xml", "by-customer").collect()) == own

    # in this process: the same reader and the same view topic from one read to the next
    source = SowDataSource({"config": str(tmp_path / "amps.xml"), "topic": "by-customer"})
    reader: Any = source.reader(_struct(source.schema()))
    [partition] = reader.partitions()
    first = pa.Table.from_batches(list(reader.read(partition))).to_pylist()
    kept = handles.reader(str(tmp_path)).topic("by-customer")
    writer.topic("orders").publish({"orderId": 7000, "customer": "new", "quantity": 1})
    writer.flush()
    again = pa.Table.from_batches(list(reader.read(partition))).to_pylist()
    assert handles.reader(str(tmp_path)).topic("by-customer") is kept
    with read_topic("", str(tmp_path / "amps.xml"), "by-customer", "json") as topic:
        assert topic is kept  # what a read with ``config`` reads: the cached reader's view
    assert _by_customer(first) == own
    assert _by_customer(again) == {**own, "new": 1}
    assert _by_customer(by_path.load().collect()) == {**own, "new": 1}


def test_config_text_with_a_relative_store_directory(
    sow: Any, writer: SowStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path.parent)
    options = {"config": CONFIG, "path": tmp_path.name, "topic": VIEW}
    source = SowDataSource(options)
    reader: Any = source.reader(_struct(source.schema()))
    assert _read_directly(reader) == _own_sow(writer)


def test_refused_options(writer: SowStore, tmp_path: Path) -> None:
    config = str(tmp_path / "amps.xml")
    with pytest.raises(ConfigError, match="transient topic 'scratch'"):
        SowDataSource({"config": config, "topic": "scratch"}).schema()
    with pytest.raises(ConfigError) as info:
        SowDataSource({"config": config, "topic": "orders"}).writer(T.StructType(), False)
    assert info.value.where == "config"
    with pytest.raises(ConfigError) as info:
        SowDataSource({"config": config, "topic": "orders"}).streamReader(T.StructType())
    assert info.value.where == "config"
    with pytest.raises(ConfigError) as info:
        SowDataSource({"topic": VIEW}).schema()
    assert info.value.where == "sow"


def test_a_topic_without_a_file_yet(tmp_path: Path) -> None:
    (tmp_path / "amps.xml").write_text(CONFIG)
    with pytest.raises(ConfigError, match="writer first"):
        SowDataSource({"config": str(tmp_path / "amps.xml"), "topic": VIEW}).schema()


def test_a_reader_opened_from_the_configuration_keeps_its_views(
    writer: SowStore, tmp_path: Path
) -> None:
    # what each Spark read opens: SowStore.from_config(..., readonly=True)
    with SowStore.from_config(tmp_path / "amps.xml", readonly=True) as reader:
        assert reader.readonly
        assert sorted(reader.derived_topics()) == [VIEW, "orders-1s"]
        assert _own_sow(reader) == _own_sow(writer)
        assert len(reader.topic("scratch")) == 0  # transient: the reader's own, empty
        writer.topic("orders").publish({"orderId": 5000, "customer": "c1", "quantity": 1})
        writer.flush()
        reader.refresh()
        assert _own_sow(reader) == _own_sow(writer)


def _struct(schema: T.StructType | str) -> T.StructType:
    """The source's schema as a StructType (it may answer with DDL text)."""
    if isinstance(schema, T.StructType):
        return schema
    parsed = T.StructType.fromDDL(schema)
    assert isinstance(parsed, T.StructType)
    return parsed
