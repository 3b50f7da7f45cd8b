"""Bookmark subscriptions over a transaction log: replay, then live, with no gap.

Shared by the writer's :class:`~sowlib.journal.Journal` and a read-only process's
:class:`~sowlib.journal.followed.FollowedJournal`. Imports ``errors``, ``codecs``,
``expr`` and the journal's ``bookmarks``/``frames``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

import attrs

from sowlib.codecs import get_codec
from sowlib.errors import ConfigError, NotJournaledError
from sowlib.expr import Filter
from sowlib.journal.bookmarks import Position
from sowlib.journal.frames import Entry

__all__ = ["JournalSubscription", "compile_topic", "subscription_pattern"]

logger = logging.getLogger("sowlib.journal.journal")
Callback = Callable[[Entry], object]

_REGEX_CHARS = re.compile(r"[.*+?\[\](){}^$|\\]")
# What makes a topic a regular expression to AMPS (a lone "." does not: "orders.eu").
_PATTERN_CHARS = re.compile(r"[*+?\[\](){}^$|\\]|\.[*+?]")


def compile_topic(name: str, where: str = "TransactionLog/Topic/Name") -> re.Pattern[str]:
    """Compile a topic regular expression.

    Raises:
        ConfigError: it does not compile.
    """
    try:
        return re.compile(name)
    except re.error as exc:
        raise ConfigError(where, f"bad topic regular expression {name!r}: {exc}") from None


def subscription_pattern(topic: str, covered: bool, message_type: str | None) -> re.Pattern[str]:
    """What a bookmark subscription to ``topic`` matches (``covered``: the journal
    records ``topic`` by that name).

    Raises:
        NotJournaledError: not covered and not a regular expression.
        ConfigError: a regular expression that does not compile.
    """
    if not covered and not _REGEX_CHARS.search(topic):
        raise NotJournaledError(topic, message_type)
    topic_re = re.compile(re.escape(topic)) if covered else compile_topic(topic, "topic")
    if covered and _PATTERN_CHARS.search(topic):  # a name a pattern covers, or a regex
        with contextlib.suppress(re.error):
            topic_re = re.compile(f"{re.escape(topic)}|(?:{topic})")
    return topic_re


class _Owner(Protocol):
    def forget(self, sub: JournalSubscription) -> None: ...


@attrs.define(eq=False)
class JournalSubscription:
    """A bookmark subscription over a journal; :meth:`unsubscribe` ends it."""

    id: str
    topic: str
    _journal: _Owner | None = attrs.field(repr=False)
    _callback: Callback = attrs.field(repr=False)
    _topic_re: re.Pattern[str] = attrs.field(repr=False)
    _filter: Filter | None = attrs.field(repr=False)
    _message_type: str | None = attrs.field(repr=False)
    _oof: bool = attrs.field(repr=False)
    _position: Position = attrs.field(repr=False)
    _pending: list[Entry] | None = attrs.field(factory=list, repr=False)
    delivered: int = 0

    @property
    def active(self) -> bool:
        return self._journal is not None

    def unsubscribe(self) -> None:
        """Stop deliveries; idempotent."""
        journal, self._journal = self._journal, None
        if journal is not None:
            journal.forget(self)

    def detach(self) -> None:
        """The journal closed: deliver nothing more."""
        self._journal = None

    def _wants(self, entry: Entry) -> bool:
        pos = self._position
        if entry.seq <= pos.after or (pos.since is not None and entry.timestamp < pos.since):
            return False
        if entry.kind != "publish" and not self._oof:
            return False
        if self._message_type is not None and entry.message_type != self._message_type:
            return False
        if not self._topic_re.fullmatch(entry.topic):
            return False
        if self._filter is None:
            return True
        doc = get_codec(entry.message_type).decode(entry.data)
        return self._filter.matches(doc) is True

    def deliver(self, entry: Entry) -> None:
        """Call the callback if the subscription wants ``entry``; a failing callback is
        logged (a subscriber must never break the publisher)."""
        if self._journal is None:
            return
        try:
            if not self._wants(entry):
                return
            self._callback(entry)
            self.delivered += 1
        except SystemExit:  # a handler's exit() ends its subscription, as its thread would
            self.unsubscribe()
            raise
        except Exception:
            logger.exception(
                "bookmark subscription %s: delivery of seq %d failed", self.id, entry.seq
            )

    def offer(self, entry: Entry) -> None:
        """Called by the journal under its lock for every new entry: held while the
        replay runs, delivered once it is done."""
        if self._pending is not None:
            self._pending.append(entry)
        else:
            self.deliver(entry)

    def catch_up(self, replay: Iterable[Entry], end: int | None, lock: threading.RLock) -> None:
        """Deliver ``replay`` (up to sequence ``end``; None: all of it), then what was
        offered meanwhile and is newer than the replay's last entry (taken under
        ``lock``, the journal's), then go live. On any error (a damaged file, a
        handler's exit()) the subscription is ended and the error raised."""
        if self._pending is None:
            return
        last = 0
        try:
            for entry in replay:
                if end is not None and entry.seq > end:
                    break
                last = entry.seq
                self.deliver(entry)
            while True:
                with lock:
                    pending, self._pending = self._pending or [], []
                    if not pending:
                        self._pending = None  # caught up: live deliveries from now on
                        return
                for entry in pending:
                    if entry.seq > last:
                        self.deliver(entry)
        except BaseException:
            self.unsubscribe()
            raise
