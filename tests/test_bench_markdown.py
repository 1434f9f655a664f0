"""``python -m bench --markdown``: the README's table, each row named by its case, with the machine."""

from __future__ import annotations

import datetime
import platform
import sys
import types
from collections.abc import Iterator
from typing import Any

import bench.__main__ as bench_main
import pytest


def test_rows_name_their_case_and_the_header_names_the_machine() -> None:
    rows = [("core", "pipeline | sync tool", 0.0021, "over a direct call"), ("store", "one write", 1.8, "")]
    table = bench_main.markdown(rows, names=["core", "store"], machine_line="a CPU, 2 CPUs, Python 3.11.7, 2026-01-01")
    assert table.splitlines() == [
        "Measured with `python -m bench --markdown core store` on a CPU, 2 CPUs, Python 3.11.7, 2026-01-01.",
        "",
        "| bench case | median | note |",
        "|---|---:|---|",
        "| `core: pipeline \\| sync tool` | 2.1 µs | over a direct call |",
        "| `store: one write` | 1.80 ms |  |",
    ]


def test_the_machine_line_has_cpu_count_python_and_date() -> None:
    line = bench_main.machine()
    assert f"Python {platform.python_version()}" in line
    assert str(datetime.date.today()) in line
    assert " CPUs, " in line


def test_a_case_that_could_not_run_is_n_a() -> None:
    assert bench_main.format_median(float("nan")) == "n/a"
    assert bench_main.format_median(12.345) == "12.35 ms"


def test_main_prints_the_markdown_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fake = types.ModuleType("bench.fake")
    fake.run = lambda: [("one call", 0.5, "a note")]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench.fake", fake)

    def iter_modules(paths: Any) -> Iterator[Any]:
        yield types.SimpleNamespace(name="fake")

    monkeypatch.setattr(bench_main.pkgutil, "iter_modules", iter_modules)
    assert bench_main.main(["--markdown", "fake"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Measured with `python -m bench --markdown fake` on ")
    assert out[-1] == "| `fake: one call` | 500.0 µs | a note |"
