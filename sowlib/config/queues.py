"""The AMPS ``<Queue>`` elements of a ``<SOW>`` section: message queue definitions.

A queue (``<Queue>``, ``<LocalQueue>``, ``<GroupLocalQueue>`` or the synonym
``<QueueDefinition>``) is a view over the transaction log of its underlying
topics; :mod:`sowlib.queues` runs it. This module only reads the definitions into
:class:`QueueDef` (plain data). Imports ``errors``, ``units``, ``codecs.xml_codec``
(the hardened parser) and lxml.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
from lxml import etree

from sowlib.codecs.xml_codec import hardened_parser
from sowlib.errors import ConfigError
from sowlib.units import parse_count, parse_duration

__all__ = [
    "FAIRNESS_MODELS",
    "QUEUE_TAGS",
    "SEMANTICS",
    "QueueDef",
    "queue_definitions",
]

#: The elements that define a queue (their replication type has no meaning in process).
QUEUE_TAGS = frozenset({"Queue", "LocalQueue", "GroupLocalQueue", "QueueDefinition"})
SEMANTICS = ("at-least-once", "at-most-once")
FAIRNESS_MODELS = ("fast", "round-robin", "proportional")
#: Queue elements with no meaning in one process: accepted and ignored.
IGNORED = frozenset(
    {"FileBackedMetadata", "GroupLocalQueueDomain", "InFlightTimeout", "TargetQueueDepth"}
)
#: Queue elements sowlib does not implement: a ConfigError says so.
UNSUPPORTED = {
    "Priority": "queue priorities are not implemented",
    "BarrierExpression": "barrier messages are not implemented",
    "DefaultPublishTopic": "publishing to the queue name is not implemented; publish to"
    " the underlying topic",
}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@attrs.frozen
class QueueDef:
    """One queue. Defaults are documented in docs/queues.md.

    Attributes:
        name: the queue topic consumers subscribe to.
        message_type: the message type of the queue and its underlying topics.
        underlying_topic: a topic name or regular expression (default: ``name``).
        semantics: ``at-least-once`` (leased until acknowledged) or ``at-most-once``
            (removed when delivered).
        lease_period: seconds a delivered message stays leased to its subscriber.
        fairness: ``fast``, ``round-robin`` or ``proportional``.
        max_per_subscription_backlog: the cap on one subscription's unacknowledged
            messages (its ``max_backlog`` option is lowered to it); None: no cap.
        max_backlog: the cap on unacknowledged messages over all subscriptions.
        expiration: seconds a message stays in the queue; None: until consumed.
        filter: only messages matching it enter the queue.
        max_deliveries: a message delivered this many times and returned is expired.
        max_cancels: a message cancelled this many times is expired.
        recovery_point: where a queue starts in the log the first time it is opened:
            ``epoch`` (every retained message) or ``now`` (only later ones).
    """

    name: str
    message_type: str = "json"
    underlying_topic: str | None = None
    semantics: str = "at-least-once"
    lease_period: float = 300.0
    fairness: str = "fast"
    max_per_subscription_backlog: int | None = None
    max_backlog: int | None = None
    expiration: float | None = None
    filter: str | None = None
    max_deliveries: int | None = None
    max_cancels: int | None = None
    recovery_point: str = "epoch"

    def __attrs_post_init__(self) -> None:
        where = f"Queue {self.name}"
        if not self.name:
            raise ConfigError("Queue/Name", "required")
        if self.semantics not in SEMANTICS:
            raise ConfigError(f"{where}/Semantics", f"{self.semantics!r} is not one of {SEMANTICS}")
        if self.fairness not in FAIRNESS_MODELS:
            raise ConfigError(
                f"{where}/FairnessModel", f"{self.fairness!r} is not one of {FAIRNESS_MODELS}"
            )
        if self.lease_period <= 0:
            raise ConfigError(f"{where}/LeasePeriod", "must be more than zero")
        for label, value in (
            ("MaxPerSubscriptionBacklog", self.max_per_subscription_backlog),
            ("MaxBacklog", self.max_backlog),
            ("MaxDeliveries", self.max_deliveries),
            ("MaxCancels", self.max_cancels),
        ):
            if value is not None and value < 1:
                raise ConfigError(f"{where}/{label}", f"{value} is not a positive count")
        if self.recovery_point.lower() not in ("now", "epoch"):
            raise ConfigError(f"{where}/RecoveryPoint", "expected 'now' or 'epoch'")

    @property
    def topic(self) -> str:
        """The underlying topic (name or regular expression)."""
        return self.underlying_topic or self.name


def _tag(element: Any) -> str:
    return str(etree.QName(element).localname)


def _source(source: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.encode("utf-8")
    try:
        return Path(os.fspath(source)).read_bytes()
    except OSError as exc:
        raise ConfigError(str(source), f"cannot read the configuration: {exc.strerror}") from None


def _expand(text: str, where: str, env: Mapping[str, str] | None) -> str:
    def one(match: re.Match[str]) -> str:
        value = (env or {}).get(match.group(1), os.environ.get(match.group(1)))
        if value is None:
            raise ConfigError(where, f"environment variable ${{{match.group(1)}}} is not set")
        return value

    text = _VAR.sub(one, text)
    if not text:
        raise ConfigError(where, "is empty")
    return text


def _count(text: str, where: str) -> int:
    value = parse_count(text, where)
    if value < 1:
        raise ConfigError(where, f"{text!r} is not a positive count")
    return value


def _same(text: str, where: str) -> str:
    return text


def _lower(text: str, where: str) -> str:
    return text.lower()


def _one(element: Any, where: str, env: Mapping[str, str] | None) -> QueueDef:
    values: dict[str, Any] = {}
    fields: dict[str, tuple[str, Callable[[str, str], Any]]] = {
        "Name": ("name", _same),
        "Topic": ("name", _same),
        "MessageType": ("message_type", _lower),
        "UnderlyingTopic": ("underlying_topic", _same),
        "Semantics": ("semantics", _lower),
        "LeasePeriod": ("lease_period", parse_duration),
        "FairnessModel": ("fairness", _lower),
        "MaxPerSubscriptionBacklog": ("max_per_subscription_backlog", _count),
        "MaxBacklog": ("max_backlog", _count),
        "Expiration": ("expiration", parse_duration),
        "Filter": ("filter", _same),
        "MaxDeliveries": ("max_deliveries", _count),
        "MaxCancels": ("max_cancels", _count),
        "RecoveryPoint": ("recovery_point", _lower),
    }
    for child in element:
        if not isinstance(child.tag, str):
            continue
        tag = _tag(child)
        path = f"{where}/{tag}"
        if tag in IGNORED:
            continue
        if tag in UNSUPPORTED:
            raise ConfigError(path, UNSUPPORTED[tag])
        if tag not in fields:
            raise ConfigError(path, "unknown element")
        attr, convert = fields[tag]
        if attr in values:
            raise ConfigError(path, "appears more than once")
        text = _expand((child.text or "").strip(), path, env)
        try:
            values[attr] = convert(text, path)
        except ConfigError as exc:
            raise ConfigError(path, exc.reason) from None
    if "name" not in values:
        raise ConfigError(f"{where}/Name", "required")
    if "message_type" not in values:
        raise ConfigError(f"{where}/MessageType", "required")
    return QueueDef(**values)


def queue_definitions(
    source: str | os.PathLike[str] | bytes, env: Mapping[str, str] | None = None
) -> list[QueueDef]:
    """The queues of a configuration's ``<SOW>`` sections (a path or the XML).

    Raises:
        ConfigError: malformed XML, a missing ``Name`` or ``MessageType``, an unknown
            or repeated element, a bad value, an element sowlib does not implement
            (``Priority``, ``BarrierExpression``), two queues with one name.
    """
    try:
        root = etree.fromstring(_source(source), hardened_parser())
    except etree.XMLSyntaxError as exc:
        raise ConfigError("configuration", f"not well-formed XML: {exc}") from None
    found: list[QueueDef] = []
    sections = [e for e in root.iter() if isinstance(e.tag, str)]
    for section in sections:
        if _tag(section) not in ("SOW", "TopicMetaData"):
            continue
        kids = [c for c in section if isinstance(c.tag, str) and _tag(c) in QUEUE_TAGS]
        for number, child in enumerate(kids, 1):
            one = _one(child, f"SOW/{_tag(child)}[{number}]", env)
            if any(q.name == one.name for q in found):
                raise ConfigError(f"SOW/Queue {one.name}", "two queues have this name")
            found.append(one)
    return found
