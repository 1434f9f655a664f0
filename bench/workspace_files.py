"""Benchmark of the workspace file engine: writes, reads, glob and grep.

``run()`` builds its fixture in a temporary directory (1,000 source files of about 1 KB
in 50 directories, plus one 2 KB and one 2,000-line file), times each operation many
times and returns :class:`~bench.timing.Case` rows. Targets: glob <= 15 ms and grep
(ripgrep) <= 8 ms over the 1,000 files. Run it as a script to print the table.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.timing import Case, Stats, measure
from toolcards.fs._atomic_write import atomic_write
from toolcards.workspace._files import list_directory, read_page, render_page
from toolcards.workspace._glob import glob
from toolcards.workspace._grep import grep
from toolcards.workspace._tree import Tree

__all__ = ["run"]

FILES = 1000
DIRECTORIES = 50


def _timed(action: Callable[[], object], repeat: int) -> Stats:
    # One warm-up call: page cache, imports, compiled patterns.
    return measure(action, repeat=repeat, warmup=1)


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


def run() -> list[Case]:
    """Time each operation; return :class:`~bench.timing.Case` rows."""
    rows: list[Case] = []
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp).resolve()
        _build(root)
        payload = b"y" * 2048
        write = _timed(lambda: atomic_write(root / "out.txt", payload), 200)
        rows.append(Case.timed("write 2 KB (atomic)", write, "fsync"))
        rows.append(Case.timed("read 2 KB", _timed(lambda: _read_numbered(root / "small.txt"), 500), ""))
        rows.append(Case.timed("read 2,000 lines", _timed(lambda: _read_numbered(root / "long.txt"), 200), ""))
        rows.append(
            Case.timed("glob **/*.py over 1,000 files", _timed(lambda: glob(root, "**/*.py"), 100), "", target=15.0)
        )
        rows.append(
            Case.timed(
                "glob **/*.{py,ts} over 1,000 files", _timed(lambda: glob(root, "**/*.{py,ts}"), 100), "", target=15.0
            )
        )
        first_page = _timed(lambda: glob(root, "**/*", limit=100), 100)
        rows.append(Case.timed("glob **/* page 1 over 1,000 files", first_page, "every file matches and is stat-ed"))
        rows.append(
            Case.timed(
                "glob **/* page 10 (offset 900) over 1,000 files",
                _timed(lambda: glob(root, "**/*", offset=900, limit=100), 100),
                "keeps offset + limit matches; for scale: page 1 above",
            )
        )
        flat = root / "flat"
        flat.mkdir()
        for index in range(FILES):
            (flat / f"entry_{index:04}.txt").write_bytes(b"z" * index)
        tree = Tree(root)
        rows.append(
            Case.timed(
                "list 1,000 entries, page 2 with sizes",
                _timed(lambda: list_directory(tree, "flat", offset=500, limit=500, sizes=True), 100),
                "an lstat per entry shown",
            )
        )
        names = iter(range(10**6))

        def move_back_and_forth() -> None:
            step = next(names)
            tree.rename(
                f"small{'' if step % 2 == 0 else '-moved'}.txt", f"small{'-moved' if step % 2 == 0 else ''}.txt"
            )

        rows.append(
            Case.timed("move a file (Tree.rename)", _timed(move_back_and_forth, 500), "RENAME_NOREPLACE, no journal")
        )
        rows.append(
            Case.timed(
                "grep (rg) over 1,000 files",
                _timed(lambda: grep(root, r"def handler_5\d\d_3\b"), 100),
                "",
                target=8.0,
            )
        )
        rows.append(
            Case.timed(
                "grep (rg) include *.py",
                _timed(lambda: grep(root, "import os", include="*.py"), 100),
                "100-match cap",
            )
        )
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("workspace_files", case) for case in run()), end="")
