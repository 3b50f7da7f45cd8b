"""Model-based test: an AppendLog (plus a read-only follower) against a plain dict."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sowlib.storage import AppendLog, RecordKind
from sowlib.storage.format import encode_record

from .conftest import open_log, replay

KEYS = st.sampled_from(["a", "b", "c", "ü/k"])


class LogVsDict(RuleBasedStateMachine):
    """Every rule changes the log and the model the same way; the invariant compares them."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="logvsdict"))
        self.path = self.dir / "t.log"
        self.log = open_log(self.path)
        self.model: dict[str, bytes] = {}
        self.reader: AppendLog | None = None
        self.seen: dict[str, bytes] = {}
        self.adopt = False  # the next replaced file: continued on (adopt) or reopened
        self.checkpoint: bytes | None = None

    def teardown(self) -> None:
        self.log.close()
        if self.reader is not None:
            self.reader.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(key=KEYS, value=st.binary(max_size=300))
    def put(self, key: str, value: bytes) -> None:
        self.log.append(RecordKind.PUT, key, value, timestamp=1.0)
        self.model[key] = value

    @rule(key=KEYS, kind=st.sampled_from([RecordKind.DELETE, RecordKind.EXPIRE]))
    def delete(self, key: str, kind: RecordKind) -> None:
        self.log.append(kind, key, b"", timestamp=2.0)
        self.model.pop(key, None)

    @rule(values=st.lists(st.tuples(KEYS, st.binary(max_size=50)), max_size=5))
    def put_many(self, values: list[tuple[str, bytes]]) -> None:
        self.log.append_many([(RecordKind.PUT, k, v, 3.0, 0.0, b"") for k, v in values])
        self.model.update(values)

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = open_log(self.path)
        assert self.log.report.truncated_bytes == 0

    @rule(data=st.data())
    def torn_write(self, data: st.DataObject) -> None:
        record = encode_record(RecordKind.PUT, b"z", b"", b"never acknowledged", 10**9, 0, 0)
        cut = data.draw(st.integers(1, len(record) - 1))
        end, size = self.log.end_offset, self.log.file_size
        self.log.close()
        with self.path.open("r+b") as fh:
            if end + cut <= size:
                fh.seek(end)  # where the writer was when it died
            else:
                fh.seek(0, 2)
            fh.write(record[:cut])
        self.log = open_log(self.path)
        assert self.log.report.truncated_bytes > 0

    @rule(keep=st.sets(KEYS))
    def compact(self, keep: set[str]) -> None:
        latest = {rec.key: rec.offset for rec in self.log.scan()}
        wanted = {latest[k] for k in keep if k in latest}
        mapping = self.log.compact(lambda rec: rec.offset in wanted)
        assert sorted(mapping) == sorted(wanted)
        assert [rec.offset for rec in self.log.scan()] == sorted(mapping.values())
        self.model = {k: v for k, v in self.model.items() if k in keep}

    @precondition(lambda self: self.reader is None)
    @rule()
    def open_reader(self) -> None:
        self.reader = AppendLog(self.path, readonly=True)
        self.seen = replay(self.reader.scan())

    @precondition(lambda self: self.reader is not None)
    @rule()
    def refresh_reader(self) -> None:
        assert self.reader is not None
        new = self.reader.refresh()
        if new is None:  # the file was compacted (or repaired): reopen, or continue on it
            again = AppendLog(self.path, readonly=True)
            if self.adopt:
                self.reader.adopt(again)
            else:
                self.reader.close()
                self.reader = again
            self.seen = replay(self.reader.scan())
            self.adopt = not self.adopt
        else:
            replay((self.reader.read(off) for off in new.offsets), self.seen)
        if self.reader.generation == self.log.generation:
            assert self.seen == self.model

    @rule(blob=st.binary(max_size=20))
    def close_with_checkpoint(self, blob: bytes) -> None:
        self.log.close(checkpoint=blob)
        self.log = open_log(self.path)
        loaded = self.log.load_checkpoint()
        assert loaded is not None
        assert loaded[0] == blob
        assert self.log.report.from_checkpoint

    @invariant()
    def agrees(self) -> None:
        assert replay(self.log.scan()) == self.model
        self.log.check()


LogVsDict.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
test_log_vs_dict = pytest.mark.slow(LogVsDict.TestCase)
