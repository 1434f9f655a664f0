"""``workspace_export_git``: the journal as a git repository, one commit per change."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.workspace.test_journal import Member
from toolcards import COMMAND, TOOL_CALL, ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool


def git(repository: Path, *args: str) -> str:
    done = subprocess.run(["git", "--git-dir", str(repository), *args], capture_output=True, text=True, check=True)
    return done.stdout


def test_every_change_becomes_a_commit_by_its_member(alice: FakeObserver, bob: FakeObserver, tmp_path: Path) -> None:
    a, b = Member(alice), Member(bob)
    (a.root / "seed.txt").write_text("there before\n")
    a("workspace_history")  # the first scan: seed.txt is in the journal's baseline
    a("workspace_write", path="plan.md", content="one\n")
    b("workspace_read", path="plan.md")
    b("workspace_edit", path="plan.md", old_string="one", new_string="two")
    (a.root / "seed.txt").write_text("changed outside\n")
    a("workspace_move", source="plan.md", destination="docs/plan.md")
    a("workspace_undo")
    repository = tmp_path / "journal.git"
    assert a.tools["workspace_export_git"].call_sync({"dest": str(repository)}, channel=COMMAND) == (
        f"Exported 5 changes to branch journal of the git repository {repository}."
    )
    log = git(repository, "log", "--reverse", "--format=%an|%ae|%s", "journal").splitlines()
    assert log == [
        # seed.txt as the journal first saw it, before the oldest change it keeps.
        "toolcards|toolcards@workspace|The files before the first change kept.",
        "Alice|Alice@team-1|workspace_write: created plan.md",
        "Bob|Bob@team-1|workspace_edit: changed plan.md",
        "Alice|Alice@team-1|workspace_move: moved plan.md to docs/plan.md",
        # Noticed by the scan the undo starts with.
        "outside|outside@workspace|outside: changed seed.txt",
        "Alice|Alice@team-1|workspace_undo: deleted docs/, deleted docs/plan.md, created plan.md",
    ], "\n".join(log)
    assert git(repository, "show", "journal:plan.md") == "two\n"
    assert git(repository, "show", "journal:seed.txt") == "changed outside\n"
    assert git(repository, "show", "journal~5:seed.txt") == "there before\n"
    assert "Change: 2" in git(repository, "log", "--format=%B", "-1", "journal~3")

    # Exporting again gives the same commits.
    head = git(repository, "rev-parse", "journal")
    a.tools["workspace_export_git"].call_sync({"dest": str(repository)}, channel=COMMAND)
    assert git(repository, "rev-parse", "journal") == head


def test_it_is_a_command_only_and_refuses_bad_destinations(alice: FakeObserver, tmp_path: Path) -> None:
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    assert "workspace_export_git" not in {t.name for t in factory.tools(TOOL_CALL)}
    tool = {t.name: t for t in factory.tools()}["workspace_export_git"]
    root: Path = factory.cards[0].root  # type: ignore[attr-defined]
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file.txt").write_text("x")
    with pytest.raises(Exception, match="neither a git repository nor an empty directory"):
        tool.call_sync({"dest": str(busy)}, channel=COMMAND)
    with pytest.raises(Exception, match="is inside the workspace"):
        tool.call_sync({"dest": str(root / "export")}, channel=COMMAND)
