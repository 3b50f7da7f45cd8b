"""The evaluation context: what a filter can see besides the message body (spec §5.10).

Imports nothing from sowlib.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["EvalContext"]


@attrs.define
class EvalContext:
    """Envelope values for the context functions; every field is optional.

    Mutable on purpose: a scan may reuse one context and update it per record
    instead of allocating one per message. A function whose field is None
    returns NULL.

    Attributes:
        sow_key: the record's SOW key (``SOW_KEY()``).
        topic: topic name (``TOPIC_NAME()``).
        message_size: payload size in bytes (``MESSAGE_SIZE()``).
        correlation_id: publisher-supplied id (``CORRELATION_ID()``).
        timestamp: last write time, float seconds (``LAST_UPDATED()``).
        bookmark: transaction-log bookmark (``BOOKMARK()``; falls back to ``seq``).
        seq: the record's sequence number in its log.
        now: the clock for ``UNIX_TIMESTAMP()``/``TODAY_UTC()`` (default: ``time.time()``).
        sow_key_hash: ``SOW_KEY_HASH()``; defaults to the key itself (generated keys
            are their own hash).

    Example:
        >>> EvalContext(sow_key="42", topic="orders").topic
        'orders'
    """

    sow_key: Any = None
    topic: str | None = None
    message_size: int | None = None
    correlation_id: str | None = None
    timestamp: float | None = None
    bookmark: Any = None
    seq: int | None = None
    now: float | None = None
    sow_key_hash: Any = None
