"""A column of field values coded as the C field reader codes them.

``jsonfields.top_codes_at`` reads a field of many records into a float64 and an int32
per row, the way :meth:`~sowlib.columns.column.Column.encode` lays a column out: an
exact integer (code ``INT_CODE``) or a float (``FLOAT_CODE``) in the number, any other
value an index into a short list of values (text repeated once). A
:class:`CodedColumn` carries that to :meth:`Column.set_many`, which files the numbers
as they are and encodes each listed value once. It is also a plain sequence of the
values (the reference: what the records hold). Imports only ``expr``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from sowlib.expr.vector import FLOAT_CODE, INT_CODE

__all__ = ["CodedColumn"]


class CodedColumn(Sequence[Any]):
    """Values of one field, row by row: ``num`` (float64s) and ``code`` (int32s) as
    bytes in native order, ``values`` the values coded ``0..``; see the module docstring.
    """

    __slots__ = ("code", "num", "values")

    def __init__(self, num: bytes, code: bytes, values: list[Any]) -> None:
        if len(num) != 2 * len(code) or len(code) % 4:
            raise ValueError("a coded column needs 8 bytes of number and 4 of code a row")
        self.num = num
        self.code = code
        self.values = values

    def __len__(self) -> int:
        return len(self.code) // 4

    @overload
    def __getitem__(self, at: int) -> Any: ...

    @overload
    def __getitem__(self, at: slice) -> list[Any]: ...

    def __getitem__(self, at: int | slice) -> Any:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        code = memoryview(self.code).cast("i")[at]
        if code == INT_CODE:
            return int(memoryview(self.num).cast("d")[at])
        if code == FLOAT_CODE:
            return memoryview(self.num).cast("d")[at]
        return self.values[code]
