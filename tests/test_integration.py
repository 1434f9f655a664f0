"""Cards working together the way a team uses them."""

from __future__ import annotations

from toolcards import ToolFactory
from toolcards.sandbox._tool import ExecTool
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool, stop_workspace_actors


def test_a_command_changing_a_file_is_seen_by_the_write_gate(alice: FakeObserver, bob: FakeObserver) -> None:
    try:
        as_alice = ToolFactory([WorkspaceTool(), ExecTool(mode="local")], observer=alice).command_registry()
        as_bob = ToolFactory([ExecTool(mode="local")], observer=bob).command_registry()
        assert as_alice.dispatch("/workspace_write notes.txt 'first line'").startswith("Created notes.txt")
        assert "first line" in as_alice.dispatch("/workspace_read notes.txt")
        # Bob's command rewrites the file behind the workspace tools' back.
        assert "exit code: 0" in as_bob.dispatch("/exec_command \"sh -c 'echo rewritten > notes.txt'\"")
        refusal = as_alice.dispatch("/workspace_write notes.txt 'second line'")
        assert refusal.startswith("Error:")
        assert "changed outside the workspace tools" in refusal
        assert "rewritten" in refusal  # the diff shows what changed
        # After re-reading, the write goes through and nothing was lost silently.
        assert "rewritten" in as_alice.dispatch("/workspace_read notes.txt")
        assert as_alice.dispatch("/workspace_write notes.txt 'second line'").startswith("Wrote notes.txt")
    finally:
        stop_workspace_actors()
