"""Tokens of the filter language: what the lexer produces and the parser consumes.

Imports nothing from sowlib.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["KEYWORDS", "Kind", "Token"]


class Kind(enum.Enum):
    """Token kinds."""

    NUMBER = "number"
    STRING = "string"
    RAW_STRING = "raw string"
    PATH = "field path"
    WORD = "word"
    OP = "operator"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    EOF = "end of input"


#: Words with a grammatical role (matched case-insensitively).
KEYWORDS = frozenset(
    {
        "AND",
        "OR",
        "NOT",
        "IN",
        "BETWEEN",
        "LIKE",
        "BEGINS",
        "ENDS",
        "WITH",
        "IS",
        "NULL",
        "NAN",
        "MOD",
        "TRUE",
        "FALSE",
    }
)


class Token(NamedTuple):
    """One token: its kind, the source ``text`` and a cooked ``value``.

    A named tuple: a filter of 20 clauses makes about 90 of them, and a tuple is
    the cheapest immutable object to build.

    ``value`` is the number for NUMBER, the unescaped string for STRING and
    RAW_STRING (the raw body for RAW_STRING), the upper-cased word for WORD,
    the canonical operator for OP (``==`` -> ``=``, ``<>`` -> ``!=``) and the
    path text for PATH. ``start``/``end`` are offsets into the filter text.
    """

    kind: Kind
    text: str
    value: object
    start: int
    end: int

    def describe(self) -> str:
        """How error messages name this token."""
        if self.kind is Kind.EOF:
            return "end of input"
        return repr(self.text)
