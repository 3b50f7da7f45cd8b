"""The queues of a transaction log, one :class:`Queue` per definition per process.

Queues configured with ``<Queue>`` (``Journal.queue_definitions``, set by
``SowStore.from_config``) and those added with :func:`open_queue` are kept per
journal, so every client of a store meets the same queue. Imports ``errors``,
``config.queues``, ``journal`` and its own package.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable

from sowlib.config.queues import QueueDef
from sowlib.errors import ConfigError, StoreClosedError
from sowlib.journal import Journal
from sowlib.queues.queue import Queue

__all__ = ["find_queue", "open_queue", "queues_of"]

_lock = threading.RLock()
_queues: weakref.WeakKeyDictionary[Journal, dict[str, Queue]] = weakref.WeakKeyDictionary()


def _known(journal: Journal, clock: Callable[[], float]) -> dict[str, Queue]:
    # A queue refers to its journal, so the weak keys never die alone: drop closed ones.
    for gone in [j for j in _queues if j.closed]:
        for queue in _queues.pop(gone).values():
            queue.close()
    if journal.closed:
        raise StoreClosedError(f"journal {journal.directory}")
    known = _queues.setdefault(journal, {})
    for definition in journal.queue_definitions:
        if definition.name not in known:
            known[definition.name] = Queue(journal, definition, clock=clock)
    return known


def open_queue(
    journal: Journal,
    definition: QueueDef | str,
    *,
    clock: Callable[[], float] = time.time,
    **options: object,
) -> Queue:
    """The queue ``definition`` over ``journal``, created on first use (the Python
    equivalent of a ``<Queue>`` element; ``options`` are :class:`QueueDef` fields).

    Example:
        >>> import tempfile
        >>> j = Journal(tempfile.mkdtemp(), ["work"])
        >>> q = open_queue(j, "todo", underlying_topic="work")
        >>> _ = j.record("publish", "work", "json", b'{"n": 1}')
        >>> next(iter(q.browse())).entry.data
        b'{"n": 1}'
        >>> j.close()

    Raises:
        ConfigError: a queue of that name exists with another definition.
        NotJournaledError: the journal does not record the underlying topic.
    """
    if isinstance(definition, str):
        definition = QueueDef(definition, **options)  # type: ignore[arg-type]
    with _lock:
        known = _known(journal, clock)
        queue = known.get(definition.name)
        if queue is not None:
            if queue.definition != definition:
                raise ConfigError(
                    f"Queue {definition.name}",
                    "a queue of that name exists with another definition",
                )
            return queue
        queue = Queue(journal, definition, clock=clock)
        known[definition.name] = queue
        return queue


def queues_of(journal: Journal, clock: Callable[[], float] = time.time) -> list[Queue]:
    """Every queue of ``journal`` (configured ones are created on first use)."""
    with _lock:
        return list(_known(journal, clock).values())


def find_queue(
    journal: Journal, name: str, message_type: str | None, clock: Callable[[], float] = time.time
) -> Queue | None:
    """The queue called ``name`` (of ``message_type``, when given), else None."""
    if not journal.queue_definitions and journal not in _queues:
        return None
    with _lock:
        queue = _known(journal, clock).get(name)
    if queue is None or (message_type and message_type.lower() != queue.message_type):
        return None
    return queue
