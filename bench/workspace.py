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

Targets: glob <= 15 ms, grep <= 8 ms, exact edit <= 1 ms, fuzzy edit <= 2 ms, a 2 KB read
<= 0.14 ms, a new 2 KB file written <= 0.35 ms, the first bind of a ``WorkspaceTool`` <= 2 ms
(medians). The new file and both edits are also timed on a second tree whose card has
``sync="off"`` (no ``fdatasync``, as akgentic-tool writes), beside the default ``"normal"``.
Each edit is undone between samples by an untimed write, so every sample edits the same
text. Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.timing import Case, Stats, measure
from bench.workspace_edit import _source, edit_cases
from toolcards.core._factory import ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._actor import stop_workspace_actors
from toolcards.workspace._grep import find_rg
from toolcards.workspace._tool import (
    WorkspaceDeleteParam,
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


def run() -> list[Case]:
    """Time each operation through the card's commands; takes a few seconds."""
    with _temporary_root() as root:
        try:
            binds = _first_binds()
            with FakeObserver("Bench", "bench") as observer:
                return [binds, *_measure(root, observer)]
        finally:
            stop_workspace_actors()


BINDS = 20


def _first_binds() -> Case:
    """The first bind of a fresh ``WorkspaceTool`` on a fresh workspace, as an agent's start pays it."""
    samples = []
    for number in range(BINDS + 1):
        with FakeObserver("Bench", f"bind-{number}") as observer:
            card = WorkspaceTool(workspace_id=f"bind-{number}")
            started = time.perf_counter()
            ToolFactory([card], observer=observer)
            elapsed = (time.perf_counter() - started) * 1000
        if number:  # the first one pays the imports
            samples.append(elapsed)
    return Case.timed(
        "first WorkspaceTool bind",
        Stats.of(samples),
        f"ToolFactory([WorkspaceTool()]) on a new workspace, imports done; median of {BINDS}; akgentic-tool: ~2 ms",
        target=2.0,
    )


def _measure(root: Path, observer: FakeObserver) -> list[Case]:
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

    fresh = iter(range(1_000_000))
    delete = commands[WorkspaceDeleteParam]
    created: list[str] = []

    def write_new() -> object:
        created.append(f"new/file_{next(fresh)}.txt")
        return write(path=created[-1], content=small)

    def forget_new() -> None:
        delete(path=created.pop())

    unsynced = ToolFactory([WorkspaceTool(workspace_id="bench-nosync", sync="off")], observer=observer).get_commands()
    unsynced_write, unsynced_delete = unsynced[WorkspaceWriteParam], unsynced[WorkspaceDeleteParam]
    unsynced_edit = unsynced[WorkspaceEditParam]
    unsynced_write(path="long.py", content=source)

    def unsynced_write_new() -> object:
        created.append(f"new/file_{next(fresh)}.txt")
        return unsynced_write(path=created[-1], content=small)

    def unsynced_forget_new() -> None:
        unsynced_delete(path=created.pop())

    def unsynced_restore() -> None:
        unsynced_edit(path="long.py", old_string=exact_new, new_string=exact_old)

    return [
        Case.timed("write 2 KB", _timed(lambda: write(path="small.txt", content=small), 300), "own file, fsync"),
        Case.timed(
            "write new 2 KB file",
            _timed(write_new, 300, undo=forget_new),
            "creates the file, fsync; deleted untimed after each",
            target=0.35,
        ),
        Case.timed(
            'write new 2 KB file, sync="off"',
            _timed(unsynced_write_new, 300, undo=unsynced_forget_new),
            "as above without fdatasync (the peer's durability)",
            target=0.35,
        ),
        Case.timed(
            "read 2 KB", _timed(lambda: read(path="small.txt"), 500), "numbered, enveloped, read recorded", target=0.14
        ),
        Case.timed(
            f"edit exact, {LINES:,}-line file",
            _timed(lambda: edit(path="long.py", old_string=exact_old, new_string=exact_new), 300, undo=restore),
            "3-line block",
            target=1.0,
        ),
        Case.timed(
            f'edit exact, {LINES:,}-line file, sync="off"',
            _timed(
                lambda: unsynced_edit(path="long.py", old_string=exact_old, new_string=exact_new),
                300,
                undo=unsynced_restore,
            ),
            "3-line block, without fdatasync",
            target=1.0,
        ),
        Case.timed(
            f"edit fuzzy, {LINES:,}-line file",
            _timed(lambda: edit(path="long.py", old_string=fuzzy_old, new_string=fuzzy_new), 300, undo=restore),
            "6 lines, 2 typos, other indent",
            target=2.0,
        ),
        Case.timed(
            f'edit fuzzy, {LINES:,}-line file, sync="off"',
            _timed(
                lambda: unsynced_edit(path="long.py", old_string=fuzzy_old, new_string=fuzzy_new),
                300,
                undo=lambda: unsynced_write(path="long.py", content=source),
            ),
            "6 lines, 2 typos, other indent, without fdatasync",
            target=2.0,
        ),
        Case.timed(f"read {LINES:,}-line file", _timed(lambda: read(path="long.py"), 200), "~100 KB"),
        Case.timed(
            f"glob **/*.py over {FILES:,} files",
            _timed(lambda: glob(pattern="**/*.py", path="tree"), 100),
            "",
            target=15.0,
        ),
        Case.timed(
            f"grep over {FILES:,} files",
            _timed(lambda: grep(pattern=r"def handler_5\d\d_3\b", path="tree"), 100),
            "ripgrep" if find_rg() else "python engine",
            target=8.0,
        ),
    ]


def _timed(action: Callable[[], Any], repeat: int, *, undo: Callable[[], Any] | None = None) -> Stats:
    """Wall time of ``action()`` in ms after 10 warm-ups; ``undo()`` runs untimed after each sample."""
    return measure(action, repeat=repeat, warmup=10, undo=undo)


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
    from bench.__main__ import text_table

    print(text_table(("workspace", case) for case in run()), end="")
