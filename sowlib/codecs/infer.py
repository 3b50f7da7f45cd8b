"""Type inference for untyped message text (XML, FIX, NVFIX) and the reverse rendering.

One rule for every text-based codec (spec §2.1, §1.3, §2.2). Imports only ``errors``.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["INT_MAX", "INT_MIN", "infer_scalar", "render_scalar"]

#: Largest integer kept as an int: unsigned 64-bit (spec §1.3).
INT_MAX = 2**64 - 1
#: Smallest integer kept as an int: signed 64-bit.
INT_MIN = -(2**63)

# ASCII digits only: str.isdigit() and float() also accept other scripts' digits,
# underscores and surrounding spaces, none of which are AMPS numbers (spec §2.2 [R]).
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?\Z")
_NUMBER_START = frozenset("+-.0123456789")


def infer_scalar(text: str) -> Any:
    """Type untyped message text the way the AMPS parsers do (spec §2.1).

    * ``""`` is NULL (``None``).
    * Integer spelling (optional sign, digits, no leading zero) -> ``int`` when it fits
      in ``[-2**63, 2**64 - 1]`` (signed 64-bit, unsigned above the signed maximum).
    * Decimal point and/or exponent -> ``float`` when finite.
    * Everything else stays ``str``, unchanged: text with spaces, hex (``0x10``),
      ``inf``/``nan``, integers outside the 64-bit range, overflowing floats
      (``1e999``), and integers with leading zeros (``007``, an identifier rather than
      a quantity: converting would lose the zeros from keys and re-encoded deltas;
      filters still compare it numerically against numbers, spec §2.4 rule 4).

    O(len(text)); strings that cannot start a number return after one set lookup.

    Example:
        >>> infer_scalar("12"), infer_scalar("-1.5e3"), infer_scalar("007"), infer_scalar("")
        (12, -1500.0, '007', None)
    """
    if not text:
        return None
    if text[0] not in _NUMBER_START:
        return text
    if _INT.match(text):
        value = int(text)
        return value if INT_MIN <= value <= INT_MAX else text
    if _FLOAT.match(text):
        number = float(text)
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
