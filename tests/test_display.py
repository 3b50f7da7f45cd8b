"""Notebook views (issue 17): HTML structure and escaping, data frame columns and dtypes,
JMESPath projections."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.display import results_html, store_html, topic_html
from sowlib.errors import ArgumentError, QueryOptionError, SowError
from sowlib.frames import flatten, table_rows
from sowlib.query import Record, ResultSet

HOSTILE = [
    "<script>alert(1)</script>",
    "\"><img src=x onerror=alert('x')>",
    'it\'s & "quoted"',
    "</td></tr></table><b>",
]


class _Tags(HTMLParser):
    """Collects start tags and the text of each table cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.cells: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _rs(records: object) -> ResultSet:
    """What ``Topic.sow`` returns: a ResultSet (its annotation says list)."""
    assert isinstance(records, ResultSet)
    return records


def _parse(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    parser.close()
    return parser


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SowStore]:
    with SowStore(tmp_path / "sow") as st:
        orders = st.create_topic("orders", keys=["/orderId"], hash_indexes=[["/region"]])
        orders.publish({"orderId": 1, "price": 120.5, "region": "EU", "leg": {"venue": "XLON"}})
        orders.publish({"orderId": 2, "price": 80, "region": "US", "leg": {"venue": "XNYS"}})
        for i, text in enumerate(HOSTILE):
            orders.publish({"orderId": 10 + i, "price": 1, "region": text, "leg": {text: text}})
        st.create_topic("empty", keys=["/id"])
        yield st


def test_results_html_is_a_table_with_flattened_fields_and_the_count(store: SowStore) -> None:
    results = _rs(store.topic("orders").sow("/price > 50", order_by="/orderId"))
    page = _parse(results._repr_html_())
    assert page.tags.count("table") == 1
    assert page.tags.count("tr") == 3  # header + two records
    assert page.cells[:6] == ["sow_key", "seq", "orderId", "price", "region", "leg.venue"]
    assert "XLON" in page.cells
    assert "XNYS" in page.cells
    assert "2 records" in results._repr_html_()


def test_results_html_shows_the_total_and_cuts_rows_and_long_values() -> None:
    records = [
        Record(str(i), b"{}", i, 0.0, None, "t", "json", doc={"text": "x" * 500}) for i in range(30)
    ]
    text = results_html(records, max_rows=5, max_chars=10)
    page = _parse(text)
    assert page.tags.count("tr") == 6
    assert "30 records, showing the first 5" in text
    assert "x" * 9 + "\u2026" in page.cells
    assert "x" * 11 not in text


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_values_are_escaped_everywhere(store: SowStore, hostile: str) -> None:
    views = [
        _rs(store.topic("orders").sow(order_by="/orderId"))._repr_html_(),
        topic_html(store.topic("orders"), sample=10),
        store._repr_html_(),
        store_html(store, max_chars=5),
    ]
    for text in views:
        assert hostile not in text
        assert "<script" not in text
        assert "<img" not in text
        # only the tags the views write ever appear
        assert set(_parse(text).tags) <= {
            "div",
            "style",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "p",
            "b",
        }
    assert html.escape(hostile, quote=True) in views[0]


def test_a_hostile_topic_name_and_path_are_escaped(tmp_path: Path) -> None:
    with SowStore(tmp_path / "<b>x'\"") as st:
        st.create_topic("<script>t</script>", keys=["/id"]).publish({"id": 1})
        for text in (st._repr_html_(), topic_html(st.topic("<script>t</script>"))):
            assert "<script>" not in text
            assert "<b>x" not in text
            assert "&lt;script&gt;t&lt;/script&gt;" in text


def test_store_html_lists_topics_counts_and_sizes(store: SowStore) -> None:
    page = _parse(store._repr_html_())
    assert page.cells[:6] == ["topic", "message type", "records", "file size", "used", "indexes"]
    assert page.cells[6:9] == ["orders", "json", str(2 + len(HOSTILE))]
    assert re.fullmatch(r"[\d.]+ (B|KiB|MiB|GiB)", page.cells[9])
    assert "empty" in page.cells
    assert "2 topics" in store._repr_html_()


def test_topic_html_shows_configuration_indexes_and_a_few_records(store: SowStore) -> None:
    text = topic_html(store.topic("orders"), sample=2)
    page = _parse(text)
    cells = page.cells
    assert cells[cells.index("keys") + 1] == "/orderId"
    assert "hash(/region)" in cells[cells.index("indexes") + 1]
    assert cells[cells.index("records") + 1] == str(2 + len(HOSTILE))
    assert f"{2 + len(HOSTILE)} records, showing the first 2" in text
    assert page.tags.count("table") == 2


def test_plain_reprs_stay_short(store: SowStore) -> None:
    assert len(repr(store)) < 200
    assert len(repr(store.topic("orders"))) < 200


@pytest.mark.parametrize("bad", [0, -1, True, "5", None])
def test_bad_limits_are_sow_errors(bad: Any) -> None:
    with pytest.raises(ArgumentError):
        results_html([], max_rows=bad)
    with pytest.raises(SowError):
        results_html([], max_chars=bad)


def test_flatten_joins_nested_fields_with_dots() -> None:
    doc = {"id": 1, "leg": {"venue": "X", "px": {"bid": 1}}, "tags": [1], "empty": {}}
    assert flatten(doc) == {"id": 1, "leg.venue": "X", "leg.px.bid": 1, "tags": [1], "empty": {}}
    assert flatten(b"raw") == {"data": b"raw"}


def _records() -> ResultSet:
    return ResultSet(
        [
            Record(
                "k1",
                b"",
                1,
                1_700_000_000.5,
                None,
                "t",
                "json",
                doc={"orderId": 1, "price": 1.5, "leg": {"venue": "XLON"}, "seq": "mine"},
            ),
            Record(
                "k2",
                b"",
                2,
                1_700_000_001.0,
                1_700_000_100.0,
                "t",
                "json",
                doc={"orderId": 2, "price": 2.0},
            ),
        ]
    )


def test_table_rows_keep_metadata_and_rename_clashing_fields() -> None:
    rows = table_rows(_records())
    assert rows[0]["seq"] == 1
    assert rows[0]["/seq"] == "mine"
    assert rows[0]["timestamp"] == datetime.fromtimestamp(1_700_000_000.5, UTC)
    assert rows[0]["expiration"] is None
    assert rows[1]["expiration"].tzinfo is not None


def test_to_pandas_names_columns_by_field_with_utc_datetimes() -> None:
    pandas = pytest.importorskip("pandas")
    frame = _records().to_pandas()
    assert list(frame.columns) == [
        "sow_key",
        "seq",
        "timestamp",
        "expiration",
        "topic",
        "orderId",
        "price",
        "leg.venue",
        "/seq",
    ]
    assert str(frame["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert str(frame["expiration"].dtype) == "datetime64[ns, UTC]"
    assert frame["expiration"].isna().tolist() == [True, False]
    assert frame["seq"].dtype.kind == "i"
    assert frame["orderId"].dtype.kind == "i"
    assert frame["price"].dtype.kind == "f"
    assert frame["leg.venue"].tolist()[0] == "XLON"
    assert pandas.isna(frame["leg.venue"][1])
    assert frame["timestamp"][0] == pandas.Timestamp(1_700_000_000.5, unit="s", tz="UTC")


def test_to_arrow_names_columns_by_field_with_utc_timestamps() -> None:
    pa = pytest.importorskip("pyarrow")
    table = _records().to_arrow()
    assert table.column_names[:6] == [
        "sow_key",
        "seq",
        "timestamp",
        "expiration",
        "topic",
        "orderId",
    ]
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("expiration").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("seq").type == pa.int64()
    assert table.schema.field("orderId").type == pa.int64()
    assert table.schema.field("price").type == pa.float64()
    assert table.column("leg.venue").to_pylist() == ["XLON", None]


def test_to_arrow_keeps_mixed_kinds_as_json_text() -> None:
    pytest.importorskip("pyarrow")
    records = ResultSet(
        Record(str(i), b"", i, 0.0, None, "t", "json", doc={"v": v})
        for i, v in enumerate([1, "one", [1]])
    )
    assert records.to_arrow().column("v").to_pylist() == ["1", '"one"', "[1]"]


def test_an_empty_result_has_the_metadata_columns() -> None:
    pytest.importorskip("pandas")
    assert list(ResultSet().to_pandas().columns) == [
        "sow_key",
        "seq",
        "timestamp",
        "expiration",
        "topic",
    ]


def test_project_and_search_apply_jmespath(store: SowStore) -> None:
    results = _rs(store.topic("orders").sow("/price > 50", order_by="/orderId"))
    assert results.project("{id: orderId, venue: leg.venue}") == [
        {"id": 1, "venue": "XLON"},
        {"id": 2, "venue": "XNYS"},
    ]
    assert results[0].search("leg.venue") == "XLON"
    assert results[0].search("missing") is None


@pytest.mark.parametrize("bad", ["{id: ", "", "   ", "a[", "x" * 5000, 7, None])
def test_bad_projections_are_query_option_errors(store: SowStore, bad: Any) -> None:
    results = _rs(store.topic("orders").sow())
    with pytest.raises(QueryOptionError):
        results.project(bad)
    with pytest.raises(QueryOptionError):
        results[0].search(bad)
    with pytest.raises(QueryOptionError):
        ResultSet().project(bad)


def test_a_projection_failing_on_a_document_is_a_query_option_error(store: SowStore) -> None:
    with pytest.raises(QueryOptionError):
        _rs(store.topic("orders").sow()).project("abs(region)")
