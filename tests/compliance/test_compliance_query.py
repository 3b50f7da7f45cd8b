"""Result-set compliance cases (``query_*.json``): ordering, paging and select lists.

Each file is a list of groups ``{"comment", "messages", "cases"}`` with optional
``keys``, ``hash_indexes`` and ``indexes`` for the topic. A case has optional
``filter``, ``order_by``, ``top_n``, ``skip_n``, ``select`` and one of
``result`` (message indexes in order), ``unordered`` (indexes, any order),
``projected`` (documents after the select list, in order) or ``error``
(``{"option": name}``: a QueryOptionError for that option). Every case runs
through the query pipeline over the in-memory fake and through a real Topic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import QueryOptionError
from sowlib.query import QueryOptions, Record, run_query
from tests.index.fakes import FakeSource, compile_filter

HERE = Path(__file__).parent
OPTIONS = ("order_by", "top_n", "skip_n", "select")


def _params() -> list[Any]:
    out = []
    for path in sorted(HERE.glob("query_*.json")):
        for g, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            for c, case in enumerate(group["cases"]):
                shown = " ".join(f"{k}={case[k]}" for k in ("filter", *OPTIONS) if k in case)
                case_id = f"{path.stem}:{g}.{c}:{shown[:70]}"
                out.append(pytest.param(group, case, id=case_id))
    return out


Runner = Callable[[dict[str, Any], dict[str, Any]], tuple[list[Record], dict[str, int]]]


def _via_fake(group: dict[str, Any], case: dict[str, Any]) -> tuple[list[Record], dict[str, int]]:
    source = FakeSource(
        group.get("keys", ()), group.get("hash_indexes", ()), group.get("indexes", ())
    )
    where = {source.publish(msg): i for i, msg in enumerate(group["messages"])}
    options = QueryOptions.make(**{k: case[k] for k in OPTIONS if k in case})
    flt = compile_filter(case["filter"]) if "filter" in case else None
    return run_query(source, flt, options), where


def _via_topic(group: dict[str, Any], case: dict[str, Any]) -> tuple[list[Record], dict[str, int]]:
    with SowStore() as store:
        topic = store.create_topic(
            "compliance",
            keys=list(group.get("keys", ())),
            hash_indexes=[list(h) for h in group.get("hash_indexes", ())],
            indexes=list(group.get("indexes", ())),
        )
        where = {
            topic.publish(json.dumps(msg)).sow_key: i for i, msg in enumerate(group["messages"])
        }
        kwargs = {k: case[k] for k in OPTIONS if k in case}
        return list(topic.sow(case.get("filter"), **kwargs)), where


@pytest.mark.parametrize("run", [_via_fake, _via_topic], ids=["pipeline", "topic"])
@pytest.mark.parametrize(("group", "case"), _params())
def test_query_case(run: Runner, group: dict[str, Any], case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(QueryOptionError) as info:
            run(group, case)
        assert info.value.option == case["error"]["option"]
        return
    records, where = run(group, case)
    if "result" in case:
        assert [where[r.sow_key] for r in records] == case["result"]
    elif "unordered" in case:
        assert sorted(where[r.sow_key] for r in records) == sorted(case["unordered"])
    else:
        assert [r.doc for r in records] == case["projected"]
        assert [json.loads(r.data) for r in records] == case["projected"]
