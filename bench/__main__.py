"""Run every benchmark module (or the ones named) and print one table of medians."""

from __future__ import annotations

import argparse
import importlib
import math
import pkgutil
import sys
import time
from pathlib import Path

import bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmark modules to run (default: all)")
    args = parser.parse_args(argv)
    available = sorted(m.name for m in pkgutil.iter_modules([str(Path(bench.__file__).parent)]) if m.name != "timing")
    names = args.names or available
    unknown = sorted(set(names) - set(available))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available)}")
    rows: list[tuple[str, str, float, str]] = []
    for name in names:
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(f"bench.{name}")
        for label, median_ms, note in module.run():
            rows.append((name, label, median_ms, note))
        print(f"  {name} done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    width = max((len(f"{g}: {label}") for g, label, _, _ in rows), default=20)
    print(f"{'benchmark'.ljust(width)}  {'median':>11}  note")
    print(f"{'-' * width}  {'-' * 11}  ----")
    for group, label, median_ms, note in rows:
        value = f"{median_ms * 1000:.1f} µs" if median_ms < 1 else f"{median_ms:.2f} ms"
        if math.isnan(median_ms):
            value = "n/a"
        print(f"{f'{group}: {label}'.ljust(width)}  {value:>11}  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
