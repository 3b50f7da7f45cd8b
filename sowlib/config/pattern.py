"""Regular expressions over topic names with bounded work (``SowStore.sow``, ``Pattern``).

Imports ``errors`` only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TypeVar

import regex

from sowlib.errors import ConfigError

__all__ = ["MAX_TOPIC_REGEX", "TOPIC_REGEX_SECONDS", "TopicPattern"]

#: Longest regular expression accepted for topic names (``SowStore.sow``, ``Pattern``).
MAX_TOPIC_REGEX = 1000
#: Seconds one call may spend matching topic names against a regular expression, in all.
TOPIC_REGEX_SECONDS = 0.25
_T = TypeVar("_T")


class TopicPattern:
    """A regular expression over topic names with bounded work.

    The text is at most :data:`MAX_TOPIC_REGEX` characters; matching shares a
    budget of :data:`TOPIC_REGEX_SECONDS` per call of :meth:`select`.

    Raises:
        ConfigError: the text is too long, not a regular expression, or the
            budget ran out (naming the pattern and the topic name).
    """

    def __init__(self, text: object, where: str) -> None:
        if not isinstance(text, str):
            raise ConfigError(where, f"{text!r} is not a regular expression string")
        if len(text) > MAX_TOPIC_REGEX:
            raise ConfigError(
                where, f"is {len(text)} characters long; the limit is {MAX_TOPIC_REGEX}"
            )
        self.text = text
        self.where = where
        try:
            self._pattern = regex.compile(text)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise ConfigError(where, f"{text!r} is not a regular expression: {exc}") from None

    def select(self, items: Iterable[tuple[str, _T]]) -> list[_T]:
        """The values whose name fully matches, in order, within one shared budget."""
        deadline = time.monotonic() + TOPIC_REGEX_SECONDS
        out = []
        for name, value in items:
            if self.fullmatch(name, deadline):
                out.append(value)
        return out

    def fullmatch(self, name: str, deadline: float | None = None) -> bool:
        """Whether ``name`` fully matches, before ``deadline`` (default: one budget)."""
        if not isinstance(name, str):
            return False
        end = time.monotonic() + TOPIC_REGEX_SECONDS if deadline is None else deadline
        try:
            return (
                self._pattern.fullmatch(name, timeout=max(end - time.monotonic(), 0.001))
                is not None
            )
        except TimeoutError:
            raise ConfigError(
                self.where,
                f"{self.text!r} took over {TOPIC_REGEX_SECONDS}s matching topic names (at"
                f" {name[:80]!r}); simplify it (nested quantifiers backtrack exponentially)",
            ) from None
