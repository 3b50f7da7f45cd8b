"""The scale benchmark: one topic of N orders in sowlib and in sqlite3, as a new user sees it.

Usage: ``python tests/bench/scale_report.py --records 1000000 [--write docs/performance.md]``.

Both contenders hold the same N JSON orders (``scale_data.py``): sowlib as one topic
(``keys=["/orderId"]``, ``hash_indexes=[["/symbol"]]``, ``indexes=["/price"]``) filled
with ``publish_many``, sqlite3 as a WAL table with ``json_extract`` expression indexes
filled with ``executemany``. Every measurement runs in a fresh child process
(``scale_steps.py``) so memory and cold state are honest, sowlib and sqlite3 taking
turns. Each timed part of a child has a timeout, and a child whose anonymous memory
passes a limit is killed; either is reported (``>120 s``) instead of hanging the run.
Prints a markdown table; ``--write FILE`` replaces this size's block between
``<!-- scale:begin records=N -->`` and ``<!-- scale:end records=N -->`` in FILE.
Imports nothing from sowlib (the children do).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import queue
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
for _p in (str(_HERE), str(_ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import scale_data as data  # noqa: E402  (the path setup above)

__all__ = ["Bound", "Outcome", "main", "render", "run_child", "write_block"]

_STEPS = str(_HERE / "scale_steps.py")
#: Repeats of each query in its own child (the median is reported).
REPEATS = 5
#: Clean reopens per contender (the median is reported).
REOPEN_ROUNDS = 3
#: By-key reads: timed batches and reads per batch (one more batch warms up).
LOOKUP_BATCHES = 100
LOOKUP_BATCH = 1_000
#: Seconds between two checks of a child's memory.
_POLL = 0.2


@dataclass(frozen=True)
class Bound:
    """A measurement that did not finish: at least ``lower`` (seconds or bytes)."""

    lower: float
    why: str


Cell = float | Bound | str | None


@dataclass
class Outcome:
    """What one child reported, and how it ended."""

    values: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    peak_rss: int = 0
    wall_s: float = 0.0

    def get(self, name: str) -> Cell:
        """A value, a :class:`Bound` for the part that failed, or why it is missing."""
        if name in self.values:
            return self.values[name]  # type: ignore[no-any-return]
        return "not run" if self.failure else None


def run_child(spec: dict[str, Any], timeout_for: Callable[[str], float], max_rss: int) -> Outcome:
    """Run one step in a fresh interpreter; kill it on a timeout or past ``max_rss`` bytes."""
    out = Outcome()
    t_start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, _STEPS, json.dumps(spec)], stdout=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    current, limit = "startup", timeout_for("startup")
    deadline = time.monotonic() + limit
    while True:
        try:
            line = lines.get(timeout=_POLL)
        except queue.Empty:
            line = ""
        if line is None:
            break
        if line:
            event = json.loads(line)
            if "start" in event:
                current, limit = event["start"], timeout_for(event["start"])
                deadline = time.monotonic() + limit
            else:
                out.values[event["value"]] = event["v"]
            continue
        rss = data.rss_anon_of(proc.pid)
        out.peak_rss = max(out.peak_rss, rss)
        why = None
        if rss > max_rss:
            why = f"killed at RssAnon > {max_rss / 2**30:g} GiB"
            out.values.setdefault("rss", Bound(max_rss, why))
        elif time.monotonic() > deadline:
            why = f">{limit:.0f} s"
        if why:
            out.failure = f"{current}: {why}"
            out.values[current] = Bound(limit if why.startswith(">") else 0.0, why)
            proc.kill()
            break
    code = proc.wait()
    out.wall_s = time.perf_counter() - t_start
    if out.failure is None and code != 0 and not (spec["step"].startswith("crash") and code < 0):
        out.failure = f"{current}: error (exit {code})"
        out.values[current] = f"error (exit {code})"
    if out.failure:
        print(f"    {spec['step']} {spec.get('engine', '')}: {out.failure}", file=sys.stderr)
    return out


# ------------------------------------------------------------------ the run


@dataclass
class Settings:
    records: int
    step_timeout: float
    build_timeout: float
    max_rss: int
    repeats: int = REPEATS
    reopen_rounds: int = REOPEN_ROUNDS
    lookup_batches: int = LOOKUP_BATCHES


def timeouts(settings: Settings) -> Callable[[str], float]:
    long_parts = ("build_s", "compact_s", "close_s", "reopen_s", "startup")

    def timeout_for(part: str) -> float:
        return settings.build_timeout if part in long_parts else settings.step_timeout

    return timeout_for


def _size(path: str) -> int:
    if os.path.isdir(path):
        return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def _peak(o: Outcome) -> Cell:
    """The highest growth seen: sampled by the parent, or the child's own last reading."""
    base, last = o.values.get("rss_base"), o.values.get("rss")
    seen = [float(last)] if isinstance(last, int | float) else []
    if isinstance(base, int | float) and o.peak_rss:
        seen.append(float(o.peak_rss - base))
    return max(seen) if seen else None


def _remove(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm"):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def measure(settings: Settings, work: str) -> tuple[dict[str, Cell], list[str]]:
    """Every measurement, keyed ``"<contender>.<part>"``; and notes about the run."""
    n = settings.records
    tf = timeouts(settings)
    # sowlib's writer store is built, queried, closed, then removed: its queries may
    # leave on-demand (memo) indexes in its checkpoint. So sowlib's reopen and query
    # figures use a second store, built the same way, killed with no close (the crash
    # figure: a full recovery, no checkpoint), recovered and closed cleanly by the
    # crash reopen and never queried. sqlite3 keeps nothing from queries: its writer's
    # table is the one measured, crashed by a child that upserts one more chunk and
    # is killed (its WAL then holds what a kill right after building leaves).
    written = {
        "sowlib": os.path.join(work, "sow-writer"),
        "sqlite3": os.path.join(work, "orders.db"),
    }
    paths = {
        "sowlib": os.path.join(work, "sow"),
        "sqlite3": os.path.join(work, "orders.db"),
    }
    m: dict[str, Cell] = {}
    notes: list[str] = []

    def child(engine: str, step: str, **spec: Any) -> Outcome:
        spec = {"step": step, "engine": engine, "n": n, **spec}
        spec.setdefault("path", paths[engine])
        print(f"  {step} {engine} ...", file=sys.stderr, flush=True)
        o = run_child(spec, tf, settings.max_rss)
        print(f"    done in {o.wall_s:.1f} s", file=sys.stderr, flush=True)
        return o

    both = ("sowlib", "sqlite3")
    for e in both:
        o = child(e, "writer", path=written[e])
        for k in ("build_s", "rss_build", "eq_s", "range_s", "scan_s", "rss", "close_s"):
            m[f"{e}.w.{k}"] = o.get(k)
        for k in ("eq_rows", "range_rows", "scan_rows"):
            m[f"{e}.w.{k}"] = o.get(k)
        m[f"{e}.w.peak"] = _peak(o)
        if written[e] != paths[e]:
            _remove(written[e])
    for e in both:
        o = child(e, "crash" if e == "sowlib" else "crash_tail")
        m[f"{e}.crash_build_s"] = o.get("build_s")
        if "killed" not in o.values:
            notes.append(f"The {e} crash build did not finish ({o.failure}).")
    for e in both:
        o = child(e, "reopen")
        m[f"{e}.crash_reopen_s"] = o.get("reopen_s")
        m[f"{e}.crash_close_s"] = o.get("close_s")
        if o.failure:
            notes.append(f"The {e} crash reopen did not finish ({o.failure}).")
        m[f"{e}.file"] = float(_size(paths[e]))
    for _ in range(settings.reopen_rounds):
        for e in both:
            m.setdefault(f"{e}.reopen_rounds", [])  # type: ignore[arg-type]
            rounds = m[f"{e}.reopen_rounds"]
            assert isinstance(rounds, list)
            rounds.append(child(e, "reopen").get("reopen_s"))
    for e in both:
        rounds = m.pop(f"{e}.reopen_rounds")
        assert isinstance(rounds, list)
        numbers = [r for r in rounds if isinstance(r, float)]
        m[f"{e}.reopen_s"] = statistics.median(numbers) if numbers else rounds[0]
    for q in ("eq", "range", "scan"):
        for e in both:
            o = child(e, "query", queries=[q], repeats=settings.repeats)
            for k in (f"{q}_cold_s", f"{q}_warm_s", f"{q}_rows"):
                m[f"{e}.{k}"] = o.get(k)
            m[f"{e}.{q}.open_s"] = o.get("open_s")
            m[f"{e}.{q}.rss"] = o.get("rss")
    for e in both:
        o = child(e, "query", queries=["eq", "range", "scan"], repeats=0)
        m[f"{e}.ro.rss"] = o.get("rss")
        m[f"{e}.ro.peak"] = _peak(o)
        for k in ("open_s", "eq_cold_s", "range_cold_s", "scan_cold_s"):
            m[f"{e}.ro.{k}"] = o.get(k)
    o = child(
        "sowlib",
        "lookup",
        sow_path=paths["sowlib"],
        sql_path=paths["sqlite3"],
        batches=settings.lookup_batches,
        batch=LOOKUP_BATCH,
    )
    for e in both:
        m[f"{e}.lookup_us"] = o.get(f"{e}_us")
        m[f"{e}.lookup_api"] = o.get(f"{e}_api")
    o = child("sowlib", "compact")
    m["sowlib.compact_s"] = o.get("compact_s")
    m["sowlib.compact_rss"] = o.get("rss")
    m["sowlib.file_compacted"] = float(_size(paths["sowlib"]))
    return m, notes


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Figure:
    """One row: what is measured, its unit, and its target (``None``: context only)."""

    text: str
    unit: str  # "s", "B/rec", "µs"
    sow: str
    sql: str | None
    target: str | None = None  # "ratio" (sowlib / sqlite3 at most limit) or "abs"
    limit: float = 0.0


def figures(n: int, repeats: int, rounds: int) -> list[Figure]:
    return [
        Figure(
            "build: `publish_many` / `executemany` in chunks of 10,000",
            "s",
            "sowlib.w.build_s",
            "sqlite3.w.build_s",
            "ratio",
            1.0,
        ),
        Figure(
            "writer: anonymous memory after building and the three queries",
            "B/rec",
            "sowlib.w.rss",
            "sqlite3.w.rss",
            "abs",
            500,
        ),
        Figure(
            "writer: its peak anonymous memory (sampled)",
            "B/rec",
            "sowlib.w.peak",
            "sqlite3.w.peak",
        ),
        Figure(
            "writer: first `/symbol = 'X'` query right after publishing",
            "s",
            "sowlib.w.eq_s",
            "sqlite3.w.eq_s",
            "ratio",
            10.0,
        ),
        Figure("writer: then the range query", "s", "sowlib.w.range_s", "sqlite3.w.range_s"),
        Figure("writer: then the full scan", "s", "sowlib.w.scan_s", "sqlite3.w.scan_s"),
        Figure("writer: clean close", "s", "sowlib.w.close_s", "sqlite3.w.close_s"),
        Figure(
            f"reopen (writable) after a clean close, median of {rounds}",
            "s",
            "sowlib.reopen_s",
            "sqlite3.reopen_s",
            "abs",
            1.0,
        ),
        Figure(
            "reopen (writable) after a crash (SIGKILL, no close)",
            "s",
            "sowlib.crash_reopen_s",
            "sqlite3.crash_reopen_s",
            "abs",
            5.0,
        ),
        Figure(
            "close after the crash reopen", "s", "sowlib.crash_close_s", "sqlite3.crash_close_s"
        ),
        Figure("read-only open", "s", "sowlib.eq.open_s", "sqlite3.eq.open_s"),
        Figure(
            "first `/symbol = 'X'` query after a clean reopen (declared hash index)",
            "s",
            "sowlib.eq_cold_s",
            "sqlite3.eq_cold_s",
            "ratio",
            10.0,
        ),
        Figure(
            f"the same query repeated (median of {repeats})",
            "s",
            "sowlib.eq_warm_s",
            "sqlite3.eq_warm_s",
        ),
        Figure(
            "first `/price BETWEEN` query after reopen (~1%, declared index)",
            "s",
            "sowlib.range_cold_s",
            "sqlite3.range_cold_s",
        ),
        Figure(
            f"the same query repeated (median of {repeats})",
            "s",
            "sowlib.range_warm_s",
            "sqlite3.range_warm_s",
        ),
        Figure(
            "cold full scan after reopen (`/qty = 7 AND /side = 'B'`)",
            "s",
            "sowlib.scan_cold_s",
            "sqlite3.scan_cold_s",
            "ratio",
            1.5,
        ),
        Figure(
            f"the same scan repeated (median of {repeats}): ≥ 3x faster",
            "s",
            "sowlib.scan_warm_s",
            "sqlite3.scan_warm_s",
            "ratio",
            1 / 3,
        ),
        Figure(
            "read-only opener: anonymous memory after the three queries",
            "B/rec",
            "sowlib.ro.rss",
            "sqlite3.ro.rss",
            "abs",
            300,
        ),
        Figure(
            "read-only opener: its peak anonymous memory (sampled)",
            "B/rec",
            "sowlib.ro.peak",
            "sqlite3.ro.peak",
        ),
        Figure(
            "by-key read of a random key, key computation included: ≥ 3x faster",
            "µs",
            "sowlib.lookup_us",
            "sqlite3.lookup_us",
            "ratio",
            1 / 3,
        ),
        Figure(
            "file size after building (all files of the store)",
            "B/rec",
            "sowlib.file",
            "sqlite3.file",
        ),
        Figure("`compact()`", "s", "sowlib.compact_s", None),
        Figure(
            "`compact()`: anonymous memory of the process (open + compact)",
            "B/rec",
            "sowlib.compact_rss",
            None,
        ),
        Figure("file size after `compact()`", "B/rec", "sowlib.file_compacted", None),
    ]


def _number(cell: Cell, unit: str, n: int) -> float | None:
    if isinstance(cell, int | float):
        return float(cell) / n if unit == "B/rec" else float(cell)
    if isinstance(cell, Bound) and cell.lower:
        return cell.lower / n if unit == "B/rec" else cell.lower
    return None


def fmt(cell: Cell, unit: str, n: int) -> str:
    """A cell as text: ``12.3 ms``, ``2,416 B/rec``, ``>120 s``, ``not run``."""
    if cell is None:
        return "—"
    if isinstance(cell, str):
        return cell
    value = _number(cell, unit, n)
    if isinstance(cell, Bound):
        return f"{cell.why}" if value is None or unit == "s" else f">{value:,.0f} {unit}"
    assert value is not None
    if unit == "s":
        if value >= 1:
            return f"{value:,.2f} s"
        if value >= 1e-3:
            return f"{value * 1e3:.3g} ms"
        return f"{value * 1e6:.3g} µs"
    if unit == "µs":
        return f"{value:.3g} µs"
    return f"{value:,.0f} {unit}"


def _target_text(f: Figure) -> str:
    if f.target == "ratio":
        if f.limit < 1:
            return f"≤ {f.limit:.2f}x (≥ {1 / f.limit:g}x faster)"
        return f"≤ {f.limit:g}x sqlite3"
    if f.target == "abs":
        return f"≤ {f.limit:g} {f.unit}"
    return ""


def evaluate(f: Figure, m: dict[str, Cell], n: int) -> tuple[str, str]:
    """(ratio sowlib / sqlite3, met?) of one figure."""
    mine = _number(m.get(f.sow), f.unit, n)
    theirs = _number(m.get(f.sql), f.unit, n) if f.sql else None
    lower = isinstance(m.get(f.sow), Bound)
    ratio_text = ""
    ratio = None
    if mine is not None and theirs:
        ratio = mine / theirs
        ratio_text = f"{'>' if lower else ''}{ratio:,.3g}x"
    if f.target is None:
        return ratio_text, ""
    value = ratio if f.target == "ratio" else mine
    if value is None:
        return ratio_text, "?"
    if value <= f.limit and not lower:
        return ratio_text, "yes"
    return ratio_text, "**no**" if value > f.limit else "?"


def render(m: dict[str, Cell], settings: Settings, notes: Sequence[str], facts: str) -> str:
    """The markdown block for one run."""
    n = settings.records
    lines = [
        f"### {n:,} records",
        "",
        facts,
        "",
        "| figure | sowlib | sqlite3 | ratio | target | met? |",
        "|---|---:|---:|---:|---|---|",
    ]
    met = missed = 0
    for f in figures(n, settings.repeats, settings.reopen_rounds):
        ratio, ok = evaluate(f, m, n)
        met += ok == "yes"
        missed += ok == "**no**"
        sql = fmt(m.get(f.sql), f.unit, n) if f.sql else "—"
        lines.append(
            f"| {f.text} | {fmt(m.get(f.sow), f.unit, n)} | {sql} | {ratio}"
            f" | {_target_text(f)} | {ok} |"
        )
    lines += ["", f"Targets met: {met}; missed: {missed}.", ""]
    rows = []
    agree = True
    for q in ("eq", "range", "scan"):
        counts = {
            str(m.get(f"{e}.{where}{q}_rows"))
            for e in ("sowlib", "sqlite3")
            for where in ("", "w.")
        }
        agree &= len(counts) == 1 and min(counts).isdigit()
        rows.append(f"{q} {'/'.join(sorted(counts))}")
    lines.append(
        f"- Rows returned ({', '.join(rows)}): the contenders"
        f" {'agree' if agree else '**disagree**'}."
    )
    lines.append(
        f"- By-key read: sowlib `{m.get('sowlib.lookup_api')}`, sqlite3"
        f" `{m.get('sqlite3.lookup_api')}`; {settings.lookup_batches} batches of"
        f" {LOOKUP_BATCH:,} random keys, taking turns in one process, median per call."
    )
    lines += [
        "- Ratio = sowlib / sqlite3 (below 1x sowlib is faster or smaller). Every figure"
        ' comes from a fresh child process, sowlib and sqlite3 taking turns; "first" or'
        ' "cold" is the first query of a process that just opened the store (the files'
        " were just written, so they sit in the OS page cache). Memory is the growth of"
        " RssAnon from before opening (after the imports) to after the queries, over N."
        " Build time counts only the `publish_many` / `executemany` calls, not generating"
        " the messages.",
    ]
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ facts and output


def _meminfo_gib() -> str:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    return "RAM unknown"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _load() -> str:
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "unknown"


def facts(command: str, load_start: str, elapsed: float, commit: str | None = None) -> str:
    """The command and the machine, as a bullet list."""
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            f"- Command: `{command}` (seed {data.SEED}; the run took {elapsed / 60:.1f} min,"
            f" {today}, sowlib at commit {commit or _commit()}).",
            f"- Machine: {os.cpu_count()} cores ({_cpu()}), {_meminfo_gib()},"
            f" {platform.system()} {platform.release()}, Python {platform.python_version()},"
            f" SQLite {sqlite3.sqlite_version}; load average {load_start} at the start,"
            f" {_load()} at the end (the cores are shared with other work: compare"
            " figures within one run).",
        ]
    )


def _markers(records: int) -> tuple[str, str]:
    return (
        f"<!-- scale:begin records={records} -->",
        f"<!-- scale:end records={records} -->",
    )


#: The heading of the section the blocks go in.
_HEADING = "## Scale: one topic of millions of records"
#: The marker after which ``report.py`` rewrites the page; scale blocks go above it.
_REPORT_MARK = "<!-- generated by tests/bench/report.py"


def write_block(path: Path, records: int, block: str) -> None:
    """Put ``block`` between this size's markers in ``path`` (added above report.py's table)."""
    begin, end = _markers(records)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n"
    wrapped = f"{begin}\n\n{block}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + wrapped + rest.split(end, 1)[1]
    elif "<!-- scale:end" in text:
        cut = text.rindex("<!-- scale:end")
        cut = text.index("-->", cut) + 3
        text = text[:cut] + "\n\n" + wrapped + text[cut:]
    elif _HEADING in text:
        # The section's hand-written text is there: the block goes at its end.
        start = text.index(_HEADING) + len(_HEADING)
        ends = [i for i in (text.find("\n## ", start), text.find(_REPORT_MARK, start)) if i >= 0]
        cut = min(ends) if ends else len(text)
        text = text[:cut].rstrip() + "\n\n" + wrapped + "\n\n" + text[cut:].lstrip("\n")
    else:
        section = f"{_HEADING}\n\n{wrapped}\n\n"
        if _REPORT_MARK in text:
            head, rest = text.split(_REPORT_MARK, 1)
            text = head + section + _REPORT_MARK + rest
        else:
            text = text.rstrip() + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def _shown(argv: list[str] | None, records: int) -> list[str]:
    """The arguments that change what is measured (not where scratch files or output go)."""
    given = list(sys.argv[1:] if argv is None else argv)
    shown: list[str] = []
    skip = False
    for arg in given:
        if skip:
            skip = False
        elif arg in ("--commit", "--out", "--dir"):
            skip = True
        elif arg != "--keep" and not arg.startswith(("--commit=", "--out=", "--dir=")):
            shown.append(arg)
    return shown if "--records" in " ".join(shown) else ["--records", str(records), *shown]


def main(argv: list[str] | None = None) -> int:
    """Entry point; 0 even when targets are missed (this is a report, not a test)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--step-timeout", type=float, help="seconds per query or open")
    parser.add_argument("--build-timeout", type=float, help="seconds per build, close, compact")
    parser.add_argument("--max-rss-gib", type=float, default=8.0, help="kill a child past this")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="of each query")
    parser.add_argument("--reopen-rounds", type=int, default=REOPEN_ROUNDS)
    parser.add_argument("--lookup-batches", type=int, default=LOOKUP_BATCHES)
    parser.add_argument("--dir", help="scratch directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch stores")
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--write", help="put the table into this markdown page")
    parser.add_argument("--commit", help="the sowlib commit measured (default: git's HEAD)")
    args = parser.parse_args(argv)
    scale = max(1.0, args.records / 1e6)
    settings = Settings(
        records=args.records,
        step_timeout=args.step_timeout or 120 * scale,
        build_timeout=args.build_timeout or 900 * scale,
        max_rss=int(args.max_rss_gib * 2**30),
        repeats=args.repeats,
        reopen_rounds=args.reopen_rounds,
        lookup_batches=args.lookup_batches,
    )
    command = "python tests/bench/scale_report.py " + shlex.join(_shown(argv, args.records))
    load_start = _load()
    work = args.dir or tempfile.mkdtemp(prefix="sowlib-scale-")
    os.makedirs(work, exist_ok=True)
    t0 = time.perf_counter()
    # The children die with us on Ctrl-C (same process group); the stores are removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        m, notes = measure(settings, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    block = render(
        m, settings, notes, facts(command, load_start, time.perf_counter() - t0, args.commit)
    )
    print(block)
    if args.out:
        Path(args.out).write_text(block, encoding="utf-8")
    if args.write:
        write_block(Path(args.write), args.records, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
