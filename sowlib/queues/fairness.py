"""Which subscription of a queue receives the next message (AMPS ``FairnessModel``).

Every model picks among the subscriptions that can take the message (a free
backlog slot, a filter it matches), given in the order they subscribed:

* ``fast``: the first of them;
* ``round-robin``: the first after the one served last, wrapping around;
* ``proportional``: the one with the most free backlog slots (ties: round-robin),
  so a subscription with twice the backlog receives twice the messages.

Imports nothing from sowlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["Candidate", "choose"]


class Candidate(Protocol):
    """What fairness needs of a subscription."""

    @property
    def order(self) -> int:
        """When it subscribed (increasing)."""

    @property
    def free(self) -> int:
        """How many more messages it may hold unacknowledged."""


def _after(candidates: Sequence[Candidate], last: int) -> Candidate:
    later = [c for c in candidates if c.order > last]
    return later[0] if later else candidates[0]


def choose(model: str, candidates: Sequence[Candidate], last: int) -> Candidate | None:
    """The subscription ``model`` picks; ``last`` is the order of the one served last.

    Example:
        >>> from types import SimpleNamespace as S
        >>> subs = [S(order=1, free=1), S(order=2, free=3)]
        >>> choose("fast", subs, 1).order, choose("round-robin", subs, 1).order
        (1, 2)
        >>> choose("proportional", subs, 2).order
        2
    """
    if not candidates:
        return None
    if model == "fast":
        return candidates[0]
    if model == "round-robin":
        return _after(candidates, last)
    most = max(c.free for c in candidates)
    return _after([c for c in candidates if c.free == most], last)
