"""The ``progress=`` convention of long operations, and a tqdm bar where one helps.

A long operation takes ``progress``: None or False (silent), True (a ``tqdm.auto`` bar
when the run is interactive: a widget in a notebook with ipywidgets, text in a
terminal or a notebook without), a tqdm bar of the caller's (advanced, never closed),
or a callable ``progress(done, total)`` (``total`` None when unknown). Counts are
shown scaled (``24.4k records``, bytes as ``23.2MB``). Imports only ``errors``; tqdm
is a dependency, imported when a bar is drawn.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

from sowlib.errors import ConfigError

__all__ = [
    "Bar",
    "ProgressArg",
    "ProgressCallback",
    "Reporter",
    "callback_for",
    "interactive",
    "reporter",
    "track",
]

#: ``progress(done, total)``: ``done`` never decreases; ``total`` is None when unknown.
ProgressCallback = Callable[[int, int | None], object]


@runtime_checkable
class Bar(Protocol):
    """What sowlib uses of a progress bar the caller hands in (a ``tqdm`` instance)."""

    total: Any

    def update(self, n: int = 1) -> object: ...

    def refresh(self) -> object: ...


#: What a ``progress=`` argument accepts.
ProgressArg = ProgressCallback | Bar | bool | None

T = TypeVar("T")

#: Seconds between two calls of the callback while an operation runs (the last
#: call, with the final count, is always made).
INTERVAL = 0.1


def _in_kernel() -> bool:
    """Whether this process is a notebook kernel (not merely a process that imported one)."""
    ipython = sys.modules.get("IPython") if "ipykernel" in sys.modules else None
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    try:
        return shell is not None and "IPKernelApp" in shell.config
    except (AttributeError, TypeError):
        return False


def interactive() -> bool:
    """Whether a person is watching: a notebook kernel, or a terminal on stderr, and not CI."""
    if os.environ.get("CI"):
        return False
    if _in_kernel():
        return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def _bar(total: int | None, desc: str, unit: str) -> Any:
    """A ``tqdm.auto`` bar (None when tqdm cannot be imported); counts scaled, bytes in
    powers of 1024."""
    try:
        import warnings

        with warnings.catch_warnings():  # tqdm.auto's note that ipywidgets is missing
            warnings.simplefilter("ignore")
            from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(
        total=total,
        desc=desc or None,
        unit=unit,
        unit_scale=True,
        unit_divisor=1024 if unit == "B" else 1000,
        leave=False,
        dynamic_ncols=True,
    )


class Reporter:
    """Reports one operation's progress to a callback and/or a bar; a context manager.

    ``update`` takes the absolute count, ``advance`` a step. Counts only grow and
    never pass a known total; the callback is called at most every ``INTERVAL``
    seconds, plus once at the start and once with the final count at :meth:`close`.
    A bar from ``make_bar(total)`` is made at the first count above zero (an
    operation that turns out to have nothing to do draws none) and closed at the end;
    a bar given as ``bar`` is the caller's and is left open.
    """

    def __init__(
        self,
        callback: ProgressCallback | None,
        bar: Any,
        total: int | None,
        clock: Callable[[], float] = time.monotonic,
        *,
        make_bar: Callable[[int | None], Any] | None = None,
    ) -> None:
        self._callback = callback
        self._bar = bar
        self._make_bar = make_bar
        self._owns_bar = False
        self._clock = clock
        self.total = total
        self.done = 0
        self._reported = -1
        self._last = clock()
        self._closed = False
        self._emit()

    def _emit(self) -> None:
        if self._callback is not None and self.done != self._reported:
            self._reported = self.done
            self._callback(self.done, self.total)
        self._last = self._clock()

    def set_total(self, total: int | None) -> None:
        """Change the total (e.g. once a scan knows it); never below ``done``."""
        self.total = None if total is None else max(total, self.done)
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def update(self, done: int) -> None:
        """Set the absolute count (a smaller count than before is ignored)."""
        if self.total is not None:
            done = min(done, self.total)
        if done <= self.done:
            return
        if self._make_bar is not None:
            self._bar, self._make_bar, self._owns_bar = self._make_bar(self.total), None, True
        if self._bar is not None:
            self._bar.update(done - self.done)
        self.done = done
        if self._clock() - self._last >= INTERVAL:
            self._emit()

    def __call__(self, done: int, total: int | None = None) -> None:
        """A ``progress(done, total)`` callable itself: hand a reporter to an operation.

        A new ``total`` replaces the old one; ``done`` is the absolute count.
        """
        if total is not None and total != self.total:
            self.set_total(total)
        self.update(done)

    def advance(self, step: int = 1) -> None:
        """Add ``step`` to the count."""
        self.update(self.done + step)

    def close(self) -> None:
        """Report the final count and remove the bar; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._emit()
        if self._bar is not None:
            if self._owns_bar:
                self._bar.close()
            else:
                self._bar.refresh()

    def __enter__(self) -> Reporter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def reporter(
    progress: ProgressArg, *, total: int | None = None, desc: str = "", unit: str = "records"
) -> Reporter:
    """The reporter for a ``progress=`` argument.

    Args:
        progress: None/False (silent), True (a ``tqdm.auto`` bar when
            :func:`interactive`), a tqdm bar to advance, or a callable ``(done, total)``.
        total: the expected count, if known.
        desc: the bar's label.
        unit: what is counted.
    Raises:
        ConfigError: ``progress`` is none of those, or ``total`` is negative.

    Example:
        >>> seen = []
        >>> with reporter(lambda d, t: seen.append((d, t)), total=2) as r:
        ...     r.advance(); r.advance()
        >>> seen[0], seen[-1]
        ((0, 2), (2, 2))
    """
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise ConfigError("progress", f"total {total!r} is not a count")
    if progress is None or progress is False:
        return Reporter(None, None, total)
    if progress is True:
        if not interactive():
            return Reporter(None, None, total)
        return Reporter(None, None, total, make_bar=lambda now: _bar(now, desc, unit))
    if isinstance(progress, Bar):
        if total is not None and progress.total is None:
            progress.total = total
        return Reporter(None, progress, total)
    if callable(progress):
        return Reporter(progress, None, total)
    raise ConfigError(
        "progress",
        f"{progress!r} is not None, a bool, a tqdm bar or a callable progress(done, total)",
    )


@contextmanager
def callback_for(
    progress: ProgressArg, *, desc: str = "", unit: str = "records"
) -> Iterator[ProgressCallback | None]:
    """The ``progress(done, total)`` callable to hand an operation that reports its
    own counts: None when silent, the caller's callable itself (its calls unchanged),
    else a :class:`Reporter` drawing the bar, closed when the block ends.

    Raises:
        ConfigError: a bad ``progress`` (see :func:`reporter`).
    """
    if progress is None or progress is False:
        yield None
    elif callable(progress) and not isinstance(progress, Bar | Reporter):
        yield progress
    else:
        with reporter(progress, desc=desc, unit=unit) as rep:
            yield rep


def track(
    items: Iterable[T],
    progress: ProgressArg,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "records",
) -> Iterator[T]:
    """Yield ``items``, reporting one step per item; the total is ``len(items)`` when known.

    Raises:
        ConfigError: a bad ``progress`` (see :func:`reporter`).
    """
    if total is None and isinstance(items, Sized):
        total = len(items)
    # made now, not at the first item: a bad ``progress`` fails at the call
    return _tracked(items, reporter(progress, total=total, desc=desc, unit=unit))


def _tracked(items: Iterable[T], rep: Reporter) -> Iterator[T]:
    with rep:
        for item in items:
            yield item
            rep.advance()
