"""get_codec / register_codec / available_codecs and the Codec protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from sowlib.codecs import (
    Codec,
    available_codecs,
    get_codec,
    merge_documents,
    register_codec,
    registry,
)
from sowlib.errors import ConfigError, DecodeError


@pytest.fixture
def clean_registry() -> Iterator[None]:
    with registry.registrations_undone():
        yield


def test_builtin_codecs() -> None:
    assert available_codecs() == ["binary", "fix", "json", "msgpack", "nvfix", "xml"]
    for name in available_codecs():
        codec = get_codec(name)
        assert isinstance(codec, Codec)
        assert codec.name == name
        assert codec.supports_filter is (name != "binary")
        assert codec.supports_delta is (name != "binary")


def test_names_are_case_insensitive_and_default_instances_shared() -> None:
    assert get_codec("JSON") is get_codec("json")
    assert get_codec("fix", separator="|") is not get_codec("fix")


@pytest.mark.parametrize("name", ["yaml", "", "  ", None, 3])
def test_unknown_message_type(name: Any) -> None:
    with pytest.raises(ConfigError) as info:
        get_codec(name)
    assert info.value.where == "message_type"


def test_unknown_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        get_codec("json", separator="|")


@attrs.frozen
class LinesCodec:
    """A tiny user codec: ``name:value`` lines."""

    name = "lines"
    supports_filter = True
    supports_delta = True

    def decode(self, data: bytes) -> Any:
        doc = {}
        for offset, line in _lines(data):
            name, sep, value = line.partition(":")
            if not sep:
                raise DecodeError("lines", data, "no ':'", offset)
            doc[name] = value
        return doc

    def encode(self, doc: Any) -> bytes:
        return "".join(f"{k}:{v}\n" for k, v in doc.items()).encode()

    def merge(self, stored: Any, delta: Any) -> Any:
        return merge_documents(stored, delta)


def _lines(data: bytes) -> Iterator[tuple[int, str]]:
    offset = 0
    for line in data.decode().splitlines(keepends=True):
        yield offset, line.rstrip("\n")
        offset += len(line.encode())


@pytest.mark.usefixtures("clean_registry")
def test_register_a_user_codec() -> None:
    register_codec("lines", lambda **options: LinesCodec(**options))
    codec = get_codec("Lines")
    assert codec.decode(b"a:1\nb:x\n") == {"a": "1", "b": "x"}
    assert codec.merge({"a": "1"}, {"b": "2"}) == {"a": "1", "b": "2"}
    with pytest.raises(DecodeError) as info:
        codec.decode(b"a:1\nbad\n")
    assert info.value.offset == 4
    assert "lines" in available_codecs()


@pytest.mark.usefixtures("clean_registry")
def test_registering_a_taken_name_needs_replace() -> None:
    with pytest.raises(ConfigError):
        register_codec("json", LinesCodec)
    register_codec("json", LinesCodec, replace=True)
    assert get_codec("json").name == "lines"


@pytest.mark.usefixtures("clean_registry")
def test_register_rejects_a_non_callable_factory() -> None:
    with pytest.raises(ConfigError):
        register_codec("thing", "not callable")  # type: ignore[arg-type]


def test_registrations_undone_restores_added_and_replaced_codecs() -> None:
    before = available_codecs()
    with registry.registrations_undone():
        register_codec("trial", lambda **options: get_codec("xml"))
        register_codec("json", lambda **options: get_codec("xml"), replace=True)
        assert get_codec("json").name == "xml"
        assert "trial" in available_codecs()
    assert available_codecs() == before
    assert get_codec("json").name == "json"
