"""The outbox channels: one owner appends checksummed requests, the writer's process
reads them in order, across file rolls; damage is reported, never skipped; the
owner's lock says whether it lives."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sowlib.errors import CorruptRecordError, FormatVersionError, StoreClosedError
from sowlib.journal.outbox import (
    ChannelReader,
    ChannelWriter,
    channel_names,
    lock_held,
    outbox_directory,
)

ROOT = Path(__file__).resolve().parents[2]


def test_requests_arrive_in_order_with_their_fields(tmp_path: Path) -> None:
    box = outbox_directory(str(tmp_path))
    writer = ChannelWriter(box, "1-abc-0.out")
    reader = ChannelReader(box, "1-abc-0.out")
    assert reader.poll() == []
    writer.append("news", "json", b'{"n": 1}', op="publish", correlation_id=b"c1")
    writer.append("news", "xml", b"<n>2</n>", op="publish", expiration=30.0)
    got = reader.poll()
    assert [(e.topic, e.message_type, e.data, e.sow_key) for e in got] == [
        ("news", "json", b'{"n": 1}', "publish"),
        ("news", "xml", b"<n>2</n>", "publish"),
    ]
    assert got[0].correlation_id == b"c1"
    assert got[1].expiration == 30.0
    assert reader.poll() == []
    assert channel_names(box) == {"1-abc-0.out"}
    writer.close()
    reader.close()


def test_a_full_file_is_sealed_and_deleted_once_read(tmp_path: Path) -> None:
    box = str(tmp_path)
    writer = ChannelWriter(box, "w.out", file_size=300)
    reader = ChannelReader(box, "w.out")
    sent = [f'{{"n": {n}}}'.encode() for n in range(40)]
    for data in sent[:20]:
        writer.append("t", "json", data, op="publish")
    assert len(list(tmp_path.glob("w.out.*.log"))) > 2  # rolled
    got = reader.poll()
    for data in sent[20:]:
        writer.append("t", "json", data, op="publish")
    got += reader.poll()
    assert [e.data for e in got] == sent
    assert len(list(tmp_path.glob("w.out.*.log"))) == 1  # the read ones are gone
    writer.close()
    reader.close()


def test_a_frame_still_being_written_is_read_when_complete(tmp_path: Path) -> None:
    writer = ChannelWriter(str(tmp_path), "w.out")
    writer.append("t", "json", b"{}", op="publish")
    writer.close()
    (path,) = tmp_path.glob("w.out.*.log")
    whole = path.read_bytes()
    path.write_bytes(whole[:-5])  # the last frame torn (an append in progress)
    reader = ChannelReader(str(tmp_path), "w.out")
    assert reader.poll() == []
    path.write_bytes(whole)
    assert [e.data for e in reader.poll()] == [b"{}"]
    reader.close()


def test_a_damaged_frame_raises_and_the_file_is_left_as_it_is(tmp_path: Path) -> None:
    writer = ChannelWriter(str(tmp_path), "w.out")
    writer.append("t", "json", b'{"n": 1}', op="publish")
    writer.append("t", "json", b'{"n": 2}', op="publish")
    writer.append("t", "json", b'{"n": 3}', op="publish")
    writer.close()
    (path,) = tmp_path.glob("w.out.*.log")
    raw = bytearray(path.read_bytes())
    start = raw.index(b'{"n": 2}')
    raw[start + 1] ^= 0x55  # the second request's checksum fails; a third follows
    path.write_bytes(bytes(raw))
    reader = ChannelReader(str(tmp_path), "w.out")
    with pytest.raises(CorruptRecordError, match="bad channel frame"):
        reader.poll()
    assert path.read_bytes() == bytes(raw)
    reader.close()


def test_a_file_that_is_not_a_channel_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.out.00000000.log").write_bytes(b"NOTAJRNL" + b"\0" * 40)
    reader = ChannelReader(str(tmp_path), "x.out")
    with pytest.raises(FormatVersionError):
        reader.poll()


def test_a_closed_channel_refuses_appends(tmp_path: Path) -> None:
    writer = ChannelWriter(str(tmp_path), "w.out")
    writer.close()
    with pytest.raises(StoreClosedError):
        writer.append("t", "json", b"{}")


def test_the_owner_is_seen_alive_until_it_closes(tmp_path: Path) -> None:
    writer = ChannelWriter(str(tmp_path), "w.out")
    reader = ChannelReader(str(tmp_path), "w.out")
    assert reader.owner_alive()
    writer.close()
    assert not reader.owner_alive()
    reader.remove()
    assert not list(tmp_path.glob("w.out.*"))


def test_an_owner_process_that_dies_is_seen_gone(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from sowlib.journal.outbox import ChannelWriter\n"
        "w = ChannelWriter(sys.argv[1], 'p.out')\n"
        "w.append('t', 'json', b'{}', op='publish')\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        reader = ChannelReader(str(tmp_path), "p.out")
        assert reader.owner_alive()
        proc.kill()
        proc.wait(30)
        deadline = time.monotonic() + 30
        while reader.owner_alive():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert [e.data for e in reader.poll()] == [b"{}"]  # its last requests are kept
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_lock_held_of_a_missing_file_is_false(tmp_path: Path) -> None:
    assert not lock_held(str(tmp_path / "nothing"))
