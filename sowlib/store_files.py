"""Store-level file and path handling: safe topic file names, the store path and
operating-system errors on store paths (and, for its callers, the bounded topic-name
regexes of :mod:`sowlib.config.pattern`).

Imports ``errors``, ``config``, ``storage.looks`` and ``storage.native`` only; ``store``
composes it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, cast

import xxhash

from sowlib.config.model import check_file_name
from sowlib.config.pattern import MAX_TOPIC_REGEX, TOPIC_REGEX_SECONDS, TopicPattern
from sowlib.errors import ConfigError, SowError, StorePathError
from sowlib.storage.looks import DirectoryLooks
from sowlib.storage.native import optional_module

__all__ = [
    "MAX_TOPIC_REGEX",
    "Refreshing",
    "TopicFiles",
    "SUFFIX",
    "TOPIC_REGEX_SECONDS",
    "TopicPattern",
    "os_errors",
    "path_error",
    "same_times",
    "store_path",
    "topic_file_name",
]

SUFFIX = ".sow"
# A directory changed within this many seconds may change again within the same tick of
# the file system's clock (its timestamps are coarse) without a new modification time.
_SETTLE_SECONDS = 1.0
_SAFE = re.compile(r"[A-Za-z0-9_\-]")


class Refreshing(Protocol):
    """What :meth:`TopicFiles.refresh_all` refreshes (a topic)."""

    def refresh(self) -> int:
        """Apply what the writer appended since; the records applied."""
        ...


def same_times(dirs: tuple[str, ...], times: tuple[int, ...]) -> bool:
    """Whether every directory of ``dirs`` can be looked at and its modification time
    (ns) is still the one at the same position of ``times``: one ``stat`` each. The
    reference of the C form ``storage.dirtimes.same_times`` (which takes the paths
    encoded, and builds no Python object per ``stat``)."""
    try:
        for folder, then in zip(dirs, times, strict=True):
            if os.stat(folder).st_mtime_ns != then:
                return False
    except OSError:
        return False
    return True


def _load_same_times() -> Callable[[tuple[bytes, ...], tuple[int, ...]], bool] | None:
    module = optional_module("sowlib.storage.dirtimes")
    return None if module is None else cast("Callable[..., bool]", module.same_times)


#: The C form of :func:`same_times` (paths as bytes), or None: not built, or turned off.
NATIVE_SAME_TIMES = _load_same_times()


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


class TopicFiles:
    """The topic files of a store directory, walked again only when a directory of the
    store may have changed since the last walk.

    Before each walk the modification time of every directory the last walk visited is
    taken; when they are all still the same on the next call, and the last walk saw the
    same directories, nothing new can be there and nothing is listed (a read-only
    store's :meth:`~sowlib.SowStore.refresh`, many times a second, then costs a
    ``stat`` per directory). A directory changed less than a second before a walk keeps
    the next call walking.
    """

    __slots__ = ("_dirs", "_encoded", "_quiet", "looks")

    def __init__(self) -> None:
        self._dirs: tuple[str, ...] = ()
        self._encoded: tuple[bytes, ...] = ()  # the same, as the C form takes them
        self._quiet: tuple[int, ...] | None = None  # the times of a settled walk
        #: What the walks and :meth:`unchanged` tell the logs of the topic files.
        self.looks = DirectoryLooks()

    def unchanged(self) -> bool:
        """Whether no directory of the last walk changed since that walk settled: one
        ``stat`` per directory (a read-only store's refresh, many times a second).
        Always False before a settled walk or when a directory cannot be looked at."""
        quiet = self._quiet
        if quiet is None:
            return False
        native = NATIVE_SAME_TIMES
        if native is not None:
            return native(self._encoded, quiet)
        return same_times(self._dirs, quiet)

    def refresh_all(self, root: str | None, topics: tuple[Refreshing, ...]) -> tuple[int, bool]:
        """Refresh each of ``topics`` after one look at the directories
        (:meth:`unchanged`; ``root`` None: a store without one), telling the topics'
        logs what it found (:attr:`looks`). Returns the records they applied, and
        whether the directories may have changed (then walk them again: :meth:`changed`)."""
        quiet = root is not None and self.unchanged()
        looks = self.looks
        if quiet:  # no file of the store came, went or was replaced
            looks.begin()
        applied = 0
        try:
            for topic in topics:
                applied += topic.refresh()
        finally:
            looks.end()
        return applied, root is not None and not quiet

    def changed(self, root: str) -> list[str] | None:
        """Every topic file under ``root`` (each directory's in name order), or None
        when none can have come or gone since the last walk (:meth:`unchanged`).

        Raises:
            StorePathError: a directory cannot be read.
        """
        if self.unchanged():
            return None
        try:
            times: tuple[int, ...] | None = tuple(os.stat(d).st_mtime_ns for d in self._dirs)
        except OSError:
            times = None

        def refuse(exc: OSError) -> None:
            raise path_error(exc, exc.filename or root, "read the store directory")

        found: list[str] = []
        dirs: list[str] = []
        for folder, _dirs, files in os.walk(root, onerror=refuse):
            dirs.append(folder)
            found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(SUFFIX)]
        settled = (
            times is not None and max(times, default=0) < (time.time() - _SETTLE_SECONDS) * 1e9
        )
        self._quiet = times if settled and tuple(dirs) == self._dirs else None
        self._dirs = tuple(dirs)
        self._encoded = tuple(map(os.fsencode, dirs))
        self.looks.settled(self._quiet is not None)
        return found
