"""Run every benchmark group (or the ones named) and print one table.

Each row is one case: its median and 95th percentile, its target when it has one, and
whether the target was met. A group that needs something absent prints one ``skipped``
row; a group that raises prints one ``error`` row and the others still run.
``--markdown`` prints the table for ``docs/benchmarks.md`` instead: a line naming the
machine, Python and date, then one row per case.
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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import bench
from bench.timing import Case, Skip

Row = tuple[str, Case]
"""One measurement: (group, case)."""

HELPERS = frozenset({"__main__", "serve_process", "timing"})
"""Modules of the package that are not groups; so are names starting with ``_`` and subpackages
(``bench/peer`` is run by hand, never by a plain ``python -m bench``)."""


def groups() -> list[str]:
    """Every benchmark group, by name."""
    return sorted(
        module.name
        for module in pkgutil.iter_modules([str(Path(bench.__file__).parent)])
        if module.name not in HELPERS and not module.name.startswith("_") and not getattr(module, "ispkg", False)
    )


def format_value(value: float, unit: str = "ms") -> str:
    """A value in its unit: ``2.1 µs``, ``0.18 ms``, ``2,220 tokens``, ``97.3 %``, ``4,512 ops/s``, ``0.03``."""
    if math.isnan(value):
        return "n/a"
    if unit == "ms":
        return f"{value * 1000:.1f} µs" if abs(value) < 1 else f"{value:.2f} ms"
    if unit == "tokens":
        return f"{value:,.0f} tokens"
    if unit == "%":
        return f"{value:.1f} %"
    if unit.endswith("/s"):
        return f"{value:,.0f} {unit}"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "":
        return f"{value:.2f}"
    return f"{value:,.1f} {unit}"


def format_median(median_ms: float) -> str:
    """``2.1 µs``, ``0.18 ms``, ``66.00 ms``; ``n/a`` when the case could not run."""
    return format_value(median_ms, "ms")


def format_target(case: Case) -> str:
    """``<= 0.30 ms``, ``>= 2,000 ops/s``; empty without a target."""
    if case.target is None:
        return ""
    return f"{'<=' if case.better == 'lower' else '>='} {format_value(case.target, case.unit)}"


def format_met(case: Case) -> str:
    met = case.met
    return "" if met is None else "met" if met else "missed"


def as_case(row: Any) -> Case:
    """A module's row as a :class:`Case`; a plain ``(label, median_ms, note)`` tuple is a time."""
    if isinstance(row, Case):
        return row
    label, median_ms, note = row
    return Case(str(label), float(median_ms), str(note))


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


def _columns(case: Case) -> tuple[str, str, str, str]:
    return (
        format_value(case.median, case.unit),
        format_value(case.p95, case.unit),
        format_target(case),
        format_met(case),
    )


def markdown(rows: Iterable[Row], *, names: list[str], machine_line: str) -> str:
    """The benchmark table of ``docs/benchmarks.md``: who measured where, then one row per case."""
    command = " ".join(["python -m bench --markdown", *names])
    lines = [
        f"Measured with `{command}` on {machine_line}.",
        "",
        "| bench case | median | p95 | target | met | note |",
        "|---|---:|---:|---:|---|---|",
    ]
    for group, case in rows:
        median, p95, target, met = _columns(case)
        p95 = "" if math.isnan(case.p95) else p95
        lines.append(
            f"| `{_cell(f'{group}: {case.label}')}` | {median} | {p95} | {target} | {met} | {_cell(case.note)} |"
        )
    return "\n".join(lines) + "\n"


def text_table(rows: Iterable[Row]) -> str:
    """The table for a terminal."""
    cells = []
    for group, case in rows:
        median, p95, target, met = _columns(case)
        cells.append((f"{group}: {case.label}", median, "" if math.isnan(case.p95) else p95, target, met, case.note))
    header = ("benchmark", "median", "p95", "target", "met", "note")
    widths = [max([len(header[i]), *(len(row[i]) for row in cells)]) for i in range(5)]

    def line(row: tuple[str, ...]) -> str:
        left = row[0].ljust(widths[0])
        numbers = "  ".join(row[i].rjust(widths[i]) for i in (1, 2, 3))
        return f"{left}  {numbers}  {row[4].ljust(widths[4])}  {row[5]}".rstrip()

    lines = [line(header), line((*("-" * w for w in widths), "----"))]
    lines += [line(row) for row in cells]
    return "\n".join(lines) + "\n"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _tidy_up() -> None:
    """Stop what a group may have left running, so the next group starts from a clean process."""
    try:
        import pykka

        pykka.ActorRegistry.stop_all()
    except Exception:  # tidying must not stop the run
        pass
    try:
        from toolcards.store import close_default_stores

        close_default_stores()
    except Exception:
        pass


def run_group(name: str) -> tuple[list[Row], bool]:
    """Run one group: its rows, or one ``skipped``/``error`` row; and whether it raised."""
    environment = dict(os.environ)
    try:
        module = importlib.import_module(f"bench.{name}")
        return [(name, as_case(row)) for row in module.run()], False
    except Skip as skip:
        return [(name, Case(f"skipped: {' '.join(str(skip).split())}", math.nan))], False
    except Exception as exc:  # one broken group must not hide the others
        return [(name, Case(f"error: {_one_line(exc)}", math.nan))], True
    finally:
        _tidy_up()
        os.environ.clear()
        os.environ.update(environment)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("names", nargs="*", help="benchmark groups to run (default: all)")
    parser.add_argument("--markdown", action="store_true", help="print the table for docs/benchmarks.md")
    args = parser.parse_args(argv)
    available = groups()
    names = args.names or available
    unknown = sorted(set(names) - set(available))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available)}")
    rows: list[Row] = []
    failed = []
    for name in names:
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        group_rows, raised = run_group(name)
        rows.extend(group_rows)
        if raised:
            failed.append(name)
        status = f"failed: {group_rows[0][1].label}" if raised else "done"
        print(f"  {name} {status} in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    if args.markdown:
        sys.stdout.write(markdown(rows, names=args.names, machine_line=machine()))
    else:
        sys.stdout.write(text_table(rows))
    if failed:
        print(f"error in {', '.join(failed)}: see the table", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
