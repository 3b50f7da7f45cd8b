"""The query planner: which keys a query must look at (spec §7, §18.3).

Rules, first that applies: a ``sow_keys`` list; equality/IN on exactly the
key fields (SOW keys computed directly); equality/IN on a hash index's fields;
memo indexes for range/equality/BETWEEN/prefix clauses (unless they hand over
many candidates and columns can answer); in-memory columns of the filter's
fields (built the second time a query scans for them); a full scan (over the
columns of one batch of records at a time where the filter has a vector program,
a ``vector:`` detail in ``explain``). Indexes
only propose candidates: the caller evaluates the full filter on each one.
Imports only ``expr.nodes``, ``paths`` and ``index.*``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Protocol

import attrs

from sowlib.expr.nodes import Field, InList, Node, walk
from sowlib.index.clauses import conjuncts, equality, regions
from sowlib.index.hash import HashIndex
from sowlib.index.memo import MemoIndex, Region
from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.index.values import number_text, to_number
from sowlib.paths import FieldPath

__all__ = ["COUNTS", "KINDS", "FilterLike", "Plan", "plan"]

#: Every plan kind, cheapest first.
KINDS = ("keys", "key_fields", "hash", "hash_in_first", "memo", "bytes", "columns", "scan")
#: How a plan's candidate count is known (:attr:`Plan.count`), surest first.
COUNTS = ("exact", "at_most", "about", "every")
_SAID = {"exact": "{} candidates", "at_most": "at most {} candidates", "about": "~{} candidates"}
#: Most key combinations a key-field or hash lookup will enumerate.
_MAX_COMBOS = 4096
# A second memo probe is intersected in when it is at most this many times
# bigger than the best one: building its set costs far less than running the
# filter on every candidate it removes.
_INTERSECT_RATIO = 8
# A memo probe expected to return more than this fraction of the topic is no
# better than a scan.
_MEMO_MAX_FRACTION = 0.5
# Where the filter's columns exist (or may be built), a memo or bytes plan that is not
# exact keeps the query only when it hands over at most this many candidates, or this
# fraction of the topic: each candidate is read and decoded, while the columns answer
# the whole topic in a few numpy passes.
_COLUMNS_MIN = 256
_COLUMNS_FRACTION = 1 / 64


class FilterLike(Protocol):
    """What the planner needs from a compiled filter (``sowlib.expr.Filter``)."""

    @property
    def node(self) -> Node: ...


@attrs.define
class Plan:
    """How a query finds its candidates (read it, do not change it: a query source may
    keep a plan for the next query; not frozen, as setting a frozen class's fields is
    a tenth of planning an equality).

    Attributes:
        kind: one of :data:`KINDS`.
        index: the index used (``hash(/a)``, ``memo(/b)+memo(/c)``), or None.
        estimated: candidates expected before the filter runs.
        detail: what was looked up, for :meth:`describe`.
        count: how :attr:`estimated` is known, one of :data:`COUNTS`: ``"exact"``
            (the index's own count), ``"at_most"`` (a bound: records deleted or
            filed twice make fewer), ``"about"`` (from value counts or a sample),
            ``"every"`` (a scan: every record is tested, how many match is unknown).
    """

    kind: str
    # The index name and the detail may be given as a function making the text: only
    # ``explain`` and :meth:`describe` read them, a query does not.
    _index: str | Callable[[], str] | None = attrs.field(alias="index")
    estimated: int
    _detail: str | Callable[[], str] = attrs.field(default="", alias="detail")
    count: str = "about"
    _fetch: Callable[[], Iterable[Key]] | None = attrs.field(
        default=None, eq=False, repr=False, alias="fetch"
    )
    #: When set, every candidate outside ``unsure()`` is known to match: the
    #: filter is one index-answerable clause and the index compared by the
    #: rules of spec §2.4 (the caller may skip evaluating it).
    _unsure: Callable[[], Collection[Key]] | None = attrs.field(
        default=None, eq=False, repr=False, alias="unsure"
    )

    @property
    def index(self) -> str | None:
        """The index used (``hash(/a)``, ``memo(/b)+memo(/c)``), or None."""
        got = self._index
        return got() if callable(got) else got

    @property
    def detail(self) -> str:
        """What was looked up, for :meth:`describe`."""
        got = self._detail
        return got() if callable(got) else got

    @property
    def exact(self) -> bool:
        """True when candidates outside :meth:`unsure` need no filter evaluation."""
        return self._unsure is not None

    def candidates(self) -> Iterable[Key] | None:
        """The live keys to test, or None for "every record" (a scan); a vectorized scan
        gives them lazily (read them once)."""
        return None if self._fetch is None else self._fetch()

    def unsure(self) -> Collection[Key]:
        """For an :attr:`exact` plan, the candidates the filter must still check."""
        return () if self._unsure is None else self._unsure()

    def describe(self) -> str:
        """One readable line, e.g. ``hash hash(/region) [/region = 'EU'] 12 candidates``.

        The count reads ``12 candidates`` (exact), ``at most 12 candidates``, ``~12
        candidates`` (an estimate) or ``all 50000 records tested`` (a scan).
        """
        parts = [self.kind]
        index, detail = self.index, self.detail
        if index:
            parts.append(index)
        if detail:
            parts.append(f"[{detail}]")
        said = _SAID.get(self.count, "all {} records tested").format(self.estimated)
        parts.append(said[:-1] if self.estimated == 1 else said)
        return " ".join(parts)


def _show(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else "NULL" if value is None else str(value)


def _eq_text(path: FieldPath, values: Sequence[Any]) -> str:
    if len(values) == 1:
        return f"{path.to_text()} = {_show(values[0])}"
    return f"{path.to_text()} IN ({', '.join(_show(v) for v in values)})"


def _key_alternatives(value: Any) -> list[Any] | None:
    """Values whose canonical text a record equal to ``value`` may be keyed under."""
    if value is None or value == "":
        return []
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, int | float):
        return None if number_text(value) is None else [value]
    num = to_number(value)
    if num is None:
        return [value]
    return None if number_text(num) is None else [value, num]


def _live(source: QuerySource, keys: Iterable[Key]) -> list[Key]:
    return [k for k in dict.fromkeys(keys) if source.record(k) is not None]


def _key_plan(source: QuerySource, eqs: dict[FieldPath, list[Any]]) -> Plan | None:
    fields = source.key_fields
    if not fields:
        return None
    for f in fields:
        if f not in eqs:
            return None
    if not source.indexes.maintained(len(source)):
        return None  # the irregular-key set is only known for maintained indexes
    per_field: list[list[Any]] = []
    for f in fields:
        alts: list[Any] = []
        for value in eqs[f]:
            got = _key_alternatives(value)
            if got is None:
                return None
            alts.extend(got)
        per_field.append(alts)
    combos = 1
    for alts in per_field:
        combos *= len(alts)
    if combos > _MAX_COMBOS:
        return None
    keys: list[Key] = []
    for combo in itertools.product(*per_field):
        key = source.key_for_values(combo)
        if key is None:
            return None
        keys.append(key)
    # Records whose key values are not canonical text ("05", arrays) could
    # still be equal under the comparison rules: always test them too.
    irregular = source.indexes.irregular
    detail = " AND ".join(_eq_text(f, eqs[f]) for f in fields)
    return Plan(
        "key_fields",
        None,
        len(keys) + len(irregular),
        detail,
        "at_most",
        fetch=lambda: _live(source, [*keys, *irregular]),
    )


def _cheapest_hash(
    source: QuerySource, eqs: dict[FieldPath, list[Any]]
) -> tuple[int, HashIndex, list[tuple[str, ...]]] | None:
    """``(estimate, index, probes)`` of the hash index whose fields all have equalities
    in ``eqs`` and whose lookup hands over the fewest candidates, or None; an index
    whose lookup would enumerate more than :data:`_MAX_COMBOS` probes, or a literal it
    cannot look up, is passed over."""
    best: tuple[int, HashIndex, list[tuple[str, ...]]] | None = None
    for index in source.indexes.hashes:
        fields = index.fields
        if len(fields) == 1:  # the usual case
            got = eqs.get(fields[0])
            if got is None or len(got) > _MAX_COMBOS:
                continue
            values = [got]
        else:
            if not all(f in eqs for f in fields):
                continue
            values = [eqs[f] for f in fields]
            combos = 1
            for v in values:
                combos *= max(1, len(v))
            if combos > _MAX_COMBOS:
                continue
        probes = index.probes(values)
        if probes is None:
            continue
        est = index.estimate(probes)
        if best is None or est < best[0]:
            best = (est, index, probes)
    return best


def _hash_plan(
    source: QuerySource,
    conj: list[Node],
    eqs: dict[FieldPath, list[Any]],
    eq_of: list[tuple[FieldPath, list[Any]] | None],
) -> Plan | None:
    """A hash index lookup; ``eq_of`` is :func:`equality` of each clause of ``conj``."""
    best = _cheapest_hash(source, eqs)
    if best is None:
        return None
    est, index, probes = best
    fields = index.fields
    first = eq_of[0]
    residual = len(conj) > len(fields)
    in_first = residual and isinstance(conj[0], InList) and first is not None and first[0] in fields

    def detail() -> str:
        said = " AND ".join(_eq_text(f, eqs[f]) for f in fields)
        return said + " + residual filter" if residual else said

    # Exactly one equality/IN per indexed field and nothing else: the tagged
    # lookup returns precisely the matches, bar the verify-always records.
    if len(conj) == 1 and len(fields) == 1:  # the usual case, at once (as below)
        exact = first is not None and (first[0] is fields[0] or first[0] == fields[0])
    else:
        exact = not residual and {eq[0] for eq in eq_of if eq is not None} == set(fields)
    if len(probes) == 1:  # one probe: one key set, counted exactly
        fetch: Callable[[], Iterable[Key]] = lambda: index.probe_keys(probes[0])  # noqa: E731
    else:  # several may share a record's keys
        fetch = lambda: index.lookup_probes(probes)  # noqa: E731
    return Plan(
        "hash_in_first" if in_first else "hash",
        lambda: index.name,
        est,
        detail,
        "exact" if len(probes) == 1 else "at_most",
        fetch=fetch,
        unsure=(lambda: index.loose) if exact else None,
    )


@attrs.define(slots=True)
class _Probe:
    path: FieldPath
    memo: MemoIndex
    regions: tuple[Region, ...]
    estimate: int

    def listed(self) -> Collection[Key]:
        """:meth:`keys` as the index gives them (a list where no key can repeat)."""
        if len(self.regions) == 1:
            return self.memo.candidate_keys(self.regions[0])
        return self.keys()

    def keys(self) -> set[Key]:
        if len(self.regions) == 1:
            return self.memo.candidates(self.regions[0])
        out: set[Key] = set()
        for region in self.regions or (Region(),):
            out |= self.memo.candidates(region)
        return out


def _bytes_plan(source: QuerySource, node: Node, conj: list[Node]) -> Plan | None:
    """A search of the raw bytes when no memo index serves the filter yet.

    Used for a field's first scan only (:meth:`~sowlib.index.IndexSet.scanned`);
    the next query on the field builds its memo index as AMPS does.
    """
    indexes = source.indexes
    fields = [got[0] for clause in conj if (got := regions(clause)) is not None]
    if any(indexes.memo(path) is not None or indexes.scanned(path) for path in fields):
        return None
    found = source.byte_plan(node)
    if found is None:
        return None
    estimate, search = found

    def fetch() -> Collection[Key]:
        for path in fields[:1]:
            indexes.note_scan(path)
        return search()

    return Plan("bytes", None, estimate, "raw JSON bytes", fetch=fetch)


def _memo_plan(source: QuerySource, conj: list[Node]) -> Plan | None:
    by_field: dict[FieldPath, list[Region]] = {}
    for clause in conj:
        got = regions(clause)
        if got is None:
            continue
        path, found, _ = got
        if path not in by_field:
            by_field[path] = found
        elif len(by_field[path]) == 1 and len(found) == 1:
            # Two tests on one field (``/a > 1 AND /a < 5``): one narrower range;
            # records with arrays stay in since different elements may match.
            by_field[path] = [by_field[path][0].intersect(found[0])]
    if not by_field:
        return None
    # Memo indexes that exist serve the query; without any, one is built on demand
    # for the first field tested (each costs memory per record for good, so a
    # query does not add one for every field it names).
    indexes = source.indexes
    existing = [p for p in by_field if indexes.memo(p) is not None]
    fields = existing or list(by_field)[:1]
    probes = []
    for path in fields:
        regs = by_field[path]
        memo = indexes.ensure_memo(path, source)
        est = sum(memo.estimate(r) for r in regs) if regs else memo.estimate(Region())
        probes.append(_Probe(path, memo, tuple(regs), est))
    if len(probes) > 1:
        probes.sort(key=lambda p: p.estimate)
    best = probes[0]
    n = len(source)
    if best.estimate > n * _MEMO_MAX_FRACTION:
        detail = f"{best.memo.name} not selective (~{best.estimate})"
        return Plan("scan", None, n, detail, "every")
    use = [best]
    if len(probes) > 1 and probes[1].estimate <= best.estimate * _INTERSECT_RATIO:
        use.append(probes[1])

    def fetch() -> Collection[Key]:
        if len(use) == 1:
            return best.listed()
        keys = use[0].keys()
        for probe in use[1:]:
            keys &= probe.keys()
        return keys

    exact = len(conj) == 1 and len(use) == 1 and all(r.exact for r in best.regions)
    memo = best.memo
    return Plan(
        "memo",
        lambda: "+".join(p.memo.name for p in use),
        best.estimate,
        "",
        fetch=fetch,
        unsure=(lambda: memo.loose) if exact else None,
    )


def _fields(node: Node) -> list[FieldPath]:
    return list(dict.fromkeys(n.path for n in walk(node) if isinstance(n, Field)))


def _column_plan(source: QuerySource, node: Node, n: int) -> Plan | None:
    """The filter answered from in-memory columns (a source with ``column_plan``)."""
    make = getattr(source, "column_plan", None)
    if make is None:
        return None
    found = make(node, source.indexes.scanned)
    if found is None:
        return None
    fetch: Callable[[], Iterable[Key]] = found.fetch
    if not found.kept:  # a scan, evaluated over the columns of one batch at a time
        detail = f"vector: {found.detail}"
        return Plan("scan", None, n, detail, "every", fetch=fetch, unsure=tuple)
    names = ",".join(p.to_text() for p in found.fields)
    index = f"columns({names})"
    return Plan("columns", index, n, found.detail, "every", fetch=fetch, unsure=tuple)


def plan(
    source: QuerySource, flt: FilterLike | None, sow_keys: Iterable[Key] | None = None
) -> Plan:
    """Choose how to find the candidates of a query; builds memo indexes on demand.

    Args:
        source: the topic (see :class:`sowlib.query.QuerySource`).
        flt: the compiled filter, or None for every record.
        sow_keys: restrict the query to these SOW keys.
    Returns:
        A :class:`Plan`; ``plan.candidates()`` is a superset of the matching keys.
    Complexity: O(clauses x log n), plus O(n log n) once per memo index built.

    Example:
        >>> plan(topic, compile_filter("/region = 'EU'")).kind   # doctest: +SKIP
        'hash'
    """
    if sow_keys is not None:
        wanted = list(dict.fromkeys(sow_keys))
        return Plan(
            "keys",
            None,
            len(wanted),
            f"{len(wanted)} sow keys",
            "at_most",
            fetch=lambda: _live(source, wanted),
        )
    if flt is None:
        return Plan("scan", None, len(source), "no filter", "every")
    shape = getattr(flt, "equality", None)  # (kept by a compiled filter)
    eqs: dict[FieldPath, list[Any]] = {}
    conj: list[Node]
    eq_of: list[tuple[FieldPath, list[Any]] | None]
    if shape is None:
        conj = conjuncts(flt.node)
        eq_of = list(map(equality, conj))
        for eq in eq_of:
            if eq is not None and eq[0] not in eqs:
                eqs[eq[0]] = eq[1]
    else:  # one equality or IN of literals: its one clause, read when it was compiled
        values = eqs[shape[0]] = list(shape[1])
        conj, eq_of = [flt.node], [(shape[0], values)]
    if eqs:
        found = _key_plan(source, eqs) or _hash_plan(source, conj, eqs, eq_of)
        if found is not None:
            return found
    n = len(source)
    found = (_bytes_plan(source, flt.node, conj) if eqs else None) or _memo_plan(source, conj)
    narrow = max(_COLUMNS_MIN, n * _COLUMNS_FRACTION)
    if found is not None and found.kind != "scan" and (found.exact or found.estimated <= narrow):
        return found
    columns = _column_plan(source, flt.node, n)
    if columns is not None and columns.kind == "columns":
        return columns
    # A scan (or a broad index probe): the next query on these fields may build their
    # columns.
    for path in _fields(flt.node):
        source.indexes.note_scan(path)
    if columns is not None and (found is None or found.kind == "scan"):
        return columns  # the scan, vectorized
    return found if found is not None else Plan("scan", None, n, count="every")
