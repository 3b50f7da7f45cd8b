"""One field's values for every row of a :class:`~sowlib.columns.store.ColumnStore`.

Exact numbers sit in a float64 array; every other value (text, NULL, missing,
booleans, integers past 53 bits, NaN, arrays, objects) is a code into the column's
dictionary, so 12 bytes a row plus one entry per distinct value. Imports only
``expr``, ``paths``, ``document`` and ``columns.coded``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sowlib.columns.coded import CodedColumn
from sowlib.document import MISSING
from sowlib.expr.operators import SAFE_INT
from sowlib.expr.vector import FLOAT_CODE, INT_CODE
from sowlib.paths import FieldPath

__all__ = ["MISSING_CODE", "Column", "entry_key", "recode_limit"]

#: The dictionary code of a missing field (and of every free row).
MISSING_CODE = 0
# Dead dictionary entries tolerated before the codes are renumbered: this many plus
# the number of live rows.
_SLACK = 1024


def recode_limit(live: int) -> int:
    """The dictionary size past which a column over ``live`` keys is renumbered."""
    return 2 * live + _SLACK


def entry_key(value: Any) -> Any:
    """A hashable stand-in for ``value`` that only values of the same meaning share.

    ``True``, ``1`` and ``1.0`` are equal in Python but not to the filter language, so
    the type is part of the key; NaN (never equal to itself) has one key; arrays and
    objects are keyed by their ``repr`` (two spellings of one object get two entries,
    each evaluated correctly).
    """
    t = type(value)
    if t is str or value is None or value is MISSING:
        return value
    if t is float and value != value:
        return (float, "nan")
    if t is list or t is dict:
        return (t, repr(value))
    try:
        hash(value)
    except TypeError:
        return (t, repr(value))
    return (t, value)


class Column:
    """The values of one field path, row by row (see the module docstring).

    Attributes:
        path: the field.
        values: the dictionary (``values[0]`` is MISSING).
        generation: bumped when codes are renumbered (:meth:`recode`).
        rows: how many rows :attr:`num` and :attr:`code` show.
    """

    def __init__(self, path: FieldPath, capacity: int) -> None:
        self.path = path
        self._num = np.zeros(capacity, dtype=np.float64)
        self._code = np.zeros(capacity, dtype=np.int32)
        self.values: list[Any] = [MISSING]
        self._lookup: dict[Any, int] = {MISSING: MISSING_CODE}
        self.generation = 0
        self.rows = 0

    @property
    def num(self) -> Any:
        """The numbers of rows ``0..rows-1`` (meaningful where :attr:`code` is negative)."""
        return self._num[: self.rows]

    @property
    def code(self) -> Any:
        """Per row: INT_CODE, FLOAT_CODE, or an index into :attr:`values`."""
        return self._code[: self.rows]

    def grow(self, capacity: int) -> None:
        """Make room for ``capacity`` rows (new rows are missing)."""
        old = len(self._num)
        if capacity > old:
            self._num = np.concatenate((self._num, np.zeros(capacity - old, dtype=np.float64)))
            self._code = np.concatenate((self._code, np.zeros(capacity - old, dtype=np.int32)))

    def encode(self, value: Any) -> tuple[float, int]:
        """``(number, code)`` for ``value``; adds it to the dictionary when new. O(1)."""
        t = type(value)
        if t is float:
            # -0.0 equals 0.0 but divides differently (1 / -0.0 is -inf): a value of its own
            if value == value and (value or math.copysign(1.0, value) > 0):
                return value, FLOAT_CODE
        elif t is int and -SAFE_INT <= value <= SAFE_INT:
            return float(value), INT_CODE
        key = entry_key(value)
        code = self._lookup.get(key)
        if code is None:
            code = len(self.values)
            self._lookup[key] = code
            self.values.append(value)
        return 0.0, code

    def set(self, row: int, value: Any) -> None:
        """Store ``value`` at ``row``; O(1). Text already in the dictionary leaves
        :attr:`num` as it was (it is read only where :attr:`code` is negative)."""
        t = type(value)
        if t is str:
            code = self._lookup.get(value)
            if code is not None:
                self._code[row] = code
                return
        elif t is int and -SAFE_INT <= value <= SAFE_INT:
            self._num[row] = value
            self._code[row] = INT_CODE
            return
        self._num[row], self._code[row] = self.encode(value)

    def set_many(self, rows: Any, values: Sequence[Any]) -> None:
        """Store ``values[i]`` at ``rows[i]``; O(len(rows)).

        A batch of one kind takes C-level passes: integers of at most 53 bits, floats
        (NaN and -0.0 excepted) and strings (new ones added once each); a
        :class:`~sowlib.columns.coded.CodedColumn` files its numbers as they are and
        encodes each value it lists once; anything else goes value by value through
        :meth:`encode`, the reference.
        """
        if not len(values):
            return
        if type(values) is CodedColumn:
            self._set_coded(rows, values)
            return
        kinds = set(map(type, values))
        if kinds == {int} and min(values) >= -SAFE_INT and max(values) <= SAFE_INT:
            self._num[rows] = values
            self._code[rows] = INT_CODE
            return
        if kinds == {float}:
            nums = np.asarray(values, dtype=np.float64)
            if not (np.isnan(nums).any() or np.signbit(nums[nums == 0.0]).any()):
                self._num[rows] = nums
                self._code[rows] = FLOAT_CODE
                return
        if kinds == {str}:  # text is its own entry key
            lookup = self._lookup
            found: list[Any] = list(map(lookup.get, values))
            if None in found:  # new text: added once each, in order
                for value in dict.fromkeys(values):
                    if value not in lookup:
                        lookup[value] = len(self.values)
                        self.values.append(value)
                found = list(map(lookup.__getitem__, values))
            self._num[rows] = 0.0
            self._code[rows] = found
            return
        nums_, codes = zip(*map(self.encode, values), strict=True)
        self._num[rows] = nums_
        self._code[rows] = codes

    def _set_coded(self, rows: Any, coded: CodedColumn) -> None:
        """:meth:`set_many` of a coded column: its numbers filed as they are, each of its
        listed values encoded once (:meth:`encode`, which may file one as a number)."""
        num = np.frombuffer(coded.num, dtype=np.float64)
        code = np.frombuffer(coded.code, dtype=np.int32)
        if coded.values:
            listed = code >= 0
            at = code[listed]
            pairs = list(map(self.encode, coded.values))
            num, code = num.copy(), code.copy()
            num[listed] = np.array([n for n, _c in pairs], dtype=np.float64)[at]
            code[listed] = np.array([c for _n, c in pairs], dtype=np.int32)[at]
        self._num[rows] = num
        self._code[rows] = code

    def value(self, row: int) -> Any:
        """The value stored at ``row`` (an int or float back from :attr:`num`)."""
        code = int(self._code[row])
        if code == INT_CODE:
            return int(self._num[row])
        if code == FLOAT_CODE:
            return float(self._num[row])
        return self.values[code]

    def clear_row(self, row: int) -> None:
        """Forget ``row`` (a free row reads as missing)."""
        self._num[row] = 0.0
        self._code[row] = MISSING_CODE

    def needs_recode(self, live: int) -> bool:
        """True when the dictionary may hold many values no live row uses any more."""
        return len(self.values) > recode_limit(live)

    def recode(self) -> None:
        """Drop dictionary values no row uses and renumber the codes; O(rows)."""
        code = self.code
        coded = code >= 0
        used = np.unique(np.concatenate(([MISSING_CODE], code[coded])))
        mapping = np.zeros(len(self.values), dtype=np.int32)
        mapping[used] = np.arange(len(used), dtype=np.int32)
        code[coded] = mapping[code[coded]]
        self.values = [self.values[i] for i in used.tolist()]
        self._lookup = {entry_key(v): i for i, v in enumerate(self.values)}
        self.generation += 1
