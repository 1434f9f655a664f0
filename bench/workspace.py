"""Benchmark of ``WorkspaceTool`` end to end: each call goes through the command pipeline.

``run()`` points ``TOOLCARDS_WORKSPACES_ROOT`` at a temporary directory for its duration,
binds a ``WorkspaceTool`` to a ``FakeObserver`` and times, through the commands (argument
validation, the actor ask for changes, the gate, ``atomic_write`` with its ``fsync``es,
the output envelope):

* write and read of a 2 KB file;
* an exact and a fuzzy ``workspace_edit`` in a 2,000-line file (the fuzzy one has two
  typos and other indentation, so every strategy before ``fuzzy`` is tried first);
* a read of the 2,000-line file;
* glob and grep over 1,000 files.

Targets: glob <= 15 ms, grep <= 10 ms, exact edit <= 1 ms, fuzzy edit <= 2 ms (medians).
Each edit is undone between samples by an untimed write, so every sample edits the same
text. Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.workspace_edit import _source, edit_cases
from toolcards.core.factory import ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace.actor import stop_workspace_actors
from toolcards.workspace.grep import find_rg
from toolcards.workspace.tool import (
    WorkspaceEditParam,
    WorkspaceGlobParam,
    WorkspaceGrepParam,
    WorkspaceReadParam,
    WorkspaceTool,
    WorkspaceWriteParam,
)

__all__ = ["run"]

FILES = 1000
DIRECTORIES = 50
LINES = 2000


def run() -> list[tuple[str, float, str]]:
    """Time each operation through the card's commands; takes a few seconds."""
    with _temporary_root() as root, FakeObserver("Bench", "bench") as observer:
        try:
            return _measure(root, observer)
        finally:
            stop_workspace_actors()


def _measure(root: Path, observer: FakeObserver) -> list[tuple[str, float, str]]:
    commands = ToolFactory([WorkspaceTool()], observer=observer).get_commands()
    write = commands[WorkspaceWriteParam]
    read = commands[WorkspaceReadParam]
    edit = commands[WorkspaceEditParam]
    glob = commands[WorkspaceGlobParam]
    grep = commands[WorkspaceGrepParam]
    tree = root / "bench"
    _build_tree(tree)

    small = "x" * 2047 + "\n"
    source = _source(LINES)
    exact_old, exact_new, fuzzy_old, fuzzy_new = edit_cases(source)

    write(path="small.txt", content=small)
    write(path="long.py", content=source)
    if "fuzzy" not in edit(path="long.py", old_string=fuzzy_old, new_string=fuzzy_new):
        raise AssertionError("the fuzzy edit did not take the fuzzy strategy; the benchmark would measure another path")

    def restore() -> None:
        write(path="long.py", content=source)

    restore()

    return [
        ("write 2 KB", _median_ms(lambda: write(path="small.txt", content=small), 300), "own file, fsync"),
        ("read 2 KB", _median_ms(lambda: read(path="small.txt"), 500), "numbered, enveloped, read recorded"),
        (
            f"edit exact, {LINES:,}-line file",
            _median_ms(lambda: edit(path="long.py", old_string=exact_old, new_string=exact_new), 300, undo=restore),
            "3-line block; target <= 1 ms",
        ),
        (
            f"edit fuzzy, {LINES:,}-line file",
            _median_ms(lambda: edit(path="long.py", old_string=fuzzy_old, new_string=fuzzy_new), 300, undo=restore),
            "6 lines, 2 typos, other indent; target <= 2 ms",
        ),
        (f"read {LINES:,}-line file", _median_ms(lambda: read(path="long.py"), 200), "~100 KB"),
        (
            f"glob **/*.py over {FILES:,} files",
            _median_ms(lambda: glob(pattern="**/*.py", path="tree"), 100),
            "target <= 15 ms",
        ),
        (
            f"grep over {FILES:,} files",
            _median_ms(lambda: grep(pattern=r"def handler_5\d\d_3\b", path="tree"), 100),
            f"{'ripgrep' if find_rg() else 'python engine'}; target <= 10 ms",
        ),
    ]


def _median_ms(action: Callable[[], Any], repeat: int, *, undo: Callable[[], Any] | None = None) -> float:
    """Median wall time of ``action()`` in ms; ``undo()`` runs untimed after each sample."""
    for _ in range(10):
        action()
        if undo is not None:
            undo()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000.0)
        if undo is not None:
            undo()
    return statistics.median(samples)


def _build_tree(tree: Path) -> None:
    for index in range(FILES):
        directory = tree / "tree" / f"pkg{index % DIRECTORIES:02}" / ("sub" if index % 3 else "")
        directory.mkdir(parents=True, exist_ok=True)
        suffix = (".py", ".ts", ".md", ".txt")[index % 4]
        body = [f"# module {index}", "import os", ""]
        body += [f"def handler_{index}_{n}(value):\n    return value * {n}\n" for n in range(12)]
        (directory / f"file_{index:04}{suffix}").write_text("\n".join(body))


@contextmanager
def _temporary_root() -> Iterator[Path]:
    previous = os.environ.get("TOOLCARDS_WORKSPACES_ROOT")
    with tempfile.TemporaryDirectory() as temp:
        os.environ["TOOLCARDS_WORKSPACES_ROOT"] = temp
        try:
            yield Path(temp).resolve()
        finally:
            if previous is None:
                del os.environ["TOOLCARDS_WORKSPACES_ROOT"]
            else:
                os.environ["TOOLCARDS_WORKSPACES_ROOT"] = previous


if __name__ == "__main__":
    for name, median, note in run():
        print(f"{name:40} {median:8.3f} ms  {note}")
