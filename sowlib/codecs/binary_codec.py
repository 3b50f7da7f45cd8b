"""The ``binary`` message type: opaque payloads (spec §15).

Imports only ``errors``; never ``expr`` or ``storage``.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from sowlib.errors import DecodeError, EncodeError, UnsupportedOperationError

__all__ = ["BinaryCodec"]


@attrs.frozen
class BinaryCodec:
    """Opaque bytes: no fields, so no filters, no generated keys and no delta merge.

    ``decode`` returns the payload unchanged; topics of this type need
    publisher-supplied SOW keys and can only be queried by key or with no filter.

    Example:
        >>> BinaryCodec().decode(b"\\x00\\x01")
        b'\\x00\\x01'
    """

    name: Final = "binary"
    supports_filter: Final = False
    supports_delta: Final = False

    def decode(self, data: bytes) -> bytes:
        """Return the payload as ``bytes``, untouched.

        Raises:
            DecodeError: ``data`` is not bytes-like.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DecodeError("binary", data, f"expected bytes, got {type(data).__name__}")
        return bytes(data)

    def encode(self, doc: Any) -> bytes:
        """Return ``doc`` as ``bytes``.

        Raises:
            EncodeError: ``doc`` is not bytes-like (a binary topic stores bytes only).
        """
        if not isinstance(doc, bytes | bytearray | memoryview):
            raise EncodeError("binary", doc, "a binary message is bytes")
        return bytes(doc)

    def merge(self, stored: Any, delta: Any) -> Any:
        """Always raises: a binary payload has no fields to merge.

        Raises:
            UnsupportedOperationError: always (operation ``"delta_publish"``).
        """
        raise UnsupportedOperationError(
            "delta_publish",
            "binary messages are opaque; publish the full message instead",
        )
