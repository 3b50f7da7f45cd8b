"""A read-only store's refresh lists the store directory only when it may have changed
(``store_files.TopicFiles``), and still finds every topic the writer creates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import StorePathError
from sowlib.store_files import TopicFiles


def _age(directory: Path, seconds: float = 60.0) -> None:
    """Make every directory under ``directory`` look changed ``seconds`` ago."""
    for folder, _dirs, _files in os.walk(directory):
        st = os.stat(folder)
        os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


def test_a_settled_directory_is_not_listed_again(tmp_path: Path) -> None:
    (tmp_path / "a.sow").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.sow").write_bytes(b"")
    (tmp_path / "notes.txt").write_bytes(b"")
    files = TopicFiles()
    want = [str(tmp_path / "a.sow"), str(tmp_path / "sub" / "b.sow")]
    assert files.changed(str(tmp_path)) == want  # the first walk
    _age(tmp_path)
    assert files.changed(str(tmp_path)) == want  # the directories' times are taken
    assert files.changed(str(tmp_path)) is None  # nothing changed since
    (tmp_path / "sub" / "c.sow").write_bytes(b"")  # a new file changes its directory
    assert files.changed(str(tmp_path)) == [*want, str(tmp_path / "sub" / "c.sow")]


def test_a_directory_changed_just_now_is_listed_every_time(tmp_path: Path) -> None:
    (tmp_path / "a.sow").write_bytes(b"")
    files = TopicFiles()
    assert files.changed(str(tmp_path)) == [str(tmp_path / "a.sow")]
    # changed within the last second: its time may not move on the next change
    assert files.changed(str(tmp_path)) == [str(tmp_path / "a.sow")]
    assert files.changed(str(tmp_path)) == [str(tmp_path / "a.sow")]


def test_a_removed_directory_is_listed_again(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.sow").write_bytes(b"")
    files = TopicFiles()
    files.changed(str(tmp_path))
    _age(tmp_path)
    files.changed(str(tmp_path))
    (tmp_path / "sub" / "b.sow").unlink()
    (tmp_path / "sub").rmdir()
    assert files.changed(str(tmp_path)) == []


def test_an_unreadable_store_directory_is_a_store_path_error(tmp_path: Path) -> None:
    with pytest.raises(StorePathError):
        TopicFiles().changed(str(tmp_path / "missing"))


def test_refresh_finds_a_topic_created_after_the_directory_settled(tmp_path: Path) -> None:
    with SowStore(tmp_path) as writer:
        writer.create_topic("orders", keys=["/id"]).publish({"id": 1})
        writer.flush()
        with SowStore(tmp_path, readonly=True) as reader:
            _age(tmp_path)
            reader.refresh()
            assert reader.refresh() == 0
            writer.create_topic("fills", keys=["/id"]).publish_many([{"id": 1}, {"id": 2}])
            writer.flush()
            assert reader.refresh() == 2
            assert len(reader.topic("fills")) == 2


def test_refresh_in_a_settled_directory_follows_writes_and_compactions(tmp_path: Path) -> None:
    """A refresh that found the directory unchanged does not look at the topic files it
    has nothing new from; a compaction (a rename in the directory) is still seen, and
    the topics with new records get them."""
    with SowStore(tmp_path) as writer:
        topics = [writer.create_topic(name, keys=["/id"]) for name in ("a", "b", "c")]
        for topic in topics:
            topic.publish_many([{"id": i, "v": 0} for i in range(5)])
        writer.flush()
        with SowStore(tmp_path, readonly=True) as reader:
            _age(tmp_path)
            reader.refresh()  # the walk that finds the directory settled
            assert reader.refresh() == 0  # every file looked at once more
            assert reader.refresh() == 0  # none looked at: nothing mapped, nothing changed
            topics[1].publish({"id": 9, "v": 1})
            assert reader.refresh() == 1
            topics[0].publish({"id": 0, "v": 2})
            topics[0].compact()  # renames a new file over "a"
            topics[0].publish({"id": 1, "v": 3})
            reader.refresh()
            for topic in topics:
                assert sorted(r.data for r in reader.topic(topic.name).sow()) == sorted(
                    r.data for r in topic.sow()
                )
            _age(tmp_path)
            reader.refresh()
            assert reader.refresh() == 0
            topics[2].compact()
            reader.refresh()
            topics[2].publish({"id": 7, "v": 4})
            assert reader.refresh() == 1
            for topic in topics:
                assert sorted(r.data for r in reader.topic(topic.name).sow()) == sorted(
                    r.data for r in topic.sow()
                )
