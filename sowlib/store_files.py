"""Store-level file and path handling: safe topic file names, the store path,
operating-system errors on store paths, and bounded topic-name regexes.

Imports ``errors`` and ``config`` only; ``store`` composes it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import regex
import xxhash

from sowlib.config.model import check_file_name
from sowlib.errors import ConfigError, SowError, StorePathError

__all__ = [
    "MAX_TOPIC_REGEX",
    "SUFFIX",
    "TOPIC_REGEX_SECONDS",
    "TopicPattern",
    "os_errors",
    "path_error",
    "store_path",
    "topic_file_name",
]

SUFFIX = ".sow"
#: Longest regular expression accepted for topic names (``SowStore.sow``, ``Pattern``).
MAX_TOPIC_REGEX = 1000
#: Seconds one call may spend matching topic names against a regular expression, in all.
TOPIC_REGEX_SECONDS = 0.25
_SAFE = re.compile(r"[A-Za-z0-9_\-]")
_T = TypeVar("_T")


def _escape(char: str) -> str:
    return "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))


def topic_file_name(name: str, message_type: str) -> str:
    """A safe file name for any topic name (``/ADMIN/x``, ``../x``, unicode).

    Characters outside ``[A-Za-z0-9_-]`` are written as ``%XX`` per UTF-8 byte
    (a lone surrogate by its UTF-8-style bytes), so every name maps to a name
    inside the directory; names longer than 180 encoded characters are cut and
    suffixed with a hash. O(len(name)).

    Example:
        >>> topic_file_name("../x", "json")
        '%2E%2E%2Fx.json.sow'
    """

    def enc(text: str) -> str:
        return "".join(
            c
            if _SAFE.match(c)
            else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
            for c in text
        )

    stem = enc(name)
    if len(stem) > 180:
        stem = stem[:160] + "~" + xxhash.xxh64_hexdigest(name.encode("utf-8", "surrogatepass"))
    return f"{stem}.{enc(message_type)[:40]}{SUFFIX}"


def store_path(path: object) -> str:
    """The absolute store directory for ``path`` (str or ``os.PathLike``).

    Raises:
        ConfigError: not a path, a NUL, an unencodable character, or over the
            length limits of :func:`sowlib.config.check_file_name`.
    """
    try:
        text = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise ConfigError("path", f"{path!r} is not a path") from None
    if not isinstance(text, str):
        raise ConfigError("path", f"{text!r}: give the store path as text")
    return os.path.abspath(check_file_name(text, "path"))


def path_error(exc: OSError, path: str, operation: str) -> StorePathError:
    """``exc`` as a :class:`StorePathError` naming ``path`` and what was being done."""
    return StorePathError(path, operation, exc.strerror or str(exc), exc.errno)


@contextmanager
def os_errors(path: str, operation: str) -> Iterator[None]:
    """Raise the operating system's refusals on a store path as ``StorePathError``.

    Errors that already are ``SowError`` pass through unchanged.
    """
    try:
        yield
    except SowError:
        raise
    except OSError as exc:
        raise path_error(exc, str(exc.filename or path), operation) from exc


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
