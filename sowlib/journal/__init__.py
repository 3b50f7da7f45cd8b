"""A transaction log (AMPS ``<TransactionLog>``): replayable history of chosen topics.

Sits beside a store and watches it through the public topic API only; never
imports ``storage``, ``topic`` or ``store``.

Example:
    >>> import tempfile
    >>> from sowlib import SowStore
    >>> store = SowStore()
    >>> orders = store.create_topic("orders", keys=["/id"])
    >>> journal = Journal(tempfile.mkdtemp(), ["orders"])
    >>> journal.watch(store)
    1
    >>> _ = orders.publish({"id": 1})
    >>> [(e.kind, e.seq) for e in journal.replay()]
    [('publish', 1)]
    >>> journal.close()
"""

from sowlib.journal.bookmarks import (
    EPOCH,
    MOST_RECENT,
    NOW,
    Position,
    format_bookmark,
    parse_bookmark,
)
from sowlib.journal.bus import PubSubBus, bus_directory
from sowlib.journal.config import journal_from_config, store_journal
from sowlib.journal.followed import FollowedJournal
from sowlib.journal.journal import Journal, JournalSubscription
from sowlib.journal.log import Entry
from sowlib.journal.tail import LogTail

__all__ = [
    "EPOCH",
    "MOST_RECENT",
    "NOW",
    "Entry",
    "FollowedJournal",
    "Journal",
    "JournalSubscription",
    "LogTail",
    "Position",
    "PubSubBus",
    "bus_directory",
    "format_bookmark",
    "journal_from_config",
    "parse_bookmark",
    "store_journal",
]
