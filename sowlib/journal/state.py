"""The journal's state file ``journal.state``: what survives a lost or damaged tail.

Imports ``errors`` and ``storage.fs``. One JSON line, then the line's crc32 in hex;
replaced atomically (written beside, renamed over). It holds the journal id (checked
against ``journal.id``), the **reserved** high-water sequence number (no entry is
written with a higher one before it is saved, so a lost tail can never make a sequence
number be issued twice), the committed end of the newest segment, and the topics whose
SOW the journal owns (it saw them empty or refilled them) with the bookmark their
replay starts from, the refills in progress, and the highest sequence number
retention removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from typing import Any

import attrs

from sowlib.errors import CorruptRecordError
from sowlib.storage.fs import FileSystem, create_exclusive, os_errors

__all__ = ["STATE_NAME", "JournalState", "load_state", "save_state"]

STATE_NAME = "journal.state"
_VERSION = 2


@attrs.define
class JournalState:
    """The contents of ``journal.state`` (see the module docstring)."""

    id: int = 0
    reserved: int = 0
    segment: int = 0
    committed: int = 0
    owned: dict[str, str] = attrs.field(factory=dict)
    refilling: list[str] = attrs.field(factory=list)
    trimmed: int = 0

    def to_bytes(self) -> bytes:
        body = json.dumps(
            {
                "version": _VERSION,
                "id": self.id,
                "reserved": self.reserved,
                "segment": self.segment,
                "committed": self.committed,
                "owned": self.owned,
                "refilling": self.refilling,
                "trimmed": self.trimmed,
            },
            sort_keys=True,
        ).encode()
        return body + b"\n" + f"{zlib.crc32(body):08x}".encode() + b"\n"


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(name)
    return value


def load_state(directory: str) -> JournalState | None:
    """The state file of ``directory``; None when there is none.

    Raises:
        CorruptRecordError: the file fails its checksum or does not parse.
    """
    path = os.path.join(directory, STATE_NAME)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1 << 24)
    except FileNotFoundError:
        return None
    body, _, rest = raw.partition(b"\n")
    try:
        if rest.strip() != f"{zlib.crc32(body):08x}".encode():
            raise ValueError("checksum")
        data = json.loads(body)
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError("version")
        owned = _field(data, "owned", dict)
        refilling = _field(data, "refilling", list)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in owned.items()):
            raise ValueError("owned")
        if not all(isinstance(k, str) for k in refilling):
            raise ValueError("refilling")
        return JournalState(
            _field(data, "id", int),
            _field(data, "reserved", int),
            _field(data, "segment", int),
            _field(data, "committed", int),
            owned,
            refilling,
            _field(data, "trimmed", int),
        )
    except ValueError as exc:
        raise CorruptRecordError(path, 0, f"journal state file fails its check ({exc})") from None


def save_state(directory: str, state: JournalState, fs: FileSystem, *, sync: bool) -> None:
    """Replace ``journal.state`` atomically; fsynced (with the directory) when ``sync``.

    Raises:
        StoreFullError, StorePathError: the file could not be written (the old one stays).
    """
    path = os.path.join(directory, STATE_NAME)
    tmp = path + ".tmp"
    data = state.to_bytes()
    with os_errors(tmp, "write", len(data)):
        fd = create_exclusive(tmp)
        try:
            view = memoryview(data)
            while view:
                view = view[fs.write(fd, view) :]
            if sync:
                fs.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.close(fd)
        fs.rename(tmp, path)
        if sync:
            fs.fsync_dir(directory)
