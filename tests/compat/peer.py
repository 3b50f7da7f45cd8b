"""A subscriber program in its own process, in the AMPS idiom, over a read-only store.

Usage: ``python peer.py JSON`` where JSON holds ``config`` (the configuration file),
``base`` (the store directory), ``uri``, ``command`` (``subscribe``,
``bookmark_subscribe`` or ``queue``), ``topic`` and optionally ``filter``,
``bookmark`` and ``count``. The program opens the writer's store read-only, attaches
it, prints ``ready`` once subscribed, then one line per message
(``{"command", "topic", "data", "bookmark"}``) until ``count`` arrived, then ``done``.
An error is printed as ``error <type>: <text>``. Run by the tests in
``tests/compat/test_process_programs.py``.
"""

from __future__ import annotations

import json
import sys

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore


def main() -> None:
    spec = json.loads(sys.argv[1])
    store = SowStore.from_config(spec["config"], base_dir=spec["base"], readonly=True)
    AMPS.attach(store, spec["uri"])
    client = AMPS.Client("peer")
    count = int(spec.get("count", 1))
    try:
        client.connect(spec["uri"])
        client.logon()
        if spec["command"] == "bookmark_subscribe":
            stream = client.bookmark_subscribe(
                spec["topic"], spec.get("bookmark", "0"), spec.get("filter")
            )
        else:
            stream = client.subscribe(spec["topic"], spec.get("filter"))
        assert not isinstance(stream, str)  # no handler given: a message stream
        print("ready", flush=True)
        for seen, message in enumerate(stream.timeout(30_000), 1):
            if message is None:
                print("timeout", flush=True)
                break
            line = {
                "command": message.get_command(),
                "topic": message.get_topic(),
                "data": message.get_data(),
                "bookmark": message.get_bookmark(),
            }
            print(json.dumps(line), flush=True)
            if seen >= count:
                break
        print("done", flush=True)
    except AMPS.AMPSException as exc:
        print(f"error {type(exc).__name__}: {exc}", flush=True)
    finally:
        client.close()
        store.close()


if __name__ == "__main__":
    main()
