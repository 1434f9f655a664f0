"""Benchmark of the workspace file engine: writes, reads, glob and grep.

``run()`` builds its fixture in a temporary directory (1,000 source files of about 1 KB
in 50 directories, plus one 2 KB and one 2,000-line file), times each operation many
times and returns ``(name, median_ms, note)`` rows. Targets: glob <= 15 ms and grep
(ripgrep) <= 10 ms over the 1,000 files. Run it as a script to print the table.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolcards.core.atomic_write import atomic_write
from toolcards.workspace.files import read_page, render_page
from toolcards.workspace.glob import glob
from toolcards.workspace.grep import find_rg, grep
from toolcards.workspace.tree import Tree

__all__ = ["run"]

FILES = 1000
DIRECTORIES = 50


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm caches (page cache, imports, compiled patterns)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _read_numbered(path: Path) -> str:
    """The first page of ``path`` as workspace_read renders it, from opening its directory on."""
    with Tree(path.parent).open_file(path.name) as file:
        return render_page(read_page(file).page, shown_as=file.rel)


def _build(root: Path) -> None:
    for index in range(FILES):
        directory = root / f"pkg{index % DIRECTORIES:02}" / ("sub" if index % 3 else "")
        directory.mkdir(parents=True, exist_ok=True)
        suffix = (".py", ".ts", ".md", ".txt")[index % 4]
        lines = [f"# module {index}", "import os", ""]
        lines += [f"def handler_{index}_{n}(value):\n    return value * {n}\n" for n in range(12)]
        (directory / f"file_{index:04}{suffix}").write_text("\n".join(lines))
    (root / "small.txt").write_bytes(b"x" * 2047 + b"\n")
    (root / "long.txt").write_text("".join(f"line number {n} of the long file\n" for n in range(2000)))


def run() -> list[tuple[str, float, str]]:
    """Time each operation; return ``(name, median_ms, note)`` rows."""
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp).resolve()
        _build(root)
        payload = b"y" * 2048
        rows.append(("write 2 KB (atomic)", _median_ms(lambda: atomic_write(root / "out.txt", payload), 200), "fsync"))
        rows.append(("read 2 KB", _median_ms(lambda: _read_numbered(root / "small.txt"), 500), ""))
        rows.append(("read 2,000 lines", _median_ms(lambda: _read_numbered(root / "long.txt"), 200), ""))
        rows.append(
            ("glob **/*.py over 1,000 files", _median_ms(lambda: glob(root, "**/*.py"), 100), "target <= 15 ms")
        )
        rows.append(
            (
                "glob **/*.{py,ts} over 1,000 files",
                _median_ms(lambda: glob(root, "**/*.{py,ts}"), 100),
                "target <= 15 ms",
            )
        )
        if find_rg() is not None:
            rows.append(
                (
                    "grep (rg) over 1,000 files",
                    _median_ms(lambda: grep(root, r"def handler_5\d\d_3\b", use_rg=True), 100),
                    "target <= 10 ms",
                )
            )
            rows.append(
                (
                    "grep (rg) include *.py",
                    _median_ms(lambda: grep(root, "import os", include="*.py", use_rg=True), 100),
                    "100-match cap",
                )
            )
        else:
            rows.append(("grep (rg) over 1,000 files", float("nan"), "rg not installed"))
        rows.append(
            (
                "grep (python) over 1,000 files",
                _median_ms(lambda: grep(root, r"def handler_5\d\d_3\b", use_rg=False), 30),
                "fallback, no target",
            )
        )
    return rows


if __name__ == "__main__":
    for name, median, note in run():
        print(f"{name:40} {median:8.2f} ms  {note}")
