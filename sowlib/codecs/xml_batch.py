"""Flat XML documents of a known shape: ``decode_many``'s fast path, and ``decode``'s.

Record-shaped messages (``<Order><id>1</id><px>2.5</px></Order>``) usually repeat the
same elements in the same order, so one regular expression built for that shape checks
and reads a whole batch, and each element's values are typed column by column; a single
document is tried against the last shape decoded. Anything else returns None and takes
the general path. Imports only ``codecs.infer``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from sowlib.codecs.infer import infer_scalar

__all__ = [
    "BATCH_COMPILES",
    "COMPILE_AFTER",
    "decode_flat_batch",
    "decode_last_shape",
    "remember_shape",
    "typed_column",
]

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_TAG = re.compile(rb"<(/?" + _NAME.encode() + rb")>")
# Element text the full parser reads as it stands: no markup, no entity or character
# reference, no control character (rejected) or carriage return (normalised). No ">"
# either, so no "]]>" (not allowed in text) and no scan for it: producers write "&gt;"
# anyway. The non-characters U+FFFE/U+FFFF are looked for in the decoded text (O(1) in
# ASCII text): in the character set, they make compiling a pattern much slower.
_TEXT = "([^<&>\x00-\x08\x0b-\x1f]*)"
# The separator between messages: "&" cannot occur in a flat document's text or tags.
_SEP = b"&"

# Column classes, over a column's values joined with NUL (which no text holds).
# Some value is empty or starts like a number: the column is not plain text.
_NOT_TEXT = re.compile("\x00(?![^-+.0-9\x00])")
# Integers of at most 18 digits: always in infer_scalar's 64-bit range.
_INTS = re.compile("(?:\x00[+-]?(?:0|[1-9][0-9]{0,17}))*")
# Decimal point or exponent, and ending in a digit or point: infer_scalar's float spelling.
_FLOATS = re.compile(
    "(?:\x00[+-]?(?:[0-9]+\\.[0-9]*(?:[eE][+-]?[0-9]+)?"
    "|\\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))*"
)
_isfinite = math.isfinite
#: Messages of a big batch checked against the first one's shape before the whole batch.
_SAMPLES = 16

# Compiling a shape's pattern costs about as much as decoding a few dozen messages
# the general way (measured), so it is done for a shape that recurs: a batch at least
# BATCH_COMPILES long, or a shape decoded one by one COMPILE_AFTER times. Both
# tables are bounded and only ever replaced or added to whole, so threads may race.
# Both are read on every call, so a test may lower them to reach the fast paths with
# small inputs.
#: Shortest batch of a new shape whose pattern ``decode_flat_batch`` compiles.
BATCH_COMPILES = 128
#: Messages of one shape decoded one by one before its pattern is compiled.
COMPILE_AFTER = 4
_MAX_SHAPES = 64
_MAX_CHILDREN = 256
Shape = tuple[str, tuple[str, ...]]
_patterns: dict[Shape, re.Pattern[str]] = {}
_seen: dict[Shape, int] = {}
# The shape of the last flat document decoded the general way: (pattern, root, children).
_last: tuple[re.Pattern[str], str, tuple[str, ...]] | None = None


def _compile(shape: Shape) -> re.Pattern[str]:
    """One message of this shape, the children's texts captured, then the separator."""
    root, children = shape
    body = "".join(f"<{re.escape(c)}>{_TEXT}</{re.escape(c)}>" for c in children)
    pattern = re.compile(f"<{re.escape(root)}>{body}</{re.escape(root)}>&")
    if len(_patterns) >= _MAX_SHAPES:
        _patterns.clear()
    _patterns[shape] = pattern
    return pattern


def remember_shape(root: str, children: tuple[str, ...]) -> None:
    """Note a flat document with distinct text-only ``children`` was decoded; once its
    shape recurs, :func:`decode_last_shape` tries that shape first."""
    global _last
    shape = (root, children)
    pattern = _patterns.get(shape)
    if pattern is None:
        seen = _seen.get(shape, 0) + 1
        if seen < COMPILE_AFTER or len(children) > _MAX_CHILDREN:
            if len(_seen) >= 4 * _MAX_SHAPES:
                _seen.clear()
            _seen[shape] = seen
            return
        pattern = _compile(shape)
    _last = (pattern, root, children)


def decode_last_shape(raw: bytes) -> dict[str, Any] | None:
    """``XmlCodec.decode(raw)`` when ``raw`` has the remembered shape, else None."""
    shape = _last
    if shape is None:
        return None
    pattern, root, children = shape
    try:
        text = (raw + _SEP).decode("utf-8")
    except UnicodeDecodeError:
        return None
    m = pattern.fullmatch(text)
    if m is None or "\ufffe" in text or "\uffff" in text:
        return None
    return {root: dict(zip(children, map(infer_scalar, m.groups()), strict=True))}


def _shape(first: bytes) -> Shape | None:
    """Root and child names of a flat document with distinct children, else None."""
    tags = [t.decode("ascii") for t in _TAG.findall(first)]
    if len(tags) < 4 or len(tags) % 2:
        return None
    root, children = tags[0], tuple(tags[1:-1:2])
    if (
        root[0] == "/"
        or tags[-1] != "/" + root
        or tags[2:-1:2] != ["/" + c for c in children]
        or any(c[0] == "/" for c in children)
        or len(set(children)) != len(children)  # a repeated child decodes to a list
    ):
        return None
    return root, children


def typed_column(column: Sequence[str]) -> Sequence[Any]:
    """``infer_scalar`` of each value; whole columns of text, ints or floats in C."""
    joined = "\x00" + "\x00".join(column)
    if _NOT_TEXT.search(joined) is None:
        return column  # infer_scalar returns such text unchanged
    if _INTS.fullmatch(joined):
        return list(map(int, column))
    if _FLOATS.fullmatch(joined):
        floats = list(map(float, column))
        if all(map(_isfinite, floats)):
            return floats
    return list(map(infer_scalar, column))


def decode_flat_batch(payloads: Sequence[bytes]) -> list[dict[str, Any]] | None:
    """What ``XmlCodec.decode`` gives for each payload, when every one is a flat
    document (see ``xml_codec._FLAT``) with the first one's root and distinct children
    in the same order, and no ">" in any text; None for any other batch. O(total bytes).
    """
    if not payloads:
        return []
    shape = _shape(payloads[0])
    if shape is None:
        return None
    pattern = _patterns.get(shape)
    if pattern is None:
        if len(payloads) < BATCH_COMPILES or len(shape[1]) > _MAX_CHILDREN:
            return None
        pattern = _compile(shape)
    # A batch of mixed shapes fails the split below only after a scan of all of it;
    # a few messages checked first catch most such batches for a small fraction of that.
    if len(payloads) >= 4 * _SAMPLES:
        step = len(payloads) // _SAMPLES | 1  # odd: shapes that alternate are caught too
        for sample in payloads[step::step]:
            if pattern.fullmatch((sample + _SEP).decode("utf-8", "replace")) is None:
                return None
    try:
        text = (_SEP.join(payloads) + _SEP).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\ufffe" in text or "\uffff" in text:
        return None
    root, children = shape
    width = len(children) + 1
    # [before, texts of message 1..., between, texts of message 2..., ..., after]
    pieces = pattern.split(text)
    if len(pieces) != 1 + width * len(payloads) or any(pieces[::width]):
        return None
    # Nothing lies outside the matches, so they are the whole batch: as neither texts
    # nor names hold the separator, each message is one match.
    columns = [pieces[i::width] for i in range(1, width)]
    rows = zip(*map(typed_column, columns), strict=True)
    return [{root: node} for node in map(dict, map(zip, repeat(children), rows))]
