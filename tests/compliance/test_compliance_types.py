"""The compliance cases of ``types_*.json``: filters over XML, FIX, NVFIX and MessagePack.

Each group names a message ``type`` and holds its ``messages`` as raw text in that
type (``"encoding": "hex"`` for binary formats), an optional ``separator`` codec
option, ``json_equivalent`` documents and ``agree``. Every message is decoded with
``get_codec(type, **options)`` and each case's ``matches`` are checked with
``compile_filter`` (and the closures and the reference interpreter). Where the
group says ``"agree": true`` the JSON documents, decoded by the JSON codec, must give
the same matches; where it does not, a case may give ``json_matches`` to pin down how
the types differ (spec 2.1: XML/FIX text is inferred, JSON keeps its own types).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sowlib import compile_filter, get_codec
from sowlib.expr import parse_filter
from sowlib.expr.interp import evaluate
from sowlib.expr.runtime import truthy
from sowlib.expr.to_python import compile_node

HERE = Path(__file__).parent
TYPES = ("xml", "fix", "nvfix", "msgpack")


def _groups() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(HERE.glob("types_*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            yield path.name, group


def _raw(group: dict[str, Any]) -> list[bytes]:
    if group.get("encoding") == "hex":
        return [bytes.fromhex(m) for m in group["messages"]]
    return [m.encode("utf-8") for m in group["messages"]]


def _codec_options(group: dict[str, Any]) -> dict[str, Any]:
    return {"separator": group["separator"]} if "separator" in group else {}


def _params() -> list[Any]:
    out = []
    for file, group in _groups():
        for case in group["cases"]:
            case_id = f"{file[:-5]}:{group['comment'][:40]}:{case['filter'][:60]}"
            out.append(pytest.param(group, case, id=case_id))
    return out


def _matches(text: str, docs: list[Any]) -> list[int]:
    f = compile_filter(text)
    got = [i for i, d in enumerate(docs) if f.matches(d)]
    closures = compile_node(f.node)
    assert [i for i, d in enumerate(docs) if truthy(closures(d, None))] == got
    assert [i for i, d in enumerate(docs) if truthy(evaluate(f.node, d, None))] == got
    assert parse_filter(f.to_text()) == f.node
    return got


@pytest.mark.parametrize(("group", "case"), _params())
def test_case(group: dict[str, Any], case: dict[str, Any]) -> None:
    codec = get_codec(group["type"], **_codec_options(group))
    docs = [codec.decode(raw) for raw in _raw(group)]
    assert _matches(case["filter"], docs) == case["matches"]
    if "json_equivalent" not in group:
        return
    as_json = get_codec("json")
    json_docs = [as_json.decode(json.dumps(d).encode()) for d in group["json_equivalent"]]
    expected = case["matches"] if group["agree"] else case.get("json_matches")
    if expected is not None:
        assert _matches(case["filter"], json_docs) == expected


def test_groups_are_well_formed() -> None:
    seen = set()
    for file, group in _groups():
        seen.add(group["type"])
        assert file == f"types_{group['type']}.json"
        assert set(group) <= {
            "comment",
            "type",
            "separator",
            "encoding",
            "agree",
            "messages",
            "json_equivalent",
            "cases",
        }
        assert isinstance(group["agree"], bool)
        if group["agree"]:
            assert len(group["json_equivalent"]) == len(group["messages"])
        for case in group["cases"]:
            assert set(case) <= {"filter", "matches", "json_matches"}
            assert all(0 <= i < len(group["messages"]) for i in case["matches"])
            if "json_matches" in case:
                assert not group["agree"]
                assert "json_equivalent" in group
    assert seen == set(TYPES)


def test_there_are_at_least_80_cases_beyond_msgpack() -> None:
    count = sum(len(g["cases"]) for _, g in _groups() if g["type"] != "msgpack")
    assert count >= 80


@pytest.mark.parametrize("type_name", ["xml", "fix", "nvfix"])
def test_text_types_decode_to_their_json_equivalent(type_name: str) -> None:
    # Where a group says the types agree, the decoded document *is* the JSON one
    # (XML elements with text and attributes have no JSON form and are not listed).
    for _, group in _groups():
        if group["type"] != type_name or not group["agree"]:
            continue
        codec = get_codec(type_name, **_codec_options(group))
        docs = [codec.decode(raw) for raw in _raw(group)]
        assert docs == group["json_equivalent"], group["comment"]
