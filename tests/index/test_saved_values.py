"""The kept values an index set holds per key survive a clean close and reopen: read from
the checkpoint (``index.saved_values``) or, when the checkpoint cannot hold them, from the
records once; either way equal to what the writer kept, type for type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import pytest

from sowlib import SowStore
from sowlib.index.saved_values import dump_values, load_values

_PLAIN = [
    '{"id": %d, "s": "A", "n": 1}',
    '{"id": %d, "s": "05", "n": 1.0}',
    '{"id": %d, "n": true}',
]
_MIXED = [*_PLAIN, '{"id": %d, "s": null, "n": 2.5}', '{"id": %d, "s": [1, "x"], "n": {"a": 1}}']


def _kept(topic: Any) -> dict[str, list[tuple[type, str]]]:
    indexes = topic._p.indexes
    out = {}
    for key in topic._p.keys:
        out[str(key)] = [(type(v), repr(v)) for v in indexes.kept_values(key)]
    return out


@pytest.mark.parametrize("shapes", [_PLAIN, _MIXED], ids=["savable", "unhashable"])
@pytest.mark.parametrize("readonly", [False, True])
def test_kept_values_survive_a_reopen(tmp_path: Path, shapes: list[str], readonly: bool) -> None:
    with SowStore(tmp_path) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/n"])
        topic.publish_many([shapes[i % len(shapes)] % (i % 7) for i in range(40)])
        before = _kept(topic)
        saved = dump_values(topic._p.indexes, topic._p.keys.keys())
        assert (saved is None) == (shapes is _MIXED)
    with SowStore(tmp_path, readonly=readonly) as store:
        topic = store.topic("t")
        # A reader fills them only when it first applies a change.
        assert topic._p.indexes.values_known is not readonly
        topic._p.indexes.ensure_values()
        assert topic._p.indexes.values_known
        assert _kept(topic) == before
        topic.check()


def test_values_that_do_not_fit_are_not_loaded(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/n"])
        topic.publish_many([_PLAIN[0] % i for i in range(5)])
        indexes, keys = topic._p.indexes, topic._p.keys.keys()
        saved = dump_values(indexes, keys)
        assert saved is not None
        assert not load_values(indexes, saved, keys[:-1])  # another key count
        assert not indexes.values_known
        version, count, paths = msgpack.unpackb(saved)
        other = msgpack.packb([version + 1, count, paths])
        assert not load_values(indexes, other, keys)
        assert not load_values(indexes, b"\xc1", keys)
        assert load_values(indexes, saved, keys)
        assert indexes.values_known


@pytest.mark.parametrize("order", ["checkpoint", "by offset", "reversed", "tuple"])
def test_saved_values_follow_the_keys_given_in_any_order(tmp_path: Path, order: str) -> None:
    # The kept tables are read front to back when they list the keys in the order
    # given, else key by key: a load with the same keys gets every key's own values.
    with SowStore(tmp_path) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/n"])
        topic.publish_many([_PLAIN[i % 3] % (i % 11) for i in range(60)])
        topic.sow_delete_by_keys(topic.key_for('{"id": 3}'))
        topic.publish(_PLAIN[0] % 3)
        indexes = topic._p.indexes
        before = _kept(topic)
        keys = topic._p.keys.keys()  # by record offset
        given = {
            "checkpoint": topic._p.keys.to_blob()[1],  # what a clean close passes
            "by offset": keys,
            "reversed": keys[::-1],
            "tuple": tuple(keys),
        }[order]
        saved = dump_values(indexes, given)
        assert saved is not None
        assert load_values(indexes, saved, given)
        assert _kept(topic) == before
