"""Issue 28 item 8: key values UTF-8 cannot encode are a SowError, never UnicodeEncodeError."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sowlib
from sowlib.errors import ArgumentError, SowError
from sowlib.keys import ContentKeyGenerator

LONE = "\ud800"


@pytest.fixture(params=["transient", "persistent"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sowlib.SowStore]:
    s = sowlib.SowStore(None if request.param == "transient" else str(tmp_path / "s"))
    yield s
    s.close()


CALLS: dict[str, Callable[[sowlib.Topic], Any]] = {
    "lookup": lambda t: t.lookup(LONE),
    "lookup_many": lambda t: t.lookup_many([("x",), (LONE,)]),
    "key_for_values": lambda t: t.key_for_values([LONE]),
    "lookup_mixed": lambda t: t.lookup(LONE + "abc"),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_issue28_lone_surrogate_lookup_is_an_argument_error(
    store: sowlib.SowStore, call: str
) -> None:
    topic = store.create_topic("t", keys=["/a"])
    topic.publish({"a": "x"})
    with pytest.raises(ArgumentError) as info:
        CALLS[call](topic)
    assert isinstance(info.value, SowError)
    assert "\\ud800" in str(info.value)
    assert topic.lookup("x") is not None


def test_issue28_lone_surrogate_in_a_compound_key_names_the_value(
    store: sowlib.SowStore,
) -> None:
    topic = store.create_topic("t", keys=["/a", "/b"])
    with pytest.raises(ArgumentError, match="lone surrogate"):
        topic.lookup("a", LONE)


def test_issue28_generator_on_a_hand_built_document_raises_argument_error() -> None:
    gen = ContentKeyGenerator(["/id"], domain="d", topic="t")
    with pytest.raises(ArgumentError):
        gen({"id": LONE})
    with pytest.raises(ArgumentError):
        gen.hashes_of([{"id": "ok"}, {"id": LONE}])
    huge = "y" * 100_000 + LONE
    with pytest.raises(ArgumentError) as info:
        gen.key_for_values([huge])
    assert len(str(info.value)) < 300
