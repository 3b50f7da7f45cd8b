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
from itertools import repeat
from operator import call as _call
from typing import Any

from sowlib.expr import parse_filter
from sowlib.expr.nodes import Field, Node, walk
from sowlib.expr.rebind import rebind
from sowlib.expr.runtime import truthy
from sowlib.expr.to_python import compile_node
from sowlib.gcpause import paused_gc
from sowlib.paths import FieldPath, Step
from sowlib.views.aggregates import distinct_value
from sowlib.views.definition import CompiledView
from sowlib.views.engine import Group, GroupTable
from sowlib.views.fastrow import fast_argument
from sowlib.views.maintain import change_of, write_change

__all__ = ["RowReader", "ViewFeed"]

logger = logging.getLogger(__name__)
_GONE = object()  # a pending delete
#: A flush of more changes than this pauses the cyclic collector (see ViewFeed.flush).
_FEW = 16


def _slot(i: int) -> FieldPath:
    """The path a sub-expression reads its ``i``-th field through (no document has it)."""
    return FieldPath((Step(f"\x00{i}"),))


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
        self._names = tuple(f"\x00{i}" for i in range(len(found)))
        # per aggregate: row -> converted argument (fast_argument: the common cases inline)
        self._args = tuple(
            fast_argument(call, found, on_slots, self._names) for call in view.aggregates
        )
        self._group_at = tuple(found[p] for p in view.groups)
        self._plain_at = tuple(found[p] for p in view.plains)

    def parts(
        self, row: Sequence[Any]
    ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] | None:
        """``(group key, aggregate arguments, plain values)`` of a row, None when the
        view's filter does not match it."""
        flt = self._filter
        if flt is not None and not truthy(flt(dict(zip(self._names, row, strict=True)))):
            return None
        values = tuple(map(_call, self._args, repeat(row)))
        at = self._group_at
        if len(at) == 1:  # the common grouping: one field
            v = row[at[0]]
            group: tuple[Any, ...] = (v if type(v) is str and v else distinct_value(v),)
        else:
            group = tuple(
                [v if type(v) is str and v else distinct_value(v) for v in map(row.__getitem__, at)]
            )
        return group, values, tuple(map(row.__getitem__, self._plain_at))


class ViewFeed:
    """One view kept by its underlying topic's write path (a ``WriteListener``).

    While nobody watches the view's topic (no subscriber, no write listener), a write
    of the underlying topic only notes each changed key's new values (the latest per
    key, in the order of the last changes): the aggregates take them in, and the
    changed groups are written into the view's topic, when the topic is next used
    (:meth:`flush`, the topic's ``defer_writes`` callback). While it is watched, that
    happens at the end of every write. Either way a group's record is written when its
    message changed; a group whose last record left is deleted (OOF reason
    ``deleted``). An error while updating the view is logged and counted in
    :attr:`errors`; it never fails the underlying write nor the read.

    Args:
        view: the compiled view.
        target: the view's topic (``publish(doc, sow_key=)``, ``sow_delete_by_keys``,
            and, to be written lazily, ``defer_writes`` and ``observed``; to be written a
            flush at a time, ``write_derived``).
        trusted: the fast paths: a flush's changed groups written with the target's
            ``write_derived`` (one step) where it has one, and a single put of a watched
            view taken in and written at once (:meth:`_put_now`); False: the reference,
            every change noted then flushed, one publish or delete per group; None:
            :attr:`trusted_writes`.
    """

    #: The default of ``trusted`` (False: every feed made meanwhile takes the reference).
    trusted_writes = True

    def __init__(self, view: CompiledView, target: Any, *, trusted: bool | None = None) -> None:
        self.view = view
        self.target = target
        self.table = GroupTable(view)
        self.reader = RowReader(view)
        self.errors = 0
        # key -> its latest values (_GONE: deleted) not yet taken in, latest change last
        self._pending: dict[Hashable, Any] = {}
        self._dirty: dict[int, Group] = {}  # id -> group changed since the last flush
        self._held = False
        self._flushing = False
        self._stop: Callable[[], None] | None = None
        # A target that can be written lazily (a Topic) is written when used or watched,
        # under its own lock; another target at the end of every write, under ours.
        defer = getattr(target, "defer_writes", None)
        self.lazy = defer is not None
        self._lock: Any = threading.RLock() if defer is None else defer(self.flush)
        # The trusted write of the changed groups (a Topic's write_derived), else one
        # publish per group (the reference; ``trusted=False``).
        fast = self.trusted_writes if trusted is None else trusted
        self._trusted: Callable[[list[tuple[str, Any]]], bool] | None = (
            getattr(target, "write_derived", None) if fast else None
        )
        self._now = fast

    @property
    def name(self) -> str:
        return self.view.spec.name

    @property
    def paths(self) -> tuple[FieldPath, ...]:
        """The field paths the view reads (:class:`~sowlib.index.WriteListener`)."""
        return self.reader.paths

    @property
    def pending(self) -> int:
        """How many changed keys wait to be taken in (0 while the view is watched)."""
        return len(self._pending)

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

    def _deferred(self) -> bool:
        """Whether this write only notes its changes (see the class)."""
        return self.lazy and (self._held or not self.target.observed)

    def put(self, key: Hashable, values: Sequence[Any]) -> None:
        with self._lock:
            if self._now and not (
                self._pending
                or self._dirty
                or self._flushing
                # _deferred(), in line
                or (self.lazy and (self._held or not self.target.observed))
            ):
                self._put_now(key, values)
                return
            pending = self._pending
            pending.pop(key, None)
            pending[key] = values
            if not self._deferred():
                self.flush()

    def _put_now(self, key: Hashable, values: Sequence[Any]) -> None:
        """:meth:`put` then :meth:`flush` of a watched view with nothing waiting: the row
        taken in and its one or two groups written at once (what the flush would do)."""
        self._flushing = True  # its writes into the target call flush again
        try:
            got = self.reader.parts(values)
            table = self.table
            if got is None:
                left = table.remove(key)
                touched = [] if left is None else [left]
            else:
                touched = table.put_parts(key, *got)
            changes = []
            for group in touched:
                change = change_of(table, group)
                if change is not None:
                    changes.append(change)
            self._write(changes)
        except Exception:
            self._failed()
        finally:
            self._flushing = False

    def put_many(self, keys: Sequence[Hashable], columns: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            pending = self._pending
            pop = pending.pop
            rows = zip(*columns, strict=True) if columns else [()] * len(keys)
            for key, row in zip(keys, rows, strict=True):
                pop(key, None)  # the latest change last: the group's latest record
                pending[key] = row
            if not self._deferred():
                self.flush()

    def delete(self, key: Hashable) -> None:
        with self._lock:
            pending = self._pending
            pending.pop(key, None)
            pending[key] = _GONE
            if not self._deferred():
                self.flush()

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
            for group in self.table.groups.values():
                group.members.clear()
                self._dirty[id(group)] = group
            self.table.groups.clear()
            self.table.members.clear()
            if not self._deferred():
                self.flush()

    def _take_in(self) -> None:
        """Apply the pending changes to the groups (marking the groups they change)."""
        pending, self._pending = self._pending, {}
        parts, put_parts, remove = self.reader.parts, self.table.put_parts, self.table.remove
        dirty = self._dirty
        for key, row in pending.items():
            try:
                got = None if row is _GONE else parts(row)
                if got is None:
                    left = remove(key)
                    if left is not None:
                        dirty[id(left)] = left
                    continue
                for group in put_parts(key, *got):
                    dirty[id(group)] = group
            except Exception:
                self._failed()

    def _failed(self) -> None:
        self.errors += 1
        logger.exception("view %s: an update failed", self.name)

    def flush(self) -> None:
        """Take the pending changes in and write the groups changed since the last flush
        into the view's topic.

        A flush of many changes (a batch's) runs with the cyclic collector paused, as a
        batch publish does: it allocates a few containers per change (documents,
        records, messages), none cyclic, and full collections meanwhile would rescan
        every group."""
        with self._lock:
            if self._held or self._flushing:
                return
            if len(self._pending) + len(self._dirty) > _FEW:
                with paused_gc():
                    self._flush()
            else:
                self._flush()

    def _flush(self) -> None:
        """:meth:`flush`, under the lock, not already flushing."""
        if self._pending:
            self._take_in()
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, {}
        groups = self.table.groups
        self._flushing = True  # its writes into the target call flush again
        try:
            changes = []
            for group in dirty.values():
                if not group.members:
                    again = groups.get(group.key)
                    if again is not None and again is not group:
                        # emptied and filled again since the last flush: one update
                        if again.rendered is None:
                            again.rendered = group.rendered
                        group.rendered = None
                        if id(again) not in dirty:
                            group = again
                        else:
                            continue
                change = change_of(self.table, group)
                if change is not None:
                    changes.append(change)
            self._write(changes)
        except Exception:
            self._failed()
        finally:
            self._flushing = False

    def _write(self, changes: list[tuple[str, Any]]) -> None:
        """Write the changed groups into the view's topic: in one step where it takes the
        trusted write (``write_derived``), else (the reference) a publish or delete each."""
        if not changes:
            return
        trusted = self._trusted
        if trusted is not None and trusted(changes):
            return
        target = self.target
        for change in changes:
            write_change(target, change)
