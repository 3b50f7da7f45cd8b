"""Topic behaviour from the spec (§6, §8, §12.1) through the public API."""

from __future__ import annotations

import json
import os
import pickle
import threading
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import (
    DecodeError,
    InvalidSowKeyError,
    MissingKeyFieldError,
    ReadOnlyError,
    StoreClosedError,
    StoreLockedError,
    TopicExistsError,
    UnknownTopicError,
    UnsupportedOperationError,
)


def docs(records: list) -> list[dict]:
    return sorted((r.doc for r in records), key=lambda d: json.dumps(d, sort_keys=True))


def test_first_message_inserts_and_later_ones_replace_the_whole_record(any_store) -> None:
    t = any_store.create_topic("acct", keys=["/acct"])
    assert t.publish('{"acct":"A","bal":10,"note":"x"}').inserted
    assert t.publish('{"acct":"B","bal":20}').inserted
    result = t.publish('{"acct":"A","bal":15}')
    assert not result.inserted
    assert len(t) == 2
    assert t.get(result.sow_key).doc == {"acct": "A", "bal": 15}  # note is gone


def test_sequence_numbers_increase_and_records_carry_them(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    seqs = [t.publish({"id": i}).seq for i in range(5)]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 5
    rec = t.get(t.key_for({"id": 4}))
    assert rec.seq == seqs[-1]
    assert rec.timestamp == any_store.clock()


def test_publish_accepts_text_bytes_and_dicts(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    t.publish('{"id": 1}')
    t.publish(b'{"id": 2}')
    t.publish({"id": 3, "x": [1, 2]})
    assert docs(t.sow()) == [{"id": 1}, {"id": 2}, {"id": 3, "x": [1, 2]}]
    assert json.loads(t.get(t.key_for({"id": 3})).data) == {"id": 3, "x": [1, 2]}


def test_len_contains_iteration_and_key_for(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    k = t.publish({"id": 1}).sow_key
    assert k in t
    assert "nope" not in t
    assert t.key_for('{"id": 1, "other": 5}') == k
    assert [r.sow_key for r in t] == [k]
    assert t.get("nope") is None


def test_sow_by_keys_accepts_a_list_or_comma_separated_text(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    keys = [t.publish({"id": i}).sow_key for i in range(4)]
    assert {r.sow_key for r in t.sow(sow_keys=keys[:2])} == set(keys[:2])
    assert {r.sow_key for r in t.sow(sow_keys=f"{keys[1]},{keys[3]}")} == {keys[1], keys[3]}


def test_topics_are_scoped_by_name_and_message_type(any_store) -> None:
    a = any_store.create_topic("orders", keys=["/id"], message_type="json")
    b = any_store.create_topic("orders", keys=["/id"], message_type="msgpack")
    a.publish({"id": 1})
    assert len(b) == 0
    assert any_store.topic("orders", "json") is a
    assert any_store.topic("orders", "msgpack") is b


def test_unknown_topic_raises_a_key_error(any_store) -> None:
    with pytest.raises(UnknownTopicError):
        any_store.topic("missing")
    with pytest.raises(KeyError):
        any_store["missing"]


def test_create_topic_is_idempotent_but_refuses_a_different_config(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    assert any_store.create_topic("t", keys=["/id"]) is t
    with pytest.raises(TopicExistsError):
        any_store.create_topic("t", keys=["/other"])


def test_sow_delete_by_keys_ignores_unknown_well_formed_keys(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    k = t.publish({"id": 1}).sow_key
    t.publish({"id": 2})
    assert t.sow_delete_by_keys([k, "12345"]) == 1
    assert len(t) == 1
    assert t.sow_delete_by_keys(k) == 0


def test_malformed_key_in_delete_by_keys_deletes_nothing(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    k = t.publish({"id": 1}).sow_key
    with pytest.raises(InvalidSowKeyError):
        t.sow_delete_by_keys([k, "not a key!"])
    assert len(t) == 1


def test_sow_delete_by_data_computes_the_key(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    t.publish({"id": 1, "v": "a"})
    assert t.sow_delete_by_data('{"id": 1, "v": "anything"}') == 1
    assert t.sow_delete_by_data('{"id": 1}') == 0
    assert len(t) == 0


def test_sow_delete_by_filter_returns_the_count(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    for i in range(10):
        t.publish({"id": i, "region": "EU" if i % 2 else "US"})
    deleted = t.sow_delete("/region = 'EU'")
    assert deleted == 5
    assert deleted.records_deleted == 5
    assert deleted.topic_matches == 10
    assert {r.doc["region"] for r in t.sow()} == {"US"}
    assert t.sow_delete("1=1") == 5
    assert len(t) == 0


def test_delta_publish_merges_into_the_stored_record(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    t.publish({"id": 88, "client": "Rosa", "qty": 40, "stage": "new"})
    t.delta_publish({"id": 88, "stock": "ok"})
    result = t.delta_publish({"id": 88, "limit": "approved"})
    assert not result.inserted
    assert t.get(result.sow_key).doc == {
        "id": 88,
        "client": "Rosa",
        "qty": 40,
        "stage": "new",
        "stock": "ok",
        "limit": "approved",
    }


def test_delta_publish_without_a_stored_record_stores_the_delta(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    result = t.delta_publish({"id": 1, "x": 2})
    assert result.inserted
    assert t.get(result.sow_key).doc == {"id": 1, "x": 2}


def test_publisher_supplied_keys(any_store) -> None:
    t = any_store.create_topic("blobs")
    t.publish({"a": 1}, sow_key="k1")
    t.publish({"completely": "different"}, sow_key="k1")
    assert len(t) == 1
    assert t.get("k1").doc == {"completely": "different"}
    with pytest.raises(InvalidSowKeyError):
        t.publish({"a": 1})
    with pytest.raises(InvalidSowKeyError):
        t.publish({"a": 1}, sow_key="bad key")
    with pytest.raises(UnsupportedOperationError):
        t.sow_delete_by_data({"a": 1})


def test_sow_key_on_a_content_keyed_topic_is_rejected(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    with pytest.raises(InvalidSowKeyError):
        t.publish({"id": 1}, sow_key="abc")
    assert len(t) == 0


def test_malformed_message_is_rejected_and_nothing_changes(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    t.publish({"id": 1, "v": 1})
    for bad in ['{"id": 1, "v": ', "not json", b"\xff\xfe"]:
        with pytest.raises(DecodeError):
            t.publish(bad)
    with pytest.raises(MissingKeyFieldError) as info:
        t.publish('{"v": 2}')
    assert info.value.field == "/id"
    assert [r.doc for r in t.sow()] == [{"id": 1, "v": 1}]


def test_publish_many_is_all_or_nothing(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    with pytest.raises(MissingKeyFieldError):
        t.publish_many([{"id": 1}, {"nokey": 2}])
    assert len(t) == 0
    results = t.publish_many([{"id": 1}, {"id": 2}, {"id": 1, "v": 3}])
    assert [r.inserted for r in results] == [True, True, False]
    assert len(t) == 2


def test_closed_store_and_topic_raise(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    any_store.close()
    any_store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        t.publish({"id": 1})
    with pytest.raises(StoreClosedError):
        any_store.topic("t")


def test_many_threads_publish_and_read_one_topic(any_store) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    errors: list[BaseException] = []

    def work(base: int) -> None:
        try:
            for i in range(200):
                t.publish({"id": base * 1000 + i, "v": i})
                t.get(t.key_for({"id": base * 1000 + i}))
                if i % 50 == 0:
                    t.sow("/v > 10")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(t) == 800


# --------------------------------------------------------------------- persistence


def test_reopen_restores_every_topic_with_its_config(store_dir: Path, clock) -> None:
    with SowStore(store_dir, clock=clock) as store:
        t = store.create_topic("orders", keys=["/id"], hash_indexes=[["/region"]], indexes="/px")
        t.publish({"id": 1, "px": 5})
        store.create_topic("scratch", keys=["/id"], durability="transient").publish({"id": 1})
    with SowStore(store_dir, clock=clock) as store:
        t = store.topic("orders")
        assert t.config.keys == ("/id",)
        assert t.config.hash_indexes == (("/region",),)
        assert [r.doc for r in t.sow()] == [{"id": 1, "px": 5}]
        assert "scratch" not in store  # transient topics keep nothing


@pytest.mark.parametrize(
    "name", ["/ADMIN/bookmark_store", "../x", "a/../../b", "ünï cødé", "x" * 300]
)
def test_any_topic_name_maps_to_a_file_inside_the_directory(store_dir: Path, name: str) -> None:
    with SowStore(store_dir) as store:
        store.create_topic(name, keys=["/id"]).publish({"id": 1})
    files = [p for p in store_dir.rglob("*.sow")]
    assert len(files) == 1
    assert files[0].resolve().parent == store_dir.resolve()
    with SowStore(store_dir) as store:
        assert len(store.topic(name)) == 1


def test_reopen_after_clean_close_uses_the_checkpoint(store_dir: Path) -> None:
    with SowStore(store_dir) as store:
        t = store.create_topic("t", keys=["/id"])
        for i in range(100):
            t.publish({"id": i % 30, "v": i})
    with SowStore(store_dir) as store:
        t = store.topic("t")
        assert t.stats()["from_checkpoint"]
        assert len(t) == 30
        rec = t.get(t.key_for({"id": 29}))
        assert rec is not None
        assert rec.doc == {"id": 29, "v": 89}
        t.check()


def test_a_second_writer_is_refused_with_the_holder_pid(store_dir: Path) -> None:
    with SowStore(store_dir):
        with pytest.raises(StoreLockedError) as info:
            SowStore(store_dir)
        assert info.value.pid == os.getpid()


def test_readonly_openers_refresh_to_see_new_writes(store_dir: Path) -> None:
    with SowStore(store_dir) as writer:
        t = writer.create_topic("t", keys=["/id"])
        t.publish({"id": 1})
        reader = SowStore(store_dir, readonly=True)
        try:
            rt = reader.topic("t")
            assert len(rt) == 1
            t.publish({"id": 2})
            t.publish({"id": 1, "v": 2})
            writer.create_topic("new", keys=["/id"]).publish({"id": 9})
            assert reader.refresh() >= 2
            assert len(rt) == 2
            rec = rt.get(t.key_for({"id": 1}))
            assert rec is not None
            assert rec.doc == {"id": 1, "v": 2}
            assert len(reader.topic("new")) == 1
            with pytest.raises(ReadOnlyError):
                rt.publish({"id": 3})
            t.compact()
            reader.refresh()
            assert {r.sow_key for r in reader.topic("t").sow()} == {r.sow_key for r in t.sow()}
        finally:
            reader.close()


def test_a_store_pickles_as_a_readonly_reopen(store_dir: Path) -> None:
    with SowStore(store_dir) as store:
        store.create_topic("t", keys=["/id"]).publish({"id": 1})
        clone = pickle.loads(pickle.dumps(store))
        assert clone.readonly
        assert len(clone.topic("t")) == 1
        store.topic("t").publish({"id": 2})
        assert len(pickle.loads(pickle.dumps(store)).topic("t")) == 2  # cached and refreshed


def test_compaction_keeps_the_records_and_shrinks_the_file(store_dir: Path) -> None:
    with SowStore(store_dir) as store:
        t = store.create_topic("t", keys=["/id"], auto_compact=None)
        for i in range(3000):
            t.publish({"id": i % 100, "payload": "x" * 100, "v": i})
        before = t.stats()["used_bytes"]
        expected = {r.sow_key: r.doc for r in t.sow()}
        t.compact()
        assert t.stats()["used_bytes"] < before / 10
        assert {r.sow_key: r.doc for r in t.sow()} == expected
        t.check()
    with SowStore(store_dir) as store:
        assert {r.sow_key: r.doc for r in store.topic("t").sow()} == expected


def test_automatic_compaction_bounds_the_file(store_dir: Path) -> None:
    with SowStore(store_dir) as store:
        t = store.create_topic("t", keys=["/id"], auto_compact=0.5)
        for i in range(40000):
            t.publish({"id": i % 100, "payload": "y" * 100})
        stats = t.stats()
        # Files under 1 MiB are never compacted; above that garbage stays <= 50%.
        assert stats["used_bytes"] <= max(2 * stats["live_bytes"], 1 << 20) + 4096
        assert stats["file_bytes"] < 3 << 20
        assert len(t) == 100


def test_sync_durability_flushes_every_publish(store_dir: Path) -> None:
    with SowStore(store_dir) as store:
        t = store.create_topic("t", keys=["/id"], durability="sync")
        t.publish({"id": 1})
    with SowStore(store_dir) as store:
        assert store.topic("t").config.durability == "sync"
        assert len(store.topic("t")) == 1


def test_binary_topics_need_keys_and_cannot_be_content_filtered(any_store) -> None:
    t = any_store.create_topic("raw", message_type="binary")
    t.publish(b"\x00\x01\x02", sow_key="k")
    assert [r.data for r in t.sow("1=1")] == [b"\x00\x01\x02"]
    assert [r.data for r in t.sow(sow_keys=["k"])] == [b"\x00\x01\x02"]
    with pytest.raises(UnsupportedOperationError):
        t.sow("/a = 1")
    with pytest.raises(UnsupportedOperationError):
        t.delta_publish(b"x", sow_key="k")


def test_store_sow_queries_every_topic_matching_a_regex(any_store) -> None:
    any_store.create_topic("ord.eu", keys=["/id"]).publish({"id": 1, "px": 5})
    any_store.create_topic("ord.us", keys=["/id"]).publish({"id": 1, "px": 50})
    any_store.create_topic("other", keys=["/id"]).publish({"id": 1, "px": 500})
    got = any_store.sow("ord.*", "/px > 1")
    assert sorted(r.topic for r in got) == ["ord.eu", "ord.us"]
