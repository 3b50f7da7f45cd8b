"""The ``json`` message type: orjson when importable, the standard library otherwise.

Both paths give identical documents. Imports only ``errors``, ``document`` and
``codecs.merge``; never ``expr`` or ``storage``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Final

import attrs

from sowlib.codecs.json_fields import top_columns
from sowlib.codecs.limits import MAX_DEPTH, check_depth
from sowlib.codecs.merge import merge_documents
from sowlib.errors import DecodeError, EncodeError

orjson: Any
try:
    import orjson
except ImportError:  # orjson is the optional "fast" extra
    orjson = None

__all__ = ["JsonCodec"]

# orjson silently turns integers outside the 64-bit range into floats. Such an integer
# needs at least 19 digits in a row, so a document with a 19-digit run is parsed by
# the standard library, which keeps it exact. translate + substring search: two C
# passes over the bytes, cheaper than a regular expression over them.
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 49 for b in range(256))
_LONG_RUN = b"0" * 19
# The same, with "{" and "[" made "2": one translate then tells both the long runs and how
# many brackets a message has (what _may_nest_deeply counts).
_SHAPE = bytes(48 if 48 <= b <= 57 else 50 if b in b"{[" else 49 for b in range(256))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is infinity when parsed as a double")
    return value


_STDLIB_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _check_surrogates(doc: Any) -> None:
    """Reject lone surrogates from ``\\ud800`` escapes, as orjson does."""
    if isinstance(doc, str):
        doc.encode("utf-8")
    elif isinstance(doc, dict):
        for key, value in doc.items():
            key.encode("utf-8")
            _check_surrogates(value)
    elif isinstance(doc, list):
        for value in doc:
            _check_surrogates(value)


def _stdlib_loads(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError("json", data, "not UTF-8", exc.start) from None
    try:
        doc, end = _STDLIB_DECODER.raw_decode(text, _skip_space(text, 0))
    except json.JSONDecodeError as exc:
        raise DecodeError("json", data, exc.msg, len(text[: exc.pos].encode())) from None
    except (ValueError, RecursionError) as exc:
        raise DecodeError("json", data, str(exc) or type(exc).__name__) from None
    end = _skip_space(text, end)
    if end != len(text):
        raise DecodeError(
            "json", data, "unexpected content after document", len(text[:end].encode())
        )
    if _may_nest_deeply(data):
        check_depth(doc, "json", data)  # before the recursive surrogate walk
    try:
        _check_surrogates(doc)
    except UnicodeEncodeError:
        raise DecodeError("json", data, "lone surrogate in string") from None
    return doc


def _may_nest_deeply(data: bytes) -> bool:
    """Whether ``data`` has enough brackets to nest past :data:`MAX_DEPTH` (C-level counts)."""
    return data.count(b"{") + data.count(b"[") > MAX_DEPTH


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def _without_non_finite(doc: Any) -> Any:
    """Mirror orjson, which writes NaN and infinity as ``null``."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return None
    if isinstance(doc, dict):
        return {k: _without_non_finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_without_non_finite(v) for v in doc]
    return doc


@attrs.frozen
class JsonCodec:
    """JSON objects; JSON's own types are kept (spec §2.1, §15).

    ``null`` is ``None``; integers of any size stay exact ``int``; the top level must
    be an object. orjson decodes when it is installed (``use_orjson``), else the standard
    library.

    Example:
        >>> JsonCodec().decode(b'{"order": {"price": 12.5}}')
        {'order': {'price': 12.5}}
    """

    use_orjson: bool = attrs.field(default=orjson is not None)

    name: Final = "json"
    supports_filter: Final = True
    supports_delta: Final = True

    def __attrs_post_init__(self) -> None:
        if self.use_orjson and orjson is None:
            raise ImportError("orjson is not installed")

    def decode(self, data: bytes) -> Any:
        """Parse one JSON object.

        Raises:
            DecodeError: not valid JSON (offset = byte position), or not an object.
        """
        if type(data) is bytes and self.use_orjson:  # the common case, checked in one pass
            shape = data.translate(_SHAPE)
            if _LONG_RUN not in shape:
                try:
                    doc = orjson.loads(data)
                except orjson.JSONDecodeError as exc:
                    raise DecodeError("json", data, exc.msg, _byte_offset(data, exc.pos)) from None
                if type(doc) is dict and shape.count(b"2") <= MAX_DEPTH:
                    return doc
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DecodeError("json", data, f"expected bytes, got {type(data).__name__}")
        if self.use_orjson and _LONG_RUN not in bytes(data).translate(_DIGITS_ONLY):
            try:
                doc = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise DecodeError("json", data, exc.msg, _byte_offset(data, exc.pos)) from None
        else:
            doc = _stdlib_loads(bytes(data))
        if type(doc) is not dict:
            raise DecodeError(
                "json", data, f"top level is a {type(doc).__name__}, not an object", 0
            )
        if _may_nest_deeply(data if type(data) is bytes else bytes(data)):
            check_depth(doc, "json", data)
        return doc

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        """Parse many messages, as calling :meth:`decode` on each does; O(total bytes).

        The batch publish path: one long-integer check over the whole batch (joined
        with a non-digit, so no run spans two messages) and orjson mapped in C;
        any surprise sends the batch through :meth:`decode` message by message.

        Raises:
            DecodeError: the first message that is not a JSON object.
        """
        if not self.use_orjson or not set(map(type, payloads)) <= {bytes}:
            return [self.decode(p) for p in payloads]
        joined = b"\n".join(payloads)
        if _LONG_RUN in joined.translate(_DIGITS_ONLY):
            return [self.decode(p) for p in payloads]
        try:
            docs = list(map(orjson.loads, payloads))
        except orjson.JSONDecodeError:
            return [self.decode(p) for p in payloads]  # raises with the byte offset
        if not set(map(type, docs)) <= {dict}:
            return [self.decode(p) for p in payloads]  # raises: not an object
        # One "{" per message and no "[": every document is flat (depth 1).
        if joined.count(b"{") != len(payloads) or b"[" in joined:
            for payload, doc in zip(payloads, docs, strict=True):
                if _may_nest_deeply(payload):
                    check_depth(doc, "json", payload)
        return docs

    def top_columns(
        self, payloads: Sequence[bytes], names: Sequence[str]
    ) -> list[list[Any]] | None:
        """The value of each top-level field of ``names`` in each message (a column per
        name) read without decoding the rest, or None when a message is outside what
        :mod:`sowlib.codecs.json_fields` reads that way (then decode them). Equal to
        decoding each message and taking each name; O(total bytes)."""
        return top_columns(payloads, names)

    def top_values(self, payloads: Sequence[bytes], field: str) -> list[Any] | None:
        """The value of top-level ``field`` in each message, or None when any message
        is not a plain JSON object holding it (then decode them one by one to learn
        why). Documents are dropped as soon as the value is taken; O(total bytes)."""
        if (
            not self.use_orjson
            or not set(map(type, payloads)) <= {bytes}
            or _LONG_RUN in b"\n".join(payloads).translate(_DIGITS_ONLY)
        ):
            return None
        try:
            return list(map(itemgetter(field), map(orjson.loads, payloads)))
        except (orjson.JSONDecodeError, KeyError, TypeError, IndexError):
            return None

    def encode(self, doc: Any) -> bytes:
        """Serialise a document as compact UTF-8 JSON; NaN and infinity become ``null``.

        Raises:
            EncodeError: a value JSON cannot hold (bytes, sets, non-string keys...).
        """
        if self.use_orjson:
            try:
                return bytes(orjson.dumps(doc))
            except TypeError as exc:
                if "64-bit" not in str(exc):
                    raise EncodeError("json", doc, str(exc)) from None
        try:
            text = json.dumps(_without_non_finite(doc), ensure_ascii=False, separators=(",", ":"))
            return text.encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            raise EncodeError("json", doc, str(exc)) from None

    def merge(self, stored: Any, delta: Any) -> Any:
        """Delta merge (see :func:`sowlib.codecs.merge.merge_documents`).

        Raises:
            DecodeError: a document nests deeper than ``MAX_DEPTH``.
        """
        return merge_documents(stored, delta, message_type="json")


def _byte_offset(data: bytes | bytearray | memoryview, pos: int) -> int:
    # orjson reports a character position; convert it to a byte offset.
    raw = bytes(data)
    if raw.isascii():
        return pos
    return len(raw.decode("utf-8", "replace")[:pos].encode("utf-8"))
