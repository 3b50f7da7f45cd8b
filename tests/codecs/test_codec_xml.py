"""XML mapping (spec §1.4, §15) and the hardened parser."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import XmlCodec, get_codec
from sowlib.codecs.xml_codec import flat_value
from sowlib.document import Element
from sowlib.errors import DecodeError, EncodeError
from sowlib.paths import parse_path

XML = get_codec("xml")


@pytest.mark.parametrize(
    ("data", "doc"),
    [
        (b'<Trade side="B"><Px>12.5</Px></Trade>', {"Trade": {"@side": "B", "Px": 12.5}}),
        (b"<a>5</a>", {"a": 5}),
        (b"<a/>", {"a": None}),
        (b"<a></a>", {"a": None}),
        (b"<a> </a>", {"a": " "}),
        (b'<r><Px ccy="USD">1.5</Px></r>', {"r": {"Px": Element({"@ccy": "USD"}, 1.5)}}),
        (b"<r><L>1</L><x/><L>b</L></r>", {"r": {"L": [1, "b"], "x": None}}),
        (b"<r>\n  <a>1</a>\n</r>", {"r": {"a": 1}}),
        (b"<r> hi <a>1</a> there </r>", {"r": Element({"a": 1}, "hi  there")}),
        (b'<r a=""/>', {"r": {"@a": None}}),
        (b"<r><![CDATA[<x>&]]></r>", {"r": "<x>&"}),
        (b"<r>&lt;&amp;&#65;</r>", {"r": "<&A"}),
        (b"<?xml version='1.0'?><!-- c --><r><!-- c --><a>1</a><?pi x?></r>", {"r": {"a": 1}}),
        (
            b'<n:T xmlns:n="urn:x" xmlns:m="urn:m" m:side="S"><n:Px>2</n:Px></n:T>',
            {"T": {"@side": "S", "Px": 2}},
        ),
        (b'<?xml version="1.0" encoding="ISO-8859-1"?><r>\xe9</r>', {"r": "\u00e9"}),
        (b"\xef\xbb\xbf<r>1</r>", {"r": 1}),
    ],
)
def test_mapping(data: bytes, doc: Any) -> None:
    assert XML.decode(data) == doc


def test_paths_resolve_elements_attributes_and_arrays() -> None:
    doc = XML.decode(b'<Quote><Instr Sym="AAPL"/><Px ccy="USD">180.75</Px><L>1</L><L>2</L></Quote>')
    assert parse_path("/Quote/Instr/@Sym").resolve(doc) == "AAPL"
    assert parse_path("/Quote/Px").resolve(doc) == 180.75
    assert parse_path("/Quote/Px/@ccy").resolve(doc) == "USD"
    assert parse_path("/Quote/L[1]").resolve(doc) == 2
    assert parse_path("/Quote/L").resolve(doc) == [1, 2]


def test_utf16_document_decodes() -> None:
    data = '<?xml version="1.0" encoding="UTF-16"?><r><a>é</a></r>'.encode("utf-16")
    assert XML.decode(data) == {"r": {"a": "é"}}


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<lolz>&lol9;</lolz>"""

HOSTILE = {
    "billion_laughs": BILLION_LAUGHS,
    "external_entity": b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>',
    "external_dtd": b'<!DOCTYPE r SYSTEM "http://127.0.0.1:9/evil.dtd"><r>1</r>',
    "parameter_entities": (
        b'<!DOCTYPE r [<!ENTITY % p SYSTEM "file:///etc/passwd">'
        b"<!ENTITY % q \"<!ENTITY leak '%p;'>\"> %q;]><r>&leak;</r>"
    ),
    "public_dtd": b'<!-- x --><!DOCTYPE r PUBLIC "-//X//DTD X//EN" "file:///etc/passwd"><r/>',
    "lowercase_doctype": b"<!doctype r><r/>",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_documents_are_rejected_before_parsing(name: str) -> None:
    data = HOSTILE[name]
    started = time.perf_counter()
    with pytest.raises(DecodeError) as info:
        XML.decode(data)
    assert time.perf_counter() - started < 0.5
    assert info.value.message_type == "xml"
    assert info.value.offset == data.lower().index(b"<!doctype")


def test_doctype_in_a_utf16_document_is_rejected_after_a_hardened_parse() -> None:
    data = '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>'.encode("utf-16")
    with pytest.raises(DecodeError) as info:
        XML.decode(data)
    assert info.value.message_type == "xml"


def test_doctype_text_inside_cdata_is_only_text() -> None:
    doc = XML.decode(b"<r><![CDATA[<!DOCTYPE html>]]></r>")
    assert doc == {"r": "<!DOCTYPE html>"}


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"<r><a>1</r>", 9),
        (b"<r>", 3),
        (b"", 0),
        (b"not xml", 0),
        (b"<r>&undefined;</r>", 14),
        (b"<r></r><r/>", 7),
        (b"<r>\n<a>\n</b></r>", 10),
    ],
)
def test_malformed_xml_reports_an_offset(data: bytes, offset: int) -> None:
    with pytest.raises(DecodeError) as info:
        XML.decode(data)
    assert info.value.message_type == "xml"
    assert info.value.offset is not None
    assert abs(info.value.offset - offset) <= 2
    assert 0 <= info.value.offset <= len(data)


def test_decode_requires_bytes() -> None:
    with pytest.raises(DecodeError) as info:
        XML.decode("<r/>")  # type: ignore[arg-type]
    assert info.value.message_type == "xml"


@pytest.mark.parametrize(
    "doc",
    [
        {},
        {"a": 1, "b": 2},
        [1],
        {"a": [1, 2]},
        {"1a": 1},
        {"a:b": 1},
        {"r": {"@a": {"x": 1}}},
        {"r": {"@a": [1]}},
        {"r": {"bad name": 1}},
        {"r": [[1]]},
        {"r": {"x": [[1]]}},
        {"r": "\x00"},
        {"r": float("nan")},
        {"r": {"@a": "\ud800"}},
    ],
)
def test_encode_refuses_what_xml_cannot_hold(doc: Any) -> None:
    with pytest.raises(EncodeError) as info:
        XML.encode(doc)
    assert info.value.message_type == "xml"


def test_encode_escapes_markup_and_whitespace_in_attributes() -> None:
    doc = {"r": Element({"@a": 'x"<&>\n\t\r', "b": "]]>&<"}, "a\rb")}
    data = XML.encode(doc)
    assert XML.decode(data) == doc


def test_encode_user_dict_with_booleans_and_bytes() -> None:
    data = XML.encode({"Order": {"@id": 7, "ok": True, "raw": b"abc", "e": ""}})
    assert data == b'<Order id="7"><ok>true</ok><raw>abc</raw><e/></Order>'


_flat_names = st.sampled_from(["a", "b", "Px", "x_1", "n.m", "q-r"])
_flat_texts = st.one_of(
    st.sampled_from(["", "0", "007", "-5", "+5", "1.5", "1e3", ".5", "5.", "inf", " 7 ", "a>b"]),
    st.integers().map(str),
    st.text(alphabet=st.characters(blacklist_characters="<&\r", blacklist_categories=["Cs"])),
)


@settings(max_examples=150)
@given(
    root=_flat_names,
    children=st.lists(st.tuples(_flat_names, _flat_texts), max_size=6),
)
def test_flat_documents_read_without_a_tree_equal_the_full_parser(
    root: str, children: list[tuple[str, str]]
) -> None:
    body = "".join(f"<{tag}>{text}</{tag}>" for tag, text in children)
    flat = f"<{root}>{body}</{root}>".encode()
    full = f"<{root} >{body}</{root}>".encode()  # the space keeps it off the fast path
    codec = XmlCodec()
    try:
        expected: object = codec.decode(full)
    except DecodeError:
        assert flat_value(flat) is None
        with pytest.raises(DecodeError):
            codec.decode(flat)
        return
    assert codec.decode(flat) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"<R><a>x\x01y</a></R>",  # control character: the parser rejects it
        b"<R><a>x\r\ny</a></R>",  # line ends are normalised by the parser
        b"<R><a>x]]>y</a></R>",  # not allowed in text
        b"<R><a>\xef\xbf\xbe</a></R>",  # U+FFFE is not an XML character
        b"<R><a>\xff</a></R>",  # not UTF-8
        b"<R><a>1</b></R>",  # mismatched tags
        b"<R><a/></R>",  # not the flat shape
    ],
)
def test_documents_off_the_fast_path_behave_as_the_parser_says(raw: bytes) -> None:
    assert flat_value(raw) is None
    codec = XmlCodec()
    spaced = raw.replace(b"<R>", b"<R >", 1)
    try:
        expected: object = codec.decode(spaced)
    except DecodeError:
        with pytest.raises(DecodeError):
            codec.decode(raw)
    else:
        assert codec.decode(raw) == expected
