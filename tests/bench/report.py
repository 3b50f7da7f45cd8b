"""Measure every performance target against the peers in one run; rewrite docs/performance.md.

Usage: ``python3 tests/bench/report.py [--size 200k|1m] [--quick] [--no-write]
[--only NAME ...]``. ``--size 1m`` publishes 1,000,000 messages over 250,000 orderIds
and reads and queries 1,000,000 distinct records (the default, ``200k``: 200,000
messages over 50,000 orderIds, 50,000 records). ``--quick`` uses 1/10 of the chosen
sizes (a smoke run: ratios are printed, absolute targets stated for the full sizes are
reported as info). Imports sowlib and the bench helpers.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
for _p in (str(_HERE), str(_ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import readers_report  # noqa: E402  (the path setup above makes the helpers importable)
import scen_codecs  # noqa: E402
import scen_query  # noqa: E402
import scen_read  # noqa: E402
import scen_refresh  # noqa: E402
import scen_store  # noqa: E402
import scen_views  # noqa: E402
import scen_write  # noqa: E402
import workload  # noqa: E402
from rows import Row, markdown  # noqa: E402
from workload import SEED, Sizes  # noqa: E402

Scenario = Callable[[Sizes, str], list[Row]]

#: Every scenario, in report order.
SCENARIOS: dict[str, Scenario] = {
    "publish": scen_write.publish_rows,
    "reads": scen_read.read_rows,
    "refresh": scen_refresh.refresh_rows,
    "readers": readers_report.readers_rows,
    "reopen": scen_store.reopen_rows,
    "compaction": scen_store.compaction_rows,
    "eval": scen_query.eval_rows,
    "compile": scen_query.compile_rows,
    "codecs": scen_codecs.codec_rows,
    "delta": scen_codecs.delta_rows,
    "views": scen_views.view_rows,
}


#: The scenarios whose sizes follow ``--size``; ``--size 1m`` runs only these (the others
#: measure the same sizes at every ``--size``).
SIZED = ("publish", "reads", "refresh", "readers", "reopen")


def machine() -> str:
    """One line describing the machine and interpreter."""
    try:
        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    return (
        f"{os.cpu_count()} cores ({platform.machine()}, {platform.processor() or 'cpu'}),"
        f" {platform.system()} {platform.release()}, Python {platform.python_version()}"
        f" ({platform.python_implementation()}), {load} at the start of the run"
    )


def run(names: list[str], sizes: Sizes) -> tuple[list[Row], dict[str, float]]:
    """Run the named scenarios in a scratch directory; rows and seconds per scenario."""
    rows: list[Row] = []
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sowlib-bench-") as tmp:
        for name in names:
            t0 = time.perf_counter()
            try:
                got = SCENARIOS[name](sizes, os.path.join(tmp, name))
            except Exception as exc:  # one broken scenario must not lose the others' rows
                traceback.print_exc()
                got = [Row(name, "the scenario failed", repr(exc)[:200], status="MISS")]
            rows.extend(got)
            print(markdown(got), file=sys.stderr, flush=True)  # a cut-short run keeps these
            seconds[name] = time.perf_counter() - t0
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)  # disk for the next
            workload.forget()  # and memory: the generated messages of a million records
            print(f"  {name}: {seconds[name]:.1f} s", file=sys.stderr, flush=True)
    return rows, seconds


def render_page(rows: list[Row], command: str, sizes: Sizes, header: str, elapsed: float) -> str:
    """The generated part of docs/performance.md."""
    missed = [r for r in rows if r.status == "MISS"]
    passed = [r for r in rows if r.status == "PASS"]
    return "\n".join(
        [
            "## Measured",
            "",
            f"- Command: `{command}` (seed {SEED}; the whole run took {elapsed:.0f} s).",
            f"- Machine: {header}.",
            f"- Run: {datetime.date.today().isoformat()}; {len(passed)} targets met,"
            f" {len(missed)} missed.",
            f"- Sizes (`{sizes.name}`): {sizes.messages:,} messages over {sizes.order_ids:,}"
            f" orderIds for publish_many (updates of existing keys);"
            f" {sizes.records:,} distinct records for reads, queries and refresh;"
            f" {sizes.each:,} messages for per-message publish, codecs, delta and compaction;"
            f" {sizes.reopen:,} records for reopen; {sizes.readers:,} records for the"
            f" concurrent readers ({sizes.seconds:g} s per configuration).",
            "- Ratio = sowlib's rate / the peer's rate (2.0x = sowlib twice as fast), from"
            " median times per operation; PASS when it meets the target.",
            "",
            markdown(rows),
            "",
        ]
    )


_MARK = "<!-- generated by tests/bench/report.py: everything below is rewritten -->"


def write_page(path: Path, generated: str) -> None:
    """Replace everything after the marker in ``path`` (keeping the hand-written top)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    head = text.split(_MARK, 1)[0].rstrip() if _MARK in text else "# Performance"
    path.write_text(f"{head}\n\n{_MARK}\n\n{generated}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 even when targets are missed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size", choices=("200k", "1m"), default="200k", help="the workload size (default 200k)"
    )
    parser.add_argument("--quick", action="store_true", help="1/10 sizes, a smoke run")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--only", nargs="+", choices=sorted(SCENARIOS), help="a subset")
    args = parser.parse_args(argv)
    sizes = Sizes.named(args.size)
    if args.quick:
        sizes = sizes.quick()
    names = args.only or [n for n in SCENARIOS if args.size == "200k" or n in SIZED]
    header = machine()
    print(header, file=sys.stderr)
    t0 = time.perf_counter()
    rows, _ = run(names, sizes)
    elapsed = time.perf_counter() - t0
    command = "python3 tests/bench/report.py"
    if args.size != "200k":
        command += f" --size {args.size}"
    if args.quick:
        command += " --quick"
    if args.only:
        command += " --only " + " ".join(args.only)
    page = render_page(rows, command, sizes, header, elapsed)
    print(page)
    if not args.no_write:
        write_page(_ROOT / "docs" / "performance.md", page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
