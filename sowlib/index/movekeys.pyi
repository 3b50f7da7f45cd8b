from typing import Any

from _typeshed import ReadableBuffer

def move_keys(
    mapping: dict[Any, Any],
    keys: list[Any],
    olds: list[Any],
    news: list[Any],
    old_places: list[Any] | None,
    new_places: list[Any] | None,
    absent: object,
    added: set[Any] | None,
    dropped: set[Any] | None,
    /,
) -> tuple[int, list[int]]: ...
def group_positions(values: list[Any], start: int, /) -> tuple[list[Any], bytes, bytes]: ...
def u32_below(column: ReadableBuffer, bound: int, /) -> bool: ...
def move_key(
    mapping: dict[Any, Any],
    key: Any,
    old_place: Any,
    new_place: Any,
    added: set[Any] | None,
    dropped: set[Any] | None,
    /,
) -> int | None: ...
