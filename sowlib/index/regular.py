"""Values as the index set files them: which key-field values a literal's key finds,
and the indexed paths' values of a batch of documents (imports only ``index.values``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sowlib.index.values import EXACT_LIMIT, number_text, to_number

__all__ = ["all_small_ints", "document_columns", "is_regular_key_value", "same_value"]

# What a JSON-like decoder gives: values a top-level path's getter returns as they are.
_PLAIN_VALUES = {str, int, float, bool, type(None), list, dict}


def is_regular_key_value(value: Any) -> bool:
    """True when only literals with the same canonical text can equal ``value``.

    For such values the SOW key computed from a literal finds the record
    (spec §6.3: keys use canonical text); other records (arrays, ``"05"``,
    NaN, huge integers) are remembered apart and always re-checked.
    """
    if type(value) is int:
        return -EXACT_LIMIT < value < EXACT_LIMIT
    if value is True or value is False:
        return True
    if isinstance(value, int | float):
        return number_text(value) is not None
    if isinstance(value, str) and value:
        num = to_number(value)
        return num is None or number_text(num) == value
    return False


def all_small_ints(values: Sequence[Any]) -> bool:
    """True when every value is an int that :func:`is_regular_key_value` accepts."""
    return not values or (
        set(map(type, values)) == {int} and min(values) > -EXACT_LIMIT and max(values) < EXACT_LIMIT
    )


def same_value(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are equal and of one type (1 is not 1.0 or True)."""
    return type(a) is type(b) and a == b


def document_columns(
    getters: Sequence[Callable[[Any], Any]],
    items: Sequence[Callable[[Any], Any] | None],
    docs: Sequence[Any],
) -> list[list[Any]]:
    """The value each getter reads in each document, a column per getter (what
    ``IndexSet.columns`` gives). A top-level field of plain JSON-like dicts (``items``:
    its C-level reader, else None) is read with one C-level map; the getter is the
    reference and is used for anything else."""
    out: list[list[Any]] = []
    plain: bool | None = None
    for getter, item in zip(getters, items, strict=True):
        column = None
        if item is not None:
            if plain is None:
                plain = set(map(type, docs)) <= {dict}
            if plain:
                try:
                    column = list(map(item, docs))
                except KeyError:
                    column = None
                if column is not None and not set(map(type, column)) <= _PLAIN_VALUES:
                    column = None
        out.append(list(map(getter, docs)) if column is None else column)
    return out
