"""The recovery-point pattern: an application's state dict kept as one record of a SOW topic.

:class:`StateStore` loads the state when it is opened, persists it every N updates
and on close. The record is either the envelope ``{"key", "state", "version"}``
or, keyed on the caller's own fields, a flat record (key fields + state fields),
or any shape given by two functions. Uses only the public Topic API (``publish``,
``get``, ``key_for``); imports ``errors`` and ``keys`` only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, Protocol

from sowlib.errors import ConfigError, InvalidSowKeyError, StoreClosedError
from sowlib.keys import validate_user_key

__all__ = ["StateStore", "StateTopic"]


class StateTopic(Protocol):
    """The part of :class:`~sowlib.topic.Topic` a :class:`StateStore` uses."""

    name: str

    def publish(self, data: Any, *, sow_key: str | None = None) -> Any: ...

    def get(self, sow_key: str) -> Any: ...

    def key_for(self, message: Any) -> str: ...


class StateStore(MutableMapping[str, Any]):
    """A dict persisted as one record of a SOW topic.

    Three record layouts:

    * ``key="sink-1"`` (a string): the record ``{"key": key, "state": {...},
      "version": n}`` on a topic keyed on ``/key``, or on one with
      publisher-supplied keys (then ``key`` is the SOW key and must be Base64 text).
    * ``key={"clientName": "c1", "subId": "s1"}`` (a mapping): a topic keyed on the
      caller's own fields (``keys=["/clientName", "/subId"]``); the record is flat,
      those fields plus the state's fields (``{"clientName": "c1", "subId": "s1",
      "bookmark": "..."}``), the shape AMPS programs keep bookmarks in.
    * ``to_record``/``from_record``: any shape; ``to_record(state)`` builds the
      record to publish (it must carry the key fields), ``from_record(doc)`` gives
      the state back.

    Every change (``state[k] = v``, ``del``, :meth:`update`) counts as one
    update; every ``every`` updates the whole state is published; :meth:`close`
    (or leaving the ``with`` block) publishes what is left. Values must be
    encodable by the topic's message type (``json``: JSON values). Thread-safe.

    Example:
        >>> from sowlib.store import SowStore
        >>> topic = SowStore().create_topic("state", keys=["/key"])
        >>> with StateStore(topic, key="sink-1", every=10) as state:
        ...     state["last_batch"] = 41
        >>> StateStore(topic, key="sink-1")["last_batch"]
        41
        >>> marks = SowStore().create_topic("marks", keys=["/clientName", "/subId"])
        >>> with StateStore(marks, key={"clientName": "c1", "subId": "s1"}) as state:
        ...     state["bookmark"] = "7|3|"
        >>> marks.sow()[0].doc["bookmark"]
        '7|3|'

    Args:
        topic: the SOW topic holding the state records.
        key: which application's state: a string, or the values of the topic's key fields.
        every: publish after this many updates (1 = every update).
        to_record: build the published record from the state (any shape).
        from_record: read the state back from a stored record's document.
    Raises:
        ConfigError: ``every`` below 1, a topic keyed on fields the key does not
            give, or only one of ``to_record``/``from_record``.
        InvalidSowKeyError: ``key`` is not a valid publisher-supplied SOW key.
    """

    def __init__(
        self,
        topic: StateTopic,
        key: str | Mapping[str, Any],
        *,
        every: int = 1,
        to_record: Callable[[dict[str, Any]], Any] | None = None,
        from_record: Callable[[Any], Mapping[str, Any]] | None = None,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError("every", f"{every!r} is not a positive number of updates")
        if isinstance(key, Mapping):
            if not key or not all(isinstance(k, str) and k for k in key):
                raise ConfigError("key", f"{key!r} is not a mapping of key field names to values")
            self._fields: dict[str, Any] | None = dict(key)
        elif isinstance(key, str) and key:
            self._fields = None
        else:
            raise ConfigError("key", f"{key!r} is not a non-empty state key")
        if (to_record is None) != (from_record is None):
            raise ConfigError("to_record", "give both to_record and from_record, or neither")
        self.topic = topic
        self.key = key if isinstance(key, str) else ",".join(f"{k}={v}" for k, v in key.items())
        self.every = every
        self._to_record = to_record
        self._from_record = from_record
        self._lock = threading.RLock()
        self._closed = False
        self._pending = 0
        self._sow_key, self._explicit = self._locate()
        record = topic.get(self._sow_key)
        doc = getattr(record, "doc", None) if record is not None else None
        self._state: dict[str, Any] = self._read(doc)
        version = doc.get("version") if isinstance(doc, Mapping) and self._plain else None
        self.version: int = version if isinstance(version, int) else 0

    @property
    def _plain(self) -> bool:
        """Whether the record is the ``{"key", "state", "version"}`` envelope."""
        return self._fields is None and self._to_record is None

    def _read(self, doc: Any) -> dict[str, Any]:
        if doc is None:
            return {}
        if self._from_record is not None:
            state = self._from_record(doc)
            if not isinstance(state, Mapping):
                raise ConfigError("from_record", f"returned {type(state).__name__}, not a mapping")
            return dict(state)
        if not isinstance(doc, Mapping):
            return {}
        if self._fields is not None:
            return {k: v for k, v in doc.items() if k not in self._fields}
        inner = doc.get("state")
        return dict(inner) if isinstance(inner, Mapping) else {}

    def _record(self) -> Any:
        state = dict(self._state)
        if self._to_record is not None:
            return self._to_record(state)
        if self._fields is not None:
            return {**state, **self._fields}
        return {"key": self.key, "state": state, "version": self.version + 1}

    def _locate(self) -> tuple[str, bool]:
        """The SOW key of the state record, and whether the publisher must supply it."""
        probe: Any = {"key": self.key}
        if self._to_record is not None:
            probe = self._to_record({})
        elif self._fields is not None:
            probe = dict(self._fields)
        try:
            return self.topic.key_for(probe), False
        except InvalidSowKeyError as exc:
            if exc.key is not None:
                raise
        except ValueError as exc:  # MissingKeyFieldError: keyed on other fields
            raise ConfigError(
                "topic",
                f"topic {self.topic.name!r} is keyed on fields the state key does not give"
                f" (pass key={{field: value, ...}} for its key fields): {exc}",
            ) from None
        if not self._plain:
            raise ConfigError(
                "topic", f"topic {self.topic.name!r} takes publisher keys; pass key as a string"
            )
        return validate_user_key(self.key), True

    # ------------------------------------------------------------------ mapping

    def __getitem__(self, name: str) -> Any:
        with self._lock:
            return self._state[name]

    def __setitem__(self, name: str, value: Any) -> None:
        with self._lock:
            self._check_open()
            self._state[name] = value
            self._updated()

    def __delitem__(self, name: str) -> None:
        with self._lock:
            self._check_open()
            del self._state[name]
            self._updated()

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._state))

    def __len__(self) -> int:
        return len(self._state)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Apply several changes as one update (one step toward ``every``)."""
        with self._lock:
            self._check_open()
            self._state.update(*args, **kwargs)
            self._updated()

    def snapshot(self) -> dict[str, Any]:
        """A shallow copy of the current state."""
        with self._lock:
            return dict(self._state)

    # ------------------------------------------------------------------ persistence

    @property
    def pending(self) -> int:
        """Updates not yet persisted."""
        return self._pending

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"state {self.key!r}")

    def _updated(self) -> None:
        self._pending += 1
        if self._pending >= self.every:
            self.flush()

    def flush(self) -> None:
        """Publish the whole state now (even when nothing changed)."""
        with self._lock:
            self._check_open()
            self.topic.publish(self._record(), sow_key=self._sow_key if self._explicit else None)
            self.version += 1
            self._pending = 0

    def close(self) -> None:
        """Publish pending updates and stop accepting changes; idempotent."""
        with self._lock:
            if self._closed:
                return
            if self._pending:
                self.flush()
            self._closed = True

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StateStore(topic={self.topic.name!r}, key={self.key!r}, every={self.every})"
