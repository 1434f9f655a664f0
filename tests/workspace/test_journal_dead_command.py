"""A command whose server was killed (``kill -9``) while it ran: what it changed is its own,
what changes after its process is gone is not.

The command runs in a real child process (as under ``toolcards serve``), registered as running
in the journal the way the sandbox registers its commands; the child is then killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolcards import COMMAND, TOOL_CALL, ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool

TOOLS = {"workspace_history": {"expose": [TOOL_CALL, COMMAND]}}

RUN_A_COMMAND_AND_HANG = """
import time
from toolcards import ToolFactory
from toolcards.core._services import WORKSPACE_COMMANDS
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool

with FakeObserver("Runner", "team-1") as runner:
    card = WorkspaceTool()
    ToolFactory([card], observer=runner)
    with runner.team.service(WORKSPACE_COMMANDS)(card.root, "@Runner", "make", 600):
        (card.root / "built.txt").write_text("made by the command\\n")
        print("running", flush=True)
        time.sleep(600)
"""


@pytest.fixture(autouse=True)
def history_scans_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolcards.workspace._tool.HISTORY_SCAN_INTERVAL_S", 0.0)


def test_changes_after_a_killed_commands_process_are_not_its(isolated_root: Path, alice: FakeObserver) -> None:
    (isolated_root / "team-1").mkdir(parents=True)
    history = next(
        t for t in ToolFactory([WorkspaceTool(**TOOLS)], observer=alice).tools() if t.name == "workspace_history"
    )
    history.call_sync({}, channel=TOOL_CALL)  # the first scan adopts the (empty) tree
    child = subprocess.Popen(
        [sys.executable, "-c", RUN_A_COMMAND_AND_HANG], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "running\n"
    finally:
        child.kill()
        child.wait()
    first = str(history.call_sync({}, channel=TOOL_CALL))
    assert "@Runner exec_command: created built.txt" in first  # the dead command's own work

    (isolated_root / "team-1" / "notes.txt").write_text("typed in an editor later\n")
    later = str(history.call_sync({}, channel=TOOL_CALL))
    assert "outside: created notes.txt" in later
    assert "exec_command: created notes.txt" not in later
