"""Composite message types: one message made of several typed parts (AMPS ``composite-local``).

On the wire each part is a 4-byte big-endian length followed by that many bytes,
in the order the type declares its parts. A document is a dict keyed by the part's
position as text (``"0"``, ``"1"``...), so a filter addresses a field of a part as
``/0/number``; a part whose type has no fields (``binary``) is its bytes. Imports
only ``errors`` and the codec registry's protocol (through a factory argument).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from sowlib.errors import ConfigError, DecodeError, EncodeError, UnsupportedOperationError

__all__ = ["CompositeCodec", "join_parts", "split_parts"]

_LENGTH = struct.Struct(">I")


def join_parts(parts: Sequence[bytes]) -> bytes:
    """The composite payload of ``parts``: each prefixed with its 4-byte big-endian length.

    Example:
        >>> join_parts([b"ab", b""])
        b'\\x00\\x00\\x00\\x02ab\\x00\\x00\\x00\\x00'
    """
    return b"".join(_LENGTH.pack(len(p)) + bytes(p) for p in parts)


def split_parts(data: bytes | bytearray | memoryview, name: str = "composite") -> list[bytes]:
    """The parts of a composite payload, in order.

    Raises:
        DecodeError: a length prefix is cut short or runs past the end.

    Example:
        >>> split_parts(join_parts([b"{}", b"\\x01"]))
        [b'{}', b'\\x01']
    """
    raw = bytes(data)
    parts, at = [], 0
    while at < len(raw):
        if at + 4 > len(raw):
            raise DecodeError(name, raw, "a part's 4-byte length is cut short", at)
        (size,) = _LENGTH.unpack_from(raw, at)
        if at + 4 + size > len(raw):
            raise DecodeError(name, raw, f"a part of {size} bytes runs past the end", at)
        parts.append(raw[at + 4 : at + 4 + size])
        at += 4 + size
    return parts


class CompositeCodec:
    """A composite message type whose parts have the types ``part_types``.

    ``composite-local`` (the default) keys each part's fields by its position, so
    a filter reads ``/0/number``; ``composite-global`` merges the parts' fields
    into one document (a field in several parts becomes the list of its values).
    A part whose type has no fields (``binary``) or that its type cannot parse is
    skipped, as AMPS does; the payload is stored and delivered whole.

    Args:
        name: the message type's name (``composite-json-binary``).
        part_types: the message type of each part, in order (at least one).
        codec_of: returns the codec of a part type (the registry's ``get_codec``).
        scope: ``"local"`` or ``"global"``.
    Raises:
        ConfigError: no parts, a bad scope, or a part type that is unknown or composite.

    Example:
        >>> from sowlib.codecs import get_codec
        >>> codec = CompositeCodec("composite-json-binary", ["json", "binary"], get_codec)
        >>> codec.decode(join_parts([b'{"number": 3}', b"\\x00"]))
        {'0': {'number': 3}}
    """

    supports_filter = True
    supports_delta = False

    def __init__(
        self,
        name: str,
        part_types: Sequence[str],
        codec_of: Callable[[str], Any],
        scope: str = "local",
    ) -> None:
        where = f"MessageType {name}"
        if not part_types:
            raise ConfigError(where, "a composite type needs at least one part <MessageType>")
        if scope not in ("local", "global"):
            raise ConfigError(where, f"scope {scope!r} is not 'local' or 'global'")
        self.name = name
        self.scope = scope
        self.part_types = tuple(t.strip().lower() for t in part_types)
        self._codecs: list[Any] = []
        for part in self.part_types:
            codec = codec_of(part)
            if isinstance(codec, CompositeCodec):
                raise ConfigError(where, f"part type {part!r} is itself composite")
            self._codecs.append(codec)

    def decode(self, data: bytes) -> dict[str, Any]:
        """The parts' fields: ``{"0": {...}, "1": {...}}`` (local) or merged (global).

        Raises:
            DecodeError: a malformed payload (a length cut short or past the end).
        """
        doc: dict[str, Any] = {}
        parts = split_parts(data, self.name)  # parts past the declared ones are not parsed
        for index, (part, codec) in enumerate(zip(parts, self._codecs, strict=False)):
            if not codec.supports_filter:
                continue
            try:
                fields = codec.decode(part)
            except DecodeError:
                continue  # AMPS skips a part it cannot parse
            if self.scope == "local":
                doc[str(index)] = fields
            elif isinstance(fields, dict):
                for key, value in fields.items():
                    if key not in doc:
                        doc[key] = value
                    elif isinstance(doc[key], _Many):
                        doc[key].append(value)
                    else:
                        doc[key] = _Many([doc[key], value])
        return doc

    def encode(self, doc: Any) -> bytes:
        """Always raises: a composite message is published whole, as bytes.

        Raises:
            EncodeError: always (build the payload with ``CompositeMessageBuilder``
                or :func:`join_parts`).
        """
        raise EncodeError(
            self.name, doc, "publish a composite message as bytes (join_parts of its parts)"
        )

    def merge(self, stored: Any, delta: Any) -> Any:
        """Always raises: AMPS does not merge composite messages.

        Raises:
            UnsupportedOperationError: always (operation ``"delta_publish"``).
        """
        raise UnsupportedOperationError(
            "delta_publish", f"{self.name} messages are composite; publish the whole message"
        )

    def __repr__(self) -> str:
        return f"CompositeCodec({self.name!r}, {list(self.part_types)!r}, {self.scope!r})"


class _Many(list[Any]):
    """The values of one field found in several parts (composite-global)."""
