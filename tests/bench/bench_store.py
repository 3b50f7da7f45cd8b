"""Benchmarks of the store: publish vs the peers, get, reopen, compaction."""

from __future__ import annotations

import glob
import os
import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from peers import DictFloor, DiskcachePeer, LmdbPeer, SqlitePeer
from scen_store import open_topic
from workload import SEED, render

from sowlib import SowStore

#: Rounds for benchmarks whose setup builds a store.
ROUNDS = 3


@pytest.mark.benchmark(group="publish")
def test_publish_many_sowlib(benchmark: Any, messages: Any, new_topic: Any) -> None:
    result = benchmark.pedantic(
        lambda t: t.publish_many(messages), setup=lambda: ((new_topic(),), {}), rounds=ROUNDS
    )
    assert len(result) == len(messages)


@pytest.mark.benchmark(group="publish")
def test_publish_each_sowlib(benchmark: Any, messages: Any, new_topic: Any) -> None:
    def run(topic: Any) -> int:
        for m in messages:
            topic.publish(m)
        return len(topic)

    assert benchmark.pedantic(run, setup=lambda: ((new_topic(),), {}), rounds=ROUNDS) > 0


@pytest.mark.benchmark(group="publish")
@pytest.mark.parametrize("peer", ["sqlite3", "dict", "diskcache", "lmdb"])
def test_publish_many_peer(
    benchmark: Any, messages: Any, fresh_dir: Callable[[], str], peer: str
) -> None:
    opened: list[Any] = []

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        path = fresh_dir()
        factories: dict[str, Callable[[], Any]] = {
            "sqlite3": lambda: SqlitePeer(path),
            "dict": DictFloor,
            "diskcache": lambda: DiskcachePeer(path),
            "lmdb": lambda: LmdbPeer(path),
        }
        made = factories[peer]()
        opened.append(made)
        return (made,), {}

    benchmark.pedantic(lambda p: p.publish_many(messages), setup=setup, rounds=ROUNDS)
    assert opened[-1].get(orjson.loads(messages[0])["orderId"]) is not None
    for made in opened:
        if hasattr(made, "close"):
            made.close()


@pytest.mark.benchmark(group="get")
def test_get_sowlib(benchmark: Any, messages: Any, new_topic: Any) -> None:
    topic = new_topic()
    topic.publish_many(messages)
    rng = random.Random(SEED)
    keys = [topic.key_for(messages[rng.randrange(len(messages))]) for _ in range(1000)]
    get = topic.get
    found = benchmark(lambda: [get(k) for k in keys])
    assert all(r is not None for r in found)


@pytest.mark.benchmark(group="get")
def test_get_sqlite(benchmark: Any, messages: Any, fresh_dir: Callable[[], str]) -> None:
    peer = SqlitePeer(os.path.join(fresh_dir() + ".sqlite"))
    peer.publish_many(messages)
    rng = random.Random(SEED)
    ids = [orjson.loads(messages[rng.randrange(len(messages))])["orderId"] for _ in range(1000)]
    get = peer.get
    found = benchmark(lambda: [get(k) for k in ids])
    assert all(r is not None for r in found)
    peer.close()


@pytest.fixture(scope="module")
def closed_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A closed store holding 100,000 distinct records."""
    directory = str(tmp_path_factory.mktemp("reopen"))
    store, topic = open_topic(directory)
    topic.publish_many(render("json", 100_000, unique=True))
    store.close()
    return directory


@pytest.mark.benchmark(group="reopen")
@pytest.mark.parametrize("crash", [False, True], ids=["clean", "crash"])
def test_reopen_100k(benchmark: Any, closed_store: str, crash: bool) -> None:
    def setup() -> tuple[tuple[()], dict[str, Any]]:
        if crash:
            for path in glob.glob(os.path.join(closed_store, "*.ckpt")):
                os.unlink(path)
        return (), {}

    def reopen() -> int:
        store = SowStore(closed_store)
        try:
            return len(store.topic("orders"))
        finally:
            store.close()

    assert benchmark.pedantic(reopen, setup=setup, rounds=ROUNDS) == 100_000


@pytest.mark.benchmark(group="compaction")
def test_compact_after_updates(benchmark: Any, messages: Any, new_topic: Any) -> None:
    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        topic = new_topic(auto_compact=None)
        topic.publish_many(messages)
        return (topic,), {}

    def compact(topic: Any) -> Any:
        topic.compact()
        return topic.stats()

    stats = benchmark.pedantic(compact, setup=setup, rounds=ROUNDS)
    assert stats["garbage_ratio"] < 0.05
