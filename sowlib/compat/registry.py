"""Which store a ``connect()`` URI reaches: :func:`attach`, :func:`detach`, :func:`reset`.

Imports ``store``, ``journal`` and ``compat.hub``/``compat.exceptions``.
"""

from __future__ import annotations

import threading
import urllib.parse

from sowlib.codecs import available_codecs
from sowlib.compat.exceptions import (
    InvalidURIException,
    MessageTypeNotFoundException,
    UsageException,
)
from sowlib.compat.hub import Hub
from sowlib.journal import FollowedJournal, Journal
from sowlib.store import SowStore

__all__ = ["attach", "detach", "hub_for", "parse_uri", "reset"]

_lock = threading.Lock()
_attached: dict[str | None, Hub] = {}
_defaults: dict[str, Hub] = {}


def parse_uri(uri: str) -> tuple[str, str | None]:
    """Split an AMPS URI into the server address and the message type.

    ``tcp://host:9007/amps/json`` -> ``("host:9007", "json")``; ``/amps`` alone
    (or a path without a type) gives None: the store's own topic types decide.

    Raises:
        InvalidURIException: not ``scheme://host[:port]/...``.
        MessageTypeNotFoundException: an unknown message type.
    """
    if not isinstance(uri, str):
        raise InvalidURIException(f"expected a URI string, got {uri!r}")
    try:
        parts = urllib.parse.urlsplit(uri)
        port = parts.port
    except ValueError as exc:
        raise InvalidURIException(f"malformed URI {uri!r}: {exc}") from None
    if not parts.scheme or not parts.hostname:
        raise InvalidURIException(f"malformed URI {uri!r}: expected scheme://host:port/amps/type")
    address = f"{parts.hostname.lower()}:{port or ''}"
    segments = [s for s in parts.path.split("/") if s]
    mtype = segments[1].lower() if len(segments) >= 2 and segments[0] == "amps" else None
    if mtype is not None and mtype not in available_codecs():
        raise MessageTypeNotFoundException(f"message type {mtype!r} in {uri!r} is not known")
    return address, mtype


def attach(store: SowStore, uri: str | None = None, *, journal: Journal | None = None) -> None:
    """Make clients that ``connect(uri)`` use ``store`` (None: every URI).

    ``journal`` (a :class:`~sowlib.journal.Journal`) records the topics it names
    and serves ``bookmark_subscribe``; by default the journal the store owns
    (``SowStore.from_config`` with a ``<TransactionLog>``). Only the server address
    of ``uri`` counts (``tcp://h:9007/amps/json`` and ``tcp://h:9007/amps/xml``
    reach the same store).
    Attaching again replaces the earlier binding for new connections.

    Example:
        >>> from sowlib import SowStore
        >>> store = SowStore()
        >>> attach(store, "tcp://localhost:9007/amps/json")
        >>> hub_for("tcp://localhost:9007/amps/xml").store is store
        True
        >>> detach("tcp://localhost:9007/amps/json")

    Raises:
        UsageException: ``journal`` given for a store that owns another one.
    """
    owned: Journal | FollowedJournal | None = journal
    if journal is None:
        owned = store.journal
    elif store.journal is not None and journal is not store.journal:
        raise UsageException(
            f"attach: the store already owns the journal of its configuration"
            f" ({store.journal.directory}); call attach(store) without journal="
        )
    address = parse_uri(uri)[0] if uri is not None else None
    with _lock:
        for hub in list(_attached.values()):
            if hub.store is store and hub.journal is owned:
                _attached[address] = hub
                return
        _attached[address] = Hub(store, owned)


def detach(uri: str | None = None) -> None:
    """Undo :func:`attach` for ``uri`` (None: the catch-all binding); the store stays open."""
    address = parse_uri(uri)[0] if uri is not None else None
    with _lock:
        _attached.pop(address, None)


def reset() -> None:
    """Forget every attachment and every per-URI in-memory store (for tests); stop their sweeps."""
    with _lock:
        hubs = {id(h): h for h in (*_attached.values(), *_defaults.values())}
        _attached.clear()
        _defaults.clear()
    for hub in hubs.values():
        hub.close()


def hub_for(uri: str) -> Hub:
    """The hub a client connecting to ``uri`` uses.

    An attached store for the URI's address, else the catch-all attachment, else
    one in-memory store per address, shared by every client of this process.
    """
    address, _ = parse_uri(uri)
    with _lock:
        hub = _attached.get(address) or _attached.get(None) or _defaults.get(address)
        if hub is None:
            hub = _defaults[address] = Hub(SowStore())
        return hub
