"""A simulated AMPS instance per test: the store an AMPS configuration describes,
attached to the URI the programs connect to, with a transaction log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import sowlib.compat
from sowlib import SowStore

if TYPE_CHECKING:
    from tests.compat.processes import Peer

URI = "tcp://127.0.0.1:9007/amps/json"

CONFIG = """\
<AMPSConfig>
  <Name>test-instance</Name>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <Expiration>enabled</Expiration>
    </Topic>
    <Topic>
      <Name>positions</Name>
      <MessageType>json</MessageType>
      <Key>/book</Key>
      <Key>/sym</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>orders-eu</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>
  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>chat</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
</AMPSConfig>
"""


class Clock:
    """A hand-driven clock for expiration."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def instance(tmp_path: Path, clock: Clock) -> Iterator[SowStore]:
    """The store and journal an AMPS server with CONFIG would have, attached to URI."""
    config = tmp_path / "amps.xml"
    config.write_text(CONFIG)
    store = SowStore.from_config(config, base_dir=tmp_path, clock=clock)
    assert store.journal is not None  # the configuration's <TransactionLog>
    sowlib.compat.reset()
    sowlib.compat.attach(store, URI)
    yield store
    sowlib.compat.reset()
    store.close()


@pytest.fixture
def uri(instance: SowStore) -> str:
    return URI


@pytest.fixture
def peers() -> Iterator[list[Peer]]:
    """The processes a test starts (``tests.compat.processes.start``), killed when it ends."""
    started: list[Peer] = []
    yield started
    for peer in started:
        peer.kill()
