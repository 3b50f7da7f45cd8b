"""Issue 16, item 5: opening a store never runs code (or writes a file) named in its files.

A store file records a key generator by name only; the callable comes from the
application (``create_topic(key_generator=)``, ``SowStore(key_generators=)``) or
the trusted XML config.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from sowlib import ChainingKeyGenerator, SowStore
from sowlib.cli import main
from sowlib.config import TopicConfig
from sowlib.errors import ConfigError, SowError, TopicExistsError
from sowlib.storage import AppendLog
from sowlib.store_files import topic_file_name


def order_key(doc: Any) -> str:
    """A module-level generator: the store records it as ``tests...:order_key``."""
    return f"o{doc['id']}"


def other_key(doc: Any) -> str:
    return f"x{doc['id']}"


def plant_topic(store_dir: Path, name: str, generator_spec: dict[str, Any]) -> Path:
    """Write a topic file whose header names ``generator_spec``, without sowlib's store."""
    store_dir.mkdir(parents=True, exist_ok=True)
    config = TopicConfig.make(name, options={"key_generator": generator_spec})
    path = store_dir / topic_file_name(name, "json")
    AppendLog(path, meta=json.dumps(config.to_dict()).encode()).close()
    return path


def popen_spec(marker: Path) -> dict[str, Any]:
    return {"module": "subprocess:Popen", "options": {"args": f"touch {marker}", "shell": True}}


def run_spec(marker: Path) -> dict[str, Any]:
    return {"module": "subprocess:run", "options": {"args": ["touch", str(marker)]}}


@pytest.mark.parametrize("spec", [popen_spec, run_spec], ids=["Popen", "run"])
def test_issue16_store_file_naming_a_callable_runs_nothing_when_opened(
    tmp_path: Path, spec: Any
) -> None:
    marker = tmp_path / "marker"
    store_dir = tmp_path / "store"
    plant_topic(store_dir, "evil", spec(marker))

    with SowStore(store_dir) as writer:  # the writer opens the topic
        assert len(writer.topic("evil")) == 0
        assert list(writer.topic("evil").sow("1=1")) == []
    with SowStore(store_dir, readonly=True) as reader:
        assert [t.name for t in reader.topics()] == ["evil"]
    out = io.StringIO()
    assert main(["stats", str(store_dir)], out=out) == 0
    assert "evil" in out.getvalue()

    assert not marker.exists()


def test_issue16_publishing_to_a_planted_topic_needs_the_applications_generator(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "marker"
    store_dir = tmp_path / "store"
    plant_topic(store_dir, "evil", popen_spec(marker))
    with SowStore(store_dir) as store:
        topic = store.topic("evil")
        with pytest.raises(ConfigError, match="key_generators="):
            topic.publish({"id": 1})
        assert len(topic) == 0  # nothing stored
        # The application attaches its own generator (the name check cannot
        # identify a lambda, so it passes).
        store.create_topic("evil", key_generator=lambda doc: f"k{doc['id']}")
        assert topic.publish({"id": 1}).sow_key == "k1"
    with SowStore(store_dir, key_generators={"evil": lambda doc: f"k{doc['id']}"}) as store:
        assert store.topic("evil").publish({"id": 1}).inserted is False
    assert not marker.exists()


def test_issue16_custom_generator_is_reattached_not_imported(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with SowStore(store_dir) as store:
        store.create_topic("orders", key_generator=order_key).publish({"id": 1})
    with SowStore(store_dir, readonly=True) as reader:  # reading needs no generator
        assert [r.sow_key for r in reader.topic("orders").sow("1=1")] == ["o1"]
    with SowStore(store_dir) as store, pytest.raises(ConfigError, match="order_key"):
        store.topic("orders").publish({"id": 2})
    with SowStore(store_dir, key_generators={"orders": order_key}) as store:
        assert store.topic("orders").publish({"id": 1}).sow_key == "o1"
    with SowStore(store_dir) as store:
        store.create_topic("orders", key_generator=order_key)
        assert store.topic("orders").publish({"id": 2}).inserted


def test_issue16_a_generator_the_store_names_differently_is_refused(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with SowStore(store_dir) as store:
        store.create_topic("orders", key_generator=order_key)
    with pytest.raises(ConfigError, match="other_key"):
        SowStore(store_dir, key_generators={"orders": other_key})
    with SowStore(store_dir) as store, pytest.raises(ConfigError, match="other_key"):
        store.create_topic("orders", key_generator=other_key)


def test_issue16_key_generators_for_a_topic_with_key_fields_is_a_config_error(
    tmp_path: Path,
) -> None:
    store_dir = tmp_path / "store"
    with SowStore(store_dir) as store:
        store.create_topic("orders", keys=["/id"])
        store.create_topic("raw")
        with pytest.raises(TopicExistsError):
            store.create_topic("raw", key_generator=order_key)
    for name in ("orders", "raw"):
        with pytest.raises(ConfigError):
            SowStore(store_dir, key_generators={name: order_key})
    with pytest.raises(ConfigError):
        SowStore(store_dir, key_generators={"orders": "not callable"})  # type: ignore[dict-item]


def test_issue16_key_generators_mapping_serves_create_topic(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s", key_generators={"orders": order_key}) as store:
        assert store.create_topic("orders").publish({"id": 7}).sow_key == "o7"


def test_issue16_chain_file_named_by_a_store_file_is_never_opened(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    store_dir = tmp_path / "store"
    spec = {"module": "chaining", "options": {"primary": "/Doc", "file_name": str(outside)}}
    plant_topic(store_dir, "docs", spec)
    with SowStore(store_dir) as store, pytest.raises(ConfigError, match="chain file"):
        store.topic("docs").publish({"Doc": 1})
    assert outside.read_text() == "keep me\n"
    # The application supplies the generator, chain file included.
    chains = tmp_path / "chains.txt"
    gen = ChainingKeyGenerator("/Doc", domain="docs", topic="docs", file_name=str(chains))
    with SowStore(store_dir, key_generators={"docs": gen}) as store:
        store.topic("docs").publish({"Doc": 1})
    assert chains.read_text() == "1\t1\n"
    assert outside.read_text() == "keep me\n"


def test_issue16_chaining_generator_without_a_file_is_rebuilt_from_plain_data(
    tmp_path: Path,
) -> None:
    store_dir = tmp_path / "store"
    with SowStore(store_dir) as store:
        gen = ChainingKeyGenerator("/Doc", ["/Parent"], domain="docs", topic="docs")
        store.create_topic("docs", key_generator=gen).publish({"Doc": 1})
    with SowStore(store_dir) as store:
        docs = store.topic("docs")
        head = docs.publish({"Doc": 2}).sow_key
        assert docs.publish({"Doc": 3, "Parent": 2}).sow_key == head


@pytest.mark.parametrize(
    "options",
    [
        {"primary": ["not", "a", "path"]},
        {"primary": "/Doc", "secondary": "/P"},
        {"primary": "/Doc", "validation": "yes"},
        {"primary": "/Doc", "args": "x"},
        {"primary": "not a path"},
    ],
)
def test_issue16_malformed_chaining_options_are_not_rebuilt(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    store_dir = tmp_path / "store"
    plant_topic(store_dir, "docs", {"module": "chaining", "options": options})
    with SowStore(store_dir) as store, pytest.raises(ConfigError):
        store.topic("docs").publish({"Doc": 1})


def test_issue16_xml_config_is_trusted_to_name_a_generator(tmp_path: Path) -> None:
    xml = (
        "<SOW><Topic><Name>orders</Name><MessageType>json</MessageType>"
        "<FileName>%n.sow</FileName><KeyGenerator>"
        f"<Module>{__name__}:order_key</Module></KeyGenerator></Topic></SOW>"
    )
    store_dir = tmp_path / "store"
    with SowStore.from_config(xml, base_dir=store_dir) as store:
        assert store.topic("orders").publish({"id": 3}).sow_key == "o3"
    with SowStore.from_config(xml, base_dir=store_dir) as store:  # reopen: re-attached
        assert store.topic("orders").publish({"id": 3}).inserted is False


def plant_meta(store_dir: Path, meta: bytes) -> None:
    store_dir.mkdir(parents=True, exist_ok=True)
    AppendLog(store_dir / topic_file_name("bad", "json"), meta=meta).close()


def good_meta(**changes: Any) -> bytes:
    data = TopicConfig.make("bad", keys=["/id"]).to_dict()
    data.update(changes)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    "meta",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff\xfe",
        b"[]",
        good_meta(name=5),
        good_meta(keys="/id"),
        good_meta(keys=[5]),
        good_meta(hash_indexes=[[]]),
        good_meta(slab_size=1.5),
        good_meta(durability="forever"),
        good_meta(options=[1]),
        good_meta(default_ttl="soon"),
        good_meta(history_window=float("inf")),
        good_meta(file_name=7),
        good_meta(options={"codec": 5}),
        good_meta(options={"codec": {"no_such_option": 1}}),
    ],
    ids=lambda m: repr(m[:30]),
)
def test_issue16_a_planted_header_is_a_sow_error(tmp_path: Path, meta: bytes) -> None:
    plant_meta(tmp_path / "s", meta)
    for readonly in (False, True):
        with pytest.raises(SowError):
            SowStore(tmp_path / "s", readonly=readonly)
