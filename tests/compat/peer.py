"""A subscriber program in its own process, in the AMPS idiom, over a read-only store.

Usage: ``python peer.py JSON`` where JSON holds ``config`` (the configuration file),
``base`` (the store directory), ``uri``, ``command`` (``subscribe``,
``bookmark_subscribe``, ``queue`` or ``publish``), ``topic`` and optionally ``filter``,
``bookmark``, ``count``, ``idle_ms`` (end quietly after so long without a
message), ``max_backlog`` and ``ack`` (``queue``: whether each
message is acknowledged, default true), ``publish`` (messages this program publishes to ``topic``
once subscribed; ``command: publish`` only publishes them) and ``linger_ms`` (how
long to go on listening after ``count`` arrived: anything more is printed too). The
program opens the writer's store read-only, attaches it, prints ``ready`` once
subscribed, then one line per message (``{"command", "topic", "data", "bookmark"}``)
until ``count`` arrived, then ``done``.
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
        if spec["command"] == "publish":
            print("ready", flush=True)
            for data in spec["publish"]:
                client.publish(spec["topic"], data)
            print("done", flush=True)
            return
        if spec["command"] == "bookmark_subscribe":
            stream = client.bookmark_subscribe(
                spec["topic"], spec.get("bookmark", "0"), spec.get("filter")
            )
        elif spec["command"] == "queue":
            backlog = spec.get("max_backlog")
            options = None if backlog is None else f"max_backlog={backlog}"
            stream = client.subscribe(spec["topic"], spec.get("filter"), options=options)
        else:
            stream = client.subscribe(spec["topic"], spec.get("filter"))
        assert not isinstance(stream, str)  # no handler given: a message stream
        print("ready", flush=True)
        for data in spec.get("publish", ()):
            client.publish(spec["topic"], data)
        linger = int(spec.get("linger_ms", 0))
        seen = 0
        idle = spec.get("idle_ms")  # stop after this long without a message (no timeout)
        for message in stream.timeout(int(idle or 30_000)):
            if message is None:
                if seen < count and idle is None:
                    print("timeout", flush=True)
                break
            seen += 1  # noqa: SIM113 (a None is not a message)
            line = {
                "command": message.get_command(),
                "topic": message.get_topic(),
                "data": message.get_data(),
                "bookmark": message.get_bookmark(),
            }
            print(json.dumps(line), flush=True)
            if spec["command"] == "queue" and spec.get("ack", True):
                message.ack()
            if seen == count:
                if not linger:
                    break
                stream.timeout(linger)  # anything after ``count`` is a duplicate
        print("done", flush=True)
    except AMPS.AMPSException as exc:
        print(f"error {type(exc).__name__}: {exc}", flush=True)
    finally:
        client.close()
        store.close()


if __name__ == "__main__":
    main()
