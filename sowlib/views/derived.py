"""``DerivedTopics``: the views, conflated topics and aggregated queries of a ``SowStore``.

A mixin of :class:`~sowlib.store.SowStore` (the store module is at its size limit);
it uses only the store's public methods. A derived topic is a transient topic of
the store whose ``options`` hold its definition (``"view"`` or ``"conflated"``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from sowlib.codecs import get_codec
from sowlib.config import TopicConfig
from sowlib.errors import (
    ConfigError,
    FilterError,
    ReadOnlyError,
    TopicExistsError,
    UnknownTopicError,
)
from sowlib.expr import compile_filter
from sowlib.subscriptions import Message
from sowlib.timer import Timer, TimerEntry
from sowlib.units import parse_duration
from sowlib.views.definition import ViewSpec, compile_view
from sowlib.views.feed import ViewFeed
from sowlib.views.join import JoinMaintainer, parse_join, qualify_spec
from sowlib.views.maintain import ConflationMaintainer
from sowlib.views.query import (
    AggregateRecord,
    AggregateSubscription,
    aggregate_sow,
    compile_query,
)
from sowlib.views.saved import load_definitions, remove_definition, save_definition

__all__ = ["DerivedTopics"]


class _State:
    """The store's maintainers and its timer (created on first use)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.lock = threading.RLock()
        self.maintainers: dict[str, ViewFeed | ConflationMaintainer | JoinMaintainer] = {}
        self.timer = Timer(clock, name="sowlib-conflation")
        # definitions kept in the store directory whose topics are not built yet
        self.saved: dict[tuple[str, str], TopicConfig] = {}
        self.timers: dict[str, TimerEntry] = {}  # a conflated topic's interval


class DerivedTopics:
    """Views, conflated topics and aggregated queries (mixed into ``SowStore``)."""

    __derived: _State | None = None
    _topics: dict[tuple[str, str], Any]  # the store's topics (SowStore sets it)

    def _derived(self) -> _State:
        if self.__derived is None:
            store: Any = self
            self.__derived = _State(store.clock)
        return self.__derived

    # ------------------------------------------------------------------ views

    def create_view(
        self,
        name: str,
        underlying: str | None = None,
        *,
        projection: Iterable[str] | str,
        grouping: Iterable[str] | str = (),
        filter: str | None = None,
        message_type: str | None = None,
        join: str | None = None,
    ) -> Any:
        """Create a view: a topic holding one aggregated record per group of ``underlying``.

        The view is a topic of the store (``store.topic(name)``): query it, index it,
        subscribe to it with OOF. It is kept current on every publish, delete and
        expiration of the underlying topic (O(aggregates) per change, O(log n) for
        MIN/MAX), and built from the underlying topic's records when created. Its
        records are not stored; in a store with a directory its definition is, and
        every later open of the directory (a reader's too) builds it again from the
        underlying topic (:meth:`drop_view` removes it).

        Args:
            name: the view's topic name.
            underlying: the aggregated topic (it must exist).
            projection: ``["/customer", "SUM(/quantity * /price) AS /total"]``.
            grouping: ``["/customer"]``; none: the whole topic is one group.
            filter: only underlying records matching it are aggregated.
            message_type: the view's message type (default: the underlying topic's).
            join: instead of ``underlying``, ``"[orders].[/sym] = [companies].[/ticker]"``
                (``LEFT JOIN``/``RIGHT JOIN`` for ``=`` keep one side's unmatched
                records); fields are then named ``[orders].[/qty]``.
        Returns:
            The view's :class:`~sowlib.topic.Topic`.
        Raises:
            ConfigError: a bad projection, grouping or filter, or an underlying topic
                whose messages cannot be read. UnknownTopicError: no underlying topic.
            TopicExistsError: another topic has the name. ReadOnlyError: a reader.

        Example:
            >>> from sowlib import SowStore
            >>> store = SowStore()
            >>> orders = store.create_topic("orders", keys=["/id"])
            >>> view = store.create_view("totals", "orders", grouping=["/customer"],
            ...     projection=["/customer", "SUM(/quantity * /price) AS /total"])
            >>> _ = orders.publish({"id": 1, "customer": "ann", "quantity": 2, "price": 5})
            >>> next(iter(view.sow())).doc
            {'customer': 'ann', 'total': 10}
        """
        if join is not None:
            left = parse_join(join).left
            if underlying not in (None, left):
                raise ConfigError("underlying", "a join view's underlying topic is the join's")
            underlying = left
        if underlying is None:
            raise ConfigError("underlying", "a view needs an underlying topic or a join")
        spec = ViewSpec.make(name, underlying, projection, grouping, filter, message_type, join)
        return self._add_derived("view", spec.to_dict(), spec.message_type, None, save=True)

    def create_conflated_topic(
        self,
        name: str,
        underlying: str,
        *,
        interval: str | float,
        filter: str | None = None,
        expiration: str | float | None = None,
    ) -> Any:
        """Create a conflated topic: ``underlying`` as of its last conflation interval.

        A subscriber gets at most one message per key per ``interval``: the latest
        update, or the delete when the record was deleted or expired. Its ``sow``
        answers the underlying records (matching ``filter``) as of the last interval.
        Intervals run on the store's timer thread (started here, stopped by
        ``close``) and on :meth:`tick`.

        Raises:
            ConfigError: a bad interval, filter or expiration. UnknownTopicError: no
            underlying topic. TopicExistsError: another topic has the name.
        """
        seconds = parse_duration(interval, "interval")
        if not seconds > 0:
            raise ConfigError("interval", f"{interval!r}: the interval must be positive")
        spec = {"name": name, "underlying": underlying, "interval": seconds, "filter": filter}
        return self._add_derived("conflated", spec, None, expiration, save=True)

    def _add_derived(
        self,
        kind: str,
        spec: dict[str, Any],
        message_type: str | None,
        expiration: Any,
        *,
        save: bool,
    ) -> Any:
        """Create and start a derived topic; ``save``: made in Python (kept in the store
        directory), else read from it."""
        store: Any = self
        if store.readonly and save:
            raise ReadOnlyError(f"store {store.path}", f"create a {kind}")
        source = store.topic(spec["underlying"])
        if kind == "conflated":
            message_type = source.message_type
        mtype = (message_type or source.message_type).lower()
        state = self._derived()
        with state.lock:
            if spec["name"] in state.maintainers or spec["name"] in store:
                existing = store.topic(spec["name"])
                if existing.config.options.get(kind) == spec and existing.message_type == mtype:
                    return existing
                raise TopicExistsError(spec["name"], f"it is not this {kind}")
            self._check(kind, spec, source, mtype)  # before the topic exists: nothing to undo
            if spec.get("join"):
                self._check(kind, spec, store.topic(parse_join(spec["join"]).right), mtype)
            target = store.create_topic(
                spec["name"],
                message_type=mtype,
                durability="transient",
                expiration=expiration,
                options={kind: spec},
            )
            self._attach(target)
            if save and store.path is not None:
                try:
                    save_definition(store.path, target.config)
                except BaseException:
                    self._drop(target)
                    raise
            return target

    @staticmethod
    def _check(kind: str, spec: dict[str, Any], source: Any, message_type: str) -> None:
        """Raise ``ConfigError`` for a definition that cannot be maintained."""
        where = f"{'View' if kind == 'view' else 'ConflatedTopic'}[{spec['name']}]"
        if not get_codec(source.message_type).supports_filter:
            raise ConfigError(
                f"{where}/UnderlyingTopic",
                f"{source.message_type} messages cannot be read, so they cannot be derived from",
            )
        get_codec(message_type)  # an unknown message type: ConfigError
        if kind == "view":
            view = ViewSpec.from_dict(spec)
            compile_view(view if view.join is None else qualify_spec(view))
            return
        if source.message_type != message_type:
            raise ConfigError(f"{where}/MessageType", "must be the underlying topic's")
        if spec.get("filter") is not None:
            try:
                compile_filter(spec["filter"])
            except FilterError as exc:
                raise ConfigError(f"{where}/Filter", str(exc)) from None

    def _attach(self, target: Any) -> None:
        """Start maintaining the derived topic ``target`` (its options name what it is)."""
        store: Any = self
        state = self._derived()
        options = target.config.options
        kind = "view" if "view" in options else "conflated"
        spec = options[kind]
        source = store.topic(spec["underlying"])
        self._check(kind, spec, source, target.message_type)
        maintainer: ViewFeed | ConflationMaintainer | JoinMaintainer
        if kind == "view" and spec.get("join"):
            join = parse_join(spec["join"])
            other = store.topic(join.right)
            self._check(kind, spec, other, target.message_type)
            maintainer = JoinMaintainer(ViewSpec.from_dict(spec), join, source, other, target)
        elif kind == "view":
            feed = ViewFeed(compile_view(ViewSpec.from_dict(spec)), target)
            feed.start(source)
            maintainer = feed
        else:
            maintainer = ConflationMaintainer(target.name, source, target, spec.get("filter"))
            state.timers[target.name] = state.timer.register(maintainer.flush, spec["interval"])
            state.timer.start()
        state.maintainers[target.name] = maintainer

    def open_saved_derived(self) -> list[str]:
        """Build the views and conflated topics made in Python that the store directory
        keeps; returns the names started.

        The store calls it as it opens (a writer or a reader) and on ``refresh``. A
        definition whose underlying topic is not there yet waits for
        :meth:`open_derived_topics` (``from_config`` adds its topics first).

        Raises:
            FormatVersionError, ConfigError: a damaged definition file (named).
        """
        store: Any = self
        if store.path is None:
            return []
        state = self._derived()
        with state.lock:
            for config in load_definitions(store.path):
                if config.name not in state.maintainers:
                    state.saved.setdefault((config.name, config.message_type), config)
            return self._start_saved()

    def _start_saved(self) -> list[str]:
        """Start the kept definitions whose underlying topics exist (a view over a kept
        view after it)."""
        store: Any = self
        state = self._derived()
        started: list[str] = []
        progress = True
        while progress:
            progress = False
            for key, config in list(state.saved.items()):
                kind = "view" if "view" in config.options else "conflated"
                spec = config.options[kind]
                needs = [spec["underlying"]]
                if spec.get("join"):
                    needs.append(parse_join(spec["join"]).right)
                if not all(name in store for name in needs):
                    continue
                del state.saved[key]
                progress = True
                if config.name not in state.maintainers:
                    ttl = config.default_ttl if config.expiration_enabled else None
                    self._add_derived(kind, spec, config.message_type, ttl, save=False)
                    started.append(config.name)
        return started

    def drop_view(self, name: str) -> None:
        """Remove the view or conflated topic ``name``: its upkeep stops, its topic
        closes and leaves the store, and a store directory forgets its definition.

        Raises:
            UnknownTopicError: no derived topic has that name. ReadOnlyError: a reader.
            ConfigError: another derived topic reads it (drop that one first).
            StorePathError: the directory refused the removal of the definition.
        """
        store: Any = self
        state = self._derived()
        with state.lock:
            if name not in state.maintainers:
                raise UnknownTopicError(name)
            if store.readonly:
                raise ReadOnlyError(f"store {store.path}", f"drop the derived topic {name!r}")
            for other in state.maintainers:
                spec = store.topic(other).config.options
                spec = spec.get("view") or spec.get("conflated") or {}
                sources = [spec.get("underlying")]
                if spec.get("join"):
                    sources.append(parse_join(spec["join"]).right)
                if other != name and name in sources:
                    raise ConfigError(name, f"the derived topic {other!r} reads it: drop it first")
            target = store.topic(name)
            if store.path is not None:
                remove_definition(store.path, target.config)
            self._drop(target)

    def _drop(self, target: Any) -> None:
        """Stop maintaining ``target`` and take it out of the store."""
        state = self._derived()
        maintainer = state.maintainers.pop(target.name, None)
        if maintainer is not None:
            maintainer.close()
            entry = state.timers.pop(target.name, None)
            if entry is not None:
                entry.cancel()
        target.close()
        self._topics.pop((target.name, target.message_type), None)

    def open_derived_topics(self) -> list[str]:
        """Start maintaining the views and conflated topics defined by the configuration.

        :meth:`from_config` calls it once every topic exists; returns the names started.

        Raises:
            UnknownTopicError: a view's underlying topic is not defined.
        """
        store: Any = self
        state = self._derived()
        with state.lock:
            started = self._start_saved()
            for topic in store.topics():
                options = topic.config.options
                if topic.name in state.maintainers or not (
                    "view" in options or "conflated" in options
                ):
                    continue
                self._attach(topic)
                started.append(topic.name)
        return started

    def derived_topics(self) -> dict[str, str]:
        """The derived topics: name -> ``"view"`` or ``"conflated"``."""
        state = self._derived()
        return {
            name: "conflated" if isinstance(m, ConflationMaintainer) else "view"
            for name, m in state.maintainers.items()
        }

    def tick(self, now: float | None = None) -> int:
        """Run the timer callbacks that are due (conflation intervals); returns how many ran.

        For tests and for applications that own their event loop; the store's
        timer thread calls the same code.
        """
        return self._derived().timer.tick(now)

    def _close_derived(self) -> None:
        """Stop the timer and every maintainer (the store is closing)."""
        state = self.__derived
        if state is None:
            return
        state.timer.stop()
        for maintainer in state.maintainers.values():
            maintainer.close()

    # ------------------------------------------------------------------ aggregated queries

    def sow_aggregate(
        self,
        topic: str,
        filter: Any = None,
        *,
        projection: Iterable[str] | str,
        grouping: Iterable[str] | str = (),
        order_by: str | None = None,
        top_n: int | None = None,
        skip_n: int | None = None,
        **options: Any,
    ) -> list[AggregateRecord]:
        """An aggregated query: one record per group of ``topic``'s records matching ``filter``.

        ``projection`` and ``grouping`` are those of :meth:`create_view`; ``order_by``,
        ``skip_n`` and ``top_n`` apply to the groups; other ``options`` (``sow_keys``,
        ``bookmark``) to the records read. Nothing is kept; O(matching records).

        Returns:
            Records with ``sow_key``, ``data`` (encoded in the topic's message type) and ``doc``.
        Raises:
            QueryOptionError: a bad projection, grouping or option. FilterError: a bad filter.

        Example:
            >>> from sowlib import SowStore
            >>> store = SowStore()
            >>> t = store.create_topic("t", keys=["/id"])
            >>> _ = t.publish_many([{"id": 1, "g": "x", "v": 2}, {"id": 2, "g": "x", "v": 5}])
            >>> top = ["/g", "MAX(/v) AS /top"]
            >>> rows = store.sow_aggregate("t", projection=top, grouping=["/g"])
            >>> rows[0].doc
            {'g': 'x', 'top': 5}
        """
        store: Any = self
        return aggregate_sow(
            store.topic(topic),
            filter,
            projection=projection,
            grouping=grouping,
            order_by=order_by,
            top_n=top_n,
            skip_n=skip_n,
            **options,
        )

    def sow_and_subscribe_aggregate(
        self,
        callback: Callable[[Message], object],
        topic: str,
        *,
        projection: Iterable[str] | str,
        grouping: Iterable[str] | str = (),
        filter: Any = None,
    ) -> AggregateSubscription:
        """Deliver the aggregated groups now, then each group's new message as it changes.

        A group whose last record leaves is delivered as an ``oof`` message.
        """
        store: Any = self
        view = compile_query(topic, projection, grouping, filter)
        return AggregateSubscription(view, store.topic(topic), callback)
