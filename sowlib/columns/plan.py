"""The ``columns`` plan: which live keys a filter matches, read off in-memory columns.

Chosen the way automatic memo indexes are: a field's columns are built the second
time a query scans for it (:meth:`~sowlib.index.IndexSet.scanned`), then kept up to
date by every write. Imports only ``expr``, ``paths``, ``errors`` and ``columns``.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from sowlib.errors import SowError
from sowlib.expr.nodes import Node
from sowlib.expr.runtime import truthy
from sowlib.expr.to_python import compile_node
from sowlib.expr.vector import VectorFilter, compile_vector
from sowlib.paths import FieldPath

if TYPE_CHECKING:
    from sowlib.columns.store import ColumnStore

__all__ = [
    "ColumnPlan",
    "Followed",
    "Rows",
    "StoreFactory",
    "column_plan",
    "select_docs",
    "vector_filter",
]

Key = Hashable
# Compiled vector programs kept (their per-value answers are cached in them).
_PROGRAMS = 256
_programs: OrderedDict[Node, VectorFilter | None] = OrderedDict()
_programs_lock = threading.Lock()
# The rows of a filter that names no field come from a column of this (never read) path.
_NO_FIELD = FieldPath.parse("/__rows")


class Followed(Protocol):
    """The index set a store is attached to (``sowlib.index.IndexSet``)."""

    @property
    def listener(self) -> Any: ...

    def attach(self, listener: Any) -> None: ...


class Rows(Protocol):
    """What the plan reads from a topic (``sowlib.topic.source.TopicSource``)."""

    def __len__(self) -> int: ...

    def field_chunks(
        self, paths: Sequence[FieldPath]
    ) -> Iterable[tuple[Sequence[Key], Sequence[Sequence[Any]]]]: ...

    def scan(self) -> Iterable[tuple[Key, Any]]: ...

    def docs(self, keys: Any) -> Iterable[tuple[Key, Any]]: ...


StoreFactory = Callable[[], "ColumnStore"]


@attrs.frozen
class ColumnPlan:
    """A column plan for one filter.

    Attributes:
        fields: the columns it reads.
        built: True when every column already exists and is up to date.
        detail: a line for ``explain``.
        kept: False when the columns are built a batch at a time for this query only
            (a field no query scanned before), True when they are kept for the next.
    """

    fields: tuple[FieldPath, ...]
    built: bool
    detail: str
    fetch: Callable[[], Iterable[Key]] = attrs.field(repr=False)
    kept: bool = True


def vector_filter(node: Node) -> VectorFilter | None:
    """The vector program of ``node`` (cached, bounded), or None when it has none."""
    with _programs_lock:  # shared by every topic; queries of two topics run at once
        known = node in _programs
        found = _programs.pop(node) if known else None
    if not known:
        found = compile_vector(node)
    with _programs_lock:
        _programs[node] = found
        while len(_programs) > _PROGRAMS:
            _programs.popitem(last=False)
    return found


def _default_store() -> ColumnStore:
    from sowlib.columns.store import ColumnStore

    return ColumnStore()


def _current(indexes: Followed, rows: Rows) -> ColumnStore | None:
    from sowlib.columns.store import ColumnStore  # numpy: only once a program exists

    store = indexes.listener
    if isinstance(store, ColumnStore) and not store.stale and store.live == len(rows):
        return store
    return None


def _ensure(
    indexes: Followed, rows: Rows, fields: tuple[FieldPath, ...], new_store: StoreFactory
) -> ColumnStore:
    """The attached store, holding ``fields`` (built from the records where missing)."""
    from sowlib.columns.store import ColumnStore

    store = _current(indexes, rows)
    wanted = list(fields)
    if store is None:
        old = indexes.listener
        if isinstance(old, ColumnStore):  # keep what the stale store held
            wanted += [p for p in old.paths if p not in fields]
        store = new_store()
    missing = [p for p in wanted if p not in store.columns]
    if missing:
        store.add_columns(missing, rows.field_chunks(missing))
        indexes.attach(store)
    return store


def column_plan(
    indexes: Followed,
    rows: Rows,
    node: Node,
    scanned: Callable[[FieldPath], bool],
    new_store: StoreFactory | None = None,
) -> ColumnPlan | None:
    """A plan answering ``node`` from columns, or None.

    None when the filter has no vector program or names no field. When a column it
    needs does not exist yet for a field no query scanned before, the plan is not
    :attr:`~ColumnPlan.kept`: a one-off query does not pay for columns, so ``fetch()``
    builds them over one batch of records at a time and drops them (no more memory
    than a scan's batch; no document decoded where the codec reads the fields out of
    the bytes). Otherwise ``fetch()`` builds what is missing (values an index keeps
    per key taken from there, the others read out of the records in one pass) and
    keeps it current from then on. Either way it returns exactly the matching keys;
    if a value makes the vector program raise, it evaluates the documents instead.
    ``new_store`` makes the store when one is needed (the topic gives it its own key
    table).
    """
    flt = vector_filter(node)
    if flt is None or not flt.fields:
        return None
    store = _current(indexes, rows)
    built = store is not None and all(p in store.columns for p in flt.fields)
    kept = built or all(scanned(p) for p in flt.fields)
    names = ", ".join(p.to_text() for p in flt.fields)
    detail = f"{flt.leaves} leaves over {names}"
    if not kept:
        detail += "; columns of each batch, for this query only"
    elif not built:
        detail += "; columns built now"

    def fetch() -> Iterable[Key]:
        if not kept:
            return _select_batches(flt, rows, node)
        try:
            store = _ensure(indexes, rows, flt.fields, new_store or _default_store)
            return store.select(flt)
        except SowError:
            # a value the closures raise on (a regex timeout...): the documents decide
            match = compile_node(node)
            return [k for k, d in rows.scan() if truthy(match(d, None))]

    return ColumnPlan(flt.fields, built, detail, fetch, kept)


class _Batch:
    """Columns over one batch of records (a :class:`~sowlib.expr.vector.Frame`)."""

    def __init__(
        self, fields: Sequence[FieldPath], values: Sequence[Sequence[Any]], count: int
    ) -> None:
        from sowlib.columns.column import Column  # numpy: there is a program, so it loads

        self.rows = count
        self._columns: dict[FieldPath, Column] = {}
        at = slice(0, count)  # every row, in order
        for path, column_values in zip(fields, values, strict=True):
            column = self._columns[path] = Column(path, count)
            column.rows = count
            column.set_many(at, column_values)

    def column(self, path: FieldPath) -> Any:
        return self._columns[path]


def _select_batches(flt: VectorFilter, rows: Rows, node: Node) -> Iterator[Key]:
    """The keys ``flt`` (compiled from ``node``) matches, over columns built a batch of
    records at a time and dropped: a one-off query's columnar scan, lazy a batch at a
    time (a query with ``top_n`` stops reading once it has its rows). O(records x fields).
    """
    return itertools.chain.from_iterable(_batch_matches(flt, rows, node))


def _batch_matches(flt: VectorFilter, rows: Rows, node: Node) -> Iterator[list[Key]]:
    """The matching keys of each batch of records, a list per batch (see
    :func:`_select_batches`).

    A batch where a value makes the vector program raise is evaluated document by
    document by the closures (which raise it again, or not, past a short circuit).
    """
    for keys, values in rows.field_chunks(flt.fields):
        if not len(keys):
            continue
        try:
            mask = flt.run(_Batch(flt.fields, values, len(keys)))
        except SowError:
            match = compile_node(node)
            yield [k for k, d in rows.docs(keys) if truthy(match(d, None))]
            continue
        yield list(itertools.compress(keys, mask.tolist()))


def select_docs(node: Node, docs: Iterable[Any]) -> list[int] | None:
    """Positions of the ``docs`` that ``node`` matches, found over columns built from
    them (not from a topic), or None when ``node`` has no vector program.

    The column evaluator applied to plain documents: what agreement tests compare
    with the closures. O(len(docs) x fields) to build, then as :meth:`ColumnStore.select`.
    """
    flt = vector_filter(node)
    if flt is None:
        return None
    from sowlib.columns.store import ColumnStore  # numpy: there is a program, so it loads

    store = ColumnStore()
    docs = list(docs)
    keys = range(len(docs))
    if not flt.fields:
        store.add_column(_NO_FIELD, ((k, None) for k in keys))
    for path in flt.fields:
        store.add_column(path, zip(keys, map(path.getter, docs), strict=True))
    return [k for k in store.select(flt) if isinstance(k, int)]
