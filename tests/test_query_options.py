"""Result-set controls (spec §13.2-§13.5): OrderBy, select lists, option checks, ResultSet."""

from __future__ import annotations

from typing import Any

import pytest

from sowlib.errors import QueryOptionError
from sowlib.paths import parse_path
from sowlib.query import OrderBy, OrderKey, QueryOptions, Record, ResultSet, SelectList


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("/a", [("/a", False, False)]),
        ("/region ASC, /total DESC", [("/region", False, False), ("/total", True, False)]),
        ("/ticket TEXT, /ts DESC", [("/ticket", False, True), ("/ts", True, False)]),
        ("/code DESC TEXT", [("/code", True, True)]),
        ("/code text desc", [("/code", True, True)]),
        ("  /a/b  desc ,/c", [("/a/b", True, False), ("/c", False, False)]),
        ("[/unit price] DESC", [("[/unit price]", True, False)]),
    ],
)
def test_order_by_parses_the_grammar(text: str, want: list[tuple[str, bool, bool]]) -> None:
    got = OrderBy.parse(text).keys
    assert got == tuple(OrderKey(parse_path(p), d, t) for p, d, t in want)


@pytest.mark.parametrize(
    "text", ["", "  ", "/a SIDEWAYS", "/a,", "a", "/a ASC DESC", ",/a", "/a//b"]
)
def test_bad_order_by_raises_query_option_error(text: str) -> None:
    with pytest.raises(QueryOptionError) as info:
        OrderBy.parse(text)
    assert info.value.option == "order_by"
    assert info.value.value == text


def _order(values: list[Any], text: str) -> list[Any]:
    order = OrderBy.parse(text)
    docs = [({"v": v} if v != "missing" else {}) for v in values]
    keyed = sorted(enumerate(docs), key=lambda p: order.sort_key(p[1], f"{p[0]:03d}"))
    return [values[i] for i, _ in keyed]


def test_mixed_type_order_numbers_then_strings_nulls_last() -> None:
    values = ["b", 10, "9", None, 2.5, "B", "missing", "", "10", True, -1]
    assert _order(values, "/v") == [-1, True, 2.5, "9", 10, "10", "B", "b", None, "missing", ""]


def test_descending_puts_nulls_first_and_keeps_sow_key_tie_order() -> None:
    values = [1, None, "x", 1, 3]
    assert _order(values, "/v DESC") == [None, "x", 3, 1, 1]
    order = OrderBy.parse("/v DESC")
    a, b = order.sort_key({"v": 1}, "a"), order.sort_key({"v": 1}, "b")
    assert a < b


def test_text_order_compares_canonical_text_bytewise() -> None:
    assert _order([10, 9, "a", "B", 5.0, None], "/v TEXT") == [10, 5.0, 9, "B", "a", None]


def test_arrays_sort_by_their_first_element() -> None:
    assert _order([[3, 0], [1, 9], 2], "/v") == [[1, 9], 2, [3, 0]]


def test_select_list_spec_example() -> None:
    doc = {"id": 5, "who": "Kim", "bag": {"top": "pen", "side": "cup"}}
    got = SelectList.parse("[-/,+/id,+/bag/top]").apply(doc)
    assert got == {"id": 5, "bag": {"top": "pen"}}
    assert doc == {"id": 5, "who": "Kim", "bag": {"top": "pen", "side": "cup"}}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("[+/,-/notes]", {"id": 1, "meta": {"owner": "a", "tag": "t"}}),
        ("[-/meta,+/meta/owner]", {"id": 1, "notes": "n", "meta": {"owner": "a"}}),
        ("[-/notes,+/notes]", {"id": 1, "meta": {"owner": "a", "tag": "t"}}),  # first wins
        ("[-/]", {}),
        ("[+/missing]", {"id": 1, "notes": "n", "meta": {"owner": "a", "tag": "t"}}),
        ("[-/,+/missing]", {}),  # absent fields are not invented
        ("[-/,+/meta/nope]", {}),
        ("[+/meta,-/meta/owner,-/meta/tag]", {"id": 1, "notes": "n", "meta": {}}),
        ("-/id", {"notes": "n", "meta": {"owner": "a", "tag": "t"}}),  # brackets optional
    ],
)
def test_select_list_rules(text: str, want: dict[str, Any]) -> None:
    doc = {"id": 1, "notes": "n", "meta": {"owner": "a", "tag": "t"}}
    assert SelectList.parse(text).apply(doc) == want


def test_select_list_reaches_into_arrays_of_objects() -> None:
    doc = {"items": [{"q": 1, "p": 2}, {"q": 3}], "x": 0}
    assert SelectList.parse("[-/,+/items/q]").apply(doc) == {"items": [{"q": 1}, {"q": 3}]}


def test_select_list_round_trips_to_text() -> None:
    sel = SelectList.parse("[ -/ , +/id, +/bag/top ]")
    assert sel.to_text() == "[-/,+/id,+/bag/top]"
    assert SelectList.parse(sel.to_text()) == sel


@pytest.mark.parametrize("text", ["[/a]", "[+a]", "[]", "[+/a,,-/b]", "[*/a]", "[+/a[0]]"])
def test_bad_select_list_raises(text: str) -> None:
    with pytest.raises(QueryOptionError) as info:
        SelectList.parse(text)
    assert info.value.option == "select"


def test_make_parses_and_keeps_values() -> None:
    opts = QueryOptions.make(order_by="/id", top_n=2, skip_n=1, select="[-/x]", batch_size=50)
    assert opts.order_by == OrderBy.parse("/id")
    assert (opts.top_n, opts.skip_n, opts.batch_size) == (2, 1, 50)
    assert opts.select == SelectList.parse("[-/x]")
    assert QueryOptions.make() == QueryOptions()


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"top_n": -1}, "top_n"),
        ({"top_n": True}, "top_n"),
        ({"top_n": 1.5}, "top_n"),
        ({"skip_n": 2}, "skip_n"),  # skip_n needs top_n
        ({"top_n": 1, "skip_n": -2}, "skip_n"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 10_001}, "batch_size"),
        ({"batch_size": "10"}, "batch_size"),
        ({"order_by": "/a BOGUS"}, "order_by"),
        ({"select": "[x]"}, "select"),
    ],
)
def test_make_rejects_bad_values(kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(QueryOptionError) as info:
        QueryOptions.make(**kwargs)
    assert info.value.option == option
    assert isinstance(info.value, ValueError)


def _records(n: int) -> ResultSet:
    return ResultSet(
        Record(str(i), b"{}", i, 1.0 + i, None, "t", "json", doc={"id": i, "px": i * 1.5})
        for i in range(n)
    )


def test_result_set_is_a_list_with_batches() -> None:
    rs = _records(25)
    assert isinstance(rs, list)
    assert rs.to_list() == list(rs)
    assert [len(b) for b in rs.batches(10)] == [10, 10, 5]
    with pytest.raises(QueryOptionError):
        list(rs.batches(0))


def test_result_set_to_pandas_and_arrow() -> None:
    pandas = pytest.importorskip("pandas")
    pyarrow = pytest.importorskip("pyarrow")
    frame = _records(3).to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["px"]) == [0.0, 1.5, 3.0]
    assert list(frame["sow_key"]) == ["0", "1", "2"]
    table = _records(2).to_arrow()
    assert isinstance(table, pyarrow.Table)
    assert table.column("id").to_pylist() == [0, 1]
