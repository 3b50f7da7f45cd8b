"""The steps of the scale benchmark, each run in a fresh child process by ``scale_report.py``.

Usage: ``python scale_steps.py '<json spec>'``. A step prints one JSON object per line:
``{"start": name}`` before each timed part (the parent applies its timeout to that
part) and ``{"value": name, "v": number}`` for each measurement, so a child killed
for a timeout or for its memory still reports what it measured before. Times are
seconds, memory is bytes of ``RssAnon`` grown since the step's baseline (taken after
the imports). Each contender is measured with its usual public API only.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
for _p in (str(_HERE), str(_ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import scale_data as data  # noqa: E402  (the path setup above)

from sowlib import SowStore  # noqa: E402

__all__ = ["main"]

TOPIC = "orders"
#: (name, sowlib filter, sqlite3 WHERE) of the three queries, in the order they run.
QUERIES: tuple[tuple[str, str, tuple[str, tuple[Any, ...]]], ...] = (
    ("eq", data.EQ_FILTER, data.EQ_SQL),
    ("range", data.RANGE_FILTER, data.RANGE_SQL),
    ("scan", data.SCAN_FILTER, data.SCAN_SQL),
)


def start(name: str) -> None:
    """Announce the timed part ``name`` (the parent times it out)."""
    print(json.dumps({"start": name}), flush=True)


def emit(name: str, value: float | str) -> None:
    """Report one measurement."""
    print(json.dumps({"value": name, "v": value}), flush=True)


def timed(name: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` as the timed part ``name``; report its seconds; return its result."""
    start(name)
    t0 = time.perf_counter()
    result = fn()
    emit(name, time.perf_counter() - t0)
    return result


# ------------------------------------------------------------------ the contenders


class Sow:
    """sowlib: one topic with the key, a declared hash index and a declared index."""

    name = "sowlib"

    def __init__(self, path: str) -> None:
        self.path = path
        self.store: Any = None
        self.topic: Any = None

    def create(self) -> None:
        self.store = SowStore(self.path)
        self.topic = self.store.create_topic(
            TOPIC, keys=["/orderId"], hash_indexes=[["/symbol"]], indexes=["/price"]
        )

    def insert(self, chunk: list[bytes]) -> None:
        self.topic.publish_many(chunk)

    def open(self, readonly: bool) -> None:
        self.store = SowStore(self.path, readonly=readonly)
        self.topic = self.store.topic(TOPIC)

    def query(self, index: int) -> int:
        return len([rec.data for rec in self.topic.sow(QUERIES[index][1])])

    def close(self) -> None:
        self.store.close()

    def compact(self) -> None:
        self.topic.compact()

    def lookup_fn(self) -> tuple[str, Callable[[int], Any]]:
        """The by-key read a user would write, and its name."""
        topic = self.topic
        if hasattr(topic, "lookup"):
            return "topic.lookup(k)", lambda k: topic.lookup(k).data
        get, key_for = topic.get, topic.key_for
        return (
            'topic.get(topic.key_for({"orderId": k}))',
            lambda k: get(key_for({"orderId": k})).data,
        )


class Sql:
    """sqlite3: ``t(orderId INTEGER PRIMARY KEY, doc TEXT)`` with two expression indexes."""

    name = "sqlite3"

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn: Any = None

    def create(self) -> None:
        self.conn = data.sql_connect(self.path)
        data.sql_build(self.conn)

    def insert(self, chunk: list[bytes]) -> None:
        data.sql_insert(self.conn, chunk)

    def open(self, readonly: bool) -> None:
        # connect() reads nothing; the first statement reads the schema (and, after a
        # crash, recovers the WAL), so one key probe is part of opening.
        self.conn = data.sql_connect(self.path, readonly=readonly)
        self.conn.execute(data.SQL_LOOKUP, (0,)).fetchall()

    def query(self, index: int) -> int:
        return len(data.sql_query(self.conn, QUERIES[index][2]))

    def close(self) -> None:
        self.conn.close()

    def compact(self) -> None:
        self.conn.execute("VACUUM")

    def lookup_fn(self) -> tuple[str, Callable[[int], Any]]:
        execute = self.conn.execute
        sql = data.SQL_LOOKUP
        return sql, lambda k: execute(sql, (k,)).fetchone()[0]


Engine = Sow | Sql


def engine(spec: dict[str, Any]) -> Engine:
    return Sow(spec["path"]) if spec["engine"] == "sowlib" else Sql(spec["path"])


# ------------------------------------------------------------------ steps


def build(eng: Engine, n: int) -> int:
    """Create and fill the store; report the seconds spent in the insert calls."""
    base = data.rss_anon()
    emit("rss_base", base)
    start("build_s")
    t0 = time.perf_counter()
    eng.create()
    spent = time.perf_counter() - t0
    for chunk in data.chunks(n):  # generating the data is not timed
        t0 = time.perf_counter()
        eng.insert(chunk)
        spent += time.perf_counter() - t0
    emit("build_s", spent)
    emit("rss_build", data.rss_anon() - base)
    return base


def step_writer(spec: dict[str, Any]) -> None:
    """Build, then the three queries in the writer, then a clean close."""
    eng = engine(spec)
    base = build(eng, spec["n"])
    for i, (name, _, _) in enumerate(QUERIES):
        emit(f"{name}_rows", timed(f"{name}_s", lambda i=i: eng.query(i)))
    emit("rss", data.rss_anon() - base)
    timed("close_s", eng.close)


def step_crash(spec: dict[str, Any]) -> None:
    """Build, then die by SIGKILL: no close, no checkpoint, no commit of anything pending."""
    eng = engine(spec)
    build(eng, spec["n"])
    emit("killed", 1)
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def step_crash_tail(spec: dict[str, Any]) -> None:
    """Open a built store, upsert its first chunk again, die by SIGKILL (no close).

    For sqlite3, whose recovery replays only the WAL written since its last automatic
    checkpoint (every 1,000 pages): the same work a kill right after building leaves.
    """
    eng = engine(spec)
    eng.open(readonly=False)
    eng.insert(next(data.chunks(spec["n"])))
    emit("killed", 1)
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def step_reopen(spec: dict[str, Any]) -> None:
    """Open for writing (the application restarting) and close."""
    eng = engine(spec)
    timed("reopen_s", lambda: eng.open(readonly=False))
    timed("close_s", eng.close)


def step_query(spec: dict[str, Any]) -> None:
    """Open read-only, run the named queries cold, memory, then each repeated."""
    eng = engine(spec)
    gc.collect()
    base = data.rss_anon()
    emit("rss_base", base)
    timed("open_s", lambda: eng.open(readonly=True))
    wanted = [i for i, (name, _, _) in enumerate(QUERIES) if name in spec["queries"]]
    for i in wanted:
        name = QUERIES[i][0]
        emit(f"{name}_rows", timed(f"{name}_cold_s", lambda i=i: eng.query(i)))
    emit("rss", data.rss_anon() - base)
    for i in wanted:
        name = QUERIES[i][0]
        times = []
        start(f"{name}_warm_s")
        for _ in range(spec["repeats"]):
            t0 = time.perf_counter()
            eng.query(i)
            times.append(time.perf_counter() - t0)
        if times:
            emit(f"{name}_warm_s", statistics.median(times))


def step_lookup(spec: dict[str, Any]) -> None:
    """Both contenders open read-only in this process, by-key reads interleaved batch by batch."""
    sow, sql = Sow(spec["sow_path"]), Sql(spec["sql_path"])
    sow.open(readonly=True)
    sql.open(readonly=True)
    batch = spec["batch"]
    keys = data.lookup_keys(spec["n"], batch * (spec["batches"] + 1))
    work = []
    for eng in (sow, sql):
        api, fn = eng.lookup_fn()
        emit(f"{eng.name}_api", api)
        work.append((eng.name, fn))
    times: dict[str, list[float]] = {name: [] for name, _ in work}
    start("lookup")
    for b in range(spec["batches"] + 1):  # batch 0 warms up, untimed
        part = keys[b * batch : (b + 1) * batch]
        for name, fn in work:
            t0 = time.perf_counter()
            for k in part:
                fn(k)
            if b:
                times[name].append(time.perf_counter() - t0)
    for name, samples in times.items():
        emit(f"{name}_us", statistics.median(samples) / batch * 1e6)


def step_compact(spec: dict[str, Any]) -> None:
    """Open for writing, compact, close."""
    eng = engine(spec)
    base = data.rss_anon()
    eng.open(readonly=False)
    timed("compact_s", eng.compact)
    emit("rss", data.rss_anon() - base)
    timed("close_s", eng.close)


STEPS: dict[str, Callable[[dict[str, Any]], None]] = {
    "writer": step_writer,
    "crash": step_crash,
    "crash_tail": step_crash_tail,
    "reopen": step_reopen,
    "query": step_query,
    "lookup": step_lookup,
    "compact": step_compact,
}


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    if spec["step"] == "writer":
        where = os.path.dirname(sys.modules["sowlib"].__file__ or "")
        print(f"sowlib from {where}", file=sys.stderr, flush=True)
    STEPS[spec["step"]](spec)
    sys.stdout.flush()
    # Skip the interpreter's teardown of a large heap: nothing is measured after this.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
