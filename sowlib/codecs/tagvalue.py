"""The ``fix`` and ``nvfix`` message types: flat ``name=value`` fields with a separator.

Both are one codec class differing in which names they accept. Imports only
``errors`` and the ``codecs`` helpers; never ``expr`` or ``storage``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any

import attrs

from sowlib.codecs.infer import NUMBER_START, infer_scalar, render_scalar
from sowlib.codecs.merge import merge_documents
from sowlib.errors import ConfigError, DecodeError, EncodeError

__all__ = ["FixCodec", "NvfixCodec", "separator_bytes"]

SOH = b"\x01"


def separator_bytes(value: str | bytes | int) -> bytes:
    """Normalise an AMPS ``FieldSeparator`` option: ``"|"``, ``b"\\x01"`` or a byte code.

    Raises:
        ConfigError: empty, contains ``=``, or not a byte.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= 255:
            raise ConfigError("FieldSeparator", f"byte code {value} is outside 0..255")
        sep = bytes([value])
    elif isinstance(value, str):
        sep = value.encode("utf-8")
    elif isinstance(value, bytes):
        sep = value
    else:
        raise ConfigError("FieldSeparator", f"expected str, bytes or int, got {value!r}")
    if not sep:
        raise ConfigError("FieldSeparator", "the separator is empty")
    if b"=" in sep:
        raise ConfigError("FieldSeparator", f"the separator {sep!r} contains '='")
    return sep


@attrs.frozen
class _TagValueCodec:
    """Shared implementation; see :class:`FixCodec` and :class:`NvfixCodec`."""

    separator: bytes = attrs.field(default=SOH, converter=separator_bytes)
    # A one-character ASCII separator lets both directions work on str in one pass
    # and check every field at once; others take the field-by-field path, which is
    # also where every error is reported from.
    _fast_sep: str | None = attrs.field(init=False, eq=False, repr=False)

    name = "tagvalue"
    numeric_names = False
    supports_filter = True
    supports_delta = True

    def __attrs_post_init__(self) -> None:
        sep = self.separator
        fast = sep.decode("ascii") if len(sep) == 1 and sep[0] < 0x80 else None
        object.__setattr__(self, "_fast_sep", fast)

    def decode(self, data: bytes) -> dict[str, Any]:
        """Split ``name=value`` fields into a flat dict in message order.

        Values are typed by :func:`~sowlib.codecs.infer.infer_scalar` (empty -> None);
        text is UTF-8 with undecodable bytes kept (``surrogateescape``) so re-encoding
        is exact. A name that occurs more than once collects its values in a list
        (FIX repeating groups), which filters treat as an array. One trailing
        separator is allowed. O(len(data)).

        Raises:
            DecodeError: a field without ``=`` or with an empty (FIX: non-numeric)
                name; ``offset`` is the byte offset of the field.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DecodeError(self.name, data, f"expected bytes, got {type(data).__name__}")
        raw = bytes(data)
        sep = self._fast_sep
        if sep is None:
            return self._decode_checked(data, raw)
        fields = raw.decode("utf-8", "surrogateescape").split(sep)
        if fields[-1] == "":
            fields.pop()  # trailing separator (or an empty message)
        doc: dict[str, Any] = {}
        for field in fields:
            name, eq, value = field.partition("=")
            if not eq or name in doc:
                return self._decode_checked(data, raw)
            # Inlined first test of infer_scalar: most text fields are not numbers.
            doc[name] = value if value and value[0] not in NUMBER_START else infer_scalar(value)
        if "" in doc:
            return self._decode_checked(data, raw)  # an empty name (or tag) is an error
        if self.numeric_names:
            names = "".join(doc)
            if not (names.isdigit() and names.isascii()):
                return self._decode_checked(data, raw)
        return doc

    def top_values(self, payloads: Sequence[bytes], field: str) -> list[Any] | None:
        """The value of ``field`` in each message, typed as :meth:`decode` types it, or
        None when any message is not one :meth:`decode` takes without an error, or does
        not hold ``field`` exactly once (then decode them one by one to learn why).

        Each message is checked whole against the shape of a valid message (one regular
        expression match) and only ``field`` is typed; no document is built. Equal to
        ``[decode(p)[field] for p in payloads]`` (``tests/codecs/test_tagvalue_top.py``).
        """
        sep = self._fast_sep
        if sep is None or not set(map(type, payloads)) <= {bytes}:
            return None
        shape = _message_shape(self.separator, self.numeric_names)
        if not all(map(shape.fullmatch, payloads)):
            return None
        finder = _field_finder(self.separator, field)
        found = list(map(finder.findall, payloads))
        if not all(len(one) == 1 for one in found):
            return None
        texts = [one[0].decode("utf-8", "surrogateescape") for one in found]
        return [t if t and t[0] not in NUMBER_START else infer_scalar(t) for t in texts]

    def _decode_checked(self, data: bytes | bytearray | memoryview, raw: bytes) -> dict[str, Any]:
        """Field-by-field decode that tracks byte offsets and collects repeated names."""
        sep = self.separator
        fields = raw.split(sep)
        if fields[-1] == b"":
            fields.pop()
        doc: dict[str, Any] = {}
        repeated: set[str] | None = None
        offset = 0
        for field in fields:
            name, eq, value = field.partition(b"=")
            if not eq:
                raise DecodeError(self.name, data, "field has no '='", offset)
            if self.numeric_names:
                if not name.isdigit():
                    raise DecodeError(self.name, data, f"tag {name!r} is not a number", offset)
            elif not name:
                raise DecodeError(self.name, data, "field has an empty name", offset)
            key = name.decode("utf-8", "surrogateescape")
            typed = infer_scalar(value.decode("utf-8", "surrogateescape"))
            if key not in doc:
                doc[key] = typed
            elif repeated is not None and key in repeated:
                doc[key].append(typed)
            else:
                doc[key] = [doc[key], typed]
                repeated = repeated or set()
                repeated.add(key)
            offset += len(field) + len(sep)
        return doc

    def encode(self, doc: Any) -> bytes:
        """Write ``name=value`` fields in dict order, each followed by the separator.

        A list value writes the name once per element. ``None`` writes an empty value.

        Raises:
            EncodeError: not a flat dict, a bad name (FIX: non-numeric), a nested
                value, or a value containing the separator.
        """
        if not isinstance(doc, dict):
            raise EncodeError(self.name, doc, "a message is a flat dict of fields")
        sep = self._fast_sep
        if sep is None:
            return self._encode_checked(doc)
        parts: list[str] = []
        for key, value in doc.items():
            kind = type(value)
            if kind is str:
                parts.append(f"{key}={value}")
            elif kind is int or (kind is float and math.isfinite(value)):
                parts.append(f"{key}={value!r}")
            elif value is None:
                parts.append(f"{key}=")
            else:
                return self._encode_checked(doc)  # lists, bools, bytes, or an error
        names = "".join(doc) if all(type(k) is str for k in doc) else None
        if (
            names is None
            or "" in doc
            or (self.numeric_names and not (names.isdigit() and names.isascii()))
            or "=" in names
        ):
            return self._encode_checked(doc)
        parts.append("")
        text = sep.join(parts)
        if text.count(sep) != len(doc):
            return self._encode_checked(doc)  # a name or value holds the separator
        return text.encode("utf-8", "surrogateescape")

    def _encode_checked(self, doc: dict[Any, Any]) -> bytes:
        sep = self.separator
        parts: list[bytes] = []
        for key, value in doc.items():
            name = self._name_bytes(doc, key)
            items = value if isinstance(value, list) else (value,)
            parts.extend(name + b"=" + self._value_bytes(doc, key, item) + sep for item in items)
        return b"".join(parts)

    def _name_bytes(self, doc: Any, key: Any) -> bytes:
        if not isinstance(key, str | int) or isinstance(key, bool):
            raise EncodeError(self.name, doc, f"field name {key!r} is not a str")
        name = str(key).encode("utf-8", "surrogateescape")
        if self.numeric_names and not name.isdigit():
            raise EncodeError(self.name, doc, f"FIX tag {key!r} is not a number")
        if not name or b"=" in name or self.separator in name:
            raise EncodeError(self.name, doc, f"field name {key!r} is empty or contains '='")
        return name

    def _value_bytes(self, doc: Any, key: str, item: Any) -> bytes:
        if isinstance(item, dict | list | tuple):
            raise EncodeError(self.name, doc, f"field {key!r} is nested; {self.name} is flat")
        try:
            text = render_scalar(item)
        except ValueError as exc:
            raise EncodeError(self.name, doc, f"field {key!r}: {exc}") from None
        value = b"" if text is None else text.encode("utf-8", "surrogateescape")
        if self.separator in value:
            raise EncodeError(self.name, doc, f"field {key!r} contains the separator")
        return value

    def merge(self, stored: Any, delta: Any) -> Any:
        """Tags in the delta replace or add; order is stored order, then new tags."""
        return merge_documents(stored, delta, message_type=self.name)


@functools.cache
def _message_shape(separator: bytes, numeric_names: bool) -> re.Pattern[bytes]:
    """A whole message :meth:`_TagValueCodec.decode` takes: fields ``name=value``, each
    but the last followed by the one-byte separator, one trailing separator allowed;
    names are ASCII digits (FIX) or non-empty without ``=`` (NVFIX)."""
    s = re.escape(separator)
    name = rb"[0-9]+" if numeric_names else rb"[^=" + s + rb"]+"
    one = name + rb"=[^" + s + rb"]*"
    return re.compile(rb"(?:" + one + s + rb")*(?:" + one + rb")?", re.DOTALL)


@functools.lru_cache(maxsize=64)
def _field_finder(separator: bytes, field: str) -> re.Pattern[bytes]:
    """Every value of the field named ``field`` in a message of valid shape."""
    s = re.escape(separator)
    name = re.escape(field.encode("utf-8", "surrogateescape"))
    return re.compile(rb"(?:^|" + s + rb")" + name + rb"=([^" + s + rb"]*)", re.DOTALL)


@attrs.frozen
class FixCodec(_TagValueCodec):
    """FIX: numeric tags, ``/35``, ``/55``; SOH separator unless configured (spec §15).

    Example:
        >>> FixCodec(separator="|").decode(b"35=D|38=100|55=AAPL|")
        {'35': 'D', '38': 100, '55': 'AAPL'}
    """

    name = "fix"
    numeric_names = True


@attrs.frozen
class NvfixCodec(_TagValueCodec):
    """NVFIX: any name without ``=`` or the separator (``/Symbol``) (spec §15).

    Example:
        >>> NvfixCodec(separator=";").decode(b"Symbol=IBM;Qty=5;Note=;")
        {'Symbol': 'IBM', 'Qty': 5, 'Note': None}
    """

    name = "nvfix"
