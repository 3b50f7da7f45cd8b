"""The aggregate engine: groups of records kept current as records arrive, change and leave.

Shared by views (maintained for the store's lifetime) and aggregated queries (fed
once). Imports only :mod:`sowlib.views.definition` and :mod:`sowlib.views.aggregates`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from operator import methodcaller
from typing import Any

from sowlib.views.aggregates import Aggregate
from sowlib.views.definition import CompiledView, group_sow_key

__all__ = ["Group", "GroupTable"]

_value = methodcaller("value")


class Group:
    """One group: its aggregate states and its members, most recently updated last."""

    __slots__ = ("key", "members", "rendered", "sow_key", "states")

    def __init__(self, key: tuple[Any, ...], states: list[Aggregate]) -> None:
        self.key = key
        self.sow_key = group_sow_key(key)
        self.states = states
        # member SOW key -> its non-aggregated field values; dict order = update order
        self.members: dict[Hashable, tuple[Any, ...]] = {}
        self.rendered: dict[str, Any] | None = None  # the last message sent for it


class GroupTable:
    """Every group of one view: ``put`` and ``remove`` records; O(aggregates) each.

    MIN and MAX cost O(log n) in the group's size; the others O(1).

    Example:
        >>> from sowlib.views.definition import ViewSpec, compile_view
        >>> spec = ViewSpec.make("v", "orders", ["/c", "SUM(/q) AS /total"], ["/c"])
        >>> table = GroupTable(compile_view(spec))
        >>> _ = table.put("1", {"c": "a", "q": 2}); _ = table.put("2", {"c": "a", "q": 3})
        >>> table.render(table.groups[("a",)])
        {'c': 'a', 'total': 5}
    """

    def __init__(self, view: CompiledView) -> None:
        self.view = view
        self.groups: dict[tuple[Any, ...], Group] = {}
        # member SOW key -> (group key, converted aggregate arguments)
        # Any hashable key: a view fed by the write path uses the topic's in-memory keys.
        self.members: dict[Hashable, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    def __len__(self) -> int:
        return len(self.groups)

    def put(self, key: Hashable, doc: Any) -> list[Group]:
        """Add or replace the record ``key``; returns the groups it changed (one or two)."""
        view = self.view
        return self.put_parts(key, view.group_of(doc), view.values_of(doc), view.plains_of(doc))

    def put_parts(
        self,
        key: Hashable,
        group_key: tuple[Any, ...],
        values: tuple[Any, ...],
        plains: tuple[Any, ...],
    ) -> list[Group]:
        """:meth:`put` of a record already read: its group key, each aggregate's converted
        argument and its non-aggregated field values (as :class:`CompiledView` reads them)."""
        members = self.members
        old = members.get(key)
        if old is not None:
            old_key, old_values = old
            groups = self.groups
            old_group = groups[old_key]
            if old_key != group_key:  # _take_out then _enter, in line (the hot path)
                for state, value in zip(old_group.states, old_values):  # noqa: B905
                    if value is not None:
                        state.remove(value)
                left = old_group.members
                del left[key]
                if not left:
                    del groups[old_key]
                group = groups.get(group_key)
                if group is None:
                    return [old_group, self._enter(key, group_key, values, plains)]
                for state, value in zip(group.states, values):  # noqa: B905
                    if value is not None:
                        state.add(value)
                group.members[key] = plains
                members[key] = (group_key, values)
                return [old_group, group]
            # same group: swap the values, move the member to the end
            for state, before, after in zip(old_group.states, old_values, values):  # noqa: B905
                if before != after or type(before) is not type(after):
                    if before is not None:
                        state.remove(before)
                    if after is not None:
                        state.add(after)
            group_members = old_group.members
            del group_members[key]
            group_members[key] = plains
            members[key] = (group_key, values)
            return [old_group]
        return [self._enter(key, group_key, values, plains)]

    def _enter(
        self, key: Hashable, group_key: tuple[Any, ...], values: tuple[Any, ...], plains: Any
    ) -> Group:
        """Add the record ``key`` (in no group) to its group."""
        group = self.groups.get(group_key)
        if group is None:
            states = [a.state() for a in self.view.aggregates]
            group = self.groups[group_key] = Group(group_key, states)
        for state, value in zip(group.states, values):  # noqa: B905 (one value per state)
            if value is not None:
                state.add(value)
        group.members[key] = plains
        self.members[key] = (group_key, values)
        return group

    def remove(self, key: Hashable) -> Group | None:
        """Take the record ``key`` out; returns its group (None when it was not in)."""
        old = self.members.get(key)
        if old is None:
            return None
        group = self.groups[old[0]]
        self._take_out(group, key, old[1])
        return group

    def _take_out(self, group: Group, key: Hashable, values: tuple[Any, ...]) -> None:
        for state, value in zip(group.states, values):  # noqa: B905 (one value per state)
            if value is not None:
                state.remove(value)
        del group.members[key]
        del self.members[key]
        if not group.members:
            del self.groups[group.key]

    def render(self, group: Group) -> dict[str, Any]:
        """The message of ``group`` (its non-aggregated fields from its latest record)."""
        latest = next(reversed(group.members.values()))
        return self.view.render(list(map(_value, group.states)), latest)

    def load(self, records: Iterable[tuple[Hashable, Any]]) -> None:
        """``put`` every ``(key, doc)``; for a fresh table and aggregated queries."""
        for key, doc in records:
            self.put(key, doc)
