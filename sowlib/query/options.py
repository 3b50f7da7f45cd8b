"""The options of a query (spec §13): ``order_by``, ``top_n``, ``skip_n``, ``select``,
``batch_size``, checked once.

Imports ``errors`` and the sibling ``order`` and ``select``.
"""

from __future__ import annotations

import attrs

from sowlib.errors import QueryOptionError
from sowlib.query.order import OrderBy
from sowlib.query.select import SelectList

__all__ = ["DEFAULT_OPTIONS", "MAX_BATCH_SIZE", "QueryOptions"]


#: The largest batch size AMPS accepts (spec §13.2).
MAX_BATCH_SIZE = 10_000


def _count(option: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QueryOptionError(option, value, "expected a non-negative integer")
    return value


@attrs.frozen
class QueryOptions:
    """Validated result-set controls (spec §13.2-§13.5); build with :meth:`make`."""

    order_by: OrderBy | None = None
    top_n: int | None = None
    skip_n: int | None = None
    select: SelectList | None = None
    batch_size: int = 10

    @classmethod
    def make(
        cls,
        *,
        order_by: str | None = None,
        top_n: int | None = None,
        skip_n: int | None = None,
        select: str | None = None,
        batch_size: int = 10,
    ) -> QueryOptions:
        """Parse and validate options.

        ``skip_n`` requires ``top_n``; without ``order_by`` a paged query is
        ordered by SOW key so pages are stable.

        Raises:
            QueryOptionError: a value is invalid (negative, wrong type, bad text).
        """
        unset = order_by is None and top_n is None and skip_n is None and select is None
        if unset and type(batch_size) is int and batch_size == DEFAULT_OPTIONS.batch_size:
            return DEFAULT_OPTIONS  # the common query sets none: nothing to check
        asked = (order_by, top_n, skip_n, select, batch_size)
        # a repeated query takes the options made last time (exact types only: a bool
        # must not find the options of the equal int)
        plain = _PLAIN.issuperset(map(type, asked))
        if plain and (made := _MADE.get(asked)) is not None:
            return made
        made = cls._check(*asked)
        if plain:
            if len(_MADE) >= _MADE_MOST:
                _MADE.clear()
            _MADE[asked] = made
        return made

    @classmethod
    def _check(
        cls,
        order_by: str | None,
        top_n: int | None,
        skip_n: int | None,
        select: str | None,
        batch_size: int,
    ) -> QueryOptions:
        top = _count("top_n", top_n)
        skip = _count("skip_n", skip_n)
        if skip is not None and top is None:
            raise QueryOptionError("skip_n", skip_n, "skip_n requires top_n")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise QueryOptionError("batch_size", batch_size, "expected an integer")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise QueryOptionError("batch_size", batch_size, f"expected 1..{MAX_BATCH_SIZE}")
        return cls(
            order_by=None if order_by is None else OrderBy.parse(order_by),
            top_n=top,
            skip_n=skip,
            select=None if select is None else SelectList.parse(select),
            batch_size=batch_size,
        )


#: Option values whose made options are kept, and how many are kept at most.
_PLAIN = frozenset((str, int, type(None)))
_MADE_MOST = 256
_MADE: dict[tuple[object, ...], QueryOptions] = {}

#: The options of a query that sets none.
DEFAULT_OPTIONS = QueryOptions()
