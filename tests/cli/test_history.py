"""``toolcards history`` and ``toolcards undo``: the workspace journal from the command line.

Each command is a real process (``python -m toolcards.cli``) on the same tree and the same
store, as an operator beside a running team would use them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TEAM = "team_id: crew\ncards:\n  - kind: workspace\n"


@pytest.fixture
def team(tmp_path: Path) -> Path:
    config = tmp_path / "team.yaml"
    config.write_text(TEAM)
    (tmp_path / "workspaces" / "crew").mkdir(parents=True)
    return config


def toolcards(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(config.parent / "workspaces")}
    env.pop("TOOLCARDS_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "toolcards.cli", *args[:1], "--config", str(config), *args[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=config.parent,
        check=False,
    )


@pytest.mark.slow
def test_history_diff_and_undo_from_the_command_line(team: Path) -> None:
    tree = team.parent / "workspaces" / "crew"
    (tree / "notes.md").write_text("first\n")
    assert toolcards(team, "history").stdout == "The journal holds no change yet.\n"
    (tree / "notes.md").write_text("first\nsecond\n")
    assert toolcards(team, "history").stdout.split(" ", 3)[3] == "outside: changed notes.md\n"
    wrote = toolcards(team, "call", "--agent", "Ann", "/workspace_write", "path=plan.md", "content=ship it")
    assert wrote.returncode == 0, wrote.stderr

    listed = toolcards(team, "history")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split(" ", 3)[3] for line in lines] == [
        "@Ann workspace_write: created plan.md",
        "outside: changed notes.md",
    ]
    assert "UNTRUSTED" not in listed.stdout
    assert toolcards(team, "history", "--member", "Ann").stdout.count("\n") == 1
    assert toolcards(team, "history", "--path", "notes.md", "--limit", "5").stdout.splitlines() == lines[1:]

    diff = toolcards(team, "history", "--diff", "1")
    assert diff.returncode == 0 and " first\n+second\n" in diff.stdout

    dry = toolcards(team, "undo", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("Undoing change 1 (made outside the tools) would change 1 path (dry run")
    assert (tree / "notes.md").read_text() == "first\nsecond\n"

    undone = toolcards(team, "undo", "--member", "outside", "--since", "1")
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.splitlines()[-1] == "This undo is change 3; undo it to redo."
    assert (tree / "notes.md").read_text() == "first\n"
    assert toolcards(team, "history", "--limit", "1").stdout.split(" ", 3)[3] == (
        "@cli workspace_undo: changed notes.md (undid 1)\n"
    )
    assert toolcards(team, "undo", "3").returncode == 0
    assert (tree / "notes.md").read_text() == "first\nsecond\n"


@pytest.mark.slow
def test_bad_requests_fail_with_one_clear_line_and_change_nothing(team: Path) -> None:
    tree = team.parent / "workspaces" / "crew"
    (tree / "a.txt").write_text("a\n")

    unknown = toolcards(team, "undo", "42")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("Error: There is no change 42 in the journal (it is empty).")
    escape = toolcards(team, "history", "--path", "../../etc")
    assert escape.returncode == 1 and "path escapes the workspace root" in escape.stderr
    usage = toolcards(team, "undo", "not-a-number")
    assert usage.returncode == 2 and "'not-a-number' is not a positive whole number" in usage.stderr
    for option in ("--limit", "--task", "--diff"):
        zero = toolcards(team, "history", option, "0")
        assert zero.returncode == 2 and f"argument {option}: '0' is not a positive whole number" in zero.stderr
    (team.parent / "bare.yaml").write_text("team_id: crew\ncards:\n  - kind: planning\n")
    missing = toolcards(team.parent / "bare.yaml", "history")
    assert missing.returncode == 2 and "offer no workspace_history command" in missing.stderr
    assert (tree / "a.txt").read_text() == "a\n"


def test_history_on_a_root_that_does_not_exist_starts_no_team(team: Path) -> None:
    # A mistyped root: refused in words, not given a new store and an empty journal.
    mistyped = team.parent / "workspace"
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(mistyped)}
    env.pop("TOOLCARDS_STORE", None)
    for command in ("history", "undo"):
        done = subprocess.run(
            [sys.executable, "-m", "toolcards.cli", command],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=team.parent,
            check=False,
        )
        assert done.returncode == 1 and f"toolcards {command} found no team" in done.stderr
    assert not mistyped.exists()


@pytest.mark.slow
def test_history_exports_the_journal_as_a_git_repository(team: Path) -> None:
    assert toolcards(team, "history").returncode == 0  # the team's store is made
    wrote = toolcards(team, "call", "--agent", "Ann", "/workspace_write", "path=plan.md", "content=ship it")
    assert wrote.returncode == 0, wrote.stderr
    exported = toolcards(team, "history", "--export-git", "journal.git")
    assert exported.returncode == 0, exported.stderr
    repository = team.parent / "journal.git"
    assert exported.stdout == f"Exported 1 change to branch journal of the git repository {repository}.\n"
    log = subprocess.run(
        ["git", "--git-dir", str(repository), "log", "--format=%an %s", "journal"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout == "Ann workspace_write: created plan.md\n"
