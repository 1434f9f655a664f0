"""What sandboxed commands change is journaled as their member's ``exec_command``, and undone.

The exec card runs each command inside the team's ``workspace_commands`` service, which the
workspace card offers: the tree is scanned before and after the command.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from toolcards import COMMAND, TOOL_CALL, ToolFactory
from toolcards.planning import PlanningTool
from toolcards.sandbox import ExecTool
from toolcards.sandbox._bwrap import bwrap_available
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool

BOTH = {"expose": [TOOL_CALL, COMMAND]}


def team_tools(observer: FakeObserver, mode: str, **workspace: Any) -> dict[str, Any]:
    if mode == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not installed or cannot create namespaces here")
    cards = [
        WorkspaceTool(workspace_history=BOTH, workspace_undo=BOTH, workspace_diff=BOTH, **workspace),
        ExecTool(mode=mode, allowed_commands=[]),
        PlanningTool(),
    ]
    return {tool.name: tool for tool in ToolFactory(cards, observer=observer).tools()}


def call(tools: dict[str, Any], name: str, **args: Any) -> str:
    return str(tools[name].call_sync(args, channel=TOOL_CALL))


@pytest.mark.parametrize("mode", ["bwrap", "local"])
def test_a_sed_over_fifty_files_is_undone_byte_for_byte(alice: FakeObserver, isolated_root: Path, mode: str) -> None:
    tools = team_tools(alice, mode)
    tree = isolated_root / "team-1"
    originals: dict[str, bytes] = {}
    for n in range(50):
        data = b"".join(b"%d: alpha beta\r\n" % line for line in range(n + 1)) + (b"no newline" if n % 2 else b"")
        (tree / f"f{n:02d}.txt").write_bytes(data)
        os.chmod(tree / f"f{n:02d}.txt", 0o640 if n % 3 else 0o600)
        originals[f"f{n:02d}.txt"] = data
    call(tools, "update_planning", create_tasks=[{"description": "rename alpha"}])
    call(tools, "claim_task", task_id=1)

    call(tools, "exec_command", cmd="sed -i 's/alpha/gamma/' *.txt")
    assert all((tree / name).read_bytes() != data for name, data in originals.items())
    top = call(tools, "workspace_history", limit=1)
    entry = re.search(
        r"#(\d+) \S+ \S+ @Alice exec_command task 1: changed f00\.txt, changed f01\.txt, .* and 47 more", top
    )
    assert entry is not None, top
    assert "$ sed -i 's/alpha/gamma/' *.txt" in call(tools, "workspace_diff", change_id=int(entry[1]))

    answer = call(tools, "workspace_undo", change_id=int(entry[1]))
    assert answer.startswith(f"Undid change {entry[1]} (exec_command by @Alice), 50 paths:")
    for name, data in originals.items():
        assert (tree / name).read_bytes() == data
    modes = {name: os.stat(tree / name).st_mode & 0o777 for name in originals}
    assert modes == {name: 0o640 if int(name[1:3]) % 3 else 0o600 for name in originals}


@pytest.mark.parametrize("mode", ["bwrap"])
def test_changes_before_a_command_are_not_its_own(alice: FakeObserver, isolated_root: Path, mode: str) -> None:
    tools = team_tools(alice, mode)
    tree = isolated_root / "team-1"
    call(tools, "exec_command", cmd="true")  # the first scan adopts the tree
    (tree / "editor.txt").write_text("saved by an editor\n")

    call(tools, "exec_command", cmd="echo built > build.log && mkdir -p out && echo x > out/a")
    lines = call(tools, "workspace_history").split("\n")
    assert any(
        re.search(r"@Alice exec_command: created build\.log, created out/, created out/a$", line) for line in lines
    )
    assert any(re.search(r" outside: created editor\.txt$", line) for line in lines)
    call(tools, "workspace_undo", agent="@Alice", since="1")
    assert sorted(p.name for p in tree.iterdir()) == ["editor.txt"]


def test_without_a_journal_commands_run_as_before(alice: FakeObserver, isolated_root: Path) -> None:
    tools = team_tools(alice, "local", journal=False)
    assert "hello" in call(tools, "exec_command", cmd="echo hello > a.txt && cat a.txt")
    assert (isolated_root / "team-1" / "a.txt").read_text() == "hello\n"


def test_a_background_run_is_journaled_when_it_ends(alice: FakeObserver, isolated_root: Path) -> None:
    cards = [
        WorkspaceTool(workspace_history=BOTH, workspace_undo=BOTH),
        ExecTool(mode="local", allowed_commands=[], max_background_runs=1),
    ]
    tools = {tool.name: tool for tool in ToolFactory(cards, observer=alice).tools()}
    tree = isolated_root / "team-1"
    started = call(tools, "exec_command", cmd="sh -c 'sleep 0.2; echo built > made.txt'", background=True)
    run_id = started.split("Started background run ", 1)[1].split(" ", 1)[0]
    deadline = time.monotonic() + 20
    while "exit code 0" not in call(tools, "exec_status", run_id=run_id) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tree / "made.txt").read_text() == "built\n"
    history = call(tools, "workspace_history", limit=1)
    assert re.search(r"@Alice exec_command: (added|created) made\.txt", history), history
