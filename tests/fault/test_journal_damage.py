"""Every single-bit flip and every truncation of every file of a closed journal.

The journal has eight segment files (publishes, overwrites, deletes in the middle and
last, an expiration, a correlation id, publisher keys, pub/sub entries), its state file
and its id file. Each damaged copy goes through two openers:

- a :class:`Journal` and a full replay: a ``SowError``, or exactly the entries of the
  undamaged journal; then one more entry, whose sequence number must be new;
- ``verify`` (then ``--repair``, a reopen and a replay): ``verify`` must call the copy
  damaged whenever the first opener raised; every entry the repaired journal lacks must
  lie in a sequence-number range the report names as lost; the next entry's sequence
  number must be new.

So: 0 silently missing entries, 0 reused sequence numbers. The CI run takes a seeded
sample; ``SOWLIB_FAULT_FULL=1`` flips every bit and cuts every length.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import SowError
from sowlib.journal import Entry, Journal
from sowlib.journal.repair import verify_journal

from .conftest import FULL, NO_SYNC, SEED, Tally, clock, restore, store_files

pytestmark = pytest.mark.fault

CI_FLIPS = 300
CI_CUTS = 100
TOPICS = ["orders", "notes", "chat"]
Damage = tuple[str, str, int, int]  # kind ("flip"/"cut"), file, byte (or length), bit


def build_journal(path: Path) -> None:
    """A closed journal of eight segments written through a watched store."""
    store = SowStore(clock=clock)
    journal = Journal(path, TOPICS, file_size=290, clock=clock, fs=NO_SYNC)
    orders = store.create_topic("orders", keys=["/id"], expiration="enabled")
    notes = store.create_topic("notes")
    journal.watch(store)
    for i in range(1, 9):
        orders.publish({"id": i, "px": i * 10})
    orders.publish({"id": 2, "px": 21}, correlation_id=b"corr-2")
    orders.sow_delete_by_keys(orders.key_for({"id": 3}))
    orders.publish({"id": 9, "px": 90}, expiration=3600)
    notes.publish('{"n": 1}', sow_key="userKey1")
    notes.publish('{"n": 2}', sow_key="userKey2")
    notes.sow_delete_by_keys("userKey1")
    for i in range(6):
        journal.record("publish", "chat", "json", b'{"t": "hello %d"}' % i)
    orders.publish_many([{"id": i, "px": -i} for i in range(10, 16)])
    orders.sow_delete_by_keys(orders.key_for({"id": 5}))  # a delete is the last entry
    journal.close()
    store.close()


def entries_of(journal: Journal) -> list[Entry]:
    return list(journal.replay())


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], list[Entry]]:
    path = tmp_path_factory.mktemp("pristine") / "journal"
    build_journal(path)
    with Journal(path, TOPICS, fs=NO_SYNC) as journal:
        model = entries_of(journal)
    return store_files(path), model


def population(files: dict[str, bytes], rng: random.Random) -> list[Damage]:
    flips = [("flip", n, i, b) for n, d in files.items() for i in range(len(d)) for b in range(8)]
    cuts = [("cut", n, size, 0) for n, d in files.items() for size in range(len(d))]
    if FULL:
        return flips + cuts
    return rng.sample(flips, CI_FLIPS) + rng.sample(cuts, CI_CUTS)


def damage(path: Path, files: dict[str, bytes], case: Damage) -> None:
    kind, name, at, bit = case
    data = bytearray(files[name])
    if kind == "flip":
        data[at] ^= 1 << bit
    else:
        del data[at:]
    restore(path, {**files, name: bytes(data)})


def _next_seq_is_new(path: Path, top: int) -> bool:
    with Journal(path, TOPICS, fs=NO_SYNC) as journal:
        return journal.record("publish", "chat", "json", b"{}").seq > top


def _lost(seq: int, ranges: list[tuple[int, int]]) -> bool:
    return any(low <= seq and (high == 0 or seq <= high) for low, high in ranges)


def test_every_flip_and_cut_of_a_journal_is_detected_or_repaired(
    tmp_path: Path, pristine: tuple[dict[str, bytes], list[Entry]]
) -> None:
    files, model = pristine
    assert len([n for n in files if n.startswith("journal-")]) == 8
    top = model[-1].seq
    by_seq = {e.seq: e for e in model}
    rng = random.Random(SEED)
    cases = population(files, rng)
    opener, verifier = Tally("journal damage: open"), Tally("journal damage: verify")
    path = tmp_path / "journal"
    for case in cases:
        where = f"{case}"
        damage(path, files, case)
        raised = False
        try:
            with Journal(path, TOPICS, fs=NO_SYNC) as journal:
                got = entries_of(journal)
        except SowError:
            raised = True
            opener.add(f"{case[0]}: detected")
        except Exception as exc:
            opener.add("escaped", f"{where}: {exc!r}")
            continue
        if not raised:
            if got == model:
                opener.add(f"{case[0]}: identical")
                if not _next_seq_is_new(path, top):
                    opener.add("seq reused", where)
            else:
                opener.add("silently wrong", f"{where}: {len(got)} of {len(model)} entries")
        damage(path, files, case)
        try:
            report = verify_journal(str(path))
            if report.ok:
                verifier.add(f"{case[0]}: ok")
                if raised:
                    verifier.add("verify missed damage", where)
                continue
            verifier.add(f"{case[0]}: detected and repaired")
            lost_ranges = verify_journal(str(path), repair=True).lost_seqs
            assert verify_journal(str(path)).ok
            with Journal(path, TOPICS, fs=NO_SYNC) as journal:
                got = entries_of(journal)
        except SowError as exc:
            verifier.add("repair failed", f"{where}: {exc!r}")
            continue
        except Exception as exc:
            verifier.add("escaped", f"{where}: {exc!r}")
            continue
        if any(by_seq.get(e.seq) != e for e in got):
            verifier.add("wrong entry after repair", where)
        missing = set(by_seq) - {e.seq for e in got}
        if any(not _lost(seq, lost_ranges) for seq in missing):
            verifier.add("silently missing after repair", f"{where}: {sorted(missing)}")
        if not _next_seq_is_new(path, top):
            verifier.add("seq reused after repair", where)
    opener.report(cases=len(cases))
    verifier.report(cases=len(cases))
    assert not opener.failures, opener.failures[:10]
    assert not verifier.failures, verifier.failures[:10]
