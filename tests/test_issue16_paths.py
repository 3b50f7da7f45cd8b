"""Issue 16, items 10 and 11 at the store level: OS errors on store paths, hostile topic
names and ``FileName`` templates, and bounded topic-name regular expressions."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.config import MAX_PATH_BYTES, expand_file_name
from sowlib.errors import ConfigError, SowError, StoreNotFoundError, StorePathError
from sowlib.store_files import MAX_TOPIC_REGEX, topic_file_name


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "afile"
    path.write_text("not a store")
    return path


def test_issue16_a_file_where_the_store_directory_belongs(a_file: Path) -> None:
    with pytest.raises(StorePathError) as info:
        SowStore(a_file)
    assert info.value.path == str(a_file)
    assert isinstance(info.value, OSError)
    with pytest.raises(StorePathError):
        SowStore(a_file, readonly=True)


def test_issue16_a_file_where_a_parent_directory_belongs(a_file: Path) -> None:
    with pytest.raises(StorePathError) as info:
        SowStore(a_file / "store")
    assert str(a_file) in info.value.path
    with pytest.raises(StoreNotFoundError):
        SowStore(a_file / "store", readonly=True)


def test_issue16_permission_denied_is_a_store_path_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: str, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "makedirs", refuse)
    with pytest.raises(StorePathError) as info:
        SowStore(tmp_path / "store")
    assert info.value.os_errno == 13


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores file modes")
def test_issue16_unreadable_store_directory(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with SowStore(store_dir) as store:
        store.create_topic("t", keys=["/id"]).publish({"id": 1})
    (store_dir / "sub").mkdir()
    (store_dir / "sub").chmod(0)
    try:
        with pytest.raises(StorePathError):
            SowStore(store_dir, readonly=True)
    finally:
        (store_dir / "sub").chmod(0o755)


def test_issue16_unreadable_subdirectory_is_not_skipped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_dir = tmp_path / "store"
    SowStore(store_dir).close()
    real_walk = os.walk

    def walk(top: str, onerror: object = None, **kwargs: object) -> object:
        assert callable(onerror)
        onerror(PermissionError(13, "Permission denied", os.path.join(top, "sub")))
        return real_walk(top)

    monkeypatch.setattr(os, "walk", walk)
    with pytest.raises(StorePathError, match="sub"):
        SowStore(store_dir, readonly=True)


@pytest.mark.parametrize(
    ("name", "file_name"),
    [
        ("a\ud800b", None),
        ("a\x00b", None),
        ("t", "a" * 5000),
        ("t", "a\x00.sow"),
        ("t", "x\udcff\ud800.sow"),
        ("t", "d/" + "b" * 300 + ".sow"),
        ("t", "%q.sow"),
        ("t", "trailing%"),
    ],
    ids=["surrogate-name", "nul-name", "long-file", "nul-file", "surrogate-file", "long-part",
         "unknown-token", "lone-percent"],
)  # fmt: skip
def test_issue16_hostile_names_are_config_errors(
    tmp_path: Path, name: str, file_name: str | None
) -> None:
    with SowStore(tmp_path / "s") as store:
        with pytest.raises(ConfigError):
            store.create_topic(name, file_name=file_name)
        assert store.topics() == []
    assert sorted(os.listdir(tmp_path / "s")) == ["LOCK"]


def test_issue16_nul_or_overlong_store_path_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SowStore(str(tmp_path / "a\x00b"))
    with pytest.raises(ConfigError):
        SowStore(str(tmp_path / ("d" * 300)))
    with pytest.raises(ConfigError):
        SowStore("/" + "d/" * (MAX_PATH_BYTES // 2))


def test_issue16_every_topic_name_maps_to_a_safe_file_name() -> None:
    for name in ("a\ud800b", "\udcff", "../..", "/", "\x00", "é" * 5000, "%2E"):
        encoded = topic_file_name(name, "json")
        assert "/" not in encoded
        assert encoded.isascii()
        assert len(encoded.encode()) < 255
        assert encoded not in (".", "..")


def test_issue16_double_percent_n_is_a_literal_percent_n(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        store.create_topic("n13", file_name="%%n")
        store.create_topic("n14", file_name="%%%n-%%Y")
    files = sorted(f for f in os.listdir(tmp_path / "s") if f.endswith(".sow"))
    assert files == ["%n.sow", "%n14.json-%Y.sow"]


def test_issue16_file_name_tokens_expand_once_left_to_right() -> None:
    when = time.gmtime(0)
    assert expand_file_name("%n/%%n/%Y%m%d", "t", "json", when) == "t.json/%n/19700101"
    assert expand_file_name("100%%", "t", "json", when) == "100%"


def test_issue16_xml_file_name_with_double_percent(tmp_path: Path) -> None:
    xml = (
        "<SOW><Topic><Name>n13</Name><MessageType>json</MessageType>"
        "<FileName>sow/%%n-%n.sow</FileName><Key>/id</Key></Topic></SOW>"
    )
    with SowStore.from_config(xml, base_dir=tmp_path / "s"):
        pass
    files = [f for f in os.listdir(tmp_path / "s" / "sow") if f.endswith(".sow")]
    assert files == ["%n-n13.json.sow"]


def test_issue16_topic_regex_is_bounded(tmp_path: Path) -> None:
    with SowStore() as store:
        for i in range(40):
            store.create_topic("a" * 30 + str(i), keys=["/id"])
        with pytest.raises(ConfigError, match="topic_regex"):
            store.sow(r"(a|aa)+$")
        with pytest.raises(ConfigError):
            store.sow("a" * (MAX_TOPIC_REGEX + 1))
        with pytest.raises(ConfigError):
            store.sow("(")
        assert store.sow("a+1") == []


def test_issue16_pattern_topic_regex_from_a_file_is_bounded(tmp_path: Path) -> None:
    xml = (
        "<SOW><Topic><Name>p</Name><MessageType>json</MessageType><Pattern>(a|aa)+$</Pattern>"
        "<Durability>transient</Durability><Key>/id</Key></Topic></SOW>"
    )
    with SowStore.from_config(xml) as store, pytest.raises(SowError):
        store.topic("a" * 40 + "b")


def test_issue16_two_topics_cannot_share_one_file(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        store.create_topic("a", file_name="x.sow")
        with pytest.raises(ConfigError):
            store.create_topic("b", file_name="x.sow")


def test_issue16_topic_lookup_with_a_non_text_name_is_unknown_topic() -> None:
    xml = (
        "<SOW><Topic><Name>p</Name><MessageType>json</MessageType><Pattern>p.*</Pattern>"
        "<Durability>transient</Durability><Key>/id</Key></Topic></SOW>"
    )
    with SowStore.from_config(xml) as store, pytest.raises(KeyError):
        store.topic(5)  # type: ignore[arg-type]
