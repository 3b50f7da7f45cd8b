"""Top-level JSON fields of live records, read where the records lie in the mapped log.

A scan that builds columns (:mod:`sowlib.columns`) needs a few fields of every live
record. Read through :meth:`~sowlib.topic.logview.LogView.payloads`, each record
costs a Python-level checked read and a bytes copy before its fields are parsed;
:func:`mapped_columns` hands the offsets to one C call that finds each record, checks
its checksum and parses the fields in place into coded columns, numbers unboxed and
each repeated text once (``sowlib.codecs.jsonfields``, :mod:`sowlib.columns.coded`). It gives
None wherever that does not serve (a log in memory, no C modules, a record that is
not a common PUT, a payload outside the C subset), and the caller takes the checked
read and decode, the reference. Imports ``codecs``, ``columns``, ``storage`` and
``logview``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sowlib.codecs.json_fields import top_codes_at
from sowlib.columns import CodedColumn
from sowlib.storage.native import optional_module
from sowlib.topic.logview import LogView

__all__ = ["mapped_columns"]

# The C record reader's interface (a capsule), or None when it is not built.
_API: object | None = getattr(optional_module("sowlib.storage.recordread"), "c_api", None)


def mapped_columns(
    log: LogView, offsets: list[int], names: Sequence[str]
) -> list[Sequence[Any]] | None:
    """Each of the top-level fields ``names`` in the JSON payload of each record at
    ``offsets`` (a :class:`~sowlib.columns.CodedColumn` per name), read in the mapped
    file, or None (see the module docstring). O(their bytes).
    """
    file = log.file
    if _API is None or file is None or not offsets or not names:
        return None
    mapped = file.mapped
    if mapped is None:
        return None
    low, end = log.span
    got = top_codes_at(_API, mapped, offsets, low, end, names)
    if got is None:
        return None
    return [CodedColumn(num, code, values) for num, code, values, _strings in got]
