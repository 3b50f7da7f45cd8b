"""A checkpoint written before record sizes and kept values were saved (key map layout 3,
no kept-values part) still opens: sizes are read from the log once, the kept values out of
the live records, and the topic then equals one opened from a current checkpoint."""

from __future__ import annotations

from pathlib import Path

import attrs
import msgpack
import pytest

from sowlib import SowStore
from sowlib.storage.checkpoint import decode_checkpoint, encode_checkpoint
from sowlib.topic import loader


def _make_older(path: str) -> None:
    ckpt = decode_checkpoint(Path(path + ".ckpt").read_bytes())
    assert ckpt is not None
    tag, keymap, indexes, _values = msgpack.unpackb(ckpt.blob)
    version, live, keys, offsets, _sizes, full_keys, full = msgpack.unpackb(keymap)
    assert version == 4
    older = msgpack.packb([3, live, keys, offsets, full_keys, full])
    blob = msgpack.packb([tag, older, indexes])
    Path(path + ".ckpt").write_bytes(encode_checkpoint(attrs.evolve(ckpt, blob=blob)))


@pytest.mark.parametrize("readonly", [False, True])
def test_an_older_checkpoint_opens(
    tmp_path: Path, readonly: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [
        b'{"id": %d, "s": "%s", "n": %d}' % (i % 30, b"AB"[i % 2 : i % 2 + 1], i) for i in range(90)
    ]
    with SowStore(tmp_path) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/n"])
        topic.publish_many(docs)
        topic.publish(b'{"id": 500, "s": "C", "n": 1}', correlation_id=b"c")
        path = topic.stats()["path"]
        live = topic.stats()["live_bytes"]
        expected = sorted((r.sow_key, r.data) for r in topic.sow("/s = 'A' OR /n > 80"))
    _make_older(path)
    filled: list[object] = []
    fill = loader.fill_values
    monkeypatch.setattr(loader, "fill_values", lambda writer: filled.append(fill(writer)))
    with SowStore(tmp_path, readonly=readonly) as store:
        topic = store.topic("t")
        topic._p.indexes.ensure_values()
        assert len(filled) == 1  # the checkpoint was used, its values read from the records
        assert topic.stats()["live_bytes"] == live
        assert sorted((r.sow_key, r.data) for r in topic.sow("/s = 'A' OR /n > 80")) == expected
        topic.check()
        if not readonly:
            topic.publish_many([b'{"id": %d, "s": "C", "n": 0}' % i for i in range(0, 30, 3)])
            topic.check()
            assert len(topic.sow("/s = 'C'")) == 11
