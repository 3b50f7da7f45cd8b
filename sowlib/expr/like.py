"""LIKE and REGEXP_REPLACE patterns: PCRE syntax translated for the ``regex`` package (§3.3).

Search semantics (match anywhere), byte semantics (ASCII values use a str
pattern with ASCII rules; others are matched as UTF-8 bytes), a per-match
timeout and a per-query budget (:func:`regex_budget`), and raw patterns as
plain substring search. Imports only ``errors``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import attrs
import regex

from sowlib.errors import InvalidPatternError, RegexBudgetError, RegexTimeoutError

__all__ = [
    "MAX_PATTERN_LENGTH",
    "QUERY_REGEX_BUDGET",
    "REGEX_TIMEOUT",
    "CompiledPattern",
    "InvalidPatternError",
    "budget_active",
    "check_pattern",
    "compile_pattern",
    "like_matcher",
    "regex_budget",
    "regexp_replace",
    "translate",
]

#: Seconds one pattern may spend on one value before RegexTimeoutError (module-level knob).
REGEX_TIMEOUT: float = 1.0
#: Longest LIKE / REGEXP_REPLACE pattern, in characters. The regex engine prepares a
#: long literal on its first search in more than quadratic time that its timeout does
#: not interrupt, so longer patterns are refused (use IN or BEGINS WITH lists instead).
MAX_PATTERN_LENGTH = 512
#: Seconds of regex matching (LIKE and REGEXP_REPLACE, all values together) that the
#: work inside one :func:`regex_budget` block may spend before RegexBudgetError.
QUERY_REGEX_BUDGET: float = 5.0


@attrs.define
class _Budget:
    seconds: float
    left: float


_budget: ContextVar[_Budget | None] = ContextVar("sowlib_regex_budget", default=None)


@contextmanager
def regex_budget(seconds: float | None = None) -> Iterator[None]:
    """Bound the regex time of everything evaluated inside the block (one query).

    Each match still stops at :data:`REGEX_TIMEOUT`; together the matches may
    spend ``seconds`` (default :data:`QUERY_REGEX_BUDGET`), measured as time
    spent inside the regex engine, then the next one raises
    :class:`~sowlib.errors.RegexBudgetError`. Nested blocks share the
    outermost budget. Context-local: threads and async tasks have their own.

    Example:
        >>> with regex_budget(2.0):  # doctest: +SKIP
        ...     hits = [d for d in docs if flt.matches(d)]
    """
    if _budget.get() is not None:
        yield
        return
    total = QUERY_REGEX_BUDGET if seconds is None else seconds
    token = _budget.set(_Budget(total, total))
    try:
        yield
    finally:
        _budget.reset(token)


def budget_active() -> bool:
    """Whether a :func:`regex_budget` block is open in the current context."""
    return _budget.get() is not None


def _run(pattern: str, fn: Callable[[float], Any]) -> Any:
    """``fn(timeout)`` under the per-match limit and the current budget, if any."""
    budget = _budget.get()
    if budget is None:
        try:
            return fn(REGEX_TIMEOUT)
        except TimeoutError:
            raise _timeout(pattern) from None
    if budget.left <= 0:
        raise RegexBudgetError(pattern, budget.seconds)
    limit = min(REGEX_TIMEOUT, budget.left)
    start = time.monotonic()
    try:
        return fn(limit)
    except TimeoutError:
        if limit < REGEX_TIMEOUT:
            raise RegexBudgetError(pattern, budget.seconds) from None
        raise _timeout(pattern) from None
    finally:
        budget.left -= time.monotonic() - start


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
class CompiledPattern:
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

    @property
    def has_bytes_form(self) -> bool:
        """Whether :attr:`bytes_rx` has been built (it is, on its first read)."""
        return self._bytes_rx is not _UNSET


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> CompiledPattern:
    """Translate and compile a PCRE pattern (the bytes form lazily); cached by pattern text.

    Raises:
        regex.error: the pattern is invalid, or longer than :data:`MAX_PATTERN_LENGTH`.
    """
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise regex.error(f"longer than {MAX_PATTERN_LENGTH} characters")
    translated = translate(pattern)
    return CompiledPattern(pattern, translated, regex.compile(translated, regex.ASCII | regex.V0))


def check_pattern(pattern: str, expression: str, offset: int) -> None:
    """Raise :class:`InvalidPatternError` at ``offset`` when ``pattern`` does not compile.

    A plain literal (letters, digits, ``_``, spaces, optional ``^``/``$`` anchors) is
    accepted without compiling; anything else is compiled once (cached).
    """
    if len(pattern) <= MAX_PATTERN_LENGTH and _PLAIN.fullmatch(pattern):
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
    if len(pattern) > MAX_PATTERN_LENGTH or not _PLAIN.fullmatch(pattern):
        compile_pattern(pattern)
    compiled: CompiledPattern | None = None
    search: Any = None

    def match(text: str) -> bool:
        nonlocal compiled, search
        if search is None:
            compiled = compile_pattern(pattern)
            search = compiled.text_rx.search
        if _budget.get() is None:
            try:
                if text.isascii():
                    return search(text, 0, None, None, False, REGEX_TIMEOUT) is not None
                assert compiled is not None
                return _search_bytes(compiled, text, REGEX_TIMEOUT)
            except TimeoutError:
                raise _timeout(pattern) from None
        assert compiled is not None
        found: bool = _run(pattern, lambda limit: _search_any(compiled, text, limit))
        return found

    return match


def _utf8(text: str) -> bytes:
    """The bytes a value stands for: a lone byte kept by ``surrogateescape`` is itself;
    a string with any other lone surrogate gives surrogates their 3-byte form."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _search_any(compiled: CompiledPattern, text: str, limit: float) -> bool:
    if text.isascii():
        return compiled.text_rx.search(text, 0, None, None, False, limit) is not None
    return _search_bytes(compiled, text, limit)


def _search_bytes(compiled: CompiledPattern, text: str, limit: float) -> bool:
    bytes_rx = compiled.bytes_rx
    if bytes_rx is None:
        return compiled.text_rx.search(text, 0, None, None, False, limit) is not None
    return bytes_rx.search(_utf8(text), 0, None, None, False, limit) is not None


def regexp_replace(text: str, pattern: str, replacement: str) -> str:
    """Replace every match of ``pattern`` in ``text`` by the literal ``replacement``.

    All the matching of one call shares one :data:`REGEX_TIMEOUT` (and the current
    :func:`regex_budget`).

    Raises:
        regex.error: the pattern is invalid.
        RegexTimeoutError: matching took longer than :data:`REGEX_TIMEOUT`.
    """
    compiled = compile_pattern(pattern)
    bytes_rx = None if text.isascii() else compiled.bytes_rx
    if bytes_rx is None:
        out: str = _run(pattern, lambda limit: _replace(compiled.text_rx, text, replacement, limit))
        return out
    data, rep = _utf8(text), _utf8(replacement)
    got: bytes = _run(pattern, lambda limit: _replace(bytes_rx, data, rep, limit))
    return got.decode("utf-8", "surrogateescape")


def _replace(rx: Any, text: Any, replacement: Any, limit: float) -> Any:
    """``rx.sub`` with a literal replacement, as a loop of searches within ``limit`` seconds.

    The engine's own ``sub``/``finditer`` with a function replacement were seen to run
    for minutes past their timeout on long literal patterns; a plain search honours it.
    After an empty match the next search starts one character later (as ``re.sub``).
    """
    deadline = time.monotonic() + limit
    pieces = []
    pos, n = 0, len(text)
    while pos <= n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        m = rx.search(text, pos, None, None, False, left)
        if m is None:
            break
        start, end = m.span()
        pieces.append(text[pos:start])
        pieces.append(replacement)
        if end == start:
            pieces.append(text[start : start + 1])
            end = start + 1
        pos = end
    pieces.append(text[pos:])
    return text[:0].join(pieces)
