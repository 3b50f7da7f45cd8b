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


FLAT = "id bigint, s string, i int, t tinyint, h smallint, b boolean, n string"


def _flat_rows() -> list[tuple[Any, ...]]:
    return [
        (1, 'q"uo\\te\n\x01\t', 7, -1, 300, True, None),
        (2, None, None, None, None, None, None),
        (3, "é✓ \u2028", -(2**31), 127, -32768, False, "x"),
        (4, "", 0, 0, 0, None, ""),
    ]


def _spark_json(df: Any) -> list[bytes]:
    """What Spark's to_json writes for each row of ``df`` (NULL fields left out)."""
    rows = df.selectExpr("to_json(struct(*), map('ignoreNullFields', 'true'))").collect()
    return [r[0].encode() for r in rows]


def _no_spark_json(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, batch_df: Any) -> Any:
        raise AssertionError("the batch went through Spark's to_json")

    monkeypatch.setattr(SowSink, "_messages", refuse)


@pytest.mark.parametrize("stream", [False, True], ids=["one-job", "streamed"])
def test_flat_rows_are_rendered_in_the_driver_as_spark_writes_them(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    df = spark.createDataFrame(_flat_rows(), FLAT).repartition(3)
    expected = {json.loads(text)["id"]: text for text in _spark_json(df)}
    _no_spark_json(monkeypatch)
    with SowSink(tmp_path, "orders", keys=["/id"], stream_partitions=stream) as sink:
        sink(df, 0)
        assert {r.doc["id"]: r.data for r in sink.topic.sow()} == expected  # byte for byte


def test_doubles_rendered_in_the_driver_read_back_as_sparks(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = [1.0, 1e7, 1e21, 1e-7, -0.0, 0.1, 123456789.125, 5e-324, None]
    values += [float("nan"), float("inf"), float("-inf")]
    # the first column holds NULLs: every field then starts with a comma, cut from the first
    df = spark.createDataFrame(
        [(v, i) for i, v in enumerate(values)] + [(None, None)], "d double, id int"
    )
    expected = [json.loads(text) for text in _spark_json(df)]
    _no_spark_json(monkeypatch)
    with SowSink(tmp_path, "orders", keys=["/id"]) as sink:
        sink(df.where("id IS NOT NULL"), 0)
        stored = {r.doc["id"]: r.doc for r in sink.topic.sow()}
    assert stored == {doc["id"]: doc for doc in expected if "id" in doc}
    assert stored[0]["d"] == 1.0
    assert isinstance(stored[0]["d"], float)
    assert stored[9] == {"d": "NaN", "id": 9}
    assert stored[10]["d"] == "Infinity"
    assert stored[11]["d"] == "-Infinity"
    assert stored[8] == {"id": 8}
    assert expected[-1] == {}  # an all-NULL row is an empty object (not stored: no key)


def test_boolean_delete_column_in_the_driver_and_others_through_spark(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [(1, "a", None), (2, "b", False), (1, None, True), (3, "c", None)]
    flags = spark.createDataFrame(rows, "id int, v string, gone boolean")
    # a string flag is cast as Spark casts it ('true' / 'false', anything else NULL)
    texts = spark.createDataFrame(
        [(i, v, None if g is None else str(g).lower()) for i, v, g in rows],
        "id int, v string, gone string",
    )
    expected = {2: {"id": 2, "v": "b"}, 3: {"id": 3, "v": "c"}}
    with SowSink(tmp_path / "texts", "orders", keys=["/id"], delete_column="gone") as sink:
        sink(texts, 0)
    assert _docs(tmp_path / "texts") == expected
    _no_spark_json(monkeypatch)
    with SowSink(tmp_path / "flags", "orders", keys=["/id"], delete_column="gone") as sink:
        sink(flags, 0)
    assert _docs(tmp_path / "flags") == expected


def _spy_rendered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the key values count of each ``Topic.publish_many(key_values=)`` call."""
    from sowlib.topic import Topic

    calls: list[int] = []
    real = Topic.publish_many

    def spy(self: Any, messages: Any, **kwargs: Any) -> Any:
        if kwargs.get("key_values") is not None:
            calls.append(len(kwargs["key_values"]))
        return real(self, messages, **kwargs)

    monkeypatch.setattr(Topic, "publish_many", spy)
    return calls


@pytest.mark.parametrize(
    ("schema", "keys", "keyed"),
    [
        ("id bigint, v string", ["/id"], True),
        ("v string, id string", ["/id"], True),
        ("id double, v string", ["/id"], False),  # a double's JSON text is not its value
        ("id int, v string", ["/id", "/v"], False),  # two key fields
        ("id int, v string", ["/v"], True),
    ],
)
def test_key_column_values_go_to_the_topic_when_they_are_the_key(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    schema: str,
    keys: list[str],
    keyed: bool,
) -> None:
    columns = spark.range(40).selectExpr("id", "concat('v', id % 5) AS v")
    df = columns.selectExpr(*[f"CAST({c} AS {t})" + f" AS {c}" for c, t in _pairs(schema)])
    df = df.repartition(3)
    messages = _spark_json(df)
    calls = _spy_rendered(monkeypatch)
    with SowSink(tmp_path, "orders", keys=keys, chunk_rows=7) as sink:
        sink(df, 0)
        got = {r.sow_key: r.doc for r in sink.topic.sow()}
    with SowStore() as store:
        direct = store.create_topic("orders", keys=keys)
        direct.publish_many(messages)
        assert got == {r.sow_key: r.doc for r in direct.sow()}  # same keys, same records
    assert bool(calls) == keyed


def _pairs(schema: str) -> list[tuple[str, str]]:
    """``"a int, b string"`` as ``[("a", "int"), ("b", "string")]``."""
    return [tuple(part.split()) for part in schema.split(", ")]  # type: ignore[misc]


def test_a_null_key_column_value_fails_the_batch_unrecorded(spark: Any, tmp_path: Path) -> None:
    from sowlib.errors import MissingKeyFieldError

    df = spark.createDataFrame([(1, "a"), (None, "b")], "id bigint, v string")
    with SowSink(tmp_path, "orders", keys=["/id"]) as sink:
        with pytest.raises(MissingKeyFieldError):
            sink(df, 0)
        assert sink.last_batch_id is None
        assert len(sink.topic) == 0


def test_a_topic_of_another_message_type_rejects_json_rows_and_stores_nothing(
    spark: Any, tmp_path: Path
) -> None:
    from sowlib.errors import DecodeError

    df = spark.createDataFrame([(1, "a")], "id bigint, v string")
    with SowSink(tmp_path, "packed", keys=["/id"], message_type="msgpack") as sink:
        with pytest.raises(DecodeError):
            sink(df, 0)
        assert sink.last_batch_id is None
        assert len(sink.topic) == 0
        assert list(sink.topic.sow()) == []


@pytest.mark.parametrize("key", ["id", "s"])
def test_strings_that_are_not_utf8_are_stored_as_spark_writes_them(
    spark: Any, tmp_path: Path, key: str
) -> None:
    # CAST(binary AS STRING) keeps bytes that are not UTF-8; to_json writes U+FFFD
    df = spark.sql(
        "SELECT * FROM VALUES (1, CAST(X'41FF42' AS STRING)), (2, CAST(X'FF22' AS STRING)),"
        " (3, 'plain') AS t(id, s)"
    )
    expected = sorted(json.loads(text)["s"] for text in _spark_json(df))
    with SowSink(tmp_path, "orders", keys=[f"/{key}"]) as sink:
        sink(df, 0)
        assert sorted(r.doc["s"] for r in sink.topic.sow()) == expected
    assert expected == sorted(["A\ufffdB", '\ufffd"', "plain"])


def test_two_columns_of_one_name_fail_as_in_spark(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import PySparkException

    df = spark.sql("SELECT 1 AS id, 'a' AS v, 'b' AS v")
    with SowSink(tmp_path, "orders", keys=["/id"]) as sink:
        with pytest.raises(PySparkException):
            sink(df, 0)
        assert sink.last_batch_id is None
