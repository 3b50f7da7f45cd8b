"""AMPS message queues over a transaction log (``<Queue>`` in ``<SOW>``).

A queue is a view of the publishes to its underlying topic recorded by a
:class:`~sowlib.journal.Journal`: each message is leased to one subscriber at a
time, removed when acknowledged (at-least-once) or when delivered (at-most-once),
and redelivered when its lease ends or its subscriber goes away. What left a
queue is kept in a small file in the journal directory, so a queue survives a
restart. See docs/queues.md.
"""

from sowlib.config.queues import FAIRNESS_MODELS, SEMANTICS, QueueDef, queue_definitions
from sowlib.queues.queue import Consumer, Delivery, Queue
from sowlib.queues.registry import find_queue, open_queue, queues_of

__all__ = [
    "FAIRNESS_MODELS",
    "SEMANTICS",
    "Consumer",
    "Delivery",
    "Queue",
    "QueueDef",
    "find_queue",
    "open_queue",
    "queue_definitions",
    "queues_of",
]
