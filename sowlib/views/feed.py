"""A view fed by its underlying topic's write path: no subscription, no old record read.

:class:`ViewFeed` is a write listener of the underlying topic (``Topic.follow``): the
index upkeep hands it, on every put, batch, delete (expirations included) and clear,
the values of the field paths the view reads, resolved with the indexes' own. The
view keeps per underlying key its group and aggregate arguments (the
:class:`~sowlib.views.engine.GroupTable`), so an update or a delete takes the old
version out without reading it. The groups a write changed are written into the
view's topic once, at the end of that write (a batch: once per batch).

The reference is :class:`~sowlib.views.maintain.ViewMaintainer` (the same table fed
by an OOF subscription with whole documents); ``tests/views`` checks both against a
recomputation. Imports ``expr``, ``paths`` and ``views`` modules only.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from sowlib.expr import parse_filter
from sowlib.expr.nodes import Field, Node, walk
from sowlib.expr.rebind import rebind
from sowlib.expr.runtime import truthy
from sowlib.expr.to_python import compile_node
from sowlib.paths import FieldPath, Step
from sowlib.views.aggregates import distinct_value
from sowlib.views.definition import CompiledView
from sowlib.views.engine import Group, GroupTable
from sowlib.views.maintain import emit

__all__ = ["RowReader", "ViewFeed"]

logger = logging.getLogger(__name__)


def _slot(i: int) -> FieldPath:
    """The path a sub-expression reads its ``i``-th field through (no document has it)."""
    return FieldPath((Step(f"\x00{i}"),))


def _constant(value: Any) -> Callable[[Any], Any]:
    """A converter that gives ``value`` whatever it is given."""
    return lambda _ignored: value


class RowReader:
    """A compiled view read off a row: the values of :attr:`paths` in one record.

    Every expression of the view is rebound to read slot ``i`` where it read
    ``paths[i]``, so it sees exactly the value the record's path gave.

    Example:
        >>> from sowlib.views.definition import ViewSpec, compile_view
        >>> spec = ViewSpec.make("v", "t", ["/c", "SUM(/q * /p) AS /s"], ["/c"], "/q > 0")
        >>> reader = RowReader(compile_view(spec))
        >>> [p.to_text() for p in reader.paths]
        ['/q', '/p', '/c']
        >>> reader.parts([2, 5, "a"])
        (('a',), (10,), ('a',))
    """

    def __init__(self, view: CompiledView) -> None:
        found: dict[FieldPath, int] = {}

        def read(node: Node) -> None:
            for sub in walk(node):
                if isinstance(sub, Field):
                    found.setdefault(sub.path, len(found))

        flt = None if view.spec.filter is None else parse_filter(view.spec.filter)
        if flt is not None:
            read(flt)
        for call in view.aggregates:
            if call.node is not None:
                read(call.node)
        for path in (*view.groups, *view.plains):
            found.setdefault(path, len(found))
        self.paths: tuple[FieldPath, ...] = tuple(found)

        def on_slots(node: Node) -> Callable[[Any], Any]:
            for path, i in found.items():
                node = rebind(node, path, _slot(i))
            fn = compile_node(node)
            return lambda slots: fn(slots, None)

        self._filter = None if flt is None else on_slots(flt)
        # per aggregate: (convert, slot position or None, compute over slots or None)
        args: list[tuple[Callable[[Any], Any], int | None, Callable[[Any], Any] | None]] = []
        for call in view.aggregates:
            node = call.node
            if node is None:  # COUNT(*): the same converted value for every record
                args.append((_constant(call.state.convert(1)), None, None))
            elif isinstance(node, Field):
                args.append((call.state.convert, found[node.path], None))
            else:
                args.append((call.state.convert, None, on_slots(node)))
        self._args = tuple(args)
        self._slots_needed = flt is not None or any(c is not None for _cv, _i, c in args)
        self._group_at = tuple(found[p] for p in view.groups)
        self._plain_at = tuple(found[p] for p in view.plains)
        self._names = tuple(f"\x00{i}" for i in range(len(found)))

    def parts(
        self, row: Sequence[Any]
    ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] | None:
        """``(group key, aggregate arguments, plain values)`` of a row, None when the
        view's filter does not match it."""
        slots = dict(zip(self._names, row, strict=True)) if self._slots_needed else None
        if self._filter is not None and not truthy(self._filter(slots)):
            return None
        values = []
        for convert, at, fn in self._args:
            if at is not None:
                values.append(convert(row[at]))
            elif fn is not None:
                values.append(convert(fn(slots)))
            else:  # COUNT(*)
                values.append(convert(None))
        group = tuple(
            [
                v if type(v) is str and v else distinct_value(v)
                for v in map(row.__getitem__, self._group_at)
            ]
        )
        plains = tuple([row[i] for i in self._plain_at])
        return group, tuple(values), plains


class ViewFeed:
    """One view kept by its underlying topic's write path (a ``WriteListener``).

    A group's record is written when its message changed, once per write of the
    underlying topic; a group whose last record left is deleted (OOF reason
    ``deleted``). An error while updating the view is logged and counted in
    :attr:`errors`; it never fails the underlying write.

    Args:
        view: the compiled view.
        target: the view's topic (``publish(doc, sow_key=)``, ``sow_delete_by_keys``).
    """

    def __init__(self, view: CompiledView, target: Any) -> None:
        self.view = view
        self.target = target
        self.table = GroupTable(view)
        self.reader = RowReader(view)
        self.errors = 0
        self._dirty: dict[int, Group] = {}  # id -> group changed since the last flush
        self._held = False
        self._flushing = False
        self._stop: Callable[[], None] | None = None
        # A target that can be written lazily (a Topic) is written when read or watched,
        # under its own lock; another target at the end of every write, under ours.
        defer = getattr(target, "defer_writes", None)
        self.lazy = defer is not None
        self._lock: Any = threading.RLock() if defer is None else defer(self.flush)

    @property
    def name(self) -> str:
        return self.view.spec.name

    @property
    def paths(self) -> tuple[FieldPath, ...]:
        """The field paths the view reads (:class:`~sowlib.index.WriteListener`)."""
        return self.reader.paths

    def start(self, source: Any) -> None:
        """Build the view from ``source``'s records and follow its writes."""
        # The records now: each group written once, at the end. Not under the feed's own
        # lock: a write path holds the topic's lock, then takes the feed's.
        self._held = True
        try:
            self._stop = source.follow(self)
        finally:
            self._held = False
        self.flush()

    def close(self) -> None:
        """Stop following the underlying topic."""
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    # ------------------------------------------------------------------ the write path

    def put(self, key: Hashable, values: Sequence[Any]) -> None:
        with self._lock:
            try:
                self._put(key, values)
            except Exception:
                self._failed()
            finally:
                self._flushing = False
            self._written()

    def put_many(self, keys: Sequence[Hashable], columns: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            try:
                put = self._put
                if columns:
                    for key, row in zip(keys, zip(*columns, strict=True), strict=True):
                        put(key, row)
                else:  # a view reading no field (COUNT(*) of the whole topic)
                    for key in keys:
                        put(key, ())
            except Exception:
                self._failed()
            finally:
                self._flushing = False
            self._written()

    def delete(self, key: Hashable) -> None:
        with self._lock:
            try:
                group = self.table.remove(key)
                if group is not None:
                    self._dirty[id(group)] = group
            except Exception:
                self._failed()
            finally:
                self._flushing = False
            self._written()

    def clear(self) -> None:
        with self._lock:
            for group in self.table.groups.values():
                group.members.clear()
                self._dirty[id(group)] = group
            self.table.groups.clear()
            self.table.members.clear()
            self._written()

    def _written(self) -> None:
        """The end of a write of the underlying topic: the view's topic is written now
        when someone sees each of its changes (a subscriber, a write listener), else
        when it is next read (``flush`` is its ``defer_writes`` callback)."""
        if self._dirty and (not self.lazy or self.target.observed):
            self.flush()

    def _put(self, key: Hashable, row: Sequence[Any]) -> None:
        got = self.reader.parts(row)
        dirty = self._dirty
        if got is None:
            group = self.table.remove(key)
            if group is not None:
                dirty[id(group)] = group
            return
        for group in self.table.put_parts(key, *got):
            dirty[id(group)] = group

    def _failed(self) -> None:
        self.errors += 1
        logger.exception("view %s: an update failed", self.name)

    def flush(self) -> None:
        """Write the groups changed since the last flush into the view's topic."""
        with self._lock:
            if self._held or self._flushing or not self._dirty:
                return
            dirty, self._dirty = self._dirty, {}
            groups = self.table.groups
            self._flushing = True  # its writes into the target call flush again
            try:
                for group in dirty.values():
                    if not group.members:
                        again = groups.get(group.key)
                        if again is not None and again is not group:
                            # emptied and filled again within the write: one update
                            if again.rendered is None:
                                again.rendered = group.rendered
                            group.rendered = None
                            if id(again) not in dirty:
                                emit(self.table, self.target, again)
                            continue
                    emit(self.table, self.target, group)
            except Exception:
                self._failed()
            finally:
                self._flushing = False
