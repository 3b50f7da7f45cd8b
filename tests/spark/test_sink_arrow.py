"""SowSink's Arrow path: stored documents per Spark type, chunking, message columns, fallback."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark import sink as sink_module
from sowlib.spark.sink import SowSink
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

TYPED = (
    "id bigint, i int, f double, s string, b boolean, n string,"
    " nested struct<x: int, y: string>, arr array<int>, ts timestamp, d date, bin binary"
)


@contextmanager
def _conf(spark: Any, **settings: str) -> Iterator[None]:
    """Set SQL confs (keys with ``_`` for ``.``) for the block, then restore them."""
    keys = {k.replace("_", "."): v for k, v in settings.items()}
    old = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _docs(path: Path, topic: str = "orders", key: str = "id") -> dict[Any, Any]:
    with SowStore(path, readonly=True) as store:
        return {r.doc[key]: r.doc for r in store.topic(topic).sow()}


def _typed_frame(spark: Any) -> Any:
    ts = dt.datetime(2024, 3, 1, 12, 30, 15, 250000)
    rows = [
        (
            1,
            7,
            1.5,
            'q"uo\\te\n',
            True,
            None,
            (1, None),
            [1, None, 3],
            ts,
            dt.date(2024, 3, 1),
            b"\x00\xff",
        ),
        (2, None, None, None, False, None, None, None, None, None, None),
        (3, -2, 1e20, "é✓", None, None, (None, "y"), [], ts, dt.date(1999, 12, 31), b""),
    ]
    return spark.createDataFrame(rows, TYPED)


def test_stored_documents_are_sparks_json_with_null_fields_left_out(
    spark: Any, tmp_path: Path
) -> None:
    with _conf(spark, spark_sql_session_timeZone="UTC"):
        df = _typed_frame(spark)
        with SowSink(tmp_path, "orders", keys=["/id"]) as sink:
            sink(df, 0)
        rendered = [json.loads(r[0]) for r in df.selectExpr("to_json(struct(*))").collect()]
    docs = _docs(tmp_path)
    assert docs == {doc["id"]: doc for doc in rendered}  # the JSON Spark renders, as stored
    assert docs[1] == {
        "id": 1,
        "i": 7,
        "f": 1.5,
        "s": 'q"uo\\te\n',
        "b": True,
        "nested": {"x": 1},
        "arr": [1, None, 3],
        "ts": "2024-03-01T12:30:15.250Z",
        "d": "2024-03-01",
        "bin": "AP8=",
    }
    assert docs[2] == {"id": 2, "b": False}
    assert docs[3]["f"] == 1e20
    assert docs[3]["s"] == "é✓"
    assert docs[3]["nested"] == {"y": "y"}
    assert docs[3]["arr"] == []
    assert "b" not in docs[3]


def test_null_fields_are_left_out_even_when_the_session_keeps_them(
    spark: Any, tmp_path: Path
) -> None:
    with _conf(spark, spark_sql_jsonGenerator_ignoreNullFields="false"):
        df = spark.createDataFrame([(1, None, "x")], "id int, a string, `we``ird` string")
        with SowSink(tmp_path, "orders", keys=["/id"]) as sink:
            sink(df, 0)
    assert _docs(tmp_path) == {1: {"id": 1, "we`ird": "x"}}


def _mixed_rows(n: int) -> list[tuple[int, int, bool]]:
    """Publishes of keys 0..n-1 in order, every 7th row deleting the key published 3 before."""
    out = []
    for i in range(n):
        if i % 7 == 6:
            out.append((i - 3, -1, True))
        else:
            out.append((i, i * 10, False))
    return out


def _replayed(rows: list[tuple[int, int, bool]]) -> dict[int, dict[str, int]]:
    state: dict[int, dict[str, int]] = {}
    for key, value, gone in rows:
        if gone:
            state.pop(key, None)
        else:
            state[key] = {"id": key, "v": value}
    return state


@pytest.mark.parametrize("stream", [False, True], ids=["one-job", "streamed"])
@pytest.mark.parametrize("chunk_rows", [1, 4, 10_000])
def test_many_partitions_and_arrow_batches_apply_in_order(
    spark: Any, tmp_path: Path, chunk_rows: int, stream: bool
) -> None:
    rows = _mixed_rows(300)
    with _conf(spark, spark_sql_execution_arrow_maxRecordsPerBatch="16"):
        df = spark.createDataFrame(rows, "id int, v int, gone boolean").repartition(5, "id")
        df = df.sortWithinPartitions("id")  # any order: the sink keeps the frame's own
        order = [(r.id, r.v, r.gone) for r in df.toLocalIterator()]
        with SowSink(
            tmp_path,
            "orders",
            keys=["/id"],
            delete_column="gone",
            chunk_rows=chunk_rows,
            stream_partitions=stream,
        ) as sink:
            sink(df, 0)
    assert _docs(tmp_path) == _replayed(order)


def test_large_arrow_var_types(spark: Any, tmp_path: Path) -> None:
    with _conf(spark, spark_sql_execution_arrow_useLargeVarTypes="true"):
        df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, s string")
        with SowSink(tmp_path, "orders", keys=["/id"]) as sink:
            sink(df, 0)
    assert _docs(tmp_path) == {1: {"id": 1, "s": "a"}, 2: {"id": 2, "s": "b"}}


def test_binary_message_column_and_bad_message_columns(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(b'{"id": 1, "v": "x"}', 0), (b'{"id": 2}', 1)], "m binary, k int")
    with SowSink(tmp_path, "orders", keys=["/id"], message_column="m") as sink:
        sink(df, 0)
        with pytest.raises(ConfigError) as kind:
            sink(spark.createDataFrame([(1,)], "m int"), 1)
        assert kind.value.where == "m"
        with pytest.raises(ConfigError) as null:
            sink(spark.createDataFrame([(None,)], "m string"), 1)
        assert null.value.where == "m"
        assert sink.last_batch_id == 0
    assert _docs(tmp_path) == {1: {"id": 1, "v": "x"}, 2: {"id": 2}}


def test_row_fallback_matches_the_arrow_path(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _mixed_rows(60)
    df = spark.createDataFrame(rows, "id int, v int, gone boolean").coalesce(1)
    with SowSink(tmp_path / "arrow", "orders", keys=["/id"], delete_column="gone") as sink:
        sink(df, 0)
    monkeypatch.setattr(sink_module, "_arrow_batches", lambda df, stream: None)
    with SowSink(
        tmp_path / "rows", "orders", keys=["/id"], delete_column="gone", chunk_rows=7
    ) as sink:
        sink(df, 0)
        binary = spark.createDataFrame([(b'{"id": 99}',)], "m binary")
        with SowSink(tmp_path / "bin", "orders", keys=["/id"], message_column="m") as other:
            other(binary, 0)
    assert _docs(tmp_path / "rows") == _docs(tmp_path / "arrow") == _replayed(rows)
    assert _docs(tmp_path / "bin") == {99: {"id": 99}}


@pytest.mark.parametrize("stream", [False, True], ids=["one-job", "streamed"])
def test_empty_batch_is_recorded(spark: Any, tmp_path: Path, stream: bool) -> None:
    df = spark.createDataFrame([(1, "a")], "id int, s string").where("id > 1")
    with SowSink(tmp_path, "orders", keys=["/id"], stream_partitions=stream) as sink:
        sink(df, 0)
        assert sink.last_batch_id == 0
        assert len(sink.topic) == 0


def test_projection_follows_each_batch_columns(spark: Any, tmp_path: Path) -> None:
    # the parsed projection is reused per column list; a new list must not reuse it
    with SowSink(tmp_path, "orders", keys=["/id"], delete_column="gone") as sink:
        sink(spark.createDataFrame([(1, "a", False)], "id int, a string, gone boolean"), 0)
        sink(spark.createDataFrame([(2, 5, False)], "id int, b int, gone boolean"), 1)
        sink(spark.createDataFrame([(False, 3, "c")], "gone boolean, id int, a string"), 2)
        sink(spark.createDataFrame([(1, "x", True)], "id int, a string, gone boolean"), 3)
        with pytest.raises(ConfigError) as missing:
            sink(spark.createDataFrame([(4, "d")], "id int, a string"), 4)
        assert missing.value.where == "column"
        assert sink.last_batch_id == 3
    assert _docs(tmp_path) == {2: {"id": 2, "b": 5}, 3: {"id": 3, "a": "c"}}


@pytest.mark.parametrize("stream", [False, True], ids=["one-job", "streamed"])
def test_failing_spark_job_leaves_the_batch_unrecorded(
    spark: Any, tmp_path: Path, stream: bool
) -> None:
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    # the one-job path raises pyspark's exception (as collect does), the streamed one
    # py4j's (as toLocalIterator does)
    kind = Py4JJavaError if stream else PySparkException
    rows = [(i, i % 50 == 49) for i in range(200)]
    df = spark.createDataFrame(rows, "id int, bad boolean").repartition(4, "id")
    df = df.selectExpr("id", "CASE WHEN bad THEN raise_error('bad row') END AS v")
    with SowSink(tmp_path, "orders", keys=["/id"], stream_partitions=stream) as sink:
        with pytest.raises(kind):
            sink(df, 0)
        assert sink.last_batch_id is None


@pytest.mark.parametrize(("stream", "jobs"), [(False, 1), (True, 6)], ids=["one-job", "streamed"])
def test_one_spark_job_per_batch_unless_streamed(
    spark: Any, tmp_path: Path, stream: bool, jobs: int
) -> None:
    sc = spark.sparkContext
    df = spark.range(0, 60, numPartitions=6).selectExpr("id", "id * 2 AS v")
    group = f"sowlib-sink-jobs-{stream}"
    sc.setLocalProperty("spark.jobGroup.id", group)
    try:
        with SowSink(tmp_path, "orders", keys=["/id"], stream_partitions=stream) as sink:
            sink(df, 0)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert len(sc.statusTracker().getJobIdsForGroup(group)) == jobs
    assert _docs(tmp_path) == {i: {"id": i, "v": 2 * i} for i in range(60)}
