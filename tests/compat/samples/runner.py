"""Run official AMPS client samples, unmodified, in one process over one sowlib store.

Usage: ``python runner.py SCENARIO.json`` with the repository on ``PYTHONPATH``
and the working directory an empty directory. The scenario names the sample
directory, the configuration file and a list of steps; the result (each
program's printed output, what it raised, and whether it finished) is written
as JSON to the scenario's ``result`` path, then the process ends at once
(subscriber samples loop forever on threads that nothing else can stop).

Steps:

* ``["start", NAME]``: run sample ``NAME`` on a daemon thread.
* ``["run", NAME]``: run sample ``NAME`` on this thread to its end.
* ``["blocked", NAME]``: wait until ``NAME``'s thread waits for a message.
* ``["output", NAME, TEXT, COUNT]``: wait until ``NAME`` printed ``TEXT`` COUNT times.
* ``["chooser", NAME, URI]``: import ``NAME`` and connect an ``HAClient`` through the
  ``RandomServerChooser`` it defines; publish one message through it.

Output is routed to a program by the sample file found in the printing call's
stack, so a message handler's print counts for its program whichever thread
delivers it. ``"queues": true`` loads the configuration as it is (a scenario that
needs its ``<Queue>``); otherwise a ``<Queue>`` sowlib cannot load yet is left out
and the result's ``note`` says so. ``"shim_array": true`` gives ``array.array`` the ``tostring`` and
``fromstring`` methods Python 3.9 removed (nothing else is changed).

``python runner.py --serve SCENARIO.json`` is one of two processes: it opens the
store (read-only when the scenario says ``"readonly": true``), prints ``ready``,
then runs the steps it reads from stdin one JSON line at a time, answering each
with ``ok`` or ``failed`` on a line of its own; ``["finish"]`` writes the result
and ends the process. Programs' output is filed as above, never on that channel.
"""

from __future__ import annotations

import array
import io
import json
import os
import runpy
import sys
import threading
import time
import traceback
import types
from pathlib import Path
from typing import Any

import sowlib.compat
from sowlib import SowStore
from sowlib.errors import ConfigError

WAIT = 30.0


class Router(io.TextIOBase):
    """A ``sys.stdout``/``sys.stderr`` that files each write under the sample printing it."""

    def __init__(self, programs: dict[str, str], fallback: Any) -> None:
        self.programs = programs  # file path -> sample name
        self.texts: dict[str, list[str]] = {}
        self.fallback = fallback
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            name = self.programs.get(frame.f_code.co_filename)
            if name is not None:
                with self.lock:
                    self.texts.setdefault(name, []).append(text)
                return len(text)
            frame = frame.f_back
        return int(self.fallback.write(text))

    def text(self, name: str) -> str:
        with self.lock:
            return "".join(self.texts.get(name, []))


def shim_array() -> None:
    """``array.array`` with the ``tostring``/``fromstring`` spellings of Python < 3.9."""

    class LegacyArray(array.array):  # type: ignore[type-arg]
        def tostring(self) -> bytes:
            return self.tobytes()

        def fromstring(self, data: bytes) -> None:
            self.frombytes(data)

    module = types.ModuleType("array")
    module.__dict__.update(array.__dict__)
    module.array = LegacyArray  # type: ignore[attr-defined]
    sys.modules["array"] = module


def open_store(
    config: Path, base: Path, queues: bool, readonly: bool = False
) -> tuple[SowStore, str]:
    """The store of ``config``, loaded as it is (``queues``: the scenario uses its
    ``<Queue>``; every scenario loads the whole file), and a note (empty)."""
    del queues
    return SowStore.from_config(config, base_dir=base, readonly=readonly), ""


class Harness:
    def __init__(self, samples: Path, router: Router) -> None:
        self.samples = samples
        self.router = router
        self.threads: dict[str, threading.Thread] = {}
        self.errors: dict[str, str] = {}
        self.finished: list[str] = []

    def path(self, name: str) -> str:
        path = str(self.samples / name)
        self.router.programs[path] = name
        return path

    def run(self, name: str) -> None:
        path = self.path(name)
        saved = sys.argv
        sys.argv = [path]
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                self.errors[name] = f"SystemExit({exc.code!r})"
        except BaseException:
            self.errors[name] = traceback.format_exc()
        finally:
            sys.argv = saved
        self.finished.append(name)

    def start(self, name: str) -> None:
        thread = threading.Thread(target=self.run, args=(name,), name=name, daemon=True)
        self.threads[name] = thread
        thread.start()

    def blocked(self, name: str) -> None:
        """Wait until ``name``'s thread waits on a condition (a stream with nothing queued)."""
        thread = self.threads[name]
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            frame = sys._current_frames().get(thread.ident or -1)
            if frame is not None and frame.f_code.co_name in ("wait", "wait_for"):
                stack = []
                while frame is not None:
                    stack.append(frame.f_code.co_filename)
                    frame = frame.f_back
                if any(f.endswith(os.path.join("compat", "stream.py")) for f in stack):
                    return
            if not thread.is_alive():
                raise RuntimeError(f"{name} ended before it waited for a message")
            time.sleep(0.01)
        raise TimeoutError(f"{name} never waited for a message")

    def output(self, name: str, text: str, count: int) -> None:
        deadline = time.monotonic() + WAIT
        while self.router.text(name).count(text) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} printed {text!r} fewer than {count} times")
            time.sleep(0.01)

    def chooser(self, name: str, uri: str) -> None:
        namespace = runpy.run_path(self.path(name))
        chooser = namespace["RandomServerChooser"](seed=7)
        chooser.add(uri)
        client = sowlib.compat.HAClient("chooser-sample")
        client.set_server_chooser(chooser)
        client.connect_and_logon()
        client.publish("messages-sow", '{"messageNumber": 7, "via": "RandomServerChooser"}')
        for message in client.sow("messages-sow", "/messageNumber = 7"):
            if isinstance(message, sowlib.compat.Message) and message.get_command() == "sow":
                self.router.texts.setdefault(name, []).append(f"{message.get_data()}\n")
        client.close()
        self.finished.append(name)


def main() -> None:
    serve = sys.argv[1] == "--serve"
    scenario = json.loads(Path(sys.argv[-1]).read_text())
    base = Path.cwd()
    if scenario.get("shim_array"):
        shim_array()
    channel = os.fdopen(os.dup(1), "w", buffering=1) if serve else None
    try:
        store, note = open_store(
            Path(scenario["config"]),
            base,
            bool(scenario.get("queues")),
            bool(scenario.get("readonly")),
        )
    except ConfigError:
        result = {"note": "", "failure": traceback.format_exc(), "stdout": {}, "stderr": {}}
        Path(scenario["result"]).write_text(json.dumps({**result, "errors": {}, "finished": []}))
        if channel is not None:
            channel.write("failed\n")
        return
    sowlib.compat.install()
    sowlib.compat.attach(store)  # every URI of the configuration reaches this store
    router = Router({}, sys.__stderr__ if serve else sys.__stdout__)
    err_router = Router(router.programs, sys.__stderr__)
    sys.stdout, sys.stderr = router, err_router  # type: ignore[assignment]
    harness = Harness(Path(scenario["samples"]), router)
    failure = ""
    if channel is None:
        steps: Any = scenario["steps"]
    else:
        # Steps come on a copy of stdin: a sample's exit() closes sys.stdin (site's Quitter).
        commands = os.fdopen(os.dup(0), "r")
        sys.stdin = open(os.devnull)  # noqa: SIM115 (open for the process's life)
        channel.write("ready\n")
        steps = (json.loads(line) for line in commands)
    for step in steps:
        if step == ["finish"]:
            break
        try:
            getattr(harness, step[0])(*step[1:])
        except Exception:
            failure = traceback.format_exc()
        if channel is not None:
            channel.write("failed\n" if failure else "ok\n")
        if failure:
            break
    names = set(router.texts) | set(err_router.texts) | set(harness.errors)
    result = {
        "note": note,
        "failure": failure,
        "stdout": {n: router.text(n) for n in names},
        "stderr": {n: err_router.text(n) for n in names},
        "errors": harness.errors,
        "finished": harness.finished,
    }
    Path(scenario["result"]).write_text(json.dumps(result))
    for stream in (sys.__stdout__, sys.__stderr__, channel):
        if stream is not None:
            stream.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
