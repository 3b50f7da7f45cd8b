"""Top-level JSON fields read out of the bytes (``codecs/json_fields.py`` and its C form)
against the reference: every message decoded, each name taken from the document.

Whatever the bytes, ``top_columns`` either gives None (the caller then decodes) or
exactly the reference's columns; and the reference never raises where it gives values.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sowlib.codecs import json_fields
from sowlib.codecs.json_codec import JsonCodec
from sowlib.errors import DecodeError

needs_c = pytest.mark.skipif(
    json_fields.NATIVE_TOP_COLUMNS is None, reason="the C form is not built (or turned off)"
)

CODECS = [JsonCodec(), JsonCodec(use_orjson=False)]
NAMES = ["a", "b", "price", "\u00e9"]

texts = st.text(
    st.characters(codec="utf-8"),
    max_size=8,  # utf-8 leaves surrogates out
) | st.sampled_from(["", "x", '"', "\\", "\n", "\u2028", "\x7f", "\x00"])
scalars = st.one_of(
    texts,
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e300, 5e-324, 2.2250738585072011e-308, 0.1, 1 / 3]),
    st.booleans(),
    st.none(),
)
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.just({"n": 1}))
documents = st.dictionaries(st.sampled_from([*NAMES, "other", "z"]), values, max_size=6)
# Number texts JSON allows, many of them not as json.dumps writes them.
numbers = st.from_regex(r"\A-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?\Z")
spaces = st.sampled_from(["", " ", "\n\t ", "\r"])


def render(doc: dict[str, Any], space: str, ascii_only: bool) -> bytes:
    text = json.dumps(doc, ensure_ascii=ascii_only, separators=("," + space, ":" + space))
    return (space + text + space).encode("utf-8", "surrogatepass")


def reference(codec: JsonCodec, payloads: list[bytes], names: list[str]) -> Any:
    try:
        return json_fields.reference_columns(codec.decode_many, payloads, names)
    except (DecodeError, KeyError):
        return None


def same(got: list[list[Any]], want: list[list[Any]]) -> bool:
    """Equal values of equal types (-0.0 and 0.0 told apart)."""
    for col_got, col_want in zip(got, want, strict=True):
        for a, b in zip(col_got, col_want, strict=True):
            if type(a) is not type(b) or a != b:
                return False
            if isinstance(a, float) and math.copysign(1, a) != math.copysign(1, b):
                return False
    return len(got) == len(want)


def agree(payloads: list[bytes], names: list[str]) -> list[list[Any]] | None:
    got = json_fields.top_columns(payloads, names)
    for codec in CODECS:
        want = reference(codec, payloads, names)
        if got is not None:
            assert want is not None, (payloads, got)
            assert same(got, want), (payloads, got, want)
        assert codec.top_columns(payloads, names) == got
    return got


@needs_c
@settings(max_examples=500)
@given(st.lists(documents, min_size=1, max_size=4), spaces, st.booleans(), st.data())
def test_documents_read_as_the_decoded_fields(
    docs: list[dict[str, Any]], space: str, ascii_only: bool, data: st.DataObject
) -> None:
    names = data.draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    agree([render(doc, space, ascii_only) for doc in docs], names)


@needs_c
@settings(max_examples=500)
@given(numbers, spaces)
@example("0.1", "")
@example("1e400", "")
@example("-0", "")
@example("-0.0", "")
@example("123456789012345678", "")
@example("1234567890123456789", "")
@example("2.2250738585072011e-308", "")
@example("9007199254740993", "")
@example("9007199254740993.0", "")
@example("1e-400", "")
def test_numbers_read_as_decoded(number: str, space: str) -> None:
    payload = f'{{"a":{space}{number}{space},"b":1}}'.encode()
    got = agree([payload], ["a"])
    digits = number.lstrip("-").split(".")[0].split("e")[0].split("E")[0]
    if "." not in number and "e" not in number.lower() and len(digits) <= 18:
        assert got is not None  # a plain integer is read, not left to the decoder


@needs_c
@settings(max_examples=1000)
@given(st.binary(max_size=40), st.sampled_from(NAMES))
@example(b'{"a":1,"a":2}', "a")
@example(b'{"a":"\xed\xa0\x80"}', "a")
@example(b'{"a":"\xc0\xaf"}', "a")
@example(b'{"a":1}x', "a")
@example(b'{"a":01}', "a")
@example(b'{"a":1.}', "a")
@example(b'{"a":tru}', "a")
@example(b'{"a":1,}', "a")
@example(b'\xef\xbb\xbf{"a":1}', "a")
@example(b'{"a":NaN}', "a")
@example(b'{"a":"x\ty"}', "a")
def test_any_bytes_read_as_none_or_the_decoded_fields(payload: bytes, name: str) -> None:
    agree([payload], [name])


@needs_c
@given(st.binary(max_size=30), st.binary(max_size=30))
def test_mutated_documents_read_as_none_or_the_decoded_fields(head: bytes, tail: bytes) -> None:
    agree([b'{"a":' + head + b',"b":' + tail + b"}", b'{"a":1,"b":2}'], ["a", "b"])


@needs_c
def test_flat_documents_are_read_and_anything_else_is_left_to_the_decoder() -> None:
    flat = [b'{"a":1,"b":"x","c":2.5,"d":true,"e":null}', b' {"b":"\xc3\xa9", "a":-3} ']
    assert agree(flat, ["a", "b"]) == [[1, -3], ["x", "\u00e9"]]
    for other in (b'{"a":1,"n":{"x":1}}', b'{"a":[1]}', b'{"a":"\\u0041"}', b'{"b":1}'):
        assert agree([other], ["a"]) is None
    assert json_fields.top_columns(flat, []) is None


def test_the_pure_python_setting_turns_the_c_form_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOWLIB_PURE_PYTHON", "1")
    assert json_fields.load_top_columns() is None
    monkeypatch.delenv("SOWLIB_PURE_PYTHON")
    native = pytest.importorskip("sowlib.codecs.jsonfields")
    assert json_fields.load_top_columns() is native.top_columns


@needs_c
def test_a_name_with_a_lone_surrogate_reads_as_missing() -> None:
    # An index path may hold one: no document has that field, so the read gives None
    # (the caller decodes) instead of raising UnicodeEncodeError.
    payloads = [b'{"a":1,"b":2}', b'{"b":3,"a":2}']
    assert agree(payloads, ["\ud800"]) is None
    assert agree(payloads, ["a", "b\udcff"]) is None
    assert agree(payloads, ["a"]) == [[1, 2]]


@needs_c
def test_bad_arguments_raise_type_errors() -> None:
    from sowlib.codecs.jsonfields import top_columns

    with pytest.raises(TypeError):
        top_columns((b"{}",), (b"a",))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        top_columns([b"{}"], ("a",))  # type: ignore[arg-type]
    assert top_columns(["{}"], (b"a",)) is None  # type: ignore[list-item]


def test_the_c_form_is_built_where_ci_runs() -> None:
    # CI machines have a compiler; CI also runs some suites with the C forms turned off.
    if os.environ.get("CI") and not os.environ.get("SOWLIB_PURE_PYTHON"):
        assert json_fields.NATIVE_TOP_COLUMNS is not None
