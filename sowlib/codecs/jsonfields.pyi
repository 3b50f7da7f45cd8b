from typing import Any

def top_columns(payloads: list[bytes], names: tuple[bytes, ...], /) -> list[list[Any]] | None: ...
def top_columns_at(
    api: object,
    buf: Any,
    offsets: list[int],
    low: int,
    limit: int,
    names: tuple[bytes, ...],
    /,
) -> list[list[Any]] | None: ...
def top_codes_at(
    api: object,
    buf: Any,
    offsets: list[int],
    low: int,
    limit: int,
    names: tuple[bytes, ...],
    /,
) -> list[tuple[bytes, bytes, list[Any], dict[str, int]]] | None: ...
