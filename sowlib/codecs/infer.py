"""Type inference for untyped message text (XML, FIX, NVFIX) and the reverse rendering.

One rule for every text-based codec (spec §2.1, §1.3, §2.2). Imports only ``errors``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["INT_MAX", "INT_MIN", "NUMBER_START", "infer_scalar", "render_scalar"]

#: Largest integer kept as an int: unsigned 64-bit (spec §1.3).
INT_MAX = 2**64 - 1
#: Smallest integer kept as an int: signed 64-bit.
INT_MIN = -(2**63)

#: Characters a number can start with; anything else is text (callers may pre-test).
NUMBER_START = frozenset("+-.0123456789")
_NUMBER_END = frozenset(".0123456789")
#: Digits of the longest 64-bit integer (2**64 - 1 has 20).
_MAX_INT_DIGITS = 20


def infer_scalar(text: str) -> Any:
    """Type untyped message text the way the AMPS parsers do (spec §2.1).

    * ``""`` is NULL (``None``).
    * Integer spelling (optional sign, digits, no leading zero) -> ``int`` when it fits
      in ``[-2**63, 2**64 - 1]`` (signed 64-bit, unsigned above the signed maximum).
    * Decimal point and/or exponent -> ``float`` when finite.
    * Everything else stays ``str``, unchanged: text with spaces, hex (``0x10``),
      ``inf``/``nan``, integers outside the 64-bit range, overflowing floats
      (``1e999``; a spelling over 20 digits is text without being parsed), and
      integers with leading zeros (``007``, an identifier rather than
      a quantity: converting would lose the zeros from keys and re-encoded deltas;
      filters still compare it numerically against numbers, spec §2.4 rule 4).

    O(len(text)); strings that cannot start a number return after one set lookup.

    Example:
        >>> infer_scalar("12"), infer_scalar("-1.5e3"), infer_scalar("007"), infer_scalar("")
        (12, -1500.0, '007', None)
    """
    if not text:
        return None
    first = text[0]
    if first not in NUMBER_START:
        return text
    # str methods instead of a regular expression: no regex call on this hot path.
    # isdigit() also accepts non-ASCII digits, hence the isascii() checks.
    digits = text[1:] if first in "+-" else text
    if digits.isdigit():
        if not digits.isascii() or (digits[0] == "0" and len(digits) > 1):
            return text
        if len(digits) > _MAX_INT_DIGITS:
            return text  # beyond 64 bits whatever the digits; int() would be superlinear
        value = int(text)
        return value if INT_MIN <= value <= INT_MAX else text
    # float() accepts a superset of the AMPS spelling: "inf"/"nan" (excluded by the
    # last character), "1_0" and spaces (excluded below), non-ASCII digits (isascii),
    # and integers such as "007" (a decimal point or exponent is required here).
    if (
        text[-1] in _NUMBER_END
        and text.isascii()
        and "_" not in text
        and ("." in text or "e" in text or "E" in text)
    ):
        try:
            number = float(text)
        except ValueError:
            return text
        return number if math.isfinite(number) else text
    return text


def render_scalar(value: Any) -> str | None:
    """Render a scalar as message text so that ``infer_scalar`` reads it back.

    ``None`` -> ``None`` (the caller writes an empty value); ``int`` -> decimal;
    ``float`` -> the shortest round-trip form (``repr``), always with a ``.`` or an
    exponent so it reads back as a float; ``bool`` -> ``"true"``/``"false"``;
    ``bytes`` -> UTF-8 text (undecodable bytes kept with ``surrogateescape``);
    ``str`` as is.

    Raises:
        ValueError: NaN or infinity (they would read back as strings), or a value
            that is not a scalar.
    """
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and infinity have no text form that reads back as a number")
        return repr(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "surrogateescape")
    raise ValueError(f"{type(value).__name__} is not a scalar")
