"""SowSink applies micro-batches to a topic exactly once, deletes by data, and resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import ConfigError, StoreClosedError
from sowlib.spark.sink import SowSink
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

SCHEMA = "orderId int, price double, region string, gone boolean"


def _contents(path: Path, topic: str = "orders") -> dict[int, dict[str, Any]]:
    with SowStore(path, readonly=True) as store:
        return {r.doc["orderId"]: r.doc for r in store.topic(topic).sow()}


def test_batches_publish_update_and_delete_by_data(spark: Any, tmp_path: Path) -> None:
    first = [(1, 10.0, "EU", False), (2, 20.0, "US", False), (3, 30.0, None, False)]
    second = [(1, 11.0, "EU", False), (2, None, None, True), (4, 40.0, "APAC", False)]
    with SowSink(tmp_path, "orders", keys=["/orderId"], delete_column="gone") as sink:
        sink(spark.createDataFrame(first, SCHEMA), 0)
        sink(spark.createDataFrame(second, SCHEMA), 1)
        assert sink.last_batch_id == 1
    assert _contents(tmp_path) == {
        1: {"orderId": 1, "price": 11.0, "region": "EU"},
        3: {"orderId": 3, "price": 30.0},
        4: {"orderId": 4, "price": 40.0, "region": "APAC"},
    }


def test_replayed_batch_id_is_skipped_even_after_reopen(spark: Any, tmp_path: Path) -> None:
    with SowSink(tmp_path, "orders", keys=["/orderId"]) as sink:
        sink(spark.createDataFrame([(1, 1.0, "EU", False)], SCHEMA), 5)
    with SowSink(tmp_path, "orders", keys=["/orderId"]) as again:
        assert again.last_batch_id == 5
        again(spark.createDataFrame([(1, 99.0, "EU", False)], SCHEMA), 5)
    assert _contents(tmp_path)[1]["price"] == 1.0
    with pytest.raises(StoreClosedError):
        again(spark.createDataFrame([(1, 2.0, "EU", False)], SCHEMA), 6)


def test_batch_failing_after_publishing_then_retried_equals_clean_run(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [(1, 5.0, "EU", False), (2, 6.0, "US", False), (1, None, None, True)]
    df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
    clean, failing = tmp_path / "clean", tmp_path / "failing"
    with SowSink(clean, "orders", keys=["/orderId"], delete_column="gone") as sink:
        sink(df, 0)
    with SowSink(failing, "orders", keys=["/orderId"], delete_column="gone") as sink:
        real = sink.topic.sow_delete_by_data

        def crash(data: Any) -> Any:
            raise OSError("simulated crash after the publishes")

        monkeypatch.setattr(sink.topic, "sow_delete_by_data", crash)
        with pytest.raises(OSError):
            sink(df, 0)
        assert sink.last_batch_id is None
        assert set(_contents(failing)) == {1, 2}  # the publishes did land
        monkeypatch.setattr(sink.topic, "sow_delete_by_data", real)
        sink(df, 0)
        sink(df, 0)
    expected = {2: {"orderId": 2, "price": 6.0, "region": "US"}}
    assert _contents(failing) == _contents(clean) == expected


def test_message_column_and_streaming_query(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for n in range(3):
        lines = [json.dumps({"m": json.dumps({"orderId": i % 4, "n": n})}) for i in range(8)]
        part = source / f"part-{n}.json"
        part.write_text("\n".join(lines) + "\n")
        os.utime(part, (1_700_000_000 + n, 1_700_000_000 + n))  # the file source orders by mtime
    stream = spark.readStream.schema("m string").option("maxFilesPerTrigger", 1).json(str(source))
    sink = SowSink(tmp_path / "sow", "orders", keys=["/orderId"], message_column="m")
    query = (
        stream.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert sink.last_batch_id == 2
    assert {r.doc["orderId"]: r.doc["n"] for r in sink.topic.sow()} == {k: 2 for k in range(4)}
    with pytest.raises(ConfigError) as info:
        sink(spark.createDataFrame([(1,)], "x int"), 3)
    assert info.value.where == "column"
    sink.close()
    sink.close()
