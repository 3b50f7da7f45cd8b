"""The AMPS client's message helpers: FIX and NVFIX builders and shredders, and the
composite message builder and parser.

Builders assemble a payload field by field (or part by part) for ``publish``;
shredders and the parser take a received payload apart. Imports ``codecs.composite``
(the composite wire format) and ``compat.exceptions``/``compat.message``.
"""

from __future__ import annotations

from typing import Self

from sowlib.codecs.composite import join_parts, split_parts
from sowlib.compat.exceptions import UsageException
from sowlib.compat.message import Message
from sowlib.errors import DecodeError

__all__ = [
    "CompositeMessageBuilder",
    "CompositeMessageParser",
    "FIXBuilder",
    "FIXShredder",
    "NVFIXBuilder",
    "NVFIXShredder",
]

SOH = "\x01"


def _text(value: object, what: str) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8")
    if isinstance(value, str | int | float):
        return str(value)
    raise UsageException(f"{what} must be text, bytes or a number, got {type(value).__name__}")


def _separator(field_separator: str | int) -> str:
    sep = chr(field_separator) if isinstance(field_separator, int) else str(field_separator)
    if len(sep) != 1 or sep == "=":
        raise UsageException(f"field separator {field_separator!r} is not one character")
    return sep


class NVFIXBuilder:
    """Builds an NVFIX payload: ``name=value`` fields, each ended by the separator.

    Example:
        >>> builder = NVFIXBuilder()
        >>> builder.append("sym", "IBM").append("qty", 100).get_string()
        'sym=IBM\\x01qty=100\\x01'
    """

    def __init__(self, field_separator: str | int = SOH) -> None:
        self._sep = _separator(field_separator)
        self._fields: list[str] = []

    def append(
        self, tag: object, value: object, offset: int = 0, length: int | None = None
    ) -> Self:
        """Add one field; ``offset``/``length`` take a slice of ``value``.

        Raises:
            UsageException: a name or value holding ``=`` or the separator.
        """
        name, text = self._name(tag), _text(value, "value")
        text = text[offset : None if length is None else offset + length]
        if self._sep in text:
            raise UsageException(f"value {text!r} contains the field separator")
        self._fields.append(f"{name}={text}{self._sep}")
        return self

    def _name(self, tag: object) -> str:
        name = _text(tag, "tag")
        if not name or "=" in name or self._sep in name:
            raise UsageException(f"field name {name!r} is empty or holds '=' or the separator")
        return name

    def get_string(self) -> str:
        """The payload so far."""
        return "".join(self._fields)

    def size(self) -> int:
        """The payload's length in characters."""
        return len(self.get_string())

    def reset(self) -> None:
        """Start an empty payload."""
        self._fields.clear()

    clear = reset


class FIXBuilder(NVFIXBuilder):
    """Builds a FIX payload: numeric tags (``35=D``).

    Raises:
        UsageException: a tag that is not a non-negative integer.
    """

    def _name(self, tag: object) -> str:
        name = super()._name(tag)
        if not name.isdigit():
            raise UsageException(f"FIX tag {name!r} is not a number")
        return name


class NVFIXShredder:
    """Splits an NVFIX payload into a dict of names to values (text).

    Example:
        >>> NVFIXShredder().to_map("sym=IBM\\x01qty=100\\x01")
        {'sym': 'IBM', 'qty': '100'}
    """

    def __init__(self, field_separator: str | int = SOH) -> None:
        self._sep = _separator(field_separator)

    def to_map(self, message: str | bytes | Message) -> dict[object, str]:
        """The fields of ``message`` (a payload or a received :class:`Message`).

        Raises:
            UsageException: a field without ``=``.
        """
        data = message.get_data() if isinstance(message, Message) else _text(message, "message")
        out: dict[object, str] = {}
        for part in data.split(self._sep):
            if not part:
                continue
            name, eq, value = part.partition("=")
            if not eq:
                raise UsageException(f"field {part!r} has no '='")
            out[self._key(name)] = value
        return out

    def _key(self, name: str) -> object:
        return name


class FIXShredder(NVFIXShredder):
    """Splits a FIX payload into a dict of integer tags to values (text).

    Example:
        >>> FIXShredder().to_map("35=D\\x0155=IBM\\x01")
        {35: 'D', 55: 'IBM'}
    """

    def _key(self, name: str) -> object:
        if not name.isdigit():
            raise UsageException(f"FIX tag {name!r} is not a number")
        return int(name)


class CompositeMessageBuilder:
    """Builds a composite payload, one part per :meth:`append`, for ``publish``.

    Example:
        >>> builder = CompositeMessageBuilder()
        >>> builder.append('{"n": 1}').append(b"\\x00\\x01").get_data()
        b'\\x00\\x00\\x00\\x08{"n": 1}\\x00\\x00\\x00\\x02\\x00\\x01'
    """

    def __init__(self, initial_capacity: int = 0) -> None:
        self._parts: list[bytes] = []

    def append(self, data: str | bytes, offset: int = 0, length: int | None = None) -> Self:
        """Add a part (text is UTF-8 encoded); ``offset``/``length`` take a slice."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self._parts.append(raw[offset : None if length is None else offset + length])
        return self

    def get_data(self) -> bytes:
        """The composite payload."""
        return join_parts(self._parts)

    def clear(self) -> None:
        """Start an empty payload."""
        self._parts.clear()

    reset = clear


class CompositeMessageParser:
    """Takes a composite payload apart.

    Example:
        >>> parser = CompositeMessageParser()
        >>> parser.parse(CompositeMessageBuilder().append("a").append(b"b").get_data())
        2
        >>> parser.get_part(0), parser.get_part_raw(1)
        ('a', b'b')
    """

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def parse(self, message: str | bytes | Message) -> int:
        """Split ``message`` (a payload or a received :class:`Message`); returns the part count.

        Raises:
            UsageException: not a composite payload.
        """
        if isinstance(message, Message):
            data = message.get_data_raw()
        elif isinstance(message, str):
            data = message.encode("utf-8")
        else:
            data = bytes(message)
        try:
            self._parts = split_parts(data)
        except DecodeError as exc:
            raise UsageException(f"not a composite message: {exc.reason}") from None
        return len(self._parts)

    def size(self) -> int:
        """How many parts the last :meth:`parse` found."""
        return len(self._parts)

    def get_part_raw(self, index: int) -> bytes:
        """Part ``index`` as bytes.

        Raises:
            UsageException: no such part.
        """
        if not 0 <= index < len(self._parts):
            raise UsageException(f"part {index} of a {len(self._parts)}-part message")
        return self._parts[index]

    def get_part(self, index: int) -> str:
        """Part ``index`` as text (UTF-8; undecodable bytes replaced)."""
        return self.get_part_raw(index).decode("utf-8", "replace")

    get_field_at = get_part_raw  # the name the client's composite sample reads binary parts by
