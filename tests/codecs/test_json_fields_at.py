"""Top-level JSON fields read where records lie in a log file's map
(``json_fields.top_columns_at`` and ``topic/fieldread.py``) against the reference: the
payloads read through the log's checked read, then decoded.

Whatever the documents, the read in place gives None (the caller then reads and
decodes) or exactly the reference's columns; it gives the columns wherever
``top_columns`` reads the same payloads; and it gives None for bytes that are not
intact records, never values read from them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.codecs import json_fields
from sowlib.codecs.json_codec import JsonCodec
from sowlib.storage.native import optional_module
from sowlib.topic.fieldread import mapped_columns
from tests.codecs.test_json_fields import NAMES, documents, reference, render, same, spaces

RECORDREAD = optional_module("sowlib.storage.recordread")
needs_c = pytest.mark.skipif(
    json_fields.NATIVE_TOP_COLUMNS is None or RECORDREAD is None,
    reason="the C forms are not built (or turned off)",
)


@contextmanager
def published(payloads: list[bytes]) -> Iterator[tuple[Any, list[int]]]:
    """A topic keyed by /id holding ``payloads``: its log view and live offsets."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SowStore(tmp)
        try:
            topic = store.create_topic("t", keys=["/id"])
            topic.publish_many(payloads)
            views = topic._p.views  # the topic's parts: what the query engine reads through
            _keys, offsets = views.keys.live_in_file_order()
            yield views.log, offsets
        finally:
            store.close()


def with_id(doc: dict[str, Any], i: int) -> dict[str, Any]:
    return {**{k: v for k, v in doc.items() if k != "id"}, "id": i}


@needs_c
@settings(max_examples=150, deadline=None)
@given(st.lists(documents, min_size=1, max_size=6), spaces, st.booleans(), st.data())
def test_fields_read_in_place_are_the_decoded_fields(
    docs: list[dict[str, Any]], space: str, ascii_only: bool, data: st.DataObject
) -> None:
    names = data.draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    payloads = [render(with_id(doc, i), space, ascii_only) for i, doc in enumerate(docs)]
    with published(payloads) as (log, offsets):
        stored = list(log.payloads(offsets))
        coded = mapped_columns(log, offsets, names)
        got = None if coded is None else [list(column) for column in coded]
        assert RECORDREAD is not None
        low, end = log.span
        assert json_fields.top_columns_at(RECORDREAD.c_api, log.file.mapped, offsets, low, end,
                                          names) == got  # fmt: skip
        assert got == json_fields.top_columns(stored, names) or got is None
        if json_fields.top_columns(stored, names) is not None:
            assert got is not None  # served wherever the payload read serves
        if got is not None:
            for codec in (JsonCodec(), JsonCodec(use_orjson=False)):
                want = reference(codec, stored, names)
                assert want is not None
                assert same(got, want), (stored, got, want)


@needs_c
def test_updates_and_deletes_read_the_live_records() -> None:
    payloads = [b'{"id":%d,"a":%d,"b":"x"}' % (i % 3, i) for i in range(9)]
    with tempfile.TemporaryDirectory() as tmp:
        store = SowStore(tmp)
        topic = store.create_topic("t", keys=["/id"])
        topic.publish_many(payloads)
        topic.sow_delete("/id = 1")
        log = topic._p.views.log
        _keys, offsets = topic._p.views.keys.live_in_file_order()
        got = mapped_columns(log, offsets, ["a", "b"])
        assert got is not None
        assert [list(column) for column in got] == [[6, 8], ["x", "x"]]
        store.close()


@needs_c
def test_bytes_that_are_not_intact_records_give_none() -> None:
    assert RECORDREAD is not None
    api = RECORDREAD.c_api
    payloads = [b'{"id":%d,"a":%d}' % (i, i) for i in range(4)]
    with published(payloads) as (log, offsets):
        low, end = log.span
        buf = bytearray(log.file.mapped[:end])
        assert json_fields.top_columns_at(api, buf, offsets, low, end, ["a"]) == [[0, 1, 2, 3]]
        assert json_fields.top_columns_at(api, buf, offsets, low, end, ["zz"]) is None
        # a record cut off by the limit, an offset inside a record, one before the first
        assert json_fields.top_columns_at(api, buf, offsets, low, offsets[-1] + 8, ["a"]) is None
        assert json_fields.top_columns_at(api, buf, [offsets[0] + 1], low, end, ["a"]) is None
        assert json_fields.top_columns_at(api, buf, [offsets[0]], offsets[1], end, ["a"]) is None
        # one payload byte changed: its checksum no longer holds
        at = bytes(buf).index(b'"a":2', offsets[2]) + 4
        buf[at] = ord("7")
        assert json_fields.top_columns_at(api, buf, offsets, low, end, ["a"]) is None
        assert json_fields.top_codes_at(api, buf, offsets, low, end, ["a"]) is None
        assert json_fields.top_columns_at(api, buf, offsets[:2], low, end, ["a"]) == [[0, 1]]


@needs_c
def test_bad_arguments_raise() -> None:
    assert RECORDREAD is not None
    native = json_fields._NATIVE_AT
    assert native is not None
    with pytest.raises(TypeError):
        native(RECORDREAD.c_api, b"", (), 0, 0, (b"a",))
    with pytest.raises(ValueError):
        native(object(), b"", [], 0, 0, (b"a",))  # not the record reader's capsule
    with pytest.raises(TypeError):
        native(RECORDREAD.c_api, b"", [], 0, 0, ("a",))
