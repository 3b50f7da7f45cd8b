"""LIKE and REGEXP_REPLACE patterns: PCRE syntax translated for the ``regex`` package (§3.3).

Search semantics (match anywhere), byte semantics (ASCII values use a str
pattern with ASCII rules; others are matched as UTF-8 bytes), a per-match
timeout, and raw patterns as plain substring search. Imports only ``errors``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import attrs
import regex

from sowlib.errors import InvalidPatternError, RegexTimeoutError

__all__ = [
    "REGEX_TIMEOUT",
    "InvalidPatternError",
    "check_pattern",
    "compile_pattern",
    "like_matcher",
    "regexp_replace",
    "translate",
]

#: Seconds one pattern may spend on one value before RegexTimeoutError (module-level knob).
REGEX_TIMEOUT: float = 1.0

_QUANT = re.compile(r"\*|\+|\?|\{\d+(?:,\d*)?\}")
_INLINE = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])")
_NAMED = re.compile(r"\(\?(?:<|')([A-Za-z_]\w*)[>']")
_BACKREF = re.compile(r"\\k(?:<(\w+)>|'(\w+)'|\{(\w+)\})|\\g(?:\{(\w+)\}|(\d+))")


@attrs.define
class _Level:
    pending: int = 0
    reopen: list[str] = attrs.Factory(list)
    ungreedy: bool = False
    extended: bool = False


def translate(pattern: str) -> str:
    """Rewrite PCRE-only syntax into ``regex`` syntax (see the table in docs/filters.md).

    ``(?U)`` flips quantifier greediness, ``(?A)`` anchors at the start,
    mid-pattern inline flags become scoped groups (reopened after ``|``),
    ``\\Q..\\E`` is escaped, ``(?<n>``/``(?'n'`` become ``(?P<n>``,
    ``\\k<n>`` becomes ``(?P=n)``, ``\\z`` becomes ``\\Z`` and ``\\Z`` becomes
    ``(?=\\n?\\Z)``; ``\\e`` and ``\\cX`` become hex escapes. Never raises:
    invalid input stays invalid for the engine to report.
    """
    out: list[str] = []
    levels = [_Level()]
    anchored = False
    i, n = 0, len(pattern)
    while i < n:
        lv = levels[-1]
        ch = pattern[i]
        if lv.extended and ch in " \t\n\r\f\v":
            i += 1
        elif lv.extended and ch == "#":
            end = pattern.find("\n", i)
            i = n if end < 0 else end + 1
        elif ch == "\\":
            i = _escape(pattern, i, out)
        elif ch == "[":
            i = _char_class(pattern, i, out)
        elif ch == "(":
            i, anchored = _open(pattern, i, out, levels, anchored)
        elif ch == ")":
            out.append(")" * lv.pending)
            if len(levels) > 1:
                levels.pop()
            out.append(")")
            i += 1
        elif ch == "|":
            out.append(")" * lv.pending + "|" + "".join(lv.reopen))
            i += 1
        elif m := _QUANT.match(pattern, i):
            out.append(m.group())
            i = m.end()
            nxt = pattern[i] if i < n else ""
            if nxt == "+":
                out.append("+")
                i += 1
            elif nxt == "?":
                if not lv.ungreedy:
                    out.append("?")
                i += 1
            elif lv.ungreedy:
                out.append("?")
        else:
            out.append(ch)
            i += 1
    out.append(")" * levels[0].pending)
    body = "".join(out)
    return "\\A(?:" + body + ")" if anchored else body


def _escape(p: str, i: int, out: list[str]) -> int:
    nxt = p[i + 1 : i + 2]
    if nxt == "Q":
        end = p.find("\\E", i + 2)
        stop = len(p) if end < 0 else end
        out.append(regex.escape(p[i + 2 : stop]))
        return len(p) if end < 0 else end + 2
    if nxt == "z":
        out.append("\\Z")
    elif nxt == "Z":
        out.append("(?=\\n?\\Z)")
    elif nxt == "e":
        out.append("\\x1b")
    elif nxt == "c" and i + 2 < len(p) and p[i + 2].isascii():
        out.append(f"\\x{ord(p[i + 2].upper()) ^ 0x40:02x}")
        return i + 3
    elif m := _BACKREF.match(p, i):
        name = next(g for g in m.groups() if g is not None)
        out.append(f"(?:\\{name})" if name.isdigit() else f"(?P={name})")
        return m.end()
    else:
        out.append(p[i : i + 2])
    return i + 2


def _char_class(p: str, i: int, out: list[str]) -> int:
    start = i
    i += 1
    if p.startswith("^", i):
        i += 1
    if p.startswith("]", i):
        i += 1
    while i < len(p) and p[i] != "]":
        if p[i] == "\\":
            i += 2
        elif p.startswith("[:", i) and (end := p.find(":]", i + 2)) > 0:
            i = end + 2
        else:
            i += 1
    out.append(p[start : i + 1])
    return i + 1


def _open(p: str, i: int, out: list[str], levels: list[_Level], anchored: bool) -> tuple[int, bool]:
    lv = levels[-1]
    if p.startswith("(?#", i):
        end = p.find(")", i)
        return (len(p) if end < 0 else end + 1), anchored
    child = _Level(ungreedy=lv.ungreedy, extended=lv.extended)
    if m := _INLINE.match(p, i):
        on, off, closer = m.group(1), m.group(2) or "", m.group(3)
        target = lv if closer == ")" else child
        if "U" in on:
            target.ungreedy = True
        if "U" in off:
            target.ungreedy = False
        if "x" in on:
            target.extended = True
        if "x" in off:
            target.extended = False
        anchored = anchored or "A" in on
        on = on.replace("U", "").replace("A", "")
        off = off.replace("U", "").replace("A", "")
        flags = on + ("-" + off if off else "")
        if closer == ")":
            if flags:
                opener = f"(?{flags}:"
                out.append(opener)
                lv.pending += 1
                lv.reopen.append(opener)
            return m.end(), anchored
        out.append(f"(?{flags}:")
        levels.append(child)
        return m.end(), anchored
    if (m := _NAMED.match(p, i)) and not p.startswith(("(?<=", "(?<!"), i):
        out.append(f"(?P<{m.group(1)}>")
        levels.append(child)
        return m.end(), anchored
    out.append("(")
    levels.append(child)
    return i + 1, anchored


_UNSET: Any = object()
# a pattern made only of these (with an optional ``^`` first and ``$`` last) is a plain
# literal search: it always compiles, so validating it needs no regex compile
_PLAIN = re.compile(r"\^?[A-Za-z0-9_ ]*\$?")


@attrs.define
class _Compiled:
    """A translated pattern: the str form now, the UTF-8 bytes form on first use."""

    source: str
    translated: str
    text_rx: Any
    _bytes_rx: Any = _UNSET

    @property
    def bytes_rx(self) -> Any:
        """The pattern compiled for UTF-8 bytes, or None when it has no bytes form."""
        rx = self._bytes_rx
        if rx is _UNSET:
            try:
                rx = regex.compile(self.translated.encode("utf-8", "surrogateescape"), regex.V0)
            except (regex.error, UnicodeEncodeError):
                rx = None
            self._bytes_rx = rx
        return rx


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> _Compiled:
    """Translate and compile a PCRE pattern (the bytes form lazily); cached by pattern text.

    Raises:
        regex.error: the pattern is invalid.
    """
    translated = translate(pattern)
    return _Compiled(pattern, translated, regex.compile(translated, regex.ASCII | regex.V0))


def check_pattern(pattern: str, expression: str, offset: int) -> None:
    """Raise :class:`InvalidPatternError` at ``offset`` when ``pattern`` does not compile.

    A plain literal (letters, digits, ``_``, spaces, optional ``^``/``$`` anchors) is
    accepted without compiling; anything else is compiled once (cached).
    """
    if _PLAIN.fullmatch(pattern):
        return
    try:
        compile_pattern(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise InvalidPatternError(
            expression, offset, "a valid regular expression", f"{pattern!r} ({exc})"
        ) from None


def _timeout(pattern: str) -> RegexTimeoutError:
    return RegexTimeoutError(pattern, REGEX_TIMEOUT)


def like_matcher(pattern: str, raw: bool) -> Callable[[str], bool]:
    """Return ``text -> bool``: does ``pattern`` match anywhere in ``text``?

    ``raw`` patterns are literal substrings. An empty pattern is the NULL
    literal and matches nothing. A plain literal pattern (see :func:`check_pattern`)
    is compiled on the first call; any other is compiled now (a cache hit after
    the parser's check).

    Raises:
        regex.error: the (non-raw) pattern is invalid (the parser checks first).
    """
    if not pattern:
        return lambda text: False
    if raw:
        return lambda text: pattern in text
    if not _PLAIN.fullmatch(pattern):
        compile_pattern(pattern)
    compiled: _Compiled | None = None
    search: Any = None

    def match(text: str) -> bool:
        nonlocal compiled, search
        if search is None:
            compiled = compile_pattern(pattern)
            search = compiled.text_rx.search
        try:
            if text.isascii():
                return search(text, 0, None, None, False, REGEX_TIMEOUT) is not None
            assert compiled is not None
            return _search_bytes(compiled, text)
        except TimeoutError:
            raise _timeout(pattern) from None

    return match


def _search_bytes(compiled: _Compiled, text: str) -> bool:
    bytes_rx = compiled.bytes_rx
    if bytes_rx is None:
        return compiled.text_rx.search(text, 0, None, None, False, REGEX_TIMEOUT) is not None
    data = text.encode("utf-8", "surrogateescape")
    return bytes_rx.search(data, 0, None, None, False, REGEX_TIMEOUT) is not None


def regexp_replace(text: str, pattern: str, replacement: str) -> str:
    """Replace every match of ``pattern`` in ``text`` by the literal ``replacement``.

    Raises:
        regex.error: the pattern is invalid.
        RegexTimeoutError: matching took longer than :data:`REGEX_TIMEOUT`.
    """
    compiled = compile_pattern(pattern)
    try:
        bytes_rx = None if text.isascii() else compiled.bytes_rx
        if bytes_rx is None:
            return str(compiled.text_rx.sub(lambda m: replacement, text, timeout=REGEX_TIMEOUT))
        data = text.encode("utf-8", "surrogateescape")
        rep = replacement.encode("utf-8", "surrogateescape")
        out = bytes_rx.sub(lambda m: rep, data, timeout=REGEX_TIMEOUT)
        return bytes(out).decode("utf-8", "surrogateescape")
    except TimeoutError:
        raise _timeout(pattern) from None
