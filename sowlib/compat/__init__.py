"""Run code written for the AMPS Python client in process: ``import sowlib.compat as AMPS``.

The module offers the real client's names — ``Client``, ``Command``, ``Message``,
``MessageStream``, the exception classes — over sowlib stores. ``connect(uri)``
reaches the store :func:`attach` bound to that URI, else one in-memory store
per URI shared by every client of the process. :func:`install` makes a program
that says ``import AMPS`` or ``from AMPS import Client`` use this module.

Example:
    >>> import sowlib.compat as AMPS
    >>> client = AMPS.Client("demo")
    >>> client.connect("tcp://localhost:9999/amps/json")
    >>> try:
    ...     client.sow("no-such-topic")
    ... except AMPS.InvalidTopicException:
    ...     print("no SOW")
    no SOW
    >>> AMPS.reset()
"""

from __future__ import annotations

import sys

from sowlib.compat.builders import (
    CompositeMessageBuilder,
    CompositeMessageParser,
    FIXBuilder,
    FIXShredder,
    NVFIXBuilder,
    NVFIXShredder,
)
from sowlib.compat.client import Client
from sowlib.compat.command import Command
from sowlib.compat.exceptions import *  # noqa: F403 - the AMPS module exposes them all
from sowlib.compat.exceptions import __all__ as _exception_names
from sowlib.compat.ha import DefaultAuthenticator, DefaultServerChooser, HAClient
from sowlib.compat.message import Message
from sowlib.compat.options import parse_options
from sowlib.compat.registry import attach, detach, reset
from sowlib.compat.stores import (
    BookmarkStore,
    LoggedBookmarkStore,
    MemoryBookmarkStore,
    MemoryPublishStore,
    MMapBookmarkStore,
    PublishStore,
)
from sowlib.compat.stream import MessageStream
from sowlib.journal import Journal

__all__ = [
    "BookmarkStore",
    "Client",
    "Command",
    "CompositeMessageBuilder",
    "CompositeMessageParser",
    "DefaultAuthenticator",
    "DefaultServerChooser",
    "FIXBuilder",
    "FIXShredder",
    "HAClient",
    "Journal",
    "LoggedBookmarkStore",
    "MMapBookmarkStore",
    "MemoryBookmarkStore",
    "MemoryPublishStore",
    "Message",
    "MessageStream",
    "NVFIXBuilder",
    "NVFIXShredder",
    "PublishStore",
    "attach",
    "detach",
    "install",
    "parse_options",
    "reset",
    *[n for n in _exception_names if n not in ("translate", "translating")],
]


def install(name: str = "AMPS") -> None:
    """Make ``import AMPS`` (or ``name``) load this module: ``sys.modules[name] = sowlib.compat``.

    Call it once before importing the program under test; its code then runs
    unchanged. Example: ``sowlib.compat.install(); import my_amps_app``.
    """
    sys.modules[name] = sys.modules[__name__]
