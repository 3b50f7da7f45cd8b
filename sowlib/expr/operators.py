"""Operator tables and integer bounds shared by the lexer, parser, evaluators and index planner.

Imports nothing.
"""

from __future__ import annotations

__all__ = [
    "ADDITIVE",
    "ARITHMETIC",
    "CANONICAL",
    "COMPARISONS",
    "FLIP",
    "I64_MAX",
    "I64_MIN",
    "MULTIPLICATIVE",
    "SAFE_INT",
    "SPELLINGS",
    "U64_MAX",
]

#: Every operator spelling the lexer reads, longest first so ``<=`` is not read as ``<``.
SPELLINGS = ("==", "!=", "<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%")
#: Spellings with another canonical form: ``==`` is ``=``, ``<>`` is ``!=`` (``MOD`` is ``%``).
CANONICAL = {"==": "=", "<>": "!="}

#: The comparison operators, in their canonical spelling.
COMPARISONS = frozenset({"=", "!=", "<", "<=", ">", ">="})
#: ``a op b`` is ``b FLIP[op] a``: how a comparison reads with its operands swapped.
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

#: Arithmetic operators of the lower precedence level.
ADDITIVE = frozenset({"+", "-"})
#: Arithmetic operators of the higher precedence level (``MOD`` parses to ``%``).
MULTIPLICATIVE = frozenset({"*", "/", "%"})
#: Every arithmetic operator, in its canonical spelling.
ARITHMETIC = ADDITIVE | MULTIPLICATIVE

#: Integers below this magnitude are exact as floats (spec §2.4): an int and a float
#: compare as numbers without rounding, and text equality matches numeric equality.
SAFE_INT = 2**53
#: The signed 64-bit range; integer arithmetic wraps in it (spec §2.6).
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
#: Largest integer (values above :data:`I64_MAX` are unsigned 64-bit); a larger literal
#: or number text reads as a float.
U64_MAX = 2**64 - 1
