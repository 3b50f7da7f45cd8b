"""docs/compat.md is generated from sowlib.compat.table and matches the code."""

from __future__ import annotations

from pathlib import Path

import pytest

import sowlib.compat as AMPS
from sowlib.compat.table import ENTRIES, render_table

OWNERS: dict[str, object] = {
    "module": AMPS,
    "Client": AMPS.HAClient,  # a Client with the HA additions
    "Command": AMPS.Command,
    "Message": AMPS.Message,
    "MessageStream": AMPS.MessageStream,
    "BookmarkStore": AMPS.MMapBookmarkStore,  # every bookmark store has these
    "PublishStore": AMPS.PublishStore,
}
PAGE = Path(__file__).resolve().parents[2] / "docs" / "compat.md"


def test_docs_page_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render_table(), (
        "docs/compat.md is stale: run python -m sowlib.compat.table > docs/compat.md"
    )


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.owner}.{e.name}")
def test_entry_matches_the_code(entry: object) -> None:
    owner, name, status = entry.owner, entry.name, entry.status  # type: ignore[attr-defined]
    present = hasattr(OWNERS[owner], name)
    assert present == (status != "absent")


def test_every_public_client_method_is_in_the_table() -> None:
    listed = {(e.owner, e.name) for e in ENTRIES}
    for owner in ("Client", "Command", "MessageStream", "BookmarkStore", "PublishStore"):
        public = {n for n in dir(OWNERS[owner]) if not n.startswith("_") and n[0].islower()}
        public -= {"store", "fields", "acks", "is_open", "name", "uri", "message_type"}
        public -= {"put", "finish"}  # how the client feeds a stream
        public -= {"path", "stored", "last_sequence"}  # the stores' attributes
        public -= {"default_max_depth", "getDepth", "maxDepth"}
        assert {n for n in public if (owner, n) not in listed} == set(), owner


def test_no_name_listed_twice() -> None:
    keys = [(e.owner, e.name) for e in ENTRIES]
    assert len(keys) == len(set(keys))
