"""Programs in their own processes over a writer's store: the pieces the cross-process
compat tests share (the configuration with a queue, the subscriber process ``peer.py``,
the writer's client and the processes a test starts; the ``peers`` fixture that kills
them is in ``conftest.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from tests.compat.conftest import CONFIG

ROOT = Path(__file__).resolve().parents[2]
PEER = Path(__file__).with_name("peer.py")
URI = "tcp://127.0.0.1:9107/amps/json"
WAIT = 60.0

QUEUE_CONFIG = CONFIG.replace(
    "  </SOW>",
    "    <Queue><Name>work</Name><MessageType>json</MessageType>"
    "<UnderlyingTopic>work-in</UnderlyingTopic></Queue>\n  </SOW>",
).replace(
    "  </TransactionLog>",
    "    <Topic><Name>work.*</Name><MessageType>json</MessageType></Topic>\n"
    "    <JournalSize>2KB</JournalSize>\n  </TransactionLog>",
)


class Peer:
    """A subscriber process; its printed lines are read as they come."""

    def __init__(self, base: Path, **spec: Any) -> None:
        spec = {"config": str(base / "amps.xml"), "base": str(base), "uri": URI, **spec}
        self.proc = subprocess.Popen(
            [sys.executable, str(PEER), json.dumps(spec)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ready(self) -> None:
        first = self.line()
        assert first == "ready", first + self.rest()

    def messages(self) -> list[dict[str, Any]]:
        """Every message line up to ``done`` (the process then ends)."""
        out = []
        while (line := self.line()) not in ("done", ""):
            assert line != "timeout", "the peer waited in vain"
            out.append(json.loads(line))
        assert self.proc.wait(WAIT) == 0, self.rest()
        return out

    def rest(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        out, err = self.proc.communicate(timeout=WAIT)
        return out + err

    def kill(self) -> None:
        """End the process (if it runs) and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=WAIT)


def writer_client(base: Path, name: str) -> Iterator[AMPS.Client]:
    """The writer's store (QUEUE_CONFIG in ``base``) attached to URI, and a connected
    client named ``name``; closed, and the facade reset, when the generator ends."""
    (base / "amps.xml").write_text(QUEUE_CONFIG)
    store = SowStore.from_config(base / "amps.xml", base_dir=base)
    AMPS.reset()
    AMPS.attach(store, URI)
    client = AMPS.Client(name)
    client.connect(URI)
    client.logon()
    yield client
    client.close()
    AMPS.reset()
    store.close()


def start(peers: list[Peer], base: Path, **spec: Any) -> Peer:
    peer = Peer(base, **spec)
    peers.append(peer)
    peer.ready()
    return peer
