"""Two OS processes editing and undoing on one tree, sharing one journal through the store.

Each child binds its own card in its own process (``spawn``), so each has its own actor,
its own cache of the journal and its own connection to the SQLite store; the tree lock and
the store's transactions are all that keep them apart.
"""

from __future__ import annotations

import multiprocessing
import re
import traceback
from multiprocessing.synchronize import Barrier
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

from toolcards import COMMAND, TOOL_CALL, ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._actor import stop_workspace_actors
from toolcards.workspace._tool import WorkspaceTool

SPAWN = multiprocessing.get_context("spawn")
FILES = 8
WAIT_S = 120
"""How long the parent waits for a child at most (a bound for a broken run, not a timing assertion)."""
CARD: dict[str, Any] = {name: {"expose": [TOOL_CALL, COMMAND]} for name in ("workspace_history", "workspace_undo")}


def tools_of(observer: FakeObserver) -> dict[str, Any]:
    return {tool.name: tool for tool in ToolFactory([WorkspaceTool(**CARD)], observer=observer).tools()}


def call(tools: dict[str, Any], name: str, **args: Any) -> str:
    return str(tools[name].call_sync(args, channel=TOOL_CALL))


def ids(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^#(\d+) ", text, re.MULTILINE)]


def member(name: str, other: str, ready: Barrier, results: Any) -> None:
    """Write and edit this member's files, then undo one of its own edits and one of the other's."""
    try:
        with FakeObserver(name, "team-1") as agent:
            tools = tools_of(agent)
            ready.wait(timeout=WAIT_S)
            for n in range(FILES):
                path = f"{name}/{n}.txt"
                call(tools, "workspace_write", path=path, content=f"{name} {n} first\n")
                call(tools, "workspace_read", path=path)
                call(tools, "workspace_edit", path=path, old_string="first", new_string="second")
            ready.wait(timeout=WAIT_S)  # both have made every change
            theirs = ids(call(tools, "workspace_history", agent=other, path=f"{other}/3.txt"))
            call(tools, "workspace_undo", change_id=theirs[0])  # the other's edit of 3.txt
            call(tools, "workspace_undo", path=f"{name}/5.txt")  # the last change of our own 5.txt
            ready.wait(timeout=WAIT_S)
        stop_workspace_actors()
        results.put((name, "ok"))
    except BaseException:
        results.put((name, traceback.format_exc()))


@pytest.mark.slow
def test_two_processes_edit_and_undo_on_one_tree(isolated_root: Path, alice: FakeObserver) -> None:
    (isolated_root / "team-1").mkdir(parents=True)
    ready = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    children = [
        SPAWN.Process(target=member, args=(me, you, ready, results)) for me, you in (("Ann", "Ben"), ("Ben", "Ann"))
    ]
    for child in children:
        child.start()
    outcomes = {}
    try:
        for _ in children:
            name, outcome = results.get(timeout=WAIT_S)
            outcomes[name] = outcome
    except Empty:
        pytest.fail(f"a child did not answer: {outcomes}")
    finally:
        for child in children:
            child.join(timeout=WAIT_S)
    assert outcomes == {"Ann": "ok", "Ben": "ok"}

    root = isolated_root / "team-1"
    for name in ("Ann", "Ben"):
        for n in range(FILES):
            expected = "first" if n in (3, 5) else "second"
            assert (root / name / f"{n}.txt").read_text() == f"{name} {n} {expected}\n"
    tools = tools_of(alice)
    history = call(tools, "workspace_history", limit=100)
    numbers = ids(history)
    assert numbers == list(range(4 * FILES + 4, 0, -1))  # one gapless sequence across both processes
    assert len(re.findall(r"@Ann workspace_undo: ", history)) == 2
    assert len(re.findall(r"@Ben workspace_undo: ", history)) == 2
    # Ben's undo of Ann's edit of 3.txt, undone from a third process: Ann's edit is back.
    bens_undo = ids(call(tools, "workspace_history", agent="@Ben", path="Ann/3.txt"))[0]
    call(tools, "workspace_undo", change_id=bens_undo)
    assert (root / "Ann" / "3.txt").read_text() == "Ann 3 second\n"
