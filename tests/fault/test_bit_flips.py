"""Every single-bit flip of a small closed store, in every file, through four openers.

A writer ``SowStore``, a read-only one, ``verify`` (then ``verify --repair``) and
``compact()`` each get a fresh copy with one bit flipped. Each must either report a
``SowError`` or give exactly the records of the undamaged store (data, seq, timestamp and
expiration): 0 silently wrong results, 0 resurrected deletes, 0 exceptions outside the
``SowError`` tree. The CI run takes a seeded sample; ``SOWLIB_FAULT_FULL=1`` flips every bit of
the written bytes of every file plus a sample of each log's zero tail.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import SowError
from sowlib.storage import verify

from .conftest import (
    FULL,
    NO_SYNC,
    SEED,
    Snapshot,
    Tally,
    build_small_store,
    clock,
    last_seqs,
    restore,
    snapshot,
    store_files,
)

pytestmark = pytest.mark.fault

CI_FLIPS = 400
"""Flips in the CI sample (each goes through the four openers)."""
TAIL_SAMPLE = 48
"""Bytes of each log's zero tail in the population (the tail is mostly zeros)."""

Flip = tuple[str, int, int]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], Snapshot]:
    path = tmp_path_factory.mktemp("pristine") / "store"
    build_small_store(path)
    files = store_files(path)
    with SowStore(path, readonly=True, clock=clock, fs=NO_SYNC) as store:
        model = snapshot(store)
    return files, model


def population(files: dict[str, bytes], rng: random.Random) -> list[Flip]:
    """Every bit of every file's written bytes, and of a sample of each zero tail."""
    flips: list[Flip] = []
    for name, data in files.items():
        used = min(len(data), len(data.rstrip(b"\0")) + 64)
        tail = range(used, len(data))
        extra = rng.sample(tail, min(TAIL_SAMPLE, len(tail)))
        flips.extend((name, at, bit) for at in [*range(used), *extra] for bit in range(8))
    return flips


def _flipped(path: Path, files: dict[str, bytes], flip: Flip) -> None:
    name, at, bit = flip
    damaged = dict(files)
    data = bytearray(files[name])
    data[at] ^= 1 << bit
    damaged[name] = bytes(data)
    restore(path, damaged)


def _judge(got: Snapshot, model: Snapshot) -> str:
    if got == model:
        return "same"
    if set(got) - set(model):
        return "resurrected"
    return "wrong"


def _writer(path: Path, model: Snapshot, seqs: dict[str, int]) -> str:
    with SowStore(path, clock=clock, fs=NO_SYNC) as store:
        got = snapshot(store)
        if got == model:
            top = max(seqs.values())
            seq = store.topic("orders").publish({"id": 99}).seq
            if seq <= seqs.get("orders.json.sow", top):
                return "reused seq"
            store.topic("orders").sow_delete_by_keys(store.topic("orders").key_for({"id": 99}))
    if got == model:
        with SowStore(
            path, clock=clock, fs=NO_SYNC
        ) as store:  # what the writer left opens the same
            got = snapshot(store)
    return _judge(got, model)


def _reader(path: Path, model: Snapshot, seqs: dict[str, int]) -> str:
    with SowStore(path, readonly=True, clock=clock, fs=NO_SYNC) as store:
        return _judge(snapshot(store), model)


def _compact(path: Path, model: Snapshot, seqs: dict[str, int]) -> str:
    with SowStore(path, clock=clock, fs=NO_SYNC) as store:
        for topic in store.topics():
            topic.compact()
        got = snapshot(store)
    if got == model:
        with SowStore(path, clock=clock, fs=NO_SYNC) as store:
            got = snapshot(store)
    return _judge(got, model)


def _verify(path: Path, model: Snapshot, seqs: dict[str, int]) -> str:
    logs = sorted(path.glob("*.sow"))
    reports = [verify(p) for p in logs]
    predicted_failure = any(r.open_error_offset is not None for r in reports)
    damaged = [r for r in reports if not r.ok]
    try:
        store = SowStore(path, clock=clock, fs=NO_SYNC)
    except SowError:
        opened = False
    else:
        store.close()
        opened = True
    if opened == predicted_failure:
        return "verify disagrees with open"
    if damaged:
        for r in damaged:
            verify(r.path, repair=True)
        with SowStore(path, clock=clock, fs=NO_SYNC) as store:  # a repaired store opens
            snapshot(store)
        return "detected"
    with SowStore(path, clock=clock, fs=NO_SYNC) as store:
        return _judge(snapshot(store), model)


MODES: dict[str, Callable[[Path, Snapshot, dict[str, int]], str]] = {
    "writer": _writer,
    "reader": _reader,
    "verify": _verify,
    "compact": _compact,
}


def test_issue16_every_single_bit_flip_is_detected_or_harmless(
    tmp_path: Path, pristine: tuple[dict[str, bytes], Snapshot]
) -> None:
    files, model = pristine
    rng = random.Random(SEED)
    flips = population(files, rng)
    if not FULL:
        flips = rng.sample(flips, min(CI_FLIPS, len(flips)))
    path = tmp_path / "store"
    restore(path, files)
    seqs = last_seqs(path)
    tallies = {mode: Tally(f"bit flips ({mode})") for mode in MODES}
    for flip in flips:
        for mode, run in MODES.items():
            _flipped(path, files, flip)
            try:
                outcome = run(path, model, seqs)
            except SowError:
                outcome = "detected"
            except Exception as exc:  # the property under test: nothing else escapes
                outcome = f"escaped {type(exc).__name__}"
            bad = outcome not in ("same", "detected")
            tallies[mode].add(outcome, f"{flip}: {outcome}" if bad else "")
    failures = []
    for tally in tallies.values():
        tally.report(flips=len(flips), files=len(files))
        failures.extend(tally.failures)
    assert not failures, failures[:20]
