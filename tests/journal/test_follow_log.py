"""Following a journal-format log another process writes (``LogTail``): the pub/sub
bus and the transaction log as a read-only process sees them.

Each writer here is a separate Python process; the test process follows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sowlib.errors import ConfigError, CorruptRecordError, ReadOnlyError, StoreClosedError
from sowlib.journal import Entry, FollowedJournal, Journal, LogTail, PubSubBus
from sowlib.journal.bus import KEEP

pytestmark = pytest.mark.slow  # subprocesses

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0


def write_bus(directory: Path, first: int, count: int, file_size: int, pause: float = 0) -> None:
    """A writer process appending ``count`` publishes (``n`` from ``first``) to the bus."""
    code = textwrap.dedent(
        f"""
        import time
        from sowlib.journal import PubSubBus
        bus = PubSubBus({str(directory)!r}, file_size={file_size})
        for n in range({first}, {first + count}):
            bus.append("t", "json", b'{{"n": %d, "pad": "%s"}}' % (n, b"x" * 100))
            if {pause}:
                time.sleep({pause})
        bus.close()
        """
    )
    subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=WAIT,
    )


def numbers(entries: list[Entry]) -> list[int]:
    return [json.loads(e.data)["n"] for e in entries]


def test_a_tail_follows_a_writer_process_across_file_rollover(tmp_path: Path) -> None:
    bus = tmp_path / "bus"
    tail = LogTail(str(bus))
    assert tail.poll() == []  # no directory yet: nothing, no error
    write_bus(bus, 0, 30, file_size=2048)
    assert 1 < len(list(bus.glob("journal-*.log"))) <= KEEP  # rolled, nothing trimmed
    got = tail.poll()
    assert numbers(got) == list(range(30))
    assert [e.seq for e in got] == list(range(1, 31))
    assert tail.gaps == 0
    tail.close()


def test_a_tail_behind_a_trim_reads_its_open_file_then_skips_to_what_is_kept(
    tmp_path: Path,
) -> None:
    """The writer keeps KEEP files: a reader that fell further behind reads the file it
    holds open to its end, then goes on with the oldest kept file (a gap, counted)."""
    bus = tmp_path / "bus"
    write_bus(bus, 0, 3, file_size=1024)
    tail = LogTail(str(bus))
    assert numbers(tail.poll()) == [0, 1, 2]  # it holds the first file open
    write_bus(bus, 3, 200, file_size=1024)
    assert len(list(bus.glob("journal-*.log"))) == KEEP
    got = numbers(tail.poll())
    assert got[:3] == [3, 4, 5]  # the rest of the open (now deleted) file, to its seal
    jump = next(i for i in range(1, len(got)) if got[i] != got[i - 1] + 1)
    assert got[jump:] == list(range(got[jump], 203))  # every kept file, in order
    assert tail.gaps == 1
    tail.close()


def test_a_tail_continues_when_the_writer_restarts(tmp_path: Path) -> None:
    bus = tmp_path / "bus"
    write_bus(bus, 0, 5, file_size=1 << 20)
    tail = LogTail.at_end(str(bus))  # a reader that starts now sees only what follows
    assert tail.poll() == []
    write_bus(bus, 5, 5, file_size=1 << 20)  # a new writer process, same bus
    got = tail.poll()
    assert numbers(got) == [5, 6, 7, 8, 9]
    assert [e.seq for e in got] == sorted({e.seq for e in got})
    tail.close()


def test_a_tail_follows_while_the_writer_writes(tmp_path: Path) -> None:
    bus = tmp_path / "bus"
    tail = LogTail(str(bus))
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time
                from sowlib.journal import PubSubBus
                bus = PubSubBus({str(bus)!r}, file_size=4096)
                for n in range(300):
                    bus.append("t", "json", b'{{"n": %d}}' % n)
                    time.sleep(0.0005)
                bus.close()
                """
            ),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    got: list[Entry] = []
    deadline = time.monotonic() + WAIT
    while len(got) < 300 and time.monotonic() < deadline:
        got.extend(tail.poll())
        time.sleep(0.001)
    assert writer.wait(WAIT) == 0
    assert numbers(got) == list(range(300))
    tail.close()


def test_a_damaged_frame_is_reported_not_skipped(tmp_path: Path) -> None:
    bus = tmp_path / "bus"
    write_bus(bus, 0, 3, file_size=1 << 20)
    (path,) = bus.glob("journal-*.log")
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF  # inside the first entry, with more entries after it
    path.write_bytes(bytes(data))
    tail = LogTail(str(bus))
    with pytest.raises(CorruptRecordError):
        tail.poll()
    tail.close()


def test_a_followed_journal_replays_then_offers_the_writers_new_entries(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "j", ["chat"], file_size=512)
    for n in range(10):
        journal.record("publish", "chat", "json", b'{"n": %d}' % n)
    reader = FollowedJournal(tmp_path / "j", ["chat"])
    assert reader.id == journal.id
    assert reader.last_bookmark() == journal.last_bookmark()
    got: list[Entry] = []
    sub = reader.subscribe(got.append, "chat", f"{journal.id}|4|")
    assert [e.seq for e in got] == list(range(5, 11))
    for n in range(10, 20):
        journal.record("publish", "chat", "json", b'{"n": %d}' % n)
    assert reader.poll() is True
    assert [e.seq for e in got] == list(range(5, 21))
    sub.unsubscribe()
    reader.close()
    assert reader.poll() is False
    with pytest.raises(StoreClosedError):
        reader.subscribe(got.append, "chat")
    journal.close()


def test_a_followed_journal_refuses_writes_and_a_missing_journal(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no transaction log yet"):
        FollowedJournal(tmp_path / "nothing", ["chat"])
    Journal(tmp_path / "j", ["chat"]).close()
    reader = FollowedJournal(tmp_path / "j", ["chat"])
    with pytest.raises(ReadOnlyError):
        reader.record("publish", "chat", "json", b"{}")
    reader.close()


def test_the_bus_refuses_appends_once_closed(tmp_path: Path) -> None:
    bus = PubSubBus(str(tmp_path / "bus"))
    assert bus.append("t", "json", b"{}").seq == 1
    bus.close()
    with pytest.raises(StoreClosedError):
        bus.append("t", "json", b"{}")
