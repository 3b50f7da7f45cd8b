"""The storage layer: a memory-mapped append log with recovery, compaction and a writer lock.

Imports only ``sowlib.errors``, ``sowlib.units`` and the leaf ``sowlib.gcpause`` (never
``expr``, ``codecs`` or ``topic``).
The on-disk format is specified in ``docs/storage-format.md``.
"""

from sowlib.storage.entries import EntryList
from sowlib.storage.format import FORMAT_VERSION, MAGIC, FileHeader, LogRecord, RecordKind
from sowlib.storage.framing import framed_size
from sowlib.storage.fs import FileSystem
from sowlib.storage.lock import WriterLock
from sowlib.storage.log import AppendLog
from sowlib.storage.memory import MemoryLog
from sowlib.storage.protocol import Log
from sowlib.storage.recovery import RecoveryReport, VerifyReport, read_header, verify

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "AppendLog",
    "EntryList",
    "FileHeader",
    "FileSystem",
    "Log",
    "LogRecord",
    "MemoryLog",
    "RecordKind",
    "RecoveryReport",
    "VerifyReport",
    "WriterLock",
    "framed_size",
    "read_header",
    "verify",
]
