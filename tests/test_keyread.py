"""The C form of ``Topic.lookup`` and ``Topic.get`` (``Reader.lookup``/``Reader.get``,
reader.c and keyread.c) against its reference, the
facade's Python path: the same answers for every kind of key value, through the cache,
expirations, reloads of the key map, compaction, writers in other threads and close.

The Python path is taken by patching ``Views.key_reader`` to give no reader.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import Record, SowStore
from sowlib.errors import ArgumentError, EncodeError, StoreClosedError
from sowlib.topic import slots, views
from sowlib.topic.facade import Topic

pytestmark = pytest.mark.skipif(not slots.NATIVE_SLOTS, reason="the C key table is not built")

# Values a key field may hold: ints on both sides of the int64 range, text (with
# non-ASCII, empty and lone surrogates), and values of other types.
VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-5, max_value=5),
    st.text(max_size=6),
    st.sampled_from(["", "\udcff", "é", "MSFT", "7", "-0", "5.0"]),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.none(),
)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts what the C readers answer: "c" for a record or None, "py" for a hand-off."""
    answers: list[str] = []
    real = views.Views.key_reader

    def wrap(*args: Any, **kwargs: Any) -> Any:
        reader = real(*args, **kwargs)
        assert reader is not None

        def read(value: Any) -> Any:
            rec = reader(value)
            answers.append("py" if rec is NotImplemented else "c")
            return rec

        return read

    monkeypatch.setattr(views.Views, "key_reader", wrap)
    return answers


def python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views.Views, "key_reader", lambda *args, **kwargs: None)


def publish_values(topic: Topic, values: list[Any]) -> None:
    """Publish ``{"k": value}`` for each value a message can hold as a key."""
    for i, value in enumerate(values):
        if value is None or value == "":
            continue
        try:
            topic.publish({"k": value, "i": i})
        except EncodeError:  # lone surrogates: no JSON message holds them
            pass


def doc_of(topic: Topic, value: Any) -> Any:
    rec = topic.lookup(value)
    assert rec is not None
    return rec.doc


def lookups(path: Path, values: list[Any], topic: str = "t") -> list[Any]:
    with SowStore(str(path), cache_bytes=0) as store:
        t = store.topic(topic)
        return [t.lookup(v) for v in values]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(published=st.lists(VALUES, max_size=12), probes=st.lists(VALUES, max_size=12))
def test_lookup_answers_as_the_python_path_for_any_value(
    tmp_path_factory: pytest.TempPathFactory, published: list[Any], probes: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("kr")
    with SowStore(str(path)) as store:
        publish_values(store.create_topic("t", keys=["/k"]), published)
    values = published + probes
    with pytest.MonkeyPatch.context() as mp:
        c_answers = lookups(path, values)
        python_path(mp)
        assert c_answers == lookups(path, values)


def test_the_c_reader_answers_common_records_and_hands_off_the_rest(
    tmp_path: Path, counted: list[str]
) -> None:
    values = [0, -1, 2**63 - 1, -(2**63), 2**63, 2**64, "A", "é", True, 1.5, "\udcff", ""]
    with SowStore(str(tmp_path)) as store:
        t = store.create_topic("t", keys=["/k"])
        publish_values(t, values[:6])
        t.publish({"k": "corr"}, correlation_id="c1")
    counted.clear()
    lookups(tmp_path, [*values, "corr"])
    # ints in int64 and non-empty text are read in C; past int64, other types, lone
    # surrogates, empty text, a record with a correlation id: the Python path decides.
    assert counted == ["c"] * 4 + ["py"] * 2 + ["c"] * 2 + ["py"] * 4 + ["py"]


def test_a_long_domain_is_hashed_by_the_packages_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[str]
) -> None:
    """Keys longer than the reader's scratch buffer take the digest call; same keys."""
    name = "t" * 300
    with SowStore(str(tmp_path)) as store:
        publish_values(store.create_topic(name, keys=["/k"]), [1, 2, "x"])
    values = [1, 2, 3, "x", "y"]
    c_answers = lookups(tmp_path, values, name)
    assert counted == ["c"] * 5
    python_path(monkeypatch)
    assert c_answers == lookups(tmp_path, values, name)
    assert [r is None for r in c_answers] == [False, False, True, False, True]


def test_lookup_admits_records_to_the_cache_within_its_budget(tmp_path: Path) -> None:
    with SowStore(str(tmp_path), cache_bytes=1 << 16) as store:
        t = store.create_topic("t", keys=["/k"])
        publish_values(t, list(range(500)))
    with SowStore(str(tmp_path), cache_bytes=1 << 16, readonly=True) as store:
        t = store.topic("t")
        cache = t._p.cache
        for _ in range(40):
            for k in range(500):
                assert doc_of(t, k) == {"k": k, "i": k}
        cache.check()
        assert 0 < len(cache) < 500
        assert cache.used <= cache.budget
        k = next(k for k in range(500) if t.lookup(k) is t.lookup(k))
        assert t.lookup(k) == t.get(t.key_for({"k": k}))
    with SowStore(str(tmp_path), cache_bytes=0, readonly=True) as store:
        t = store.topic("t")
        for k in range(500):
            t.lookup(k)
        assert len(t._p.cache) == 0


def test_lookup_sees_every_write_reload_and_compaction(tmp_path: Path) -> None:
    """The reader reads the key map's current table at each call: batch publishes that
    load the table whole, deletes, compaction and a writer's changes all show."""
    store = SowStore(str(tmp_path))
    t = store.create_topic("t", keys=["/k"])
    t.publish_many([{"k": k, "v": 0} for k in range(300)])
    assert doc_of(t, 7) == {"k": 7, "v": 0}
    t.publish({"k": 7, "v": 1})
    assert doc_of(t, 7) == {"k": 7, "v": 1}
    t.sow_delete_by_keys(t.key_for({"k": 8}))
    assert t.lookup(8) is None
    t.compact()
    assert doc_of(t, 7) == {"k": 7, "v": 1}
    assert t.lookup(8) is None
    t.publish_many([{"k": k, "v": 2} for k in range(300, 2000)])
    assert [doc_of(t, k)["v"] for k in (0, 7, 1999)] == [0, 1, 2]
    store.close()
    with pytest.raises(StoreClosedError):
        t.lookup(7)


def test_lookups_in_threads_beside_a_writer_see_whole_versions(tmp_path: Path) -> None:
    """Readers in two threads while a writer updates, deletes and compacts: every
    answer is a version that was published for that key, or None once deleted."""
    store = SowStore(str(tmp_path), cache_bytes=1 << 14)
    t = store.create_topic("t", keys=["/k"])
    t.publish_many([{"k": k, "v": 0} for k in range(200)])
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for v in range(1, 40):
                t.publish_many([{"k": k, "v": v} for k in range(0, 200, 3)])
                t.sow_delete_by_keys(t.key_for({"k": 199}))
                t.publish({"k": 199, "v": v})
                if v % 10 == 0:
                    t.compact()
        except BaseException as exc:  # every failure is reported below
            errors.append(exc)
        finally:
            stop.set()

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                k = rng.randrange(200)
                rec = t.lookup(k)
                if rec is None:
                    assert k == 199
                else:
                    assert rec.doc["k"] == k
                    assert 0 <= rec.doc["v"] < 40
        except BaseException as exc:  # every failure is reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(s,)) for s in range(2)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    store.close()
    assert errors == []


def test_an_expiration_pending_hands_lookup_to_the_python_path(
    tmp_path: Path, counted: list[str]
) -> None:
    now = [1000.0]
    store = SowStore(str(tmp_path), clock=lambda: now[0])
    t = store.create_topic("t", keys=["/k"], expiration="10s")
    t.publish({"k": 1})
    t.publish({"k": 2}, expiration=5)
    counted.clear()
    assert t.lookup(1) is not None
    assert t.lookup(2) is not None
    assert counted == ["py", "py"]
    now[0] = 1006.0
    assert t.lookup(2) is None
    store.close()


def test_the_reader_checks_how_it_is_called(tmp_path: Path) -> None:
    with SowStore(str(tmp_path)) as store:
        t = store.create_topic("t", keys=["/k"])
        reader: Any = t._read_key
        assert reader is not None
        with pytest.raises(TypeError):
            reader()
        with pytest.raises(TypeError):
            reader(1, 2)
        with pytest.raises(TypeError):
            reader(value=1)


# SOW keys a caller may pass to get: content keys' texts, texts that are not (leading
# zeros, past 2**64, other digits, signs, spaces) and values of other types.
SOW_KEYS = st.one_of(
    st.text(alphabet="0123456789", max_size=21),
    st.sampled_from(["0", "00", "18446744073709551615", "18446744073709551616", "-1", " 1"]),
    st.sampled_from(["\uff11\uff12", "\u00b2"]),  # digits str.isdigit takes, not ASCII
    st.integers(0, 10),
    st.none(),
)


def gets(path: Path, keys: list[Any]) -> list[Any]:
    with SowStore(str(path), cache_bytes=0) as store:
        t = store.topic("t")
        return [t.get(k) for k in keys]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(published=st.lists(st.integers(0, 30), max_size=10), probes=st.lists(SOW_KEYS, max_size=10))
def test_get_answers_as_the_python_path_for_any_sow_key(
    tmp_path_factory: pytest.TempPathFactory, published: list[int], probes: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("kg")
    with SowStore(str(path)) as store:
        t = store.create_topic("t", keys=["/k"])
        keys = [t.publish({"k": v}).sow_key for v in published]
        t.publish({"k": 99}, correlation_id="c")  # an entry the Python path reads
        keys.append(t.key_for({"k": 99}))
    values = keys + probes
    with pytest.MonkeyPatch.context() as mp:
        c_answers = gets(path, values)
        python_path(mp)
        assert c_answers == gets(path, values)


def test_get_of_a_content_key_is_read_in_c(tmp_path: Path, counted: list[str]) -> None:
    with SowStore(str(tmp_path)) as store:
        t = store.create_topic("t", keys=["/k"])
        key = t.publish({"k": 1}).sow_key
    counted.clear()
    assert [r.doc if r else r for r in gets(tmp_path, [key, "123", "0123", "x"])] == [
        {"k": 1},
        None,
        None,
        None,
    ]
    assert counted == ["c", "c", "py", "py"]  # not the text of a content key: Python path


# ---------------------------------------------------------------- the topic's front


def test_lookup_is_bound_to_the_topic_as_a_c_front(tmp_path: Path) -> None:
    """``topic.lookup`` is the C front; any call form answers as the Python method (the
    reference), and it reads as the method does (name, signature)."""
    import inspect

    from sowlib.topic.keyreads import KeyReads

    with SowStore(str(tmp_path)) as store:
        t = store.create_topic("t", keys=["/k"])
        publish_values(t, [1, 2, "x", 2**40])
        assert type(t.lookup).__name__ == "ByKey"
        for value in [1, 2, 3, "x", "y", 2**40, 2**70, True, 1.5, None, ""]:
            assert t.lookup(value) == KeyReads.lookup(t, value)
            assert t.lookup(k=value) == KeyReads.lookup(t, k=value)
        text = t.key_for({"k": 1})
        for key in [text, "0", "x", "99", 5]:
            assert t.get(key) == KeyReads.get(t, key)  # type: ignore[arg-type]
        assert t[1] == t.lookup(1)
        assert t.lookup.__name__ == "lookup"
        assert "key fields hold these values" in (t.lookup.__doc__ or "")
        params = inspect.signature(t.lookup).parameters
        assert [p.kind for p in params.values()] == [
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ]
        with pytest.raises(ArgumentError):
            t.lookup(1, 2)
        with pytest.raises(ArgumentError):
            t.lookup(1, k=1)
        with pytest.raises(TypeError):
            t.get()  # type: ignore[call-arg]


def _doc(rec: Record | None) -> Any:
    assert rec is not None
    return rec.doc


def test_a_front_held_by_the_caller_follows_reopen_lazy_writes_and_close(
    tmp_path: Path, counted: list[str]
) -> None:
    """A front taken once (``lookup = topic.lookup``) keeps answering as the topic: the
    C reader while it can, the Python path for a lazily written topic, an error once
    the topic is closed (never a record from a cleared cache)."""
    store = SowStore(str(tmp_path))
    t = store.create_topic("t", keys=["/k"])
    t.publish_many([{"k": k, "v": 0} for k in range(50)])
    lookup, get = t.lookup, t.get
    counted.clear()
    assert _doc(lookup(3)) == {"k": 3, "v": 0}
    assert _doc(get(t.key_for({"k": 3}))) == {"k": 3, "v": 0}
    assert counted == ["c", "c"]
    made: list[int] = []
    t.defer_writes(lambda: made.append(1))
    counted.clear()
    assert _doc(lookup(4)) == {"k": 4, "v": 0}
    assert counted == []  # the Python path,
    assert made  # after the lazy writer's changes
    store.close()
    with pytest.raises(StoreClosedError):
        lookup(3)
    with pytest.raises(StoreClosedError):
        get(t.key_for({"k": 3}))


def test_a_reopened_topic_keeps_its_fronts(tmp_path: Path) -> None:
    """A read-only opener whose writer compacted continues on the new file: the fronts
    it handed out before read the new file."""
    with SowStore(str(tmp_path)) as store:
        store.create_topic("t", keys=["/k"]).publish_many([{"k": k, "v": 0} for k in range(20)])
    writer = SowStore(str(tmp_path))
    reader = SowStore(str(tmp_path), readonly=True)
    t = reader.topic("t")
    lookup = t.lookup
    assert _doc(lookup(5)) == {"k": 5, "v": 0}
    w = writer.topic("t")
    w.publish_many([{"k": k, "v": 1} for k in range(20)])
    w.compact()
    t.refresh()
    assert _doc(lookup(5)) == {"k": 5, "v": 1} == _doc(t.lookup(5))
    writer.close()
    reader.close()


def test_the_front_type_checks_its_arguments() -> None:
    from sowlib.storage.native import optional_module

    module: Any = optional_module("sowlib.topic.keytable")
    with pytest.raises(TypeError):
        module.ByKey(1, len)
    with pytest.raises(TypeError):
        module.ByKey(len)
    front = module.ByKey(lambda *a, **k: ("fallback", a, k), lambda v: ("handed", v))
    assert front(1) == ("fallback", (1,), {})
    front.point(lambda v: NotImplemented if v == 2 else ("read", v))
    assert [front(1), front(2), front(1, 2), front(v=1)] == [
        ("read", 1),
        ("handed", 2),
        ("fallback", (1, 2), {}),
        ("fallback", (), {"v": 1}),
    ]
    with pytest.raises(TypeError):
        front.point(3)
    front.point(None)
    assert front(1) == ("fallback", (1,), {})
