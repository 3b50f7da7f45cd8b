"""The AMPS filter language: parse, compile, evaluate, render (spec §1-§5).

Imports only ``sowlib.errors``, ``sowlib.paths`` and ``sowlib.document``.
"""

from sowlib.expr.api import Filter, clear_cache, compile_filter, parse_filter
from sowlib.expr.context import EvalContext
from sowlib.expr.functions import FUNCTIONS, FunctionSpec, markdown_table
from sowlib.expr.like import InvalidPatternError, regex_budget
from sowlib.expr.to_text import to_text

__all__ = [
    "FUNCTIONS",
    "EvalContext",
    "Filter",
    "FunctionSpec",
    "InvalidPatternError",
    "clear_cache",
    "compile_filter",
    "markdown_table",
    "parse_filter",
    "regex_budget",
    "to_text",
]
