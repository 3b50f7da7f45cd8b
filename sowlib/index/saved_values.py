"""An index set's kept values in the checkpoint (see ``index.upkeep``), and back.

Per path, the distinct values once and a column of u32 codes in the topic's key order,
so a load shares one object per distinct value. Imports only ``document`` and
``index.*``.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import msgpack

from sowlib.document import MISSING
from sowlib.index.indexset import IndexSet
from sowlib.index.types import Key
from sowlib.index.upkeep import Table, interned
from sowlib.index.values import all_below

__all__ = ["CodedColumn", "dump_values", "load_values"]

_VERSION = 1
# A missing field (MISSING) as msgpack stores it.
_MISSING_EXT = msgpack.ExtType(0, b"")
_SWAP = sys.byteorder != "little"


def _codes(data: bytes) -> array.array[int]:
    column = array.array("I")
    column.frombytes(data)
    if _SWAP:
        column.byteswap()
    return column


def _ext(code: int, data: bytes) -> Any:
    if code == _MISSING_EXT.code and data == _MISSING_EXT.data:
        return MISSING
    raise ValueError("unknown msgpack extension")


class CodedColumn(Sequence[Any]):
    """A column of kept values as the checkpoint holds it: ``distinct[codes[i]]`` is the
    value of the i-th key (each code below ``len(distinct)``); a sequence of the values,
    never unpacked into a list of them."""

    __slots__ = ("codes", "distinct")

    def __init__(self, distinct: list[Any], codes: array.array[int]) -> None:
        self.distinct = distinct
        self.codes = codes

    def __len__(self) -> int:
        return len(self.codes)

    @overload
    def __getitem__(self, at: int) -> Any: ...
    @overload
    def __getitem__(self, at: slice) -> list[Any]: ...
    def __getitem__(self, at: int | slice) -> Any:
        if isinstance(at, slice):
            return list(map(self.distinct.__getitem__, self.codes[at]))
        return self.distinct[self.codes[at]]

    def __iter__(self) -> Iterator[Any]:
        return map(self.distinct.__getitem__, self.codes)


def dump_values(indexes: IndexSet, keys: Sequence[Key]) -> bytes | None:
    """The kept values of ``keys`` (every live key, in the order a load passes them), or
    None when they cannot be saved (not known, a value msgpack does not hold, or one that
    is not hashable); O(keys)."""
    if not indexes.values_known:
        return None
    paths = []
    try:
        for path, table in indexes.kept_tables():
            column = _column_of(table, keys)
            if len(set(map(type, column))) <= 1:
                tagged: list[Any] = column
                first = dict.fromkeys(column)
                distinct: list[Any] = list(first)
            else:
                # 1, 1.0 and True are equal but index differently: grouped with their type.
                tagged = list(zip(map(type, column), column, strict=True))
                first = dict.fromkeys(tagged)
                distinct = [value for _kind, value in first]
            where = dict(zip(first, range(len(distinct)), strict=True))
            codes = array.array("I", map(where.__getitem__, tagged))
            if _SWAP:
                codes.byteswap()
            values = [_MISSING_EXT if value is MISSING else value for value in distinct]
            paths.append([path.to_text(), values, codes.tobytes()])
        blob: bytes = msgpack.packb([_VERSION, len(keys), paths])
    except (TypeError, ValueError, KeyError, OverflowError):
        return None
    return blob


def _column_of(table: Table, keys: Sequence[Key]) -> list[Any]:
    """The values of ``keys`` in ``table``. Read in the table's own order when it lists
    the same keys in the same order (the usual case: the kept tables and the key map are
    filled in the same order), which reads the table front to back instead of probing
    it once per key; else looked up key by key. The same list either way."""
    if len(table) == len(keys) and isinstance(keys, list) and list(table.keys()) == keys:
        return list(table.values())
    return list(map(table.__getitem__, keys))


def load_values(
    indexes: IndexSet,
    blob: bytes | None,
    keys: Sequence[Key],
    fill: Callable[[Table, Sequence[Key], Sequence[Any]], bool] | None = None,
) -> bool:
    """Fill ``indexes``' kept values from :func:`dump_values`'s bytes; False (the values
    left unknown) when there are none or they do not fit these indexes and keys.
    ``fill`` is passed to :meth:`~sowlib.index.IndexSet.keep_path_values`, with each
    column a :class:`CodedColumn`."""
    indexes.forget_values()
    if blob is None:
        return False
    try:
        version, count, paths = msgpack.unpackb(blob, ext_hook=_ext)
        kept = indexes.kept_tables()
        if version != _VERSION or count != len(keys) or len(paths) != len(kept):
            return False
        columns: list[CodedColumn] = []
        for (text, values, codes), (path, _table) in zip(paths, kept, strict=True):
            column = CodedColumn(interned(values), _codes(codes))
            if text != path.to_text() or len(column) != len(keys):
                return False
            if not all_below(column.codes, len(column.distinct)):
                return False
            columns.append(column)
    except (ValueError, TypeError, IndexError, msgpack.UnpackException):
        return False
    for (path, _table), column in zip(kept, columns, strict=True):
        indexes.keep_path_values(path, keys, column, fill)
    indexes.values_filled()
    return True
