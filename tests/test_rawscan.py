"""The raw-bytes prefilter never rules out a message the filter matches.

``index.rawscan`` derives, from a filter's AND-ed equality clauses, patterns a
matching JSON message must contain. These tests write random documents in many
legal JSON spellings (spacing, escapes, numbers as ``7.0``, ``70e-1``, ``0.7e1``,
strings for numbers) and check the patterns against the filter evaluator itself:
whenever the filter matches, :func:`may_match` says yes. They also check that a
topic answers byte-planned queries exactly as a scan does.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.expr import compile_filter
from sowlib.index.rawscan import json_patterns, may_match

FIELDS = ("qty", "side", "px", "q")


def _number_spellings(value: int | float, rng: random.Random) -> str:
    """A legal JSON spelling of ``value``, picked among the equivalent ones."""
    text = repr(value) if isinstance(value, float) else str(value)
    if "e" in text or "E" in text or "inf" in text or "nan" in text:
        return text
    sign = "-" if text.startswith("-") else ""
    body = text.lstrip("-")
    whole, _, frac = body.partition(".")
    digits = (whole + frac).lstrip("0") or "0"
    point = len(whole.lstrip("0")) if whole.strip("0") else -len(frac) + len(frac.lstrip("0"))
    choice = rng.randrange(6)
    if choice == 0 or digits == "0":
        return text
    if choice == 1:
        return f"{text}.0" if "." not in text else f"{text}00"
    if choice == 2:  # d.ddd e exp
        return f"{sign}{digits[0]}.{digits[1:] or '0'}e{point - 1}"
    if choice == 3:  # 0.ddd e exp
        return f"{sign}0.{digits}E+{point}" if point >= 0 else f"{sign}0.{digits}e{point}"
    if choice == 4:  # ddd0 e exp-1
        return f"{sign}{digits}0e{point - len(digits) - 1}"
    return f"{sign}{digits}e{point - len(digits)}"


def _escape_some(text: str, rng: random.Random) -> str:
    out = []
    for ch in text:
        if ch in '"\\' or ord(ch) < 0x20:
            out.append(json.dumps(ch)[1:-1])
        elif rng.random() < 0.2:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _write(value: Any, rng: random.Random, escapes: bool) -> str:
    """``value`` as JSON text with random spacing, spellings and (maybe) escapes."""
    ws = rng.choice(["", " ", "\n  ", "\t"])
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return _number_spellings(value, rng)
    if isinstance(value, str):
        return _escape_some(value, rng) if escapes else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ("," + ws).join(_write(v, rng, escapes) for v in value) + "]"
    items = [
        (_escape_some(k, rng) if escapes else json.dumps(k))
        + ws
        + ":"
        + ws
        + _write(v, rng, escapes)
        for k, v in value.items()
    ]
    return "{" + ws + ("," + ws).join(items) + ws + "}"


scalars = st.one_of(
    st.integers(-20, 20),
    st.sampled_from([7, 70, 700, 0, -7, 7.5, 0.25, 250.25, 1e-7, 123456789]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from(["B", "S", "7", "07", "7.0", "", "é", 'a"b', "x\\y", "B "]),
    st.booleans(),
    st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner),
    max_leaves=6,
)
docs = st.dictionaries(st.sampled_from(FIELDS), values, max_size=4)
literals = st.one_of(
    st.sampled_from(["7", "7.0", "0", "-7", "0.25", "250.25", "1e-7", "123456789", "7.5"]),
    st.sampled_from(["'B'", "'S'", "'7'", "'07'", "'é'", "'B '", "'a\"b'"]),
)
clauses = st.builds(
    lambda f, lits, use_in: (
        f"/{f} IN ({', '.join(lits)})" if use_in and len(lits) > 1 else f"/{f} = {lits[0]}"
    ),
    st.sampled_from(FIELDS),
    st.lists(literals, min_size=1, max_size=3),
    st.booleans(),
)
filters = st.lists(clauses, min_size=1, max_size=3).map(" AND ".join)


@settings(max_examples=600, deadline=None)
@given(doc=docs, flt=filters, seed=st.integers(0, 2**32), escapes=st.booleans())
def test_a_matching_message_always_passes_the_byte_patterns(
    doc: dict[str, Any], flt: str, seed: int, escapes: bool
) -> None:
    raw = _write(doc, random.Random(seed), escapes).encode()
    parsed = json.loads(raw)
    compiled = compile_filter(flt)
    patterns = json_patterns(compiled.node)
    assert patterns, flt
    if compiled.matches(parsed):
        assert may_match(patterns, raw), (flt, raw)


@pytest.mark.parametrize(
    ("flt", "message", "expected"),
    [
        ("/qty = 7", b'{"qty":7}', True),
        ("/qty = 7", b'{"qty" : 7.000}', True),
        ("/qty = 7", b'{"qty":70e-1}', True),
        ("/qty = 7", b'{"qty":0.7E1}', True),
        ("/qty = 7", b'{"qty":71}', False),
        ("/qty = 7", b'{"qty":17}', False),
        ("/qty = 7", b'{"qty":-7}', False),
        ("/side = 'B'", b'{"side":"B"}', True),
        ("/side = 'B'", b'{"side":"BB"}', False),
        ("/side = 'B'", b'{"side":"\\u0042"}', True),
        ("/side = 'B'", b'{"s\\u0069de":"B"}', True),
        ("/qty = 7 AND /side = 'B'", b'{"qty":7,"side":"S"}', False),
    ],
)
def test_examples_of_what_the_patterns_rule_out(flt: str, message: bytes, expected: bool) -> None:
    assert may_match(json_patterns(compile_filter(flt).node), message) is expected


@pytest.mark.parametrize(
    "flt", ["/qty > 7", "/a/b[0] = 1", "/qty = 7 OR /side = 'B'", "/side = ''", "/qty = NULL"]
)
def test_filters_without_a_byte_readable_equality_get_no_pattern(flt: str) -> None:
    assert json_patterns(compile_filter(flt).node) == []


def test_topic_answers_byte_planned_queries_like_a_scan(tmp_path: Any) -> None:
    rng = random.Random(7)
    messages = []
    for order_id in range(3000):
        doc = {"id": order_id, "qty": rng.randrange(20), "side": rng.choice("BS")}
        messages.append(_write(doc, rng, escapes=rng.random() < 0.05).encode())
    with SowStore(str(tmp_path)) as store:
        topic = store.create_topic("orders", keys=["/id"])
        topic.publish_many(messages)
        topic.publish_many(messages[:100])  # superseded versions in the file
        topic.sow_delete("/id < 50")
        flt = "/qty = 7 AND /side = 'B'"
        assert topic.explain(flt).kind == "bytes"
        expected = sorted(r.sow_key for r in topic.sow("1=1") if compile_filter(flt).matches(r.doc))
        got = sorted(r.sow_key for r in topic.sow(flt))
        assert got
        assert got == expected
