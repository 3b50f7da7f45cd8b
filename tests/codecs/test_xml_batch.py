"""``XmlCodec.decode_many``: a batch decodes exactly as ``decode`` on each message does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import codec_strategies as cs  # type: ignore[import-not-found]  # registered by conftest.py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.codecs import XmlCodec, xml_batch
from sowlib.codecs.infer import infer_scalar
from sowlib.codecs.xml_batch import decode_flat_batch, decode_last_shape, typed_column
from sowlib.errors import DecodeError

XML = XmlCodec()


@pytest.fixture(autouse=True, scope="module")
def _compile_every_shape() -> Iterator[None]:
    """Compile a shape's pattern at first sight, so that small examples take the fast
    paths (by default only shapes that recur do)."""
    saved = xml_batch.BATCH_COMPILES, xml_batch.COMPILE_AFTER
    xml_batch.BATCH_COMPILES = xml_batch.COMPILE_AFTER = 1
    yield
    xml_batch.BATCH_COMPILES, xml_batch.COMPILE_AFTER = saved


# Texts near every edge of type inference and of what the fast path accepts.
_edge_texts = st.sampled_from(
    [
        "", "0", "-0", "+0", "007", "-5", "+5", "1.5", "-1.5e3", "1E+05", "1e3", ".5", "5.",
        "01.5", "1.2.3", "1e999", "-1e-999", "inf", "nan", "0x10", "1_000", " 7 ", "7 ",
        "a>b", "]]", "a]]>b", "\t", "x\ny", "\u0663", "\u00b2", "2024-01-31", "-",
        "999999999999999999", "9223372036854775807", "9223372036854775808",
        "18446744073709551615", "18446744073709551616", "-9223372036854775809",
        "12345678901234567890.5", "\ufffd", "\U0001f600", "&amp;", "a\rb", "x\x01",
    ]
)  # fmt: skip
_any_text = st.text(
    alphabet=st.characters(blacklist_characters="<", blacklist_categories=["Cs"]), max_size=8
)
_column_texts = {
    "ints": st.integers(-(10**20), 10**20).map(str),
    "floats": st.floats(allow_nan=False).map(repr),
    "words": st.from_regex(r"[A-Za-z][A-Za-z0-9 _-]{0,8}", fullmatch=True),
    "edges": _edge_texts,
    "any": _any_text,
}
_names = st.sampled_from(["a", "b", "Px", "x_1", "n.m", "q-r", "Order"])


@st.composite
def _batches(draw: st.DrawFn) -> list[bytes]:
    """Flat documents of one shape, each column drawn from one kind of text."""
    root = draw(_names)
    children = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    kinds = [draw(st.sampled_from(sorted(_column_texts))) for _ in children]
    rows = draw(
        st.lists(st.tuples(*(_column_texts[k] for k in kinds)).map(list), min_size=1, max_size=6)
    )
    bodies = (
        "".join(f"<{c}>{t}</{c}>" for c, t in zip(children, row, strict=True)) for row in rows
    )
    return [f"<{root}>{body}</{root}>".encode() for body in bodies]


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except DecodeError as exc:
        return (DecodeError, exc.offset)


def _one_by_one(payloads: list[bytes]) -> Any:
    return _outcome(lambda: [XML.decode(p) for p in payloads])


@settings(max_examples=300, deadline=None)
@given(payloads=_batches())
def test_same_shaped_batches_decode_as_one_by_one(payloads: list[bytes]) -> None:
    expected = _one_by_one(payloads)
    assert _outcome(XML.decode_many, payloads) == expected
    fast = decode_flat_batch(payloads)
    assert fast is None or fast == expected  # None only means "not sure": decode each


def _doc_or_error(data: bytes) -> Any:
    try:
        return XML.decode(data)
    except DecodeError:
        return DecodeError


@settings(max_examples=300, deadline=None)
@given(payloads=_batches())
def test_documents_of_the_last_shape_decode_as_the_full_parser_does(
    payloads: list[bytes],
) -> None:
    for data in payloads:  # the first one decoded sets the shape the others are tried with
        spaced = data.replace(b">", b" >", 1)  # "<R >": off every fast path
        assert _doc_or_error(data) == _doc_or_error(spaced)


def test_a_remembered_shape_reads_only_its_own_documents() -> None:
    assert XML.decode(b"<R><a>1</a><b>x</b></R>") == {"R": {"a": 1, "b": "x"}}
    assert decode_last_shape(b"<R><a>007</a><b></b></R>") == {"R": {"a": "007", "b": None}}
    for other in (
        b"<R><a>1</a></R>",
        b"<R><b>x</b><a>1</a></R>",
        b"<S><a>1</a><b>x</b></S>",
        b"<R><a>1</a><b>x>y</b></R>",
        b"<R><a>1</a><b>x\x01</b></R>",
        b"<R><a>1</a><b>\xff</b></R>",
    ):
        assert decode_last_shape(other) is None


def test_record_shaped_batches_take_the_fast_path() -> None:
    payloads = [
        f"<Order><id>{i}</id><px>{i / 4}</px><sym>S{i}</sym><e></e></Order>".encode()
        for i in range(50)
    ]
    assert decode_flat_batch(payloads) == [XML.decode(p) for p in payloads]


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(cs.xml_documents, max_size=5))
def test_any_documents_decode_as_one_by_one(docs: list[Any]) -> None:
    payloads = [XML.encode(d) for d in docs]
    assert XML.decode_many(payloads) == docs == [XML.decode(p) for p in payloads]


@settings(max_examples=200, deadline=None)
@given(column=st.lists(st.one_of(*_column_texts.values()), min_size=1, max_size=8))
def test_columns_are_typed_as_infer_scalar_types_each_value(column: list[str]) -> None:
    typed = list(typed_column(column))
    expected = [infer_scalar(t) for t in column]
    assert typed == expected
    assert list(map(type, typed)) == list(map(type, expected))  # 1 == 1.0, but not here


_GOOD = b"<R><a>1</a><b>x</b></R>"


@pytest.mark.parametrize(
    "bad",
    [
        b"<R><a>1</a><b>x\x01</b></R>",  # control character
        b"<R><a>1</a><b>x]]>y</b></R>",  # not allowed in text
        b"<R><a>1</a><b>\xff</b></R>",  # not UTF-8
        b"<R><a>1</a><b>\xef\xbf\xbe</b></R>",  # U+FFFE
        b"<R><a>1</a><b>&bogus;</b></R>",  # undefined entity
        b"<R><a>1</a><b>x</a></R>",  # mismatched tags
        b"<R><a>1</a><b>x</b></R>&<R><a>2</a><b>y</b></R>",  # two documents
        b"<R><a>1</a><b>x</b></R>&",  # the batch separator after the root
        b"<R><a>1</a><b>x</b>",  # truncated
        b"",
    ],
)
def test_a_bad_message_in_a_batch_raises_as_decode_does(bad: bytes) -> None:
    with pytest.raises(DecodeError) as one:
        XML.decode(bad)
    for payloads in ([_GOOD, bad, _GOOD], [bad, _GOOD], [_GOOD, bad]):
        with pytest.raises(DecodeError) as many:
            XML.decode_many(payloads)
        assert many.value.offset == one.value.offset


def test_a_split_document_does_not_pass_as_two() -> None:
    payloads = [b"<R><a>1</a></R>&<R><a>2</a>", b"</R>"]
    with pytest.raises(DecodeError):
        XML.decode_many(payloads)


@pytest.mark.parametrize(
    "odd",
    [
        b"<R><b>x</b><a>1</a></R>",  # children in another order
        b"<R><a>1</a><b>x</b><c>2</c></R>",  # one more child
        b"<R><a>1</a><a>2</a></R>",  # a repeated child: a list
        b'<R><a u="1">1</a><b>x</b></R>',  # an attribute
        b"<R>\n<a>1</a><b>x</b></R>",  # layout whitespace
        b"<R><a>1</a><b>a&amp;b</b></R>",  # an entity
        b"<R><a>1</a><b><![CDATA[<x>]]></b></R>",  # CDATA
        b"<R><a>1</a><b>x</b></R>\n",  # whitespace after the root
        b"\xef\xbb\xbf<R><a>1</a><b>x</b></R>",  # a byte order mark
        b"<?xml version='1.0'?><R><a>1</a><b>x</b></R>",
        b"<R xmlns='urn:x'><a>1</a><b>x</b></R>",
        b"<R><a>1</a><b></b></R>",  # empty text: None
        b"<R><a/><b>x</b></R>",
        b"<S><a>1</a><b>x</b></S>",  # another root
    ],
)
def test_documents_of_other_shapes_in_a_batch_decode_as_one_by_one(odd: bytes) -> None:
    for payloads in ([_GOOD, odd, _GOOD], [odd, _GOOD], [odd, odd]):
        assert XML.decode_many(payloads) == [XML.decode(p) for p in payloads]


@pytest.mark.parametrize("at", [0, 1, 6, 7, 50, 98, 99])
@pytest.mark.parametrize(
    "odd",
    [b"<R><a>1</a><b>x</b><c/></R>", b"<S><a>1</a><b>x</b></S>", b"<R><a>1</a><b>\x01</b></R>"],
)
def test_one_odd_message_in_a_big_batch(at: int, odd: bytes) -> None:
    payloads = [b"<R><a>%d</a><b>x%d</b></R>" % (i, i) for i in range(100)]
    payloads[at] = odd
    assert _outcome(XML.decode_many, payloads) == _one_by_one(payloads)
    assert decode_flat_batch(payloads) is None


def test_only_shapes_that_recur_are_compiled() -> None:
    saved = xml_batch.BATCH_COMPILES, xml_batch.COMPILE_AFTER
    xml_batch.BATCH_COMPILES, xml_batch.COMPILE_AFTER = 8, 3
    try:
        small = [b"<Q><a>%d</a><b>x</b></Q>" % i for i in range(7)]
        assert decode_flat_batch(small) is None  # a small batch of a new shape
        assert XML.decode_many(small) == [XML.decode(p) for p in small]
        assert decode_last_shape(small[0]) == {"Q": {"a": 0, "b": "x"}}  # seen 3 times
        assert decode_flat_batch(small) == XML.decode_many(small)
        big = [b"<P><a>%d</a></P>" % i for i in range(8)]
        assert decode_flat_batch(big) == [{"P": {"a": i}} for i in range(8)]
    finally:
        xml_batch.BATCH_COMPILES, xml_batch.COMPILE_AFTER = saved


def test_empty_batch() -> None:
    assert XML.decode_many([]) == []


def _sow(topic: Any) -> list[tuple[str, bytes, Any]]:
    return sorted((r.sow_key, r.data, r.doc) for r in topic.sow())


@st.composite
def _orders(draw: st.DrawFn) -> list[bytes]:
    """Same-shaped orders keyed by /Order/id; some ids are empty (no key) or repeat."""
    others = draw(st.lists(st.sampled_from(["px", "sym", "q-r"]), max_size=2, unique=True))
    kinds = [draw(st.sampled_from(sorted(_column_texts))) for _ in others]
    ids = st.one_of(st.integers(0, 5).map(str), st.sampled_from(["", "5.0", "x", "007"]))
    rows = draw(st.lists(st.tuples(ids, *(_column_texts[k] for k in kinds)), max_size=6))
    return [
        b"<Order><id>%s</id>%s</Order>"
        % (
            row[0].encode(),
            "".join(f"<{c}>{t}</{c}>" for c, t in zip(others, row[1:], strict=True)).encode(),
        )
        for row in rows
    ]


def _error(fn: Any) -> type[Exception] | None:
    try:
        fn()
    except Exception as exc:  # the kind of error is what both paths must agree on
        return type(exc)
    return None


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(_orders(), max_size=4))
def test_publish_many_of_xml_equals_one_publish_per_message(batches: list[list[bytes]]) -> None:
    with SowStore() as one, SowStore() as many:
        a = one.create_topic("t", keys=["/Order/id"], message_type="xml")
        b = many.create_topic("t", keys=["/Order/id"], message_type="xml")
        for batch in batches:
            # One publish per message stores those before a bad one; the batch stores none.
            error = _error(lambda batch=batch: [a.key_for(m) for m in batch])
            if error is not None:
                before = _sow(b)
                assert _error(lambda batch=batch: b.publish_many(batch)) is error
                assert _sow(b) == before
                continue
            expected = [a.publish(m) for m in batch]
            assert b.publish_many(batch) == expected
            assert _sow(a) == _sow(b)


def test_bad_xml_in_a_batch_stores_nothing() -> None:
    with SowStore() as store:
        topic = store.create_topic("t", keys=["/R/a"], message_type="xml")
        with pytest.raises(DecodeError):
            topic.publish_many([_GOOD, b"<R><a>2</a><b>x&y</b></R>", _GOOD])
        assert len(topic) == 0
        topic.publish_many([_GOOD, b"<R><a>2</a><b>y</b></R>"])
        assert [r.doc for r in topic.sow(order_by="/R/a")] == [
            {"R": {"a": 1, "b": "x"}},
            {"R": {"a": 2, "b": "y"}},
        ]
