"""The ``msgpack`` message type: typed binary maps (spec §15).

Imports only ``errors`` and the ``codecs`` helpers; never ``expr`` or ``storage``.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import msgpack

from sowlib.codecs.limits import MAX_DEPTH, check_depth
from sowlib.codecs.merge import merge_documents
from sowlib.errors import DecodeError, EncodeError

__all__ = ["MsgpackCodec"]


def _ext_as_bytes(code: int, data: bytes) -> bytes:
    """Extension types are raw bytes to filters (spec §15: ext -> String)."""
    return bytes(data)


def _scalar(value: Any) -> Any:
    # msgpack decodes the timestamp extension (-1) itself instead of calling ext_hook.
    if type(value) is msgpack.Timestamp:
        return value.to_bytes()
    return value


def _map_pairs(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    """Build a map whose keys are field names: non-string keys become their text."""
    return {_key_text(k): _scalar(v) for k, v in pairs}


def _list_items(items: list[Any]) -> list[Any]:
    return [_scalar(v) for v in items]


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8", "surrogateescape")
    if isinstance(key, bool):
        return "1" if key else "0"
    if isinstance(key, float):
        return repr(key)
    if isinstance(key, int) or key is None:
        return str(key)
    raise ValueError(f"a map key must be a scalar, got {type(key).__name__}")


# Bytes that can start a bin value (0xc4-0xc6, possibly a bin map key) or a timestamp
# (fixext 4/8: 0xd6/0xd7, ext 8: 0xc7). Documents without any of them take the plain
# C unpacker; the others pay for Python hooks on every map and array. A false
# positive (one of these bytes inside a float) only costs speed.
_SLOW_MARKERS = bytes(b for b in range(256) if b not in (0xC4, 0xC5, 0xC6, 0xC7, 0xD6, 0xD7))


# Every byte except the ones that start a map or an array (fixmap, fixarray, array
# 16/32, map 16/32): what is left after deleting these bounds the number of containers,
# so a message with at most MAX_DEPTH of them needs no depth walk.
_NOT_CONTAINERS = bytes(b for b in range(256) if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF))


@attrs.frozen
class MsgpackCodec:
    """MessagePack maps; the wire format carries the types (spec §2.1, §15).

    nil -> None, bool, int, float, str -> ``str``, bin -> ``bytes``, array -> list,
    map -> dict, ext (including timestamps) -> the extension's raw ``bytes``. Map keys
    that are not strings (ints, bin) become their text so that ``/1`` finds key 1.
    The top level must be a map.

    Example:
        >>> MsgpackCodec().decode(MsgpackCodec().encode({"px": 1.5, "raw": b"\\x00"}))
        {'px': 1.5, 'raw': b'\\x00'}
    """

    name: Final = "msgpack"
    supports_filter: Final = True
    supports_delta: Final = True

    def decode(self, data: bytes) -> Any:
        """Unpack one map.

        Raises:
            DecodeError: malformed or truncated data, trailing bytes (offset = where
                they start), a top level that is not a map, or nesting deeper than
                ``MAX_DEPTH`` (lengths and counts are checked against the bytes
                present before anything is allocated).
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DecodeError("msgpack", data, f"expected bytes, got {type(data).__name__}")
        raw = bytes(data)
        try:
            if raw.translate(None, _SLOW_MARKERS):
                doc = self._unpack_slow(raw)
            else:
                try:
                    doc = msgpack.unpackb(raw, raw=False, ext_hook=_ext_as_bytes)
                except ValueError as exc:
                    if "map key" not in str(exc):
                        raise
                    doc = self._unpack_slow(raw)  # an int map key
        except msgpack.ExtraData as exc:
            offset = len(data) - len(exc.extra)
            raise DecodeError("msgpack", data, "trailing bytes after the message", offset) from None
        except (ValueError, TypeError, msgpack.UnpackException, RecursionError) as exc:
            raise DecodeError("msgpack", data, str(exc) or type(exc).__name__) from None
        if type(doc) is not dict:
            raise DecodeError("msgpack", data, f"top level is a {type(doc).__name__}, not a map", 0)
        if len(raw.translate(None, _NOT_CONTAINERS)) > MAX_DEPTH:
            check_depth(doc, "msgpack", data)
        return doc

    @staticmethod
    def _unpack_slow(raw: bytes) -> Any:
        return msgpack.unpackb(
            raw,
            raw=False,
            strict_map_key=False,
            object_pairs_hook=_map_pairs,
            list_hook=_list_items,
            ext_hook=_ext_as_bytes,
        )

    def encode(self, doc: Any) -> bytes:
        """Pack a document; ``str`` as str, ``bytes`` as bin.

        Raises:
            EncodeError: a value MessagePack cannot hold (integers beyond 64 bits, sets...).
        """
        try:
            return bytes(msgpack.packb(doc, use_bin_type=True))
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise EncodeError("msgpack", doc, str(exc) or type(exc).__name__) from None

    def merge(self, stored: Any, delta: Any) -> Any:
        """Delta merge (see :func:`sowlib.codecs.merge.merge_documents`).

        Raises:
            DecodeError: a document nests deeper than ``MAX_DEPTH``.
        """
        return merge_documents(stored, delta, message_type="msgpack")
