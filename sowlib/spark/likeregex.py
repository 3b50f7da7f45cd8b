"""LIKE patterns for Spark: the subset of PCRE that Java regex runs exactly as sowlib does.

sowlib matches with ASCII rules (non-ASCII values as UTF-8 bytes); Spark runs
the translated pattern over the value re-read as ISO-8859-1, one char per byte.
Anything outside the subset is rejected, never approximated. Imports ``errors``.
"""

from __future__ import annotations

import re

from sowlib.errors import UnsupportedFilterError

__all__ = ["to_java_regex"]

_LITERAL = re.compile(r"[A-Za-z0-9 _\-,:;'\"/@#%&=<>!~`]")
_ESCAPABLE = set("\\.^$|?*+()[]{}/-_,:;'\"@#%&=<>!~` ")
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": " \\t\\n\\x0B\\f\\r"}
_OUTSIDE_ESCAPES = {"d": "[0-9]", "w": "[A-Za-z0-9_]", "s": "[ \\t\\n\\x0B\\f\\r]"}
_CONTROL = {"t": "\\t", "n": "\\n", "r": "\\r", "f": "\\f"}
_QUANT = re.compile(r"\{\d+(?:,\d*)?\}")


def _reject(pattern: str, why: str) -> UnsupportedFilterError:
    return UnsupportedFilterError(f"LIKE pattern {pattern!r} ({why})", "spark")


def _to_bytes_chars(text: str) -> str:
    """Re-read ``text`` as ISO-8859-1 so each UTF-8 byte is one Java char."""
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def _char(ch: str) -> str:
    if _LITERAL.fullmatch(ch):
        return ch
    return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    if i + 1 >= len(pattern):
        raise _reject(pattern, "trailing backslash")
    nxt = pattern[i + 1]
    if nxt in _CONTROL:
        return _CONTROL[nxt], i + 2
    if nxt in _CLASS_ESCAPES:
        return (_CLASS_ESCAPES if in_class else _OUTSIDE_ESCAPES)[nxt], i + 2
    if nxt == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", pattern[i + 2 : i + 4]):
        return "\\x" + pattern[i + 2 : i + 4].lower(), i + 4
    if not in_class and nxt in "123456789":
        return "\\" + nxt, i + 2
    if nxt in _ESCAPABLE:
        return "\\x" + f"{ord(nxt):02x}", i + 2
    raise _reject(pattern, f"escape \\{nxt}")


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    out = ["["]
    i += 1
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    first = True
    while i < len(pattern):
        ch = pattern[i]
        if ch == "]" and not first:
            out.append("]")
            return "".join(out), i + 1
        first = False
        if ch == "\\":
            piece, i = _escape(pattern, i, in_class=True)
            out.append(piece)
        elif ch == "-" and out[-1] not in ("[", "^"):
            out.append("-")
            i += 1
        elif ch in "[&^":
            raise _reject(pattern, f"{ch!r} inside a character class")
        elif ord(ch) > 0x7F:
            raise _reject(pattern, "non-ASCII character inside a character class")
        else:
            out.append(_char(ch) if ch != "." else "\\x2e")
            i += 1
    raise _reject(pattern, "unterminated character class")


def to_java_regex(pattern: str) -> str:
    """Translate a sowlib LIKE pattern into an equivalent Java regex over byte-chars.

    Raises:
        UnsupportedFilterError: the pattern uses syntax outside the exact subset
            (inline flags other than a leading ``(?i)``, lookaround, ``\\b``,
            POSIX classes, possessive quantifiers, named groups...).
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    if pattern.startswith("(?i)"):
        out.append("(?i)")
        i = 4
    depth = 0
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            piece, i = _escape(pattern, i, in_class=False)
            out.append(piece)
            continue
        if ch == "[":
            piece, i = _char_class(pattern, i)
            out.append(piece)
            continue
        if ch == "(":
            if pattern.startswith("(?:", i):
                out.append("(?:")
                i += 3
            elif pattern.startswith("(?", i):
                raise _reject(pattern, "group syntax '(?'")
            else:
                out.append("(")
                i += 1
            depth += 1
            continue
        if ch == ")":
            depth -= 1
            if depth < 0:
                raise _reject(pattern, "unbalanced ')'")
            out.append(")")
        elif ch == "{":
            m = _QUANT.match(pattern, i)
            if m is None or not out:
                raise _reject(pattern, "'{' that is not a quantifier")
            out.append(m.group())
            i = m.end()
            continue
        elif ch in "*+?":
            if i + 1 < n and pattern[i + 1] == "+":
                raise _reject(pattern, "possessive quantifier")
            out.append(ch)
        elif ch == ".":
            out.append("[^\\n]")  # Java's '.' also stops at \r and other line ends
        elif ch == "$":
            out.append("(?=\\n?\\z)")  # Java's '$' also accepts a final \r
        elif ch in "^|":
            out.append(ch)
        else:
            out.append(_char(ch))
        i += 1
    if depth:
        raise _reject(pattern, "unbalanced '('")
    return _to_bytes_chars("".join(out))
