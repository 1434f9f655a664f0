"""Run every benchmark module (or the ones named) and print one table of medians.

``--markdown`` prints the table for the README instead: a line naming the machine, Python and
date, then one row per case (``module: label``, median, note).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import math
import os
import pkgutil
import platform
import sys
import time
from pathlib import Path

import bench

Row = tuple[str, str, float, str]
"""One measurement: (module, label, median in milliseconds, note)."""


def format_median(median_ms: float) -> str:
    """``2.1 µs``, ``0.18 ms``, ``66.00 ms``; ``n/a`` when the case could not run."""
    if math.isnan(median_ms):
        return "n/a"
    return f"{median_ms * 1000:.1f} µs" if median_ms < 1 else f"{median_ms:.2f} ms"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() in {"model name", "Hardware", "Model"} and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine() -> str:
    """The machine a run was taken on: CPU model and count, OS, Python, today's date."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"{_cpu_model()}, {cpus} CPUs, {platform.system()} {platform.release()}, {python}, {datetime.date.today()}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[Row], *, names: list[str], machine_line: str) -> str:
    """The README's benchmark table: who measured where, then one row per case."""
    command = " ".join(["python -m bench --markdown", *names])
    lines = [
        f"Measured with `{command}` on {machine_line}.",
        "",
        "| bench case | median | note |",
        "|---|---:|---|",
    ]
    lines += [
        f"| `{_cell(f'{group}: {label}')}` | {format_median(median_ms)} | {_cell(note)} |"
        for group, label, median_ms, note in rows
    ]
    return "\n".join(lines) + "\n"


def text_table(rows: list[Row]) -> str:
    """The table for a terminal."""
    width = max((len(f"{g}: {label}") for g, label, _, _ in rows), default=20)
    lines = [f"{'benchmark'.ljust(width)}  {'median':>11}  note", f"{'-' * width}  {'-' * 11}  ----"]
    lines += [
        f"{f'{group}: {label}'.ljust(width)}  {format_median(median_ms):>11}  {note}"
        for group, label, median_ms, note in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("names", nargs="*", help="benchmark modules to run (default: all)")
    parser.add_argument("--markdown", action="store_true", help="print the README's table, with the machine")
    args = parser.parse_args(argv)
    # Every module but this one and the timing helpers is a benchmark (``import`` included:
    # a keyword, so it is only ever loaded by name).
    available = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(bench.__file__).parent)]) if m.name not in {"__main__", "timing"}
    )
    names = args.names or available
    unknown = sorted(set(names) - set(available))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available)}")
    rows: list[Row] = []
    for name in names:
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(f"bench.{name}")
        for label, median_ms, note in module.run():
            rows.append((name, label, median_ms, note))
        print(f"  {name} done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    if args.markdown:
        sys.stdout.write(markdown(rows, names=args.names, machine_line=machine()))
    else:
        sys.stdout.write(text_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
