"""The topic core: one SOW topic, composed of small parts.

``facade`` (:class:`Topic`: locking, argument checks) over ``keymap`` (where each
key's live record is), ``writer`` (decode -> key -> append -> index -> install)
with ``prepare`` (batches), ``views`` and ``cache`` (Records, documents, the
bounded cache), ``expiry``, ``source`` (what the query engine reads), ``loader``
(open, checkpoints, index rebuilds), ``logview`` (log reads) and ``checks``.
Never imports ``store``, ``spark`` or ``cli``.
"""

from sowlib.results import Change, DeleteResult, PublishResult
from sowlib.topic.facade import Topic

__all__ = ["Change", "DeleteResult", "PublishResult", "Topic"]
