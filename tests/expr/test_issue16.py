"""Issue 16: values a filter cannot compare, long and deep filters, bounded work."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from sowlib.errors import FilterSyntaxError, FilterTooDeepError
from sowlib.expr import FUNCTIONS, Filter, clear_cache, compile_filter, parse_filter
from sowlib.expr import api as expr_api
from sowlib.expr.interp import evaluate
from sowlib.expr.parser import MAX_NESTING
from sowlib.expr.runtime import MAX_NUMBER_TEXT, parse_number, truthy
from sowlib.index.values import Loose, hash_texts, literal_texts, to_number

HUGE = [
    "9" * 309,  # converts to a float beyond the float range
    "9" * 5000,  # past Python's digit limit for int()
    "9" * 20_000 + "x",  # once took seconds to reject
    10**400,  # an int no float can hold
    10**5000,  # an int past Python's digit limit for str()
    -(10**400),
    math.inf,
    -math.inf,
    math.nan,
    "1e999",
    "-1e999",
    2**64,
    -(2**63) - 1,
]

IDS = [f"huge{i}" for i in range(len(HUGE))]


def test_issue16_number_conversion_is_linear() -> None:
    start = time.perf_counter()
    for _ in range(10):
        assert parse_number("9" * 200_000 + "x") is None
        assert parse_number("1" + "0" * 200_000) is None
    assert time.perf_counter() - start < 1.0  # was quadratic: 7 s for one 20,000-digit value


def test_issue16_number_text_is_bounded() -> None:
    assert parse_number("1" * MAX_NUMBER_TEXT) == math.inf
    assert parse_number("1" * (MAX_NUMBER_TEXT + 1)) is None  # a plain string
    assert parse_number("9" * 309) == math.inf
    assert parse_number("-" + "9" * 309) == -math.inf
    assert parse_number("18446744073709551616") == 2.0**64
    assert parse_number("007") == 7
    assert parse_number("1.5e3") == 1500.0


@pytest.mark.parametrize("value", HUGE, ids=IDS)
@pytest.mark.parametrize(
    "text",
    [
        "/a > 1",
        "/a = 1.5",
        "/a < -2.5",
        "/a != 3",
        "/a + 1 > 2",
        "/a * 1.5 > 1",
        "/a % 7 = 1",
        "-/a < 0",
        "/a BETWEEN 1 AND 2.5",
        "/a IN (1, 2.5, 'x')",
        "/a LIKE '9'",
        "/a BEGINS WITH ('9')",
        "/a IS NAN",
        "/a = /b",
        "ROUND(/a, /a) > 0",
        "WIDTH_BUCKET(/a, 0, 10, 5) = 1",
        "WIDTH_BUCKET(1, /a, 10, /a) = 1",
        "GEO_DISTANCE(/a, 0, 0, /a) > 1",
        "POWER(/a, /a) > 1",
        "SQRT(/a) > 1",
    ],
)
def test_issue16_value_filter_cannot_compare_is_null_not_an_exception(
    text: str, value: Any
) -> None:
    f = compile_filter(text)
    doc = {"a": value, "b": [value, 1]}
    got = f.matches(doc)
    assert got is truthy(evaluate(f.node, doc))


@pytest.mark.parametrize("value", HUGE, ids=IDS)
def test_issue16_every_function_takes_huge_values(value: Any) -> None:
    for spec in FUNCTIONS.values():
        if spec.context or spec.max_args == 0:
            continue
        n = max(spec.min_args, 1)
        args = ", ".join(["/a"] * n)
        f = compile_filter(f"{spec.name}({args}) IS NULL")
        doc = {"a": value}
        assert f.matches(doc) is truthy(evaluate(f.node, doc)), spec.name


def test_issue16_index_keys_of_huge_values() -> None:
    for value in HUGE:
        try:
            keys = hash_texts(value)
        except Loose:  # verified on every lookup instead: allowed
            keys = []
        assert all(isinstance(k, str) for k in keys)
        assert literal_texts(value) is None or isinstance(literal_texts(value), list)
    assert to_number("9" * 309) == math.inf
    assert to_number("9" * 5000) is None


def test_issue16_huge_values_compare_as_the_spec_says() -> None:
    assert compile_filter("/a > 1").matches({"a": "9" * 309})  # a number: +inf
    assert compile_filter("/a > 1").matches({"a": "9" * 5000})  # a string: above numbers
    assert not compile_filter("/a = 1.5").matches({"a": 10**400})
    assert compile_filter("/a > 1.5").matches({"a": 10**400})
    assert compile_filter("/a < 1.5").matches({"a": -(10**400)})
    assert compile_filter("/a * 1.5 > 1").matches({"a": 10**400})


@pytest.mark.parametrize(
    "text",
    [
        "(" * 110 + "/a = 1" + ")" * 110,
        "ABS(" * 90 + "1" + ")" * 90 + " = 1",
        "-" * 496 + "1 = 1",
        "NOT " * 500 + "/a = 1",
        "/a IN (" + "(" * 200 + "1" + ")" * 200 + ")",
        "/a = " + "(1 + " * 100 + "1" + ")" * 100,
    ],
)
def test_issue16_deep_nesting_is_a_filter_error_with_offset(text: str) -> None:
    with pytest.raises(FilterTooDeepError) as info:
        compile_filter(text)
    assert isinstance(info.value, FilterSyntaxError)
    assert 0 <= info.value.offset < len(text)


def test_issue16_nesting_up_to_the_limit_works() -> None:
    text = "(" * MAX_NESTING + "/a = 1" + ")" * MAX_NESTING
    assert compile_filter(text).matches({"a": 1})
    assert compile_filter("ABS(" * MAX_NESTING + "/a" + ")" * MAX_NESTING + " = 1").matches(
        {"a": -1}
    )


@pytest.mark.parametrize("op", ["AND", "OR"])
def test_issue16_long_chains_compile_evaluate_and_render(op: str) -> None:
    clauses = [f"/f{i} IS NULL" for i in range(4999)] + ["/a = 1"]
    text = f" {op} ".join(clauses)
    f = compile_filter(text)
    assert f.matches({"a": 1})
    assert f.matches({"a": 2}) is (op == "OR")
    assert truthy(evaluate(f.node, {"a": 1}))
    assert f.to_text() == text
    assert parse_filter(f.to_text()).start == 0


def test_issue16_long_arithmetic_chain() -> None:
    text = "/a = " + " - ".join(["1"] * 3000) + " + 3000 * 1 / 1"
    f = compile_filter(text)
    assert f.matches({"a": 2})
    assert f.to_text() == text
    assert truthy(evaluate(f.node, {"a": 2}))


def test_issue16_long_and_filter_matcher_after_a_thousand_documents() -> None:
    # the 198-clause filter failed from the 1,000th evaluation (generated code)
    clear_cache()
    text = " AND ".join(f"/f{i} IS NULL" for i in range(197)) + " AND /id >= 0"
    f = compile_filter(text)
    for i in range(1100):
        assert f.matches({"id": i})
    assert f.matcher({"id": 1})


def test_issue16_filter_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_cache()
    monkeypatch.setattr(expr_api, "CACHE_BYTES", 4_000_000)
    big = ", ".join(str(i) for i in range(3000))
    for i in range(40):
        compile_filter(f"/a{i} IN ({big})")
    assert expr_api.cache_bytes() <= 4_000_000
    assert len(expr_api.cached_texts()) < 40
    # a filter larger than the whole cache is compiled but not kept
    huge = compile_filter("/z IN (" + ", ".join(str(i) for i in range(30_000)) + ")")
    assert huge.matches({"z": 29_999})
    assert huge.text not in expr_api.cached_texts()
    clear_cache()
    assert expr_api.cache_bytes() == 0


def test_issue16_no_generated_code() -> None:
    f = compile_filter("/a = 1 AND /b = 'x' OR /c IN (1, 2)")
    assert isinstance(f, Filter)
    import importlib.util

    assert importlib.util.find_spec("sowlib.expr.codegen") is None


def test_issue16_long_filter_hashes_and_compares_by_text() -> None:
    text = " OR ".join(f"/f{i} = {i}" for i in range(5000))
    f = compile_filter(text)
    same = Filter.from_node(parse_filter(text), text)
    assert f == same
    assert hash(f) == hash(same)
    assert f in {same}
    assert "f4999" not in repr(compile_filter("/a = 1"))


def test_issue16_long_chain_nodes_compare_hash_and_print_without_recursion() -> None:
    text = (
        " AND ".join(f"/f{i} = {i}" for i in range(2500)) + " OR /z = " + " + ".join(["1"] * 2500)
    )
    node = parse_filter(text)
    assert node == parse_filter(text)
    assert hash(node) == hash(parse_filter(text))
    assert node != parse_filter(text + " + 1")
    assert repr(node).startswith("Or(left=And(left=And(")
    small = parse_filter("/a = 1 AND /b = 2 AND /c = 3")
    assert small != parse_filter("/a = 1 AND (/b = 2 AND /c = 3)")  # shape still counts
