"""``python -m bench``: one table of every group's cases, with p95, targets and met/missed.

The table of docs/benchmarks.md (``--markdown``) names each row by its case and the machine it ran on; a
group that cannot run here is one ``skipped`` row, one that raises is one ``error`` row.
"""

from __future__ import annotations

import datetime
import math
import platform
import sys
import types
from collections.abc import Iterator
from typing import Any

import bench.__main__ as bench_main
import pytest
from bench.timing import Case, Skip, Stats, measure, percentile


def test_rows_name_their_case_and_the_header_names_the_machine() -> None:
    rows = [
        ("core", Case("pipeline | sync tool", 0.0021, "over a direct call", p95=0.0030, target=0.03)),
        ("store", Case("one write", 1.8, "")),
        ("tokens", Case("tool definitions", 2220.0, "o200k", unit="tokens", target=2300)),
        ("concurrency", Case("8 agents", 900.0, "", unit="ops/s", target=1000.0, better="higher")),
    ]
    table = bench_main.markdown(rows, names=["core", "store"], machine_line="a CPU, 2 CPUs, Python 3.11.7, 2026-01-01")
    assert table.splitlines() == [
        "Measured with `python -m bench --markdown core store` on a CPU, 2 CPUs, Python 3.11.7, 2026-01-01.",
        "",
        "| bench case | median | p95 | target | met | note |",
        "|---|---:|---:|---:|---|---|",
        "| `core: pipeline \\| sync tool` | 2.1 µs | 3.0 µs | <= 30.0 µs | met | over a direct call |",
        "| `store: one write` | 1.80 ms |  |  |  |  |",
        "| `tokens: tool definitions` | 2,220 tokens |  | <= 2,300 tokens | met | o200k |",
        "| `concurrency: 8 agents` | 900 ops/s |  | >= 1,000 ops/s | missed |  |",
    ]


def test_the_machine_line_has_cpu_count_python_and_date() -> None:
    line = bench_main.machine()
    assert f"Python {platform.python_version()}" in line
    assert str(datetime.date.today()) in line
    assert " CPUs, " in line


def test_a_case_that_could_not_run_is_n_a_and_has_no_verdict() -> None:
    assert bench_main.format_median(float("nan")) == "n/a"
    assert bench_main.format_median(12.345) == "12.35 ms"
    skipped = Case.skipped("bwrap: echo hello", "bubblewrap unavailable")
    assert skipped.note == "skipped: bubblewrap unavailable"
    assert Case("x", math.nan, target=1.0).met is None


def test_values_print_in_their_unit() -> None:
    assert bench_main.format_value(97.25, "%") == "97.2 %"
    assert bench_main.format_value(0.034, "") == "0.03"
    assert bench_main.format_value(2.5, "x") == "2.50x"
    assert bench_main.format_value(46.04, "MB") == "46.0 MB"


def test_timing_gives_median_and_tail() -> None:
    stats = Stats.of([float(n) for n in range(1, 101)])
    assert (stats.median, stats.p95, stats.p99, stats.count) == (50.5, 95.0, 99.0, 100)
    assert percentile([], 0.95) != percentile([], 0.95)  # NaN
    calls = []
    measured = measure(lambda: calls.append(1), repeat=10, warmup=3)
    assert measured.count == 10 and len(calls) == 13
    assert Case.timed("t", measured, target=1e9).met is True


def _fake_groups(monkeypatch: pytest.MonkeyPatch, **modules: Any) -> None:
    for name, run in modules.items():
        module = types.ModuleType(f"bench.{name}")
        module.run = run  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"bench.{name}", module)

    def iter_modules(paths: Any) -> Iterator[Any]:
        for name in [*modules, "__main__", "timing", "_helper"]:
            yield types.SimpleNamespace(name=name, ispkg=False)
        yield types.SimpleNamespace(name="peer", ispkg=True)

    monkeypatch.setattr(bench_main.pkgutil, "iter_modules", iter_modules)


def test_main_prints_the_markdown_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_groups(monkeypatch, fake=lambda: [("one call", 0.5, "a note")])
    assert bench_main.main(["--markdown", "fake"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Measured with `python -m bench --markdown fake` on ")
    assert out[-1] == "| `fake: one call` | 500.0 µs |  |  |  | a note |"


def test_every_group_runs_and_a_missing_need_or_a_failure_is_one_row(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def absent() -> list[Case]:
        raise Skip("bubblewrap unavailable")

    def broken() -> list[Case]:
        raise RuntimeError("the server did not start\nsecond line")

    _fake_groups(
        monkeypatch,
        absent=absent,
        broken=broken,
        fine=lambda: [Case("write", 0.2, "n", p95=0.4, target=0.3)],
    )
    assert bench_main.groups() == ["absent", "broken", "fine"]
    assert bench_main.main([]) == 1  # the table is printed; the status says a group raised
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["benchmark", "median", "p95", "target", "met", "note"]
    assert out[2].split() == ["absent:", "skipped:", "bubblewrap", "unavailable", "n/a"]
    assert out[3].startswith("broken: error: RuntimeError: the server did not start second line ")
    assert out[4].split() == ["fine:", "write", "200.0", "µs", "400.0", "µs", "<=", "300.0", "µs", "met", "n"]
