"""Render an AST as canonical filter text: ``parse_filter(to_text(n)) == n``.

Upper-case keywords, single quotes, minimal parentheses by precedence
(spec §1.6). Imports only ``expr.nodes`` and ``paths``.
"""

from __future__ import annotations

from typing import assert_never

from sowlib.expr.nodes import (
    And,
    Arith,
    BeginsWith,
    Between,
    Call,
    Compare,
    EndsWith,
    Field,
    InList,
    IsNaN,
    IsNull,
    Like,
    Literal,
    Neg,
    Node,
    Not,
    Or,
    chain,
)

__all__ = ["quote_pattern", "quote_string", "to_text"]

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n",
            "\f": "\\f", "\r": "\\r"}  # fmt: skip
_PRED = 4
_ATOM = 8


def quote_string(s: str) -> str:
    """An ordinary string literal whose escapes (spec §1.2) reproduce ``s``."""
    out = ["'"]
    for ch in s:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:  # a lone byte kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(ch)
    out.append("'")
    return "".join(out)


def quote_pattern(pattern: str, raw: bool = False) -> str:
    """A pattern literal whose text (only the quote escape resolved) is ``pattern``."""
    if raw:
        quote = '"' if "'" in pattern else "'"
        return f"r{quote}{pattern}{quote}"
    pairs: list[str] = []
    i = 0
    while i < len(pattern):
        step = 2 if pattern[i] == "\\" else 1
        pairs.append(pattern[i : i + step])
        i += step
    quote = '"' if "\\'" in pairs else "'"
    body = "".join("\\" + p if p == quote else p for p in pairs)
    return quote + body + quote


def _prec(node: Node) -> int:
    match node:
        case Or():
            return 1
        case And():
            return 2
        case Not():
            return 3
        case Compare() | Between() | InList() | Like() | BeginsWith() | EndsWith():
            return _PRED
        case IsNull() | IsNaN():
            return _PRED
        case Arith(op=op):
            return 5 if op in "+-" else 6
        case Neg():
            return 7
        case Literal() | Field() | Call():
            return _ATOM
        case _:
            assert_never(node)


def _at(node: Node, level: int) -> str:
    text = to_text(node)
    return f"({text})" if _prec(node) < level else text


def _items(items: tuple[Node, ...]) -> str:
    return "(" + ", ".join(_at(i, 5) for i in items) + ")"


def _not(negated: bool) -> str:
    return " NOT" if negated else ""


def _literal(value: int | float | str | None) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return quote_string(value)
    return repr(value)


def _arith_text(node: Arith) -> str:
    """``a op b op c ...``: the left operands that need no parentheses, read in a loop."""
    tails: list[str] = []
    n: Node = node
    while isinstance(n, Arith):
        level = _prec(n)
        tails.append(f" {n.op} {_at(n.right, level + 1)}")
        left = n.left
        if not (isinstance(left, Arith) and _prec(left) >= level):
            head = _at(left, level)
            break
        n = left
    tails.reverse()
    return head + "".join(tails)


def to_text(node: Node) -> str:
    """Canonical text of ``node``; O(size of the tree).

    Example:
        >>> from sowlib.expr.parser import parse
        >>> to_text(parse("/a==1 and not /b like 'x'"))
        "/a = 1 AND NOT /b LIKE 'x'"
    """
    match node:
        case Literal(value=v):
            return _literal(v)
        case Field(path=p):
            return p.to_text()
        case Neg(operand=o):
            if isinstance(o, Literal) and isinstance(o.value, int | float):
                return f"-({_literal(o.value)})"  # '-3' would read back as the literal -3
            return "-" + _at(o, 7)
        case Arith():
            return _arith_text(node)
        case Compare(op=op, left=a, right=b):
            return f"{_at(a, 5)} {op} {_at(b, 5)}"
        case Between(value=v, low=lo, high=hi, negated=neg):
            return f"{_at(v, 5)}{_not(neg)} BETWEEN {_at(lo, 5)} AND {_at(hi, 5)}"
        case InList(value=v, items=items, negated=neg):
            return f"{_at(v, 5)}{_not(neg)} IN {_items(items)}"
        case Like(value=v, pattern=pat, raw=raw, negated=neg):
            return f"{_at(v, 5)}{_not(neg)} LIKE {quote_pattern(pat, raw)}"
        case BeginsWith(value=v, items=items, negated=neg):
            return f"{_at(v, 5)}{_not(neg)} BEGINS WITH {_items(items)}"
        case EndsWith(value=v, items=items, negated=neg):
            return f"{_at(v, 5)}{_not(neg)} ENDS WITH {_items(items)}"
        case IsNull(value=v, negated=neg):
            return f"{_at(v, 5)} IS{_not(neg)} NULL"
        case IsNaN(value=v, negated=neg):
            return f"{_at(v, 5)} IS{_not(neg)} NAN"
        case Not(operand=o):
            return "NOT " + _at(o, 3)
        case And():
            first, *rest = chain(node)  # a loop, not one recursion per clause
            return " AND ".join([_at(first, 2), *(_at(o, 3) for o in rest)])
        case Or():
            first, *rest = chain(node)
            return " OR ".join([_at(first, 1), *(_at(o, 2) for o in rest)])
        case Call(name=name, args=args):
            parts = []
            for i, a in enumerate(args):
                if name == "REGEXP_REPLACE" and i == 1 and isinstance(a, Literal):
                    if isinstance(a.value, str):  # a pattern literal (spec §1.2 [R])
                        parts.append(quote_pattern(a.value))
                    else:
                        parts.append(_literal(a.value))
                else:
                    parts.append(to_text(a))
            return f"{name}({', '.join(parts)})"
        case _:
            assert_never(node)
