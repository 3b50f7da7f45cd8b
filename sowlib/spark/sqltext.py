"""A tiny Column look-alike that writes Spark SQL text, turned into a real Column once.

Building a compiled filter through pyspark's Column API costs one JVM round
trip per node (thousands per filter); writing SQL text costs one. Only the
operations the Spark back-end uses exist. Imports pyspark only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as _F

__all__ = ["S", "to_spark"]

_names = itertools.count()


def _text(value: Any) -> str:
    if isinstance(value, S):
        return value.sql
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value) if -(2**31) <= value < 2**31 else f"CAST({value} AS BIGINT)"
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


class S:
    """A SQL expression with the Column methods the back-end needs."""

    __slots__ = ("sql",)

    def __init__(self, sql: str) -> None:
        self.sql = sql

    def _bin(self, op: str, other: Any) -> S:
        return S(f"({self.sql} {op} {_text(other)})")

    def __eq__(self, other: Any) -> S:  # type: ignore[override]
        return self._bin("=", other)

    def __ne__(self, other: Any) -> S:  # type: ignore[override]
        return self._bin("!=", other)

    def __lt__(self, other: Any) -> S:
        return self._bin("<", other)

    def __le__(self, other: Any) -> S:
        return self._bin("<=", other)

    def __gt__(self, other: Any) -> S:
        return self._bin(">", other)

    def __ge__(self, other: Any) -> S:
        return self._bin(">=", other)

    def __and__(self, other: Any) -> S:
        return self._bin("AND", other)

    def __or__(self, other: Any) -> S:
        return self._bin("OR", other)

    def __invert__(self) -> S:
        return S(f"(NOT {self.sql})")

    def __neg__(self) -> S:
        return S(f"(- {self.sql})")

    def __add__(self, other: Any) -> S:
        return self._bin("+", other)

    def __sub__(self, other: Any) -> S:
        return self._bin("-", other)

    def __mul__(self, other: Any) -> S:
        return self._bin("*", other)

    def __truediv__(self, other: Any) -> S:
        return self._bin("/", other)

    def __mod__(self, other: Any) -> S:
        return self._bin("%", other)

    __hash__ = None  # type: ignore[assignment]

    def cast(self, type_: str) -> S:
        return S(f"CAST({self.sql} AS {type_})")

    def try_cast(self, type_: str) -> S:
        return S(f"TRY_CAST({self.sql} AS {type_})")

    def isNull(self) -> S:
        return S(f"({self.sql} IS NULL)")

    def isNotNull(self) -> S:
        return S(f"({self.sql} IS NOT NULL)")

    def isin(self, *values: Any) -> S:
        return S(f"({self.sql} IN ({', '.join(_text(v) for v in values)}))")

    def startswith(self, other: Any) -> S:
        return call("startswith", self, other)

    def endswith(self, other: Any) -> S:
        return call("endswith", self, other)

    def contains(self, other: Any) -> S:
        return call("contains", self, other)

    def rlike(self, pattern: str) -> S:
        return S(f"({self.sql} RLIKE {_text(pattern)})")

    def getField(self, name: str) -> S:
        return S(f"({self.sql}).`{name}`")

    def alias(self, name: str) -> S:
        return S(f"{self.sql} AS `{name}`")

    def when(self, cond: S, value: Any) -> S:
        assert self.sql.endswith(" END")
        return S(f"{self.sql[:-4]} WHEN {cond.sql} THEN {_text(value)} END")

    def otherwise(self, value: Any) -> S:
        assert self.sql.endswith(" END")
        return S(f"{self.sql[:-4]} ELSE {_text(value)} END")


def lit(value: Any) -> S:
    return S(_text(value))


def col(quoted: str) -> S:
    return S(quoted)


def when(cond: S, value: Any) -> S:
    return S(f"CASE WHEN {cond.sql} THEN {_text(value)} END")


def call(name: str, *args: Any) -> S:
    return S(f"{name}({', '.join(_text(a) for a in args)})")


def struct(*fields: S) -> S:
    parts = []
    for f in fields:
        expr, _, name = f.sql.rpartition(" AS ")
        parts.append(f"{_text(name.strip('`'))}, {expr}")
    return S(f"named_struct({', '.join(parts)})")


def transform(array: S, body: Callable[[S], S]) -> S:
    name = f"_sow{next(_names)}"
    return S(f"transform({array.sql}, {name} -> {body(S(name)).sql})")


def aggregate(array: S, zero: S, merge: Callable[[S, S], S]) -> S:
    """Spark's ``aggregate``: ``merge(acc, x)`` folded over ``array`` from ``zero``."""
    acc, x = f"_sow{next(_names)}", f"_sow{next(_names)}"
    body = merge(S(acc), S(x)).sql
    return S(f"aggregate({array.sql}, {zero.sql}, ({acc}, {x}) -> {body})")


def _fn(name: str) -> Callable[..., S]:
    def f(*args: Any) -> S:
        return call(name, *args)

    f.__name__ = name
    return f


isnan = _fn("isnan")
coalesce = _fn("coalesce")
schema_of_variant = _fn("schema_of_variant")
variant_get = _fn("variant_get")
try_variant_get = _fn("try_variant_get")
size = _fn("size")
array = _fn("array")
element_at = _fn("element_at")
try_element_at = _fn("try_element_at")
try_parse_json = _fn("try_parse_json")
to_variant_object = _fn("to_variant_object")
floor = _fn("floor")
atan2 = _fn("atan2")
concat_ws = _fn("concat_ws")
octet_length = _fn("octet_length")
instr = _fn("instr")
md5 = _fn("md5")
translate = _fn("translate")
decode = _fn("decode")
encode = _fn("encode")
raise_error = _fn("raise_error")


def abs(x: S) -> S:
    return call("abs", x)


def to_spark(expr: S) -> Column:
    """The real Column (one JVM call)."""
    return _F.expr(expr.sql)
