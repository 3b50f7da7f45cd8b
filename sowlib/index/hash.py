"""Hash index: a tuple of canonical field texts -> the SOW keys holding them (spec §7).

Answers exact equality / IN over a fixed field set. It only ever proposes
candidates; the planner re-checks each one with the full filter. Imports only
``paths`` and ``index.values``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from sowlib.index.values import Loose, as_paths, hash_texts, literal_texts
from sowlib.paths import FieldPath

__all__ = ["HashIndex"]

#: Above this many text combinations a record is kept in the verify-always set.
_MAX_COMBOS = 64


@attrs.define(eq=False)
class HashIndex:
    """Exact-match index over one or more fields; O(1) per update and lookup.

    Example:
        >>> idx = HashIndex(["/region"])
        >>> idx.add("k1", {"region": "EU"})
        >>> sorted(idx.lookup([["EU"]]))
        ['k1']
    """

    fields: tuple[FieldPath, ...] = attrs.field(converter=as_paths)
    _map: dict[tuple[str, ...], set[str]] = attrs.field(factory=dict, init=False)
    # Records whose values have no exact text form (NaN, huge integers,
    # objects): every lookup returns them so the filter decides.
    _loose: set[str] = attrs.field(factory=set, init=False)

    @property
    def loose(self) -> set[str]:
        """Keys every lookup returns because their values have no exact text."""
        return self._loose

    @property
    def name(self) -> str:
        """``hash(/a,/b)``."""
        return "hash(" + ",".join(f.to_text() for f in self.fields) + ")"

    def _entries(self, doc: Any) -> list[tuple[str, ...]] | None:
        """Text tuples ``doc`` is filed under, or None for the loose set."""
        per_field: list[list[str]] = []
        size = 1
        try:
            for path in self.fields:
                texts = hash_texts(path.resolve(doc))
                if not texts:
                    return []
                per_field.append(texts)
                size *= len(texts)
        except Loose:
            return None
        if size > _MAX_COMBOS:
            return None
        if size == 1:
            return [tuple(t[0] for t in per_field)]
        return list(set(itertools.product(*per_field)))

    def add(self, key: str, doc: Any) -> None:
        """File ``key`` under the values ``doc`` holds; O(1) (O(elements) for arrays)."""
        entries = self._entries(doc)
        if entries is None:
            self._loose.add(key)
            return
        for entry in entries:
            bucket = self._map.get(entry)
            if bucket is None:
                self._map[entry] = {key}
            else:
                bucket.add(key)

    def remove(self, key: str, doc: Any) -> None:
        """Undo :meth:`add` for the same ``key`` and ``doc``; O(1)."""
        entries = self._entries(doc)
        if entries is None:
            self._loose.discard(key)
            return
        for entry in entries:
            bucket = self._map.get(entry)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._map[entry]

    def clear(self) -> None:
        """Forget every entry."""
        self._map.clear()
        self._loose.clear()

    @staticmethod
    def probes(values: Sequence[Sequence[Any]]) -> list[tuple[str, ...]] | None:
        """Text tuples to look up for per-field literal alternatives, or None if unusable.

        Args:
            values: for each indexed field (in index order), the literals it may equal.
        """
        per_field: list[list[str]] = []
        for alternatives in values:
            texts: list[str] = []
            for value in alternatives:
                got = literal_texts(value)
                if got is None:
                    return None
                texts.extend(got)
            per_field.append(list(dict.fromkeys(texts)))
        return list(itertools.product(*per_field))

    def lookup(self, values: Sequence[Sequence[Any]]) -> set[str]:
        """Keys that may hold, field by field, one of ``values``; O(combinations).

        Raises:
            ValueError: a literal has no exact text form (the planner checks first
                with :meth:`probes`).
        """
        probes = self.probes(values)
        if probes is None:
            raise ValueError("literal cannot be looked up in a hash index")
        return self.lookup_probes(probes)

    def lookup_probes(self, probes: Iterable[tuple[str, ...]]) -> set[str]:
        """Union of the buckets for ``probes`` plus the verify-always set."""
        out = set(self._loose)
        for probe in probes:
            bucket = self._map.get(probe)
            if bucket:
                out |= bucket
        return out

    def estimate(self, probes: Iterable[tuple[str, ...]]) -> int:
        """How many candidates :meth:`lookup_probes` would return (upper bound); O(probes)."""
        return len(self._loose) + sum(len(self._map.get(p, ())) for p in probes)

    def check(self) -> None:
        """Assert internal invariants (no empty buckets)."""
        assert all(self._map.values()), "empty bucket left in hash index"
