"""What holds the key map's entries: the C :class:`KeyTable` or, without it, a dict.

``sowlib.topic.keytable`` is a C extension built at install time where a compiler is
found (``setup.py`` marks it optional): a dict of content keys (ints in
``[0, 2**64)``) whose keys and bare offsets are held unboxed, ~40 bytes a key against a
dict's ~100, and a by-key probe that touches two cache lines instead of four. The
plain ``dict`` is its reference: ``tests/test_keytable.py`` checks that both
agree. One difference is allowed: keys that are not such ints (the text of keys that
are not content keys) are listed after the ints, where a dict keeps one insertion
order for all. Topics whose keys are not content keys always use a dict.

The same extension has :class:`Reader` (``reader.c``): the one C reader of live records
by key, ``rows`` of many keys (reference: ``Views.records``'s Python path), ``lookup`` of a
one-field content key value and ``get`` of a SOW key (reference: ``Topic.lookup``'s and
``Topic.get``'s Python paths). What it reads is handed to it, never looked up by name: the
key map's table and the log's map by their owners when they change, the expiry queue and
the lock by ``bind``.

``SOWLIB_PURE_PYTHON`` (see :func:`sowlib.storage.native.optional_module`) turns the C
form off.
Imports only ``index.types`` and ``storage.native``.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from typing import Any, Protocol, TypeAlias, cast, overload

from sowlib.index.types import Key
from sowlib.storage.native import optional_module

__all__ = [
    "NATIVE_SLOTS",
    "Fields",
    "Reader",
    "Slot",
    "Slots",
    "Sizes",
    "fill_like",
    "new_sizes",
    "new_table",
    "new_slots",
    "position_finder",
    "record_reader",
    "sizes_of_columns",
    "slots_of_columns",
]

Fields: TypeAlias = tuple[int, int, float, float, bytes, int]
"""A record's header fields ``(offset, seq, timestamp, expiration, correlation_id, size)``."""

Slot: TypeAlias = int | Fields
"""A key's entry: its record's bare log offset, or its :data:`Fields`."""


class Reader(Protocol):
    """The C reader of live records by key (``reader.c``); NotImplemented from a read means
    the Python path decides (another kind of key or entry, a damaged record, a closed log,
    an expiration pending, not bound)."""

    def rows(self, keys: list[Key], /) -> Any:
        """``(rows, pending)``: the Records of ``keys`` in order, absent keys left out, the
        keys it could not read left in place and counted; or NotImplemented."""

    def rows_at(self, keys: list[Key], positions: Any, start: int, count: int, /) -> Any:
        """:meth:`rows` of ``keys[positions[start + i]]`` for i in range(count) (a saved
        key set: ``positions`` an ``array('I')``), no list of those keys made."""

    def head(self, n: int, /) -> Any:
        """The first ``n`` live keys of the table in its order, or NotImplemented (no
        KeyTable, or its other keys would be reached)."""

    def lookup(self, value: Any, /) -> Any:
        """``Topic.lookup(value)`` of a one-field content key: the Record, None, or
        NotImplemented."""

    def get(self, text: Any, /) -> Any:
        """``Topic.get(text)`` of a content key's SOW key text: as :meth:`lookup`."""

    def set_table(self, table: Any, /) -> None:
        """The key map's current table (called by the key map's ``watch_slots``)."""

    def set_map(self, mm: Any, /) -> None:
        """The log's current map, None when closed (called by the log's ``watch_map``)."""

    def bind(
        self,
        heap: list[Any],
        acquire: Callable[[], Any],
        release: Callable[[], Any],
        head: bytes = ...,
        /,
    ) -> None:
        """What ``lookup``/``get`` need besides: the expiry queue's heap (a list its owner
        never rebinds), the topic lock's acquire and release, the content key's domain."""


class Slots(Protocol):
    """The dict operations the key map uses, which a dict and a KeyTable both have."""

    def get(self, key: Key, /) -> Slot | None: ...

    @overload
    def pop(self, key: Key, /) -> Slot: ...
    @overload
    def pop(self, key: Key, default: None, /) -> Slot | None: ...

    def clear(self) -> None: ...
    def keys(self) -> Iterable[Key]: ...
    def values(self) -> Iterable[Slot]: ...
    def items(self) -> Iterable[tuple[Key, Slot]]: ...
    def update(self, pairs: Iterable[tuple[Key, Slot]], /) -> None: ...
    def __getitem__(self, key: Key, /) -> Slot: ...
    def __setitem__(self, key: Key, value: Slot, /) -> None: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Key]: ...


class Sizes(Protocol):
    """A table of ``key -> int`` (a KeyTable holds the ints unboxed), e.g. record sizes."""

    def get(self, key: Key, /) -> int | None: ...

    @overload
    def pop(self, key: Key, /) -> int: ...
    @overload
    def pop(self, key: Key, default: None, /) -> int | None: ...

    def clear(self) -> None: ...
    def values(self) -> Iterable[int]: ...
    def update(self, pairs: Iterable[tuple[Key, int]], /) -> None: ...
    def __getitem__(self, key: Key, /) -> int: ...
    def __setitem__(self, key: Key, value: int, /) -> None: ...
    def __len__(self) -> int: ...


_MODULE = optional_module("sowlib.topic.keytable")
_KEY_TABLE: type[Any] | None = None if _MODULE is None else _MODULE.KeyTable
_READER: type[Any] | None = None if _MODULE is None else _MODULE.Reader

NATIVE_SLOTS: bool = _KEY_TABLE is not None
"""Whether content keys are held in the C KeyTable (else a dict)."""


def new_slots(content: bool) -> Slots:
    """An empty table for a key map: a KeyTable for content keys where built, else a dict."""
    if content and _KEY_TABLE is not None:
        return cast("Slots", _KEY_TABLE())
    return cast("Slots", {})


def new_table(content: bool) -> MutableMapping[Key, Any]:
    """An empty ``key -> value`` table (the index set's kept values): a KeyTable for
    content keys where built (ints unboxed, other values held as they are), else a dict."""
    return cast("MutableMapping[Key, Any]", new_slots(content))


def new_sizes(content: bool) -> Sizes:
    """An empty ``key -> int`` table: a KeyTable for content keys where built, else a dict."""
    return cast("Sizes", new_slots(content))


def fill_like(table: object, source: object, keys: list[Key] | None, values: Any) -> bool:
    """Fill the empty ``table`` with ``keys[i] -> values[i]`` (later ones winning) in one
    C call, when ``keys`` are exactly the keys of ``source`` (``keys`` None: its keys in
    order, one value each) and both are KeyTables: ``source``'s index is copied and a key
    found at its own position in ``source`` is not probed. The result is the mapping
    ``table.update(zip(keys, values))`` makes, in ``source``'s order.

    Args:
        table: an empty table made by :func:`new_slots`, :func:`new_table` or
            :func:`new_sizes`.
        source: a table made likewise (a key map's).
        keys: the keys, or None.
        values: a list, a column of native int64 (none negative), or a pair: a list of
            distinct values and a column of native u32 codes into it.
    Returns:
        False, ``table`` left empty, when it cannot be done so (no C module, dicts,
        another set of keys): the caller then updates ``table`` pair by pair.
    """
    if _KEY_TABLE is None or not isinstance(table, _KEY_TABLE):
        return False
    if not isinstance(source, _KEY_TABLE):
        return False
    done: bool = table.fill_from(source, keys, values)
    return done


def sizes_of_columns(content: bool, keys: Iterable[Key] | bytes, sizes: bytes) -> Sizes:
    """A table of ``keys[i] -> sizes[i]`` (see :func:`slots_of_columns`)."""
    return cast("Sizes", slots_of_columns(content, keys, sizes))


def record_reader(**fields: Any) -> Reader | None:
    """A :class:`Reader` made of ``fields`` (the C type's keyword arguments, described in
    ``reader.c`` and typed in ``keytable.pyi``), or None without the C module."""
    return None if _READER is None else cast("Reader", _READER(**fields))


def position_finder(keys: Sequence[Key]) -> Callable[[Iterable[Key]], bytes] | None:
    """Where some of ``keys`` sit in it, as ``index.persist`` saves them (a
    :data:`~sowlib.index.persist.PositionFinder`): a KeyTable from each key to its position,
    whose ``sorted_values`` gives them as an ascending column of native u32 in one C call.
    None without the C module, or when the keys are not all ints in ``[0, 2**64)``."""
    if _KEY_TABLE is None or not keys:
        return None
    try:
        column = array.array("Q", cast("Sequence[int]", keys))
    except (TypeError, OverflowError):
        return None
    table = _KEY_TABLE()
    table.update_columns(column, array.array("q", range(len(keys))))
    return cast("Callable[[Iterable[Key]], bytes]", table.sorted_values)


def slots_of_columns(content: bool, keys: Iterable[Key] | bytes, offsets: bytes) -> Slots:
    """A table of ``keys[i] -> offsets[i]`` (bare offsets), later keys winning.

    Args:
        content: the keys are content keys.
        keys: the keys, or a column of native unsigned 64-bit ints.
        offsets: a column of native signed 64-bit ints, none negative.
    """
    table = new_slots(content)
    if isinstance(keys, bytes):
        if _KEY_TABLE is not None and isinstance(table, _KEY_TABLE):
            table.update_columns(keys, offsets)
            return cast("Slots", table)
        keys = _unpack("Q", keys)
    table.update(zip(keys, _unpack("q", offsets), strict=True))
    return table


def _unpack(code: str, data: bytes) -> list[int]:
    col = array.array(code)
    col.frombytes(data)
    return col.tolist()
