"""Issue 27, pandas in and out, as a notebook user hits it: ``publish_many(df)``,
``pd.Timestamp``/``datetime``/numpy values in messages, datetimes typed on the way out,
and typed empty frames."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import ArgumentError, EncodeError
from sowlib.frames import frame_messages, plain

pd = pytest.importorskip("pandas")
np = pytest.importorskip("numpy")


@pytest.fixture(params=["json", "msgpack"])
def orders(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    store = SowStore(tmp_path / "s")
    yield store.create_topic("orders", keys=["/orderId"], message_type=request.param)
    store.close()


def test_publish_many_takes_a_dataframe_row_per_message(orders: Any) -> None:
    df = pd.DataFrame(
        {
            "orderId": [1, 2, 3],
            "book": ["B1", "B2", "B3"],
            "px": [1.5, np.nan, 2.25],
            "qty": np.array([10, 20, 30], dtype="int32"),
            "live": [True, False, True],
        }
    )
    results = orders.publish_many(df)
    assert [r.inserted for r in results] == [True, True, True]
    assert orders.lookup(1).doc == {"orderId": 1, "book": "B1", "px": 1.5, "qty": 10, "live": True}
    # the missing cell is no field
    assert orders.lookup(2).doc == {"orderId": 2, "book": "B2", "qty": 20, "live": False}
    assert len(orders.sow("/px IS NULL")) == 1
    assert len(orders.sow("/qty > 15 AND /live = false")) == 1


def test_publish_many_of_a_dataframe_reports_progress(orders: Any) -> None:
    seen: list[tuple[int, int | None]] = []
    df = pd.DataFrame({"orderId": range(50), "v": range(50)})
    orders.publish_many(df, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (50, 50)
    assert len(orders) == 50


def test_timestamps_and_numpy_scalars_are_encoded(orders: Any) -> None:
    stamp = pd.Timestamp("2024-03-01 09:30:00.123456789", tz="UTC")
    orders.publish(
        {
            "orderId": np.int64(7),
            "at": stamp,
            "naive": datetime(2024, 3, 1, 9, 30),
            "day": date(2024, 3, 1),
            "np_at": np.datetime64("2024-03-01T09:30:00"),
            "px": np.float32(1.5),
            "ok": np.bool_(True),
            "wait": timedelta(seconds=90),
            "gap": pd.NaT,
            "na": pd.NA,
            "legs": np.array([1, 2]),
        }
    )
    doc = orders.lookup(7).doc
    assert doc == {
        "orderId": 7,
        "at": "2024-03-01T09:30:00.123456789+00:00",
        "naive": "2024-03-01T09:30:00",
        "day": "2024-03-01",
        "np_at": "2024-03-01T09:30:00",
        "px": 1.5,
        "ok": True,
        "wait": 90.0,
        "gap": None,
        "na": None,
        "legs": [1, 2],
    }
    assert orders.lookup(np.int64(7)) is not None
    # delta publish takes them too
    orders.delta_publish({"orderId": 7, "px": np.float64(2.5), "at": pd.Timestamp(0, tz="UTC")})
    assert orders.lookup(7).doc["px"] == 2.5
    assert orders.lookup(7).doc["at"] == "1970-01-01T00:00:00+00:00"


def test_numpy_values_in_a_batch_of_dicts(orders: Any) -> None:
    orders.publish_many([{"orderId": np.int64(i), "px": np.float64(i / 2)} for i in range(5)])
    assert orders.lookup(4).doc == {"orderId": 4, "px": 2.0}


def test_what_no_codec_holds_still_fails_and_stores_nothing(orders: Any) -> None:
    with pytest.raises(EncodeError):
        orders.publish({"orderId": 1, "bad": {1, 2}})
    with pytest.raises(EncodeError):
        orders.publish_many([{"orderId": 1, "px": np.int64(1)}, {"orderId": 2, "bad": object()}])
    assert len(orders) == 0


def test_duplicate_columns_are_refused(orders: Any) -> None:
    df = pd.DataFrame([[1, 2]], columns=["orderId", "orderId"])
    with pytest.raises(ArgumentError, match="unique"):
        orders.publish_many(df)
    assert len(orders) == 0


def test_datetimes_come_back_typed(orders: Any) -> None:
    orders.publish_many(
        pd.DataFrame(
            {
                "orderId": [1, 2],
                "at": pd.to_datetime(["2024-03-01 09:00", "2024-03-02 10:00"]).tz_localize(
                    "Europe/Paris"
                ),
                "local": [datetime(2024, 3, 1, 9), datetime(2024, 3, 2, 10)],
                "label": ["2024-03-01T09:00:00", "not a date"],
            }
        )
    )
    df = orders.sow(order_by="/orderId").to_pandas()
    assert str(df["at"].dtype) == "datetime64[ns, UTC]"
    assert df["at"].tolist() == [
        pd.Timestamp("2024-03-01 08:00", tz="UTC"),
        pd.Timestamp("2024-03-02 09:00", tz="UTC"),
    ]
    assert str(df["local"].dtype) == "datetime64[ns]"
    assert df["local"][0] == pd.Timestamp("2024-03-01 09:00")
    assert df["label"].dtype == object  # one value is no date-time: the text stays


def test_empty_results_are_typed_frames(orders: Any) -> None:
    df = orders.sow().to_pandas()
    assert list(df.columns) == ["sow_key", "seq", "timestamp", "expiration", "topic"]
    assert len(df) == 0
    assert str(df["seq"].dtype) == "int64"
    assert str(df["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert str(df["expiration"].dtype) == "datetime64[ns, UTC]"
    orders.publish({"orderId": 1})
    full = orders.sow().to_pandas()
    assert full["seq"].dtype == df["seq"].dtype
    assert full["timestamp"].dtype == df["timestamp"].dtype
    assert full["timestamp"][0].to_pydatetime().tzinfo is not None
    assert full["timestamp"][0] <= pd.Timestamp(datetime.now(UTC))


def test_a_frame_round_trips_without_its_metadata(orders: Any, tmp_path: Path) -> None:
    orders.publish_many(
        [{"orderId": i, "px": i * 1.5, "side": "B" if i % 2 else "S"} for i in range(20)]
    )
    df = orders.sow(order_by="/orderId").to_pandas()
    with SowStore(tmp_path / "copy") as other:
        copy = other.create_topic("orders", keys=["/orderId"])
        copy.publish_many(df.drop(columns=["sow_key", "seq", "timestamp", "expiration", "topic"]))
        assert [r.doc for r in copy.sow(order_by="/orderId")] == [
            r.doc for r in orders.sow(order_by="/orderId")
        ]


def test_plain_and_frame_messages_directly() -> None:
    assert plain([np.int8(1), (np.float16(0.5), pd.NaT)]) == [1, [0.5, None]]
    assert plain(np.timedelta64(1500, "ms")) == 1.5
    assert plain(np.datetime64("NaT")) is None
    frame = pd.DataFrame({"a": [1, None], "b": pd.array([pd.NA, "x"], dtype="string")})
    assert frame_messages(frame) == [{"a": 1.0}, {"b": "x"}]
