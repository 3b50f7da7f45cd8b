"""``ResultSet``: the records of a query, with helpers for batches, frames and display.

Imports ``display``, ``frames``, ``projection`` and ``record``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sowlib import display, frames, projection
from sowlib.errors import QueryOptionError
from sowlib.record import Record

__all__ = ["ResultSet"]


#: Records shown at each end of a long result's ``repr``.
_REPR_EDGE = 5


class ResultSet(list[Record]):
    """A list of :class:`Record` with helpers for batches and data frames."""

    def to_list(self) -> list[Record]:
        """A plain list copy."""
        return list(self)

    def batches(self, size: int = 10) -> Iterator[list[Record]]:
        """Consecutive slices of at most ``size`` records (spec §13.2)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise QueryOptionError("batch_size", size, "expected a positive integer")
        for start in range(0, len(self), size):
            yield self[start : start + size]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per record: ``sow_key``, ``seq``, ``timestamp``, ``expiration``,
        ``topic`` and each top-level document field under its path (``/price``)."""
        out = []
        for rec in self:
            row: dict[str, Any] = {
                "sow_key": rec.sow_key,
                "seq": rec.seq,
                "timestamp": rec.timestamp,
                "expiration": rec.expiration,
                "topic": rec.topic,
            }
            if isinstance(rec.doc, dict):
                row.update((f"/{name}", value) for name, value in rec.doc.items())
            else:
                row["data"] = rec.data
            out.append(row)
        return out

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame``: columns by field (``leg.venue``), ``sow_key``, ``seq``
        and UTC datetimes ``timestamp``/``expiration`` (:func:`sowlib.frames.to_pandas`)."""
        return frames.to_pandas(self)

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` with the columns of :meth:`to_pandas`."""
        return frames.to_arrow(self)

    def project(self, expression: str) -> list[Any]:
        """Each document through a JMESPath ``expression``, e.g. ``"{id: orderId}"``.

        Raises:
            QueryOptionError: a bad expression (:mod:`sowlib.projection`).
        """
        return projection.project((rec.doc for rec in self), expression)

    def __repr__(self) -> str:
        """The first and last few records and the count, like pandas; never every row."""
        if len(self) <= 2 * _REPR_EDGE:
            return f"ResultSet({list.__repr__(self)})"
        head = ", ".join(repr(r) for r in self[:_REPR_EDGE])
        tail = ", ".join(repr(r) for r in self[-_REPR_EDGE:])
        return f"ResultSet([{head}, ..., {tail}], {len(self)} records)"

    def _repr_html_(self) -> str:
        return display.results_html(self)
