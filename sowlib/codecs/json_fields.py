"""Top-level fields of flat JSON objects, read without decoding the rest of each message.

``top_columns(payloads, names)`` gives, for each name, that field's value in each
payload, exactly what decoding each payload and taking ``doc[name]`` gives (the
reference, :func:`reference_columns`), or None when some payload is outside the subset
the C module ``sowlib.codecs.jsonfields`` reads (see ``jsonfields.c``: one flat object,
strings without escapes, plain numbers, each name once). The C module is built at
install time where a compiler is found; without it, or with ``SOWLIB_PURE_PYTHON`` set
to a non-empty value before sowlib is imported, every call gives None and the caller
decodes. ``tests/codecs/test_json_fields.py`` checks the two agree.

``top_columns_at(api, buf, offsets, low, limit, names)`` is the same read of the
payloads of log records where they lie in a mapped file (no bytes object per record),
the records found and checked by the storage layer's C interface ``api`` that the
caller hands over. Imports nothing from sowlib.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "NATIVE_TOP_COLUMNS",
    "TopColumns",
    "load_top_columns",
    "reference_columns",
    "top_columns",
    "top_codes_at",
    "top_columns_at",
]

TopColumns = Callable[[list[bytes], tuple[bytes, ...]], list[list[Any]] | None]

# The variable storage/native.py reads too (codecs never import storage).
_PURE_PYTHON_ENV = "SOWLIB_PURE_PYTHON"


def load_top_columns() -> TopColumns | None:
    """The C form, or None (not built, or turned off by ``SOWLIB_PURE_PYTHON``)."""
    if os.environ.get(_PURE_PYTHON_ENV):
        return None
    try:
        from sowlib.codecs.jsonfields import top_columns as native
    except ImportError:  # built without a C compiler: callers decode
        return None
    return native


NATIVE_TOP_COLUMNS: TopColumns | None = load_top_columns()
"""What :func:`load_top_columns` gave when sowlib was imported."""


# The names of recent calls as the C form takes them (a topic's refresh asks for the
# same few names each time).
_ENCODED: dict[tuple[str, ...], tuple[bytes, ...]] = {}
_ENCODED_MAX = 256


def top_columns(payloads: Sequence[bytes], names: Sequence[str]) -> list[list[Any]] | None:
    """Each of ``names``' value in each payload (a column per name), or None.

    None when the C form is missing or some payload is outside its subset; then
    :func:`reference_columns` (decoding) gives the answer or raises. O(total bytes).
    """
    native = NATIVE_TOP_COLUMNS
    if native is None or not names or not isinstance(payloads, list):
        return None
    # A name holding a lone surrogate (an index path may) is missing from every
    # document; "surrogatepass" gives bytes no key in the C subset holds, so it is
    # reported missing (None) instead of raising UnicodeEncodeError.
    encoded = _ENCODED.get(names) if isinstance(names, tuple) else None
    if encoded is None:
        encoded = tuple(name.encode("utf-8", "surrogatepass") for name in names)
        if isinstance(names, tuple) and len(_ENCODED) < _ENCODED_MAX:
            _ENCODED[names] = encoded
    return native(payloads, encoded)


def top_columns_at(
    api: object, buf: Any, offsets: list[int], low: int, limit: int, names: Sequence[str]
) -> list[list[Any]] | None:
    """:func:`top_columns` of the payloads of the common PUT records at ``offsets`` of the
    mapped log file ``buf`` (records in ``[low, limit)``), read in place, or None.

    ``api`` is the capsule ``c_api`` of the storage layer's C record reader: it finds
    each record and checks its checksum. None when the C form is missing, a record
    there is not an intact common PUT, or a payload is outside the subset; the caller
    then reads the payloads (checked) and decodes them. O(their bytes).
    """
    native = _NATIVE_AT
    if native is None or not names:
        return None
    encoded = tuple(name.encode("utf-8", "surrogatepass") for name in names)
    return native(api, buf, offsets, low, limit, encoded)


def top_codes_at(
    api: object, buf: Any, offsets: list[int], low: int, limit: int, names: Sequence[str]
) -> list[tuple[bytes, bytes, list[Any], dict[str, int]]] | None:
    """:func:`top_columns_at` as a coded column per name, ``(num, code, values,
    strings)`` (see ``jsonfields.c``): what :class:`sowlib.columns.CodedColumn` holds;
    None where :func:`top_columns_at` gives None. O(their bytes)."""
    native = _NATIVE_CODES
    if native is None or not names:
        return None
    encoded = tuple(name.encode("utf-8", "surrogatepass") for name in names)
    return native(api, buf, offsets, low, limit, encoded)


_ColumnsAt = Callable[..., list[list[Any]] | None]
_CodesAt = Callable[..., list[tuple[bytes, bytes, list[Any], dict[str, int]]] | None]


def _load_at() -> tuple[_ColumnsAt, _CodesAt] | None:
    if NATIVE_TOP_COLUMNS is None:
        return None
    from sowlib.codecs import jsonfields  # built: top_columns loaded from it

    return jsonfields.top_columns_at, jsonfields.top_codes_at


_NATIVE_AT, _NATIVE_CODES = _load_at() or (None, None)


def reference_columns(
    decode_many: Callable[[Sequence[bytes]], list[Any]],
    payloads: Sequence[bytes],
    names: Sequence[str],
) -> list[list[Any]]:
    """What :func:`top_columns` must equal: every payload decoded, ``doc[name]`` taken.

    Raises:
        DecodeError: a payload is not a JSON object.
        KeyError: a payload lacks a name.
    """
    docs = decode_many(payloads)
    return [[doc[name] for doc in docs] for name in names]
