"""What a topic shows users: projections, the notebook view, and a query's regex budget.

Issues 16 (per-query regex work is bounded) and 17 (``sow(project=)``, ``_repr_html_``).
"""

from __future__ import annotations

import pytest

from sowlib import SowStore, Topic
from sowlib.errors import QueryOptionError, RegexBudgetError
from sowlib.expr import like


@pytest.fixture
def orders() -> Topic:
    store = SowStore()
    topic = store.create_topic("orders", keys=["/orderId"], hash_indexes=[["/symbol"]])
    topic.publish_many(
        [
            {"orderId": 1, "symbol": "MSFT", "price": 10, "leg": {"venue": "X"}},
            {"orderId": 2, "symbol": "IBM", "price": 20, "leg": {"venue": "Y"}},
            {"orderId": 3, "symbol": "MSFT", "price": 30, "leg": {"venue": "<b>&"}},
        ]
    )
    return topic


def test_sow_project_applies_jmespath_to_each_match(orders: Topic) -> None:
    rows = orders.sow("/symbol = 'MSFT'", order_by="/price", project="{id: orderId, px: price}")
    assert rows == [{"id": 1, "px": 10}, {"id": 3, "px": 30}]


def test_sow_project_of_a_nested_field(orders: Topic) -> None:
    assert orders.sow(order_by="/orderId", project="leg.venue") == ["X", "Y", "<b>&"]


def test_sow_without_project_returns_records(orders: Topic) -> None:
    results = orders.sow("/price > 15", order_by="/price")
    assert [r.sow_key for r in results] == [r.sow_key for r in results.to_list()]
    assert [r.doc["orderId"] for r in results] == [2, 3]


def test_a_bad_projection_is_a_query_option_error(orders: Topic) -> None:
    with pytest.raises(QueryOptionError):
        orders.sow(project="{id: ")


def test_topic_html_names_the_topic_and_escapes_values(orders: Topic) -> None:
    page = orders._repr_html_()
    assert "orders" in page
    assert "<table" in page
    assert "&lt;b&gt;&amp;" in page
    assert "<b>&" not in page


def test_issue16_one_query_shares_one_regex_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each value costs the engine a noticeable time on this pattern; twenty of them
    # would run for seconds. The query's budget stops the work with a clear error.
    monkeypatch.setattr(like, "QUERY_REGEX_BUDGET", 0.3)
    topic = SowStore().create_topic("t", keys=["/id"])
    # distinct values: a column plan (the second query) evaluates each one once
    topic.publish_many([{"id": i, "s": "a" * 26 + f"!{i}"} for i in range(20)])
    with pytest.raises(RegexBudgetError):
        topic.sow("/s LIKE '(a|aa)+$'")
    with pytest.raises(RegexBudgetError):
        topic.sow_delete("/s LIKE '(a|aa)+$'")
    assert len(topic) == 20


def test_a_regex_replace_in_a_filter_also_runs_under_the_query_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(like, "QUERY_REGEX_BUDGET", 0.3)
    topic = SowStore().create_topic("t", keys=["/id"])
    topic.publish_many([{"id": i, "s": "a" * 26 + f"!{i}"} for i in range(20)])
    with pytest.raises(RegexBudgetError):
        topic.sow("REGEXP_REPLACE(/s, '(a|aa)+$', 'x') = 'x'")


@pytest.mark.parametrize(
    ("text", "regex"),
    [
        ("/s LIKE 'a%'", True),
        ("/a = 1 OR NOT (/s LIKE '^x')", True),
        ("REGEXP_REPLACE(/s, 'a', 'b') = 'b'", True),
        ("UPPER(REGEXP_REPLACE(/s, 'a', 'b')) = 'B'", True),
        ("/symbol = 'X'", False),
        ("/a BETWEEN 1 AND 2 AND /s BEGINS WITH ('x')", False),
        ("UPPER(/s) = 'LIKE'", False),
    ],
)
def test_a_filter_says_whether_it_can_run_a_regex(text: str, regex: bool) -> None:
    """Only such a filter opens a query's regex budget (the others need none)."""
    from sowlib.expr import compile_filter

    assert compile_filter(text).regex is regex
