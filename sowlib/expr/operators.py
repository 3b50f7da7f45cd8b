"""Operator tables shared by the parser, the compiler and the index planner.

Imports nothing.
"""

from __future__ import annotations

__all__ = ["COMPARISONS", "FLIP", "SAFE_INT"]

#: The comparison operators, in their canonical spelling (``==`` is ``=``, ``<>`` is ``!=``).
COMPARISONS = frozenset({"=", "!=", "<", "<=", ">", ">="})
#: ``a op b`` is ``b FLIP[op] a``: how a comparison reads with its operands swapped.
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: Integers below this magnitude are exact as floats (spec §2.4): an int and a float
#: compare as numbers without rounding, and text equality matches numeric equality.
SAFE_INT = 2**53
