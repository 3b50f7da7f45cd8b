"""Views and conflated topics made in Python survive close and reopen of their store
directory; a read-only opener in another process builds them too; ``drop_view``
forgets one; damaged definitions are named errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import (
    ConfigError,
    FormatVersionError,
    ReadOnlyError,
    StorePathError,
    TopicExistsError,
    UnknownTopicError,
)

ROOT = Path(__file__).resolve().parents[2]
TOTALS = ["/c", "SUM(/q) AS /q", "COUNT(*) AS /n"]
FIRST = [{"c": "a", "n": 3, "q": 6}, {"c": "b", "n": 3, "q": 9}]  # totals of _make's orders


def _make(path: Path) -> None:
    with SowStore(path) as store:
        orders = store.create_topic("orders", keys=["/id"])
        companies = store.create_topic("companies", keys=["/ticker"])
        orders.publish_many(
            [{"id": i, "c": "ab"[i % 2], "q": i, "sym": "XY"[i % 2]} for i in range(6)]
        )
        companies.publish({"ticker": "X", "name": "Xco"})
        store.create_view("totals", "orders", projection=TOTALS, grouping=["/c"])
        store.create_view("best", "totals", projection=["MAX(/q) AS /best"])
        store.create_view(
            "by-company",
            join="[orders].[/sym] = [companies].[/ticker]",
            projection=["[companies].[/name]", "SUM([orders].[/q]) AS /q"],
            grouping=["[companies].[/name]"],
        )
        store.create_conflated_topic("orders-1s", "orders", interval="1s", expiration="1h")


def _docs(topic: Any) -> list[dict[str, Any]]:
    return sorted((r.doc for r in topic.sow()), key=json.dumps)


def test_views_survive_close_and_reopen(tmp_path: Path) -> None:
    _make(tmp_path)
    with SowStore(tmp_path) as store:
        assert store.derived_topics() == {
            "totals": "view",
            "best": "view",
            "by-company": "view",
            "orders-1s": "conflated",
        }
        assert _docs(store.topic("totals")) == FIRST
        assert _docs(store.topic("best")) == [{"best": 9}]
        assert _docs(store.topic("by-company")) == [{"name": "Xco", "q": 0 + 2 + 4}]
        assert len(store.topic("orders-1s")) == 6
        assert store.topic("orders-1s").config.default_ttl == 3600
        # kept current after the reopen, and the same definition is the same view
        store.topic("orders").publish({"id": 10, "c": "a", "q": 100, "sym": "X"})
        assert _docs(store.topic("best")) == [{"best": 106}]
        again = store.create_view("totals", "orders", projection=TOTALS, grouping=["/c"])
        assert again is store.topic("totals")
        with pytest.raises(TopicExistsError):
            store.create_view("totals", "orders", projection=["COUNT(*) AS /n"])
    with SowStore(tmp_path) as store:  # and once more: nothing doubled, nothing lost
        assert _docs(store.topic("by-company")) == [{"name": "Xco", "q": 106}]
        assert len(store.derived_topics()) == 4


def _read_in_another_process(path: Path) -> Any:
    """A read-only process: prints the derived topics, then again after a refresh (on a
    line from its stdin)."""
    code = textwrap.dedent(
        f"""
        import json, sys
        from sowlib import SowStore
        store = SowStore({str(path)!r}, readonly=True)
        def state():
            return {{name: sorted((r.doc for r in store.topic(name).sow()), key=json.dumps)
                     for name in sorted(store.derived_topics())}}
        print(json.dumps(state()), flush=True)
        sys.stdin.readline()  # the writer published meanwhile
        store.refresh()
        print(json.dumps(state()), flush=True)
        store.close()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_a_read_only_process_builds_the_views(tmp_path: Path) -> None:
    _make(tmp_path)
    with SowStore(tmp_path) as writer:  # the writer stays open (and holds the lock)
        reader = _read_in_another_process(tmp_path)
        assert reader.stdout is not None
        assert reader.stdin is not None
        first = json.loads(reader.stdout.readline())
        assert first["totals"] == FIRST
        assert first["best"] == [{"best": 9}]
        assert len(first["orders-1s"]) == 6
        writer.topic("orders").publish({"id": 1, "c": "a", "q": 50, "sym": "X"})
        writer.flush()
        reader.stdin.write("go\n")
        reader.stdin.flush()
        second = json.loads(reader.stdout.readline())
        _out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        # the view follows the reader's refresh: id 1 moved from b to a
        assert second["totals"] == [{"c": "a", "n": 4, "q": 56}, {"c": "b", "n": 2, "q": 8}]
        assert second["best"] == [{"best": 56}]


def test_a_readers_refresh_builds_the_views_made_after_it_opened(tmp_path: Path) -> None:
    with SowStore(tmp_path) as writer:
        orders = writer.create_topic("orders", keys=["/id"])
        orders.publish({"id": 1, "c": "a", "q": 2})
        writer.flush()
        with SowStore(tmp_path, readonly=True) as reader:
            assert reader.derived_topics() == {}
            writer.create_view("totals", "orders", projection=TOTALS, grouping=["/c"])
            reader.refresh()
            assert _docs(reader.topic("totals")) == [{"c": "a", "n": 1, "q": 2}]


def test_a_reader_cannot_create_nor_drop(tmp_path: Path) -> None:
    _make(tmp_path)
    with SowStore(tmp_path, readonly=True) as reader:
        assert "totals" in reader.derived_topics()
        with pytest.raises(ReadOnlyError):
            reader.drop_view("totals")
        with pytest.raises(ReadOnlyError):
            reader.create_view("other", "orders", projection=["COUNT(*) AS /n"])


def test_drop_view_forgets_the_definition(tmp_path: Path) -> None:
    _make(tmp_path)
    with SowStore(tmp_path) as store:
        with pytest.raises(ConfigError, match="'best' reads it"):
            store.drop_view("totals")  # the view 'best' is a view of it
        store.drop_view("best")
        store.drop_view("orders-1s")
        assert "best" not in store
        with pytest.raises(UnknownTopicError):
            store.drop_view("best")
        with pytest.raises(UnknownTopicError):
            store.drop_view("orders")  # a topic, not a derived one
        store.create_view("best", "totals", projection=["MIN(/q) AS /least"])  # the name is free
    with SowStore(tmp_path) as store:
        assert sorted(store.derived_topics()) == ["best", "by-company", "totals"]
        assert _docs(store.topic("best")) == [{"least": 6}]


def test_a_memory_store_writes_no_definition() -> None:
    with SowStore() as store:
        store.create_topic("orders", keys=["/id"])
        store.create_view("totals", "orders", projection=TOTALS, grouping=["/c"])
        store.drop_view("totals")
        assert "totals" not in store


def test_a_view_over_a_configured_transient_topic_waits_for_it(tmp_path: Path) -> None:
    config = """<AMPSConfig><SOW><Topic><Name>ticks</Name><MessageType>json</MessageType>
      <Key>/sym</Key><Durability>transient</Durability></Topic></SOW></AMPSConfig>"""
    with SowStore.from_config(config, base_dir=tmp_path) as store:
        store.topic("ticks").publish({"sym": "A", "px": 1})
        store.create_view("count", "ticks", projection=["COUNT(*) AS /n"])
    with SowStore(tmp_path) as store:  # no configuration: no 'ticks', the view waits
        assert "count" not in store
    with SowStore.from_config(config, base_dir=tmp_path) as store:
        assert _docs(store.topic("count")) == []  # a transient topic starts empty
        store.topic("ticks").publish({"sym": "B", "px": 2})
        assert _docs(store.topic("count")) == [{"n": 1}]


def test_a_damaged_definition_is_a_named_error(tmp_path: Path) -> None:
    _make(tmp_path)
    path = tmp_path / "totals.json.derived.json"
    good = path.read_text()
    path.write_text("{not json")
    with pytest.raises(FormatVersionError, match=r"totals\.json\.derived\.json"):
        SowStore(tmp_path)
    data = json.loads(good)
    data["version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(FormatVersionError):
        SowStore(tmp_path, readonly=True)
    data = json.loads(good)
    data["config"]["durability"] = "persistent"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"totals\.json\.derived\.json"):
        SowStore(tmp_path)
    path.write_text(good)
    with SowStore(tmp_path) as store:  # the data was never touched
        assert len(store.topic("orders")) == 6
        assert len(store.topic("totals")) == 2


def test_a_definition_that_cannot_be_saved_leaves_no_view(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        store.create_topic("orders", keys=["/id"])
        (tmp_path / "totals.json.derived.json").mkdir()  # a directory in the way
        with pytest.raises(StorePathError):
            store.create_view("totals", "orders", projection=TOTALS, grouping=["/c"])
        assert "totals" not in store
        assert "totals" not in store.derived_topics()
        (tmp_path / "totals.json.derived.json").rmdir()
        store.create_view("totals", "orders", projection=TOTALS, grouping=["/c"])
