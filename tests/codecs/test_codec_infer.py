"""Type inference of untyped text (spec §2.1, §1.3, §2.2), shared by XML, FIX and NVFIX."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import get_codec, infer_scalar, render_scalar
from sowlib.codecs.infer import INT_MAX, INT_MIN


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", None),
        ("0", 0),
        ("42", 42),
        ("-273", -273),
        ("+5", 5),
        ("-0", 0),
        ("9223372036854775807", 2**63 - 1),
        ("18446744073709551615", 2**64 - 1),  # unsigned 64-bit maximum
        ("18446744073709551616", "18446744073709551616"),  # beyond 64 bits: text
        ("-9223372036854775808", -(2**63)),
        ("-9223372036854775809", "-9223372036854775809"),
        ("98.6", 98.6),
        ("-273.0", -273.0),
        ("1.", 1.0),
        (".5", 0.5),
        ("31.4e-1", 3.14),
        ("6.022E23", 6.022e23),
        ("2e8", 2e8),
        ("-1.5e+3", -1500.0),
        ("1e999", "1e999"),  # overflows to infinity: stays text
        ("007", "007"),  # leading zeros: an identifier, kept as text
        ("-007", "-007"),
        ("00.5", 0.5),
        (" 5", " 5"),
        ("5 ", "5 "),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("nan", "nan"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("0x10", "0x10"),
        ("1_000", "1_000"),
        ("\u0661\u0662", "\u0661\u0662"),  # non-ASCII digits
        (".", "."),
        ("-", "-"),
        ("e5", "e5"),
        ("1e", "1e"),
        ("1.2.3", "1.2.3"),
        ("abc", "abc"),
        ("true", "true"),
        ("20240301T090000Z", "20240301T090000Z"),
    ],
)
def test_inference_table(text: str, value: Any) -> None:
    got = infer_scalar(text)
    assert got == value
    assert type(got) is type(value)


@given(st.integers(INT_MIN, INT_MAX) | st.floats(allow_nan=False, allow_infinity=False))
def test_rendered_numbers_infer_back_to_themselves(number: int | float) -> None:
    text = render_scalar(number)
    assert text is not None
    got = infer_scalar(text)
    assert got == number
    assert type(got) is type(number)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"a": 1}, [1], object()])
def test_render_refuses_values_without_a_text_form(value: Any) -> None:
    with pytest.raises(ValueError):
        render_scalar(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, None), (True, "true"), (False, "false"), (b"ab", "ab"), ("x", "x"), (1.5, "1.5")],
)
def test_render_scalar(value: Any, text: str | None) -> None:
    assert render_scalar(value) == text


@pytest.mark.parametrize("raw", [b"12", b"12.5", b"007", b"", b"abc", b"1e3", b"0x1F"])
def test_text_codecs_agree_on_inference(raw: bytes) -> None:
    expected = infer_scalar(raw.decode())
    xml = get_codec("xml").decode(b"<r><v>" + raw + b"</v></r>")["r"]["v"]
    xml_attr = get_codec("xml").decode(b'<r v="' + raw + b'"/>')["r"]["@v"]
    fix = get_codec("fix").decode(b"1=" + raw + b"\x01")["1"]
    nvfix = get_codec("nvfix").decode(b"v=" + raw + b"\x01")["v"]
    assert xml == xml_attr == fix == nvfix == expected


# The spelling rule written as regular expressions: an independent oracle for the
# str-method implementation.
_ORACLE_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)\Z")
_ORACLE_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?\Z")


def _oracle(text: str) -> Any:
    if not text:
        return None
    if _ORACLE_INT.match(text):
        value = int(text)
        return value if INT_MIN <= value <= INT_MAX else text
    if _ORACLE_FLOAT.match(text):
        number = float(text)
        return number if math.isfinite(number) else text
    return text


@settings(max_examples=150)
@given(
    st.text(st.sampled_from("0123456789+-.eE _x\u0661 ") | st.characters(), max_size=12)
    | st.from_regex(_ORACLE_FLOAT, fullmatch=True)
    | st.from_regex(_ORACLE_INT, fullmatch=True)
)
def test_inference_agrees_with_the_spelling_rule(text: str) -> None:
    got, expected = infer_scalar(text), _oracle(text)
    assert got == expected
    assert type(got) is type(expected)
