"""The transaction log: entries, torn tails, corruption, retention, config, live catch-up."""

from __future__ import annotations

import errno
import io
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.cli import main as cli_main
from sowlib.errors import (
    ConfigError,
    CorruptRecordError,
    FormatVersionError,
    NotJournaledError,
    QueryOptionError,
    SowError,
    StoreFullError,
)
from sowlib.journal import Entry, Journal, Position, journal_from_config, parse_bookmark
from sowlib.journal.frames import encode
from sowlib.storage import FileSystem


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def segment(directory: Path) -> Path:
    (path,) = sorted(directory.glob("journal-*.log"))[-1:]
    return path


def test_records_survive_reopen_and_seq_continues(tmp_path: Path) -> None:
    with Journal(tmp_path, ["t"]) as journal:
        journal.record("publish", "t", "json", b'{"a": 1}', sow_key="k", correlation_id=b"c")
        ident = journal.id
    with Journal(tmp_path, ["t"]) as journal:
        assert journal.id == ident
        entry = journal.record("delete", "t", "json", b'{"a": 1}')
        assert entry.seq == 2
        kinds = [(e.kind, e.sow_key, e.correlation_id) for e in journal.replay()]
        assert kinds == [("publish", "k", b"c"), ("delete", "", b"")]


def test_a_cut_after_a_clean_close_is_corruption_not_a_torn_write(tmp_path: Path) -> None:
    with Journal(tmp_path, ["t"]) as journal:
        for i in range(3):
            journal.record("publish", "t", "json", b"{}" * (i + 1))
    path = segment(tmp_path)
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(size - 3)
    with pytest.raises(CorruptRecordError):
        Journal(tmp_path, ["t"])
    assert path.stat().st_size == size - 3  # reported, nothing cut


def test_torn_write_after_a_crash_is_cut_and_its_seq_is_never_reused(tmp_path: Path) -> None:
    crashed = Journal(tmp_path, ["t"])  # never closed: the process "dies"
    for i in range(3):
        crashed.record("publish", "t", "json", b"{}" * (i + 1))
    path = segment(tmp_path)
    whole = path.read_bytes()
    crashed.record("delete", "t", "json", b"{}", sow_key="k")
    torn = path.read_bytes()[: len(whole) + 10]  # the delete was written in part
    path.write_bytes(torn)
    with Journal(tmp_path, ["t"]) as journal:
        assert [e.seq for e in journal.replay()] == [1, 2, 3]
        entry = journal.record("publish", "t", "json", b"{}")
        assert entry.seq > 4  # 4 may have reached a live subscriber: never issued again
    with Journal(tmp_path, ["t"]) as journal:
        assert [e.seq for e in journal.replay()] == [1, 2, 3, entry.seq]
        assert journal.record("publish", "t", "json", b"{}").seq == entry.seq + 1


def test_bad_entry_in_the_middle_is_corruption(tmp_path: Path) -> None:
    with Journal(tmp_path, ["t"]) as journal:
        for _ in range(3):
            journal.record("publish", "t", "json", b'{"x": "payload"}')
    path = segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[40] ^= 0xFF  # inside the first entry
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError):
        Journal(tmp_path, ["t"])


def test_retention_removes_whole_old_files(tmp_path: Path) -> None:
    clock = Clock()
    journal = Journal(tmp_path, ["t"], retention="1h", file_size=200, clock=clock)
    for _ in range(20):
        journal.record("publish", "t", "json", b'{"x": "0123456789"}')
    clock.now += 7200
    journal.record("publish", "t", "json", b'{"x": "new"}')
    for _ in range(5):
        journal.record("publish", "t", "json", b'{"x": "0123456789"}')
    seqs = [e.seq for e in journal.replay()]
    assert seqs[0] > 1
    assert seqs[-1] == 26
    assert seqs == list(range(seqs[0], 27))
    # a replay from a bookmark older than the retained start begins at the oldest entry
    got: list[Entry] = []
    journal.subscribe(got.append, "t", "0")
    assert [e.seq for e in got] == seqs
    journal.close()


def test_store_changes_are_recorded_through_the_public_topic_api(tmp_path: Path) -> None:
    clock = Clock()
    store = SowStore(clock=clock)
    orders = store.create_topic("orders", keys=["/id"], expiration="enabled")
    store.create_topic("other", keys=["/id"])
    orders.publish({"id": 0})  # before the journal: not recorded
    journal = Journal(tmp_path, ["orders"], clock=clock)
    assert journal.watch(store) == 1
    orders.publish({"id": 1}, expiration=5)
    orders.delta_publish({"id": 1, "x": 2}, expiration=5)
    orders.sow_delete("/id = 0")
    clock.now += 10
    store.process_expirations()
    store.topic("other").publish({"id": 9})
    entries = list(journal.replay())
    assert [e.kind for e in entries] == ["publish", "publish", "delete", "expire"]
    assert entries[1].data == entries[3].data  # the merged record was journalled
    assert b'"x"' in entries[1].data
    assert b'"id"' in entries[1].data
    assert {e.topic for e in entries} == {"orders"}
    journal.close()
    store.close()


def test_live_catch_up_has_no_gap_and_no_duplicate(tmp_path: Path) -> None:
    journal = Journal(tmp_path, ["t"])
    for i in range(2000):
        journal.record("publish", "t", "json", f'{{"i": {i}}}'.encode())
    got: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            journal.record("publish", "t", "json", b'{"i": -1}')

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        journal.subscribe(lambda e: got.append(e.seq), "t", "0")
    finally:
        stop.set()
        thread.join()
    assert got == list(range(1, len(got) + 1))  # in order, no gap, no duplicate
    assert len(got) >= 2000
    journal.record("publish", "t", "json", b'{"i": -2}')
    assert got[-1] == len(got) == max(e.seq for e in journal.replay())  # still live
    journal.close()


def test_bookmark_forms(tmp_path: Path) -> None:
    assert parse_bookmark("0", 7) == Position()
    assert parse_bookmark("0|1|", 7) == Position(live_only=True)
    assert parse_bookmark("7|12|", 7) == Position(after=12)
    assert parse_bookmark("7|12|,7|3|", 7) == Position(after=3)
    assert parse_bookmark("20240101T000000Z", 7).since == 1704067200.0
    for bad in ("8|12|", "nonsense", "", "7|x|", "20241301T000000Z", "12"):
        with pytest.raises(QueryOptionError):
            parse_bookmark(bad, 7)


def test_subscribe_to_an_unrecorded_topic(tmp_path: Path) -> None:
    with Journal(tmp_path, ["orders"]) as journal:
        with pytest.raises(NotJournaledError):
            journal.subscribe(print, "positions")
        with pytest.raises(ConfigError):
            journal.subscribe(print, "(bad")


CONFIG = """<AMPSConfig><TransactionLog>
  <JournalDirectory>{dir}</JournalDirectory>
  <FileSize>1MB</FileSize>
  <PreallocatedJournalFiles>2</PreallocatedJournalFiles>
  <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  <Topic><Name>fx.*</Name></Topic>
  {extra}
</TransactionLog>
<Actions><Action>
  <On><Module>amps-action-on-schedule</Module><Options><Every>1h</Every></Options></On>
  <Do><Module>amps-action-do-remove-journal</Module><Options><Age>2d</Age></Options></Do>
</Action></Actions></AMPSConfig>"""


def test_transaction_log_config_relative_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(CONFIG.format(dir="./journal", extra=""))
    journal = journal_from_config(path)
    assert journal is not None
    assert journal.directory == str(tmp_path / "journal")
    assert journal.retention == 2 * 86400
    assert journal.covers("orders", "json")
    assert journal.covers("fx.eur")
    assert not journal.covers("orders", "xml")
    assert not journal.covers("rates")
    journal.close()


@pytest.mark.parametrize(
    ("text", "base"),
    [
        (CONFIG.format(dir="j", extra="<Bogus/>"), True),
        (CONFIG.format(dir="j", extra="<Topic><MessageType>json</MessageType></Topic>"), True),
        (CONFIG.format(dir="j", extra=""), False),  # relative, no file, no base_dir
        (
            "<AMPSConfig><TransactionLog><Topic><Name>a</Name></Topic></TransactionLog></AMPSConfig>",
            True,
        ),
        ("<AMPSConfig", True),
    ],
)
def test_bad_transaction_log_config(tmp_path: Path, text: str, base: bool) -> None:
    with pytest.raises(ConfigError):
        journal_from_config(text.encode(), base_dir=tmp_path if base else None)


def test_no_transaction_log_section(tmp_path: Path) -> None:
    assert journal_from_config(b"<AMPSConfig><SOW/></AMPSConfig>") is None
    assert not os.listdir(tmp_path)


def test_restore_rebuilds_a_lost_sow_from_the_journal(tmp_path: Path) -> None:
    clock = Clock()
    store = SowStore(clock=clock)
    orders = store.create_topic("orders", keys=["/id"], expiration="enabled")
    journal = Journal(tmp_path / "j", ["orders"], clock=clock)
    journal.watch(store)
    for i in range(1, 5):
        orders.publish({"id": i, "v": i})
    orders.delta_publish({"id": 2, "v": 20})
    orders.sow_delete("/id = 3")
    orders.publish({"id": 4, "v": 4}, expiration=5)
    clock.now += 10
    expected = {r.doc["id"]: r.doc for r in orders.sow()}
    journal.close()

    fresh = SowStore(clock=clock).create_topic("orders", keys=["/id"], expiration="enabled")
    again = Journal(tmp_path / "j", ["orders"], clock=clock)
    assert again.restore(fresh) == 8  # 4 publishes, a delta, a delete, a publish, an expiry
    assert (
        {r.doc["id"]: r.doc for r in fresh.sow()}
        == expected
        == {
            1: {"id": 1, "v": 1},
            2: {"id": 2, "v": 20},
        }
    )
    again.watch_topic(fresh)
    with pytest.raises(ConfigError):
        again.restore(fresh)
    again.close()


def test_watch_refills_an_empty_topic_unless_recovery_point_is_now(tmp_path: Path) -> None:
    def life(recovery: str | None) -> SowStore:
        store = SowStore()
        options = {"recovery_point": recovery} if recovery else {}
        store.create_topic("orders", keys=["/id"], durability="transient", options=options)
        return store

    first = life(None)
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(first)
        for i in range(3):
            first.topic("orders").publish({"id": i})
        first.topic("orders").sow_delete("/id = 0")
    second = life(None)
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(second)  # a transient topic is refilled from the log
        assert sorted(r.doc["id"] for r in second.topic("orders").sow()) == [1, 2]
        second.topic("orders").publish({"id": 7})
        assert max(e.seq for e in journal.replay()) == 5  # the refill was not journalled again
    third = life("now")
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(third)
        assert len(third.topic("orders")) == 0


def test_missing_sow_file_is_rebuilt_from_the_journal(tmp_path: Path) -> None:
    store = SowStore(tmp_path / "sow")
    journal = Journal(tmp_path / "journal", ["orders"])
    store.create_topic("orders", keys=["/id"])
    journal.watch(store)
    for i in range(5):
        store.topic("orders").publish({"id": i, "v": i})
    path = Path(str(store.topic("orders").stats()["path"]))
    store.close()
    journal.close()
    path.unlink()
    for extra in path.parent.glob(path.name + ".*"):
        extra.unlink()
    store = SowStore(tmp_path / "sow")
    orders = store.create_topic("orders", keys=["/id"])
    with Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(store)
        assert sorted(r.doc["v"] for r in orders.sow()) == [0, 1, 2, 3, 4]
    store.close()


def test_restore_from_a_recovery_point(tmp_path: Path) -> None:
    clock = Clock()
    store = SowStore(clock=clock)
    orders = store.create_topic("orders", keys=["/id"])
    journal = Journal(tmp_path, ["orders"], clock=clock)
    journal.watch(store)
    first = orders.publish({"id": 1})
    clock.now += 100
    orders.publish({"id": 2})
    orders.publish({"id": 3})
    mark = journal.bookmark(next(e for e in journal.replay() if e.seq == first.seq))

    def refilled(point: str) -> list[int]:
        fresh = SowStore(clock=clock)
        topic = fresh.create_topic(
            "orders", keys=["/id"], durability="transient", options={"recovery_point": point}
        )
        journal.watch_topic(topic)
        return sorted(r.doc["id"] for r in topic.sow())

    assert refilled("epoch") == [1, 2, 3]
    assert refilled("now") == []
    assert refilled(mark) == [2, 3]
    assert refilled("19700112T134700Z") == [2, 3]  # 1_000_020 s: after the first publish
    with pytest.raises(ConfigError):  # the store checks the value when the topic is defined
        refilled("yesterday")
    journal.close()


# ---------------------------------------------------------------- issue 28: the log's promises


def test_a_damaged_last_delete_is_reported_not_cut_so_the_key_stays_deleted(
    tmp_path: Path,
) -> None:
    store = SowStore()
    orders = store.create_topic("orders", keys=["/id"])
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(store)
        orders.publish({"id": 1})
        orders.sow_delete_by_keys(orders.key_for({"id": 1}))  # the last entry
    path = segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[-60] ^= 0x10  # inside the delete or the commit mark after it
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError):
        Journal(tmp_path, ["orders"])
    assert path.read_bytes() == bytes(data)


def test_a_cut_older_segment_is_corruption(tmp_path: Path) -> None:
    with Journal(tmp_path, ["t"], file_size=200) as journal:
        for i in range(12):
            journal.record("publish", "t", "json", b'{"x": %d}' % i)
    oldest = sorted(tmp_path.glob("journal-*.log"))[0]
    oldest.write_bytes(oldest.read_bytes()[:-5])
    with pytest.raises(CorruptRecordError):
        Journal(tmp_path, ["t"])


def test_a_flipped_length_field_is_reported(tmp_path: Path) -> None:
    with Journal(tmp_path, ["t"]) as journal:
        for i in range(11):
            journal.record("publish", "t", "json", b'{"x": %d}' % i)
    path = segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[8 + 3 * 70] ^= 0x01  # somewhere in the first entries' frames
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError), Journal(tmp_path, ["t"]) as journal:
        list(journal.replay())


def test_a_format_1_journal_opens_and_continues_in_a_format_2_file(tmp_path: Path) -> None:
    old = [Entry(i, 1000.0 + i, "publish", "t", "json", b'{"x": %d}' % i) for i in (1, 2, 3)]
    data = b"SOWJRN01" + b"".join(encode(e) for e in old)
    (tmp_path / "journal-0000000000000001.log").write_bytes(data)
    (tmp_path / "journal.id").write_text("77\n")
    with Journal(tmp_path, ["t"]) as journal:
        assert list(journal.replay()) == old
        assert journal.record("publish", "t", "json", b"{}").seq == 4
    newest = segment(tmp_path)
    assert newest.name == "journal-0000000000000004.log"
    assert newest.read_bytes()[:8] == b"SOWJRN02"
    with Journal(tmp_path, ["t"]) as journal:
        assert [e.seq for e in journal.replay()] == [1, 2, 3, 4]


def test_an_unknown_journal_file_is_a_format_version_error(tmp_path: Path) -> None:
    (tmp_path / "journal-0000000000000001.log").write_bytes(b"SOWJRN09" + bytes(40))
    with pytest.raises(FormatVersionError):
        Journal(tmp_path, ["t"])


class FullAfter(FileSystem):
    """Writes fail with ENOSPC once ``room`` bytes are spent (None: unlimited)."""

    def __init__(self) -> None:
        super().__init__()
        self.room: int | None = None

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        if self.room is not None:
            if len(data) > self.room:
                # a short write first: half an entry reaches the file
                done = os.write(fd, bytes(data[: self.room]))
                self.room = 0
                if done:
                    return done
                raise OSError(errno.ENOSPC, "No space left on device")
            self.room -= len(data)
        return os.write(fd, data)


def test_a_journal_write_that_fails_fails_the_publish_and_leaves_nothing_half_written(
    tmp_path: Path,
) -> None:
    fs = FullAfter()
    store = SowStore(tmp_path / "sow")
    orders = store.create_topic("orders", keys=["/id"])
    journal = Journal(tmp_path / "journal", ["orders"], fs=fs)
    journal.watch(store)
    orders.publish({"id": 1, "v": 1})
    path = segment(tmp_path / "journal")
    size = path.stat().st_size
    fs.room = 10
    with pytest.raises(StoreFullError):
        orders.publish({"id": 2, "v": 2, "pad": "x" * 200})
    assert path.stat().st_size == size  # the short write was cut back
    fs.room = None
    orders.publish({"id": 3, "v": 3})
    journal.close()
    store.close()
    store = SowStore(tmp_path / "sow")
    with Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(store)  # the unacknowledged publish leaves the SOW
        assert sorted(r.doc["id"] for r in store.topic("orders").sow()) == [1, 3]
        assert [e.seq for e in journal.replay()] == [1, 2]
    store.close()


def test_reconcile_removes_what_was_never_journalled_from_a_topic_the_journal_holds(
    tmp_path: Path,
) -> None:
    store = SowStore(tmp_path / "sow")
    orders = store.create_topic("orders", keys=["/id"])
    with Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(store)
        orders.publish({"id": 1, "v": 1})
        orders.publish({"id": 2, "v": 1})
    # changes the journal never saw (a kill between the SOW and the journal write)
    orders.publish({"id": 3, "v": 1})
    orders.publish({"id": 1, "v": 2})
    orders.sow_delete_by_keys(orders.key_for({"id": 2}))
    with Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(store)
        assert sorted((r.doc["id"], r.doc["v"]) for r in orders.sow()) == [(1, 1), (2, 1)]
    store.close()


def test_reconcile_keeps_what_a_topic_held_before_it_was_journalled(tmp_path: Path) -> None:
    store = SowStore()
    orders = store.create_topic("orders", keys=["/id"])
    orders.publish({"id": 1, "v": 0})
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(store)
        orders.publish({"id": 2, "v": 1})
    orders.publish({"id": 2, "v": 9})  # never journalled
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(store)
        assert sorted((r.doc["id"], r.doc["v"]) for r in orders.sow()) == [(1, 0), (2, 1)]


class Interrupted(Exception):
    pass


class DiesAfter:
    """A topic whose ``publish`` fails after ``n`` calls: a refill cut short."""

    def __init__(self, topic: Any, n: int) -> None:
        self.topic, self.n = topic, n
        self.name = topic.name

    @property
    def message_type(self) -> str:
        return str(self.topic.message_type)

    def __len__(self) -> int:
        return len(self.topic)

    def publish(self, data: bytes, **kw: Any) -> Any:
        self.n -= 1
        if self.n < 0:
            raise Interrupted
        return self.topic.publish(data, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.topic, name)


def test_an_interrupted_refill_is_finished_by_the_next_open(tmp_path: Path) -> None:
    store = SowStore()
    orders = store.create_topic("orders", keys=["/id"])
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(store)
        for i in range(10):
            orders.publish({"id": i})
        orders.sow_delete_by_keys(orders.key_for({"id": 0}))
    fresh = SowStore()
    lost = fresh.create_topic("orders", keys=["/id"])
    journal = Journal(tmp_path, ["orders"])
    with pytest.raises(Interrupted):
        journal.watch_topic(DiesAfter(lost, 4))
    assert 0 < len(lost) < 9  # half refilled, no longer empty
    journal.close()
    with Journal(tmp_path, ["orders"]) as journal:
        journal.watch(fresh)
        assert sorted(r.doc["id"] for r in lost.sow()) == list(range(1, 10))


def test_verify_repairs_a_journal_directory(tmp_path: Path) -> None:
    with Journal(tmp_path, ["t"], file_size=200) as journal:
        for i in range(12):
            journal.record("publish", "t", "json", b'{"x": %d}' % i)
    second = sorted(tmp_path.glob("journal-*.log"))[1]
    data = bytearray(second.read_bytes())
    data[20] ^= 0x04
    second.write_bytes(bytes(data))
    out = io.StringIO()
    assert cli_main(["verify", str(tmp_path)], out=out) == 1
    assert "CORRUPT journal" in out.getvalue()
    assert cli_main(["verify", str(second)], out=io.StringIO()) == 1  # a file: its journal
    assert "lost_seqs=['" in out.getvalue()
    assert cli_main(["verify", "--repair", str(tmp_path)], out=out) == 0
    assert (tmp_path / (second.name + ".corrupt")).read_bytes() == bytes(data)
    with Journal(tmp_path, ["t"]) as journal:
        seqs = [e.seq for e in journal.replay()]
        assert 1 in seqs
        assert 12 in seqs
        assert len(seqs) < 12
        assert journal.record("publish", "t", "json", b"{}").seq == 13


def test_a_full_segment_left_by_a_crash_is_sealed_by_the_next_roll(tmp_path: Path) -> None:
    crashed = Journal(tmp_path, ["t"], file_size=120)  # never closed
    crashed.record("publish", "t", "json", b'{"x": "0123456789012345678901234567890"}')
    crashed.record("publish", "t", "json", b'{"x": "0123456789012345678901234567890"}')
    assert len(list(tmp_path.glob("journal-*.log"))) == 1  # full; the next entry rolls
    with Journal(tmp_path, ["t"], file_size=120) as journal:  # its segment is full
        journal.record("publish", "t", "json", b"{}")
    with Journal(tmp_path, ["t"], file_size=120) as journal:
        assert len(list(journal.replay())) == 3


@pytest.mark.parametrize("damage", [b"\xb6", b"7"])
def test_a_damaged_journal_id_is_reported_and_repaired_from_the_state_file(
    tmp_path: Path, damage: bytes
) -> None:
    with Journal(tmp_path, ["t"]) as journal:
        journal.record("publish", "t", "json", b"{}")
        ident = journal.id
    path = tmp_path / "journal.id"
    text = path.read_bytes()
    path.write_bytes(damage + text[1:] if text[:1] != damage else b"8" + text[1:])
    with pytest.raises(SowError):
        Journal(tmp_path, ["t"])
    assert cli_main(["verify", "--repair", str(tmp_path)], out=io.StringIO()) == 0
    with Journal(tmp_path, ["t"]) as journal:
        assert journal.id == ident
        assert [e.seq for e in journal.replay()] == [1]


def test_a_reader_watching_leaves_reconciliation_to_the_writer(tmp_path: Path) -> None:
    store = SowStore(tmp_path / "sow")
    orders = store.create_topic("orders", keys=["/id"])
    with Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(store)
        orders.publish({"id": 1, "v": 1})
    orders.publish({"id": 1, "v": 2})  # never journalled
    store.close()
    reader = SowStore(tmp_path / "sow", readonly=True)
    with reader, Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(reader)  # cannot write: sees what the writer stored
        assert [r.doc["v"] for r in reader.topic("orders").sow()] == [2]
    writer = SowStore(tmp_path / "sow")
    with writer, Journal(tmp_path / "journal", ["orders"]) as journal:
        journal.watch(writer)
        assert [r.doc["v"] for r in writer.topic("orders").sow()] == [1]
