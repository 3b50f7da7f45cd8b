"""Turn filter text into tokens (spec §1.1-§1.4).

Also owns the two string-literal readings: :func:`unescape` applies the
escape table of §1.2 to ordinary literals; :func:`pattern_body` resolves only
the closing-quote escape, for LIKE and REGEXP_REPLACE patterns. Imports only
``errors``, ``paths``, ``expr.operators`` and ``expr.tokens``.
"""

from __future__ import annotations

import re

from sowlib.errors import FieldPathError, FilterSyntaxError
from sowlib.expr.operators import CANONICAL, SPELLINGS, U64_MAX
from sowlib.expr.tokens import Kind, Token
from sowlib.paths import parse_path

__all__ = ["pattern_body", "tokenize", "unescape"]

_WS = " \t\n\r\f\v"
_PATH = re.compile(r"(?:/@?[A-Za-z0-9_][A-Za-z0-9_.\-:]*(?:\[[0-9]+\])?)+")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PUNCT = {"(": Kind.LPAREN, ")": Kind.RPAREN, ",": Kind.COMMA}
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}
_DIGITS = frozenset("0123456789")
_STEP_START = frozenset("0123456789_@abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")


def _error(text: str, offset: int, expected: str, found: str) -> FilterSyntaxError:
    return FilterSyntaxError(text, offset, expected, found)


def _found(text: str, pos: int) -> str:
    return "end of input" if pos >= len(text) else repr(text[pos])


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with an EOF token; O(len(text)).

    Raises:
        FilterSyntaxError: an unknown character, an unterminated string, a
            malformed number or field path; ``offset`` points at it.
    """
    out: list[Token] = []
    pos = 0
    while True:
        tok = _token(text, pos)
        out.append(tok)
        if tok.kind is Kind.EOF:
            return out
        pos = tok.end


def _token(text: str, pos: int) -> Token:
    """The token at ``pos`` after any whitespace (EOF at the end)."""
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    if pos >= n:
        return Token(Kind.EOF, "", None, n, n)
    ch = text[pos]
    if ch == "/" and pos + 1 < n and (text[pos + 1] in _STEP_START):
        m = _PATH.match(text, pos)
        if m is None:  # e.g. '/@' followed by a non-name character
            raise _error(text, pos + 1, "a field name", _found(text, pos + 1))
        return _path_token(text, m.group(), pos, m.end())
    if ch == "[":
        return _bracketed(text, pos)
    if ch in _DIGITS or (ch == "." and pos + 1 < n and text[pos + 1] in _DIGITS):
        return _number(text, pos)
    if ch in "'\"":
        return _string(text, pos, pos + 1, Kind.STRING)
    if ch in "rR" and pos + 1 < n and text[pos + 1] in "'\"":
        return _string(text, pos, pos + 2, Kind.RAW_STRING)
    if ch.isascii() and (ch.isalpha() or ch == "_"):
        m = _WORD.match(text, pos)
        assert m is not None
        return Token(Kind.WORD, m.group(), m.group().upper(), pos, m.end())
    if ch in _PUNCT:
        return Token(_PUNCT[ch], ch, ch, pos, pos + 1)
    for op in SPELLINGS:
        if text.startswith(op, pos):
            return Token(Kind.OP, op, CANONICAL.get(op, op), pos, pos + len(op))
    raise _error(text, pos, "an operator or a value", repr(ch))


def _path_token(text: str, body: str, start: int, end: int) -> Token:
    try:
        path = parse_path(body)
    except FieldPathError as exc:
        raise _error(text, start + exc.offset, "a field path", repr(body)) from None
    return Token(Kind.PATH, body, path, start, end)


def _bracketed(text: str, start: int) -> Token:
    if not text.startswith("[/", start):
        raise _error(text, start, "'[/' to open a bracketed field path", _found(text, start))
    depth, pos = 0, start
    while pos < len(text):
        if text[pos] == "[":
            depth += 1
        elif text[pos] == "]":
            depth -= 1
            if depth == 0:
                return _path_token(text, text[start : pos + 1], start, pos + 1)
        pos += 1
    raise _error(text, len(text), "']' to close the field path", "end of input")


def _number(text: str, start: int) -> Token:
    m = _NUMBER.match(text, start)
    if m is None:  # a leading '.': '.5'
        m = re.compile(r"\.[0-9]+([eE][+-]?[0-9]+)?").match(text, start)
        assert m is not None
    end = m.end()
    if end < len(text) and (text[end].isalnum() or text[end] in "_.@"):  # '5abc', '1.2.3'
        raise _error(text, end, "an operator after the number", repr(text[end]))
    body = m.group()
    return Token(Kind.NUMBER, body, _number_value(text, body, start), start, end)


def _number_value(text: str, body: str, start: int) -> int | float:
    # float() reads any length in linear time; int() only short digit strings (a long
    # one is above the 64-bit range anyway, and int() refuses past 4,300 digits)
    digits = body.lstrip("0")
    if "." in body or "e" in body or "E" in body or len(digits) > 20:
        value = float(body)
        if value in (float("inf"), float("-inf")):
            raise _error(text, start, "a finite number", repr(body))
        return value
    value_int = int(digits or "0")
    return float(value_int) if value_int > U64_MAX else value_int


def _string(text: str, start: int, body_start: int, kind: Kind) -> Token:
    quote = text[body_start - 1]
    pos = body_start
    raw = kind is Kind.RAW_STRING
    while pos < len(text):
        ch = text[pos]
        if ch == quote:
            return Token(kind, text[start : pos + 1], text[body_start:pos], start, pos + 1)
        pos += 1 if raw or ch != "\\" else 2
    raise _error(text, start, "a closing " + quote, "end of input")


def unescape(body: str, text: str, offset: int) -> str:
    """Apply the escape table of spec §1.2 to a literal's body.

    Strings are byte strings: escapes produce bytes, the rest is UTF-8, and
    the result is decoded with ``surrogateescape`` (so ``'\\xC3\\xA9'`` is
    ``'é'`` and a lone ``'\\xE9'`` stays one byte).

    Args:
        body: the characters between the quotes.
        text: the whole filter (for errors).
        offset: where ``body`` starts in ``text``.
    Raises:
        FilterSyntaxError: a bad ``\\x`` or octal escape, or an unencodable character.
    """
    if "\\" not in body:
        _check_encodable(body, text, offset)
        return body
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            out += _encode(ch, text, offset + i)
            i += 1
            continue
        nxt = body[i + 1]  # the lexer guarantees a character after '\'
        if nxt in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[nxt].encode()
            i += 2
        elif nxt == "x":
            digits = body[i + 2 : i + 4]
            if len(digits) != 2 or not set(digits) <= _HEX:
                raise _error(text, offset + i, "two hex digits after \\x", repr(digits))
            out.append(int(digits, 16))
            i += 4
        elif nxt in _OCT:
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not set(digits) <= _OCT or int(digits, 8) > 255:
                raise _error(text, offset + i, "three octal digits (000-377)", repr(digits))
            out.append(int(digits, 8))
            i += 4
        else:
            out += _encode(nxt, text, offset + i + 1)
            i += 2
    return out.decode("utf-8", "surrogateescape")


def _encode(ch: str, text: str, offset: int) -> bytes:
    try:
        return ch.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise _error(text, offset, "a character", repr(ch)) from None


def _check_encodable(body: str, text: str, offset: int) -> None:
    if body.isascii():
        return
    for i, ch in enumerate(body):
        _encode(ch, text, offset + i)
    # a valid sequence of surrogate-escaped bytes could decode to a character;
    # normalise so the same bytes always give the same string
    if body.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape") != body:
        raise _error(text, offset, "text that is its own UTF-8 reading", repr(body))


def pattern_body(body: str, quote: str) -> str:
    """Resolve only the closing-quote escape (``\\'``) of a pattern literal (§1.2 [R])."""
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            pair = body[i : i + 2]
            out.append(quote if pair == "\\" + quote else pair)
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)
