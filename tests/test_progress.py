"""The ``progress=`` convention (issue 17): callbacks see monotonic done/total; bars only
when someone watches."""

from __future__ import annotations

import io
from typing import Any

import pytest

from sowlib import progress as progress_mod
from sowlib.errors import ConfigError
from sowlib.progress import Reporter, interactive, reporter, track


def _calls() -> tuple[list[tuple[int, int | None]], Any]:
    seen: list[tuple[int, int | None]] = []
    return seen, lambda done, total: seen.append((done, total))


def _monotonic(seen: list[tuple[int, int | None]]) -> None:
    dones = [d for d, _ in seen]
    assert dones == sorted(dones)
    assert len(set(dones)) == len(dones)  # never the same count twice
    for done, total in seen:
        assert total is None or 0 <= done <= total


def test_track_reports_every_item_with_the_length_as_total(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    seen, cb = _calls()
    assert list(track(range(5), cb)) == [0, 1, 2, 3, 4]
    assert seen == [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def test_unknown_total_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    seen, cb = _calls()
    assert sum(track((i for i in range(3)), cb)) == 3
    assert seen == [(0, None), (1, None), (2, None), (3, None)]


def test_calls_are_throttled_but_the_final_count_is_reported() -> None:
    now = [0.0]
    seen, cb = _calls()
    with Reporter(cb, None, 1000, clock=lambda: now[0]) as rep:
        for i in range(1000):
            now[0] = i * 0.001  # a call every 100 items at most
            rep.advance()
    _monotonic(seen)
    assert seen[0] == (0, 1000)
    assert seen[-1] == (1000, 1000)
    assert len(seen) < 20


def test_counts_never_go_back_nor_past_the_total(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    seen, cb = _calls()
    with reporter(cb, total=10) as rep:
        rep.update(4)
        rep.update(2)
        rep.update(50)
        rep.set_total(3)  # below done: the total stays at done
    _monotonic(seen)
    assert seen[-1] == (10, 10)
    assert rep.total == 10


def test_a_total_found_later_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    seen, cb = _calls()
    with reporter(cb) as rep:
        rep.advance()
        rep.set_total(4)
        rep.update(4)
    assert seen == [(0, None), (1, None), (4, 4)]


@pytest.mark.parametrize("bad", ["yes", 3, object()])
def test_a_bad_progress_argument_is_a_config_error(bad: Any) -> None:
    with pytest.raises(ConfigError):
        reporter(bad)
    with pytest.raises(ConfigError):
        track([1], bad)  # at the call, not at the first item


@pytest.mark.parametrize("total", [-1, 1.5, True])
def test_a_bad_total_is_a_config_error(total: Any) -> None:
    with pytest.raises(ConfigError):
        reporter(None, total=total)


def test_no_bar_in_ci_or_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    assert interactive() is False
    monkeypatch.delenv("CI")
    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.delitem(__import__("sys").modules, "ipykernel", raising=False)
    assert interactive() is False
    with reporter(True, total=3) as rep:
        rep.advance(3)  # silent: no bar, no error


def test_a_bar_when_interactive_and_tqdm_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tqdm")
    monkeypatch.setattr(progress_mod, "interactive", lambda: True)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.delitem(__import__("sys").modules, "ipykernel", raising=False)
    with reporter(True, total=3, desc="compact") as rep:
        rep.advance(3)
    assert "compact" in err.getvalue()


def test_a_reporter_is_itself_a_progress_callable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    seen, cb = _calls()
    with reporter(cb) as rep:
        inner: Any = rep  # what an operation taking progress=(done, total) receives
        inner(1, 10)
        inner(5, 10)
        inner(3, 10)
    assert seen == [(0, None), (1, 10), (5, 10)]
