"""Benchmark of the workspace journal: what recording costs, and what reading it back costs.

``run()`` points ``TOOLCARDS_WORKSPACES_ROOT`` at a temporary directory (the journal then lives
in the SQLite store under it, as by default) and times, through the workspace card's commands:

* the journal's cost per workspace mutation: the same change on a card with ``journal=True``
  and one with ``journal=False``, the difference of the medians (target <= 0.5 ms), for a new
  2 KB file and for an exact edit of a 2,000-line file, with the default ``sync="normal"``
  (each file is flushed, and on ext4 that flush also writes the store's log out) and with
  ``sync="off"``;
* a scan of a tree after a command that changed nothing (what ``exec_command`` adds after each
  command): 1,000 files (target <= 5 ms) and 10,000 files (reported);
* ``workspace_history`` with 10,000 changes in the journal (target <= 5 ms), unfiltered and by
  member; the changes are committed to the journal directly (no files are written for them);
* ``workspace_undo`` of one change (target <= 5 ms): an edit of a 200-line file, undone, then
  redone untimed;
* the store's growth for 1,000 one-line edits of a 100 KB file (target <= 2 MB): the SQLite
  file's size before and after, the log checkpointed.

Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import functools
import itertools
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.timing import Case, Stats, measure
from bench.workspace_edit import _source, edit_cases
from toolcards.core._factory import ToolFactory
from toolcards.store._default import default_store
from toolcards.testing import FakeObserver
from toolcards.workspace._actor import stop_workspace_actors, workspace_hub
from toolcards.workspace._journal import Author, Journal, PathChange
from toolcards.workspace._tool import WorkspaceTool

__all__ = ["run"]

LINES = 2000
MUTATIONS = 300
WARMUP = 20
HISTORY_CHANGES = 10_000
GROWTH_EDITS = 1_000


def run() -> list[Case]:
    """Every case; takes a minute or so."""
    with _temporary_root() as root:
        try:
            with FakeObserver("Bench", "bench") as observer:
                return [
                    *_mutation_cost(observer),
                    *_mutation_cost(observer, sync="off"),
                    *_scans(root, observer),
                    *_history(observer),
                    _undo(observer),
                    _growth(root, observer),
                ]
        finally:
            stop_workspace_actors()


Command = Callable[..., Any]


def _commands(observer: FakeObserver, workspace_id: str, **card: Any) -> dict[str, Command]:
    factory = ToolFactory([WorkspaceTool(workspace_id=workspace_id, **card)], observer=observer)
    tools = {tool.name: tool for tool in factory.tools()}
    return {name: functools.partial(_call, tool) for name, tool in tools.items()}


def _call(tool: Any, **args: Any) -> Any:
    return tool.call_sync(args)


def _mutation_cost(observer: FakeObserver, sync: str = "normal") -> list[Case]:
    """The same changes with and without the journal, sampled in turn so that the machine's
    noise falls on both alike; every timed change makes content the journal has not seen."""
    source = _source(LINES)
    exact_old, exact_new, _, _ = edit_cases(source)
    small = "x" * 2047 + "\n"
    fresh = iter(range(10_000_000))
    trees = {
        journal: _commands(observer, f"cost-{sync}-{journal}", journal=journal, sync=sync) for journal in (False, True)
    }
    for run in trees.values():
        run["workspace_write"](path="long.py", content=source)
    samples: dict[tuple[str, bool], list[float]] = {
        key: [] for key in itertools.product(("new", "edit"), (False, True))
    }
    for number in range(MUTATIONS + WARMUP):
        for journal, run in trees.items():
            path = f"new/file_{next(fresh)}.txt"
            content = f"{number}\n{small}"
            started = time.perf_counter()
            run["workspace_write"](path=path, content=content)
            wrote = time.perf_counter() - started
            run["workspace_delete"](path=path)
            new = f"{exact_new}  # {next(fresh)}"
            started = time.perf_counter()
            run["workspace_edit"](path="long.py", old_string=exact_old, new_string=new)
            edited = time.perf_counter() - started
            run["workspace_edit"](path="long.py", old_string=new, new_string=exact_old)
            if number >= WARMUP:
                samples[("new", journal)].append(wrote * 1000)
                samples[("edit", journal)].append(edited * 1000)
    rows = []
    for kind, label in (("new", "a new 2 KB file"), ("edit", f"an exact edit of a {LINES:,}-line file")):
        on, off = Stats.of(samples[(kind, True)]), Stats.of(samples[(kind, False)])
        suffix = "" if sync == "normal" else f', sync="{sync}"'
        rows.append(
            Case(
                f"journal cost per mutation: {label}{suffix}",
                on.median - off.median,
                f"median with the journal {on.median:.2f} ms - without {off.median:.2f} ms; {MUTATIONS} each, "
                "interleaved, each a version the journal had not seen",
                target=0.5,
            )
        )
    return rows


def _scans(root: Path, observer: FakeObserver) -> list[Case]:
    rows = []
    for files, target in ((1_000, 5.0), (10_000, None)):
        workspace_id = f"scan-{files}"
        run = _commands(observer, workspace_id)
        tree = root / workspace_id
        for number in range(files):
            folder = tree / f"d{number % 50:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{number}.py").write_text(f"value = {number}\n")
        run["workspace_history"](limit=1)  # the first scan: the tree is adopted as it is
        actor = workspace_hub(tree).actor()
        stats = measure(lambda actor=actor: actor.scan().get(), repeat=50 if files < 5_000 else 10, warmup=3)
        rows.append(
            Case.timed(
                f"scan after a command that changed nothing, {files:,} files",
                stats,
                "what exec_command adds after a command (before it: the same); 50 directories",
                target=target,
            )
        )
        rows.append(
            Case.timed(
                f"os.scandir + lstat of the same {files:,} files",
                measure(lambda tree=tree: _bare_scan(tree), repeat=50 if files < 5_000 else 10, warmup=3),
                "the floor: the system calls a scan cannot avoid, with nothing else",
            )
        )
    return rows


def _bare_scan(root: Path) -> None:
    for directory in os.scandir(root):
        if directory.is_dir(follow_symlinks=False):
            for entry in os.scandir(directory.path):
                entry.stat(follow_symlinks=False)


def _history(observer: FakeObserver) -> list[Case]:
    run = _commands(observer, "history")
    run["workspace_write"](path="seed.txt", content="seed\n")
    journal = _journal("history")
    members = [f"@Member{n}" for n in range(10)]
    last: dict[str, bytes] = {}
    for number in range(HISTORY_CHANGES - 1):
        path, content = f"src/module_{number % 500}.py", f"v{number}\n".encode()
        journal.commit(
            journal.prepare([PathChange(path=path, before=last.get(path), after=content)]),
            Author(member=members[number % 10], team="bench", task_id=number % 40),
            tool="workspace_write",
        )
        last[path] = content
    tree = Path(os.environ["TOOLCARDS_WORKSPACES_ROOT"]) / "history"
    for path, content in last.items():  # the tree holds what the journal says, as if written by the tools
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(content)
    return [
        Case.timed(
            f"workspace_history, {HISTORY_CHANGES:,} changes",
            measure(run["workspace_history"], repeat=200, warmup=10),
            "the newest 20, through the command (a scan of the small tree included)",
            target=5.0,
        ),
        Case.timed(
            f"workspace_history by member and path, {HISTORY_CHANGES:,} changes",
            measure(lambda: run["workspace_history"](agent="@Member3", path="src"), repeat=200, warmup=10),
            "1 member in 10",
            target=5.0,
        ),
    ]


def _undo(observer: FakeObserver) -> Case:
    run = _commands(observer, "undo")
    text = _numbered(200)
    run["workspace_write"](path="notes.py", content=text)
    line = text.split("\n")[100]

    def edit() -> None:
        run["workspace_edit"](path="notes.py", old_string=line, new_string=line + "  # changed")

    def undo() -> object:
        return run["workspace_undo"]()

    edit()
    stats = measure(undo, repeat=100, warmup=5, undo=run["workspace_undo"])
    return Case.timed(
        "workspace_undo of one change",
        stats,
        "the last edit of a 200-line file, through the command (scan, plan, write, record); redone untimed",
        target=5.0,
    )


def _growth(root: Path, observer: FakeObserver) -> Case:
    run = _commands(observer, "growth")
    text = _numbered(2_500)
    run["workspace_write"](path="big.py", content=text)
    database = root / ".toolcards" / "state.db"
    before = _database_bytes(database)
    count = text.count("\n")
    for number in range(GROWTH_EDITS):
        target = text.split("\n")[number % count]
        if not target:
            continue
        changed = f"{target}  # edit {number}"
        run["workspace_edit"](path="big.py", old_string=target + "\n", new_string=changed + "\n")
        text = text.replace(target + "\n", changed + "\n", 1)
    grown = (_database_bytes(database) - before) / (1024 * 1024)
    return Case(
        f"store growth, {GROWTH_EDITS:,} one-line edits of a 100 KB file",
        grown,
        "the SQLite file's growth, its log checkpointed (index rows, deltas, a full copy every 64 versions)",
        unit="MB",
        target=2.0,
    )


def _numbered(count: int) -> str:
    """``count`` distinct lines of about 40 characters (a 100 KB file at 2,500)."""
    return "".join(f"{n:05d}    total_{n} = compute(items[{n % 97}], limit={n * 7 % 1000})\n" for n in range(count))


def _journal(workspace_id: str) -> Journal:
    root = Path(os.environ["TOOLCARDS_WORKSPACES_ROOT"]) / workspace_id
    journal = workspace_hub(root).journal
    assert journal is not None
    return journal


def _database_bytes(path: Path) -> int:
    default_store()  # the bench's store is open: checkpoint its log through a second connection
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size, pages, free = (
            conn.execute("PRAGMA page_size").fetchone()[0],
            conn.execute("PRAGMA page_count").fetchone()[0],
            conn.execute("PRAGMA freelist_count").fetchone()[0],
        )
    return int(page_size * (pages - free))


@contextmanager
def _temporary_root() -> Iterator[Path]:
    previous = os.environ.get("TOOLCARDS_WORKSPACES_ROOT")
    stored = os.environ.pop("TOOLCARDS_STORE", None)
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-journal-") as directory:
        os.environ["TOOLCARDS_WORKSPACES_ROOT"] = directory
        try:
            yield Path(directory)
        finally:
            from toolcards.store._default import close_default_stores

            stop_workspace_actors()
            close_default_stores()
            if previous is None:
                os.environ.pop("TOOLCARDS_WORKSPACES_ROOT", None)
            else:
                os.environ["TOOLCARDS_WORKSPACES_ROOT"] = previous
            if stored is not None:
                os.environ["TOOLCARDS_STORE"] = stored
