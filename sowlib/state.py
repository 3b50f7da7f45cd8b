"""The recovery-point pattern: an application's state dict kept as one record of a SOW topic.

:class:`StateStore` loads the state when it is opened, persists it every N updates
and on close. Uses only the public Topic API (``publish``, ``get``, ``key_for``);
imports ``errors`` and ``keys`` only, never ``storage`` or ``topic`` internals.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, MutableMapping
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
    """A dict persisted as the record ``{"key": key, "state": {...}, "version": n}``.

    Works on a topic keyed on ``/key`` (``create_topic(name, keys=["/key"])``) or on
    one with publisher-supplied keys (then ``key`` is the SOW key and must be Base64
    text). Every change (``state[k] = v``, ``del``, :meth:`update`) counts as one
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

    Args:
        topic: the SOW topic holding the state records.
        key: which application's state (one record per key).
        every: publish after this many updates (1 = every update).
    Raises:
        ConfigError: ``every`` below 1, or a topic keyed on fields other than ``/key``.
        InvalidSowKeyError: ``key`` is not a valid publisher-supplied SOW key.
    """

    def __init__(self, topic: StateTopic, key: str, *, every: int = 1) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError("every", f"{every!r} is not a positive number of updates")
        if not isinstance(key, str) or not key:
            raise ConfigError("key", f"{key!r} is not a non-empty state key")
        self.topic = topic
        self.key = key
        self.every = every
        self._lock = threading.RLock()
        self._closed = False
        self._pending = 0
        self._sow_key, self._explicit = self._locate()
        record = topic.get(self._sow_key)
        doc = getattr(record, "doc", None) if record is not None else None
        state = doc.get("state") if isinstance(doc, Mapping) else None
        self._state: dict[str, Any] = dict(state) if isinstance(state, Mapping) else {}
        version = doc.get("version") if isinstance(doc, Mapping) else None
        self.version: int = version if isinstance(version, int) else 0

    def _locate(self) -> tuple[str, bool]:
        """The SOW key of the state record, and whether the publisher must supply it."""
        try:
            return self.topic.key_for({"key": self.key}), False
        except InvalidSowKeyError as exc:
            if exc.key is not None:
                raise
        except ValueError as exc:  # MissingKeyFieldError: keyed on other fields
            raise ConfigError(
                "topic",
                f"topic {self.topic.name!r} must be keyed on /key or take publisher keys: {exc}",
            ) from None
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
            doc = {"key": self.key, "state": dict(self._state), "version": self.version + 1}
            self.topic.publish(doc, sow_key=self._sow_key if self._explicit else None)
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
