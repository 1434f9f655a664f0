"""One team, wherever the command runs: the lookup order seen from outside, as real processes.

Every process here runs ``python -m toolcards.cli`` with no ``TOOLCARDS_STORE``,
``TOOLCARDS_WORKSPACES_ROOT`` or ``XDG_DATA_HOME`` and with ``HOME`` in the test's temporary
directory, so the per-user directory is ``<tmp>/home/.local/share/toolcards`` and nothing
touches the real home.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from toolcards.core._lookup import find_config
from toolcards.store import SQLiteStore
from toolcards.vector._assets import models_dir

pytestmark = pytest.mark.slow

TIMEOUT_S = 120
CREATE = '[{"description": "Found from anywhere"}]'


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """The environment of a user who set nothing: only ``HOME`` (the test's own)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCARDS_") and k != "XDG_DATA_HOME"}
    # The embedding model is found where this process finds it, not in the new home.
    return {**clean, "HOME": str(home), "TOOLCARDS_MODELS_DIR": str(models_dir())}


def toolcards(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolcards.cli", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit code {done.returncode}: {done.stderr}"
    return done.stdout


def dashboard_store(cwd: Path, env: dict[str, str]) -> str:
    """The store ``toolcards dashboard`` says it reads, started in ``cwd`` (then stopped)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "toolcards.cli", "dashboard", "--port", "0"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen: list[str] = []
        while True:
            line = process.stderr.readline()
            assert line, f"the dashboard ended: {''.join(seen)}"
            seen.append(line)
            if line.startswith("toolcards: reading team default from "):
                return line.removeprefix("toolcards: reading team default from ").strip()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def test_a_project_s_team_is_the_same_from_every_subdirectory(tmp_path: Path, env: dict[str, str], home: Path) -> None:
    project = tmp_path / "project"
    nested = project / "src" / "package" / "deep"
    nested.mkdir(parents=True)

    ok(toolcards(project, env, "init"))
    assert (project / "toolcards.toml").is_file()
    store = project / "workspaces" / ".toolcards" / "state.db"
    assert store.is_file()  # init starts the team's store

    assert ok(toolcards(project, env, "call", "/update_planning", f"create_tasks={CREATE}")) == "Created task 1.\n"
    # From a subdirectory, a command that reads the team finds the same one, task and all.
    assert "#1 [pending] Found from anywhere" in ok(toolcards(nested, env, "call", "/get_planning"))
    info = json.loads(ok(toolcards(nested, env, "info", "--json")))
    assert (info["store"]["location"], info["store"]["step"]) == (str(store), "project")
    assert info["root"]["path"] == str(project / "workspaces")
    assert info["teams"]["default"]["#PlanningTool"]["rows"]["tasks"] == 1
    assert dashboard_store(nested, env) == f"{store} (chosen by {project / 'toolcards.toml'})"
    assert not (home / ".local").exists()  # the per-user directory was never reached


def test_without_a_project_file_every_directory_shares_the_per_user_team(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "elsewhere" / "two"
    one.mkdir()
    two.mkdir(parents=True)
    if find_config(one) is not None:
        pytest.skip(f"{find_config(one)} above the test's directory decides where its team lives")
    user_store = home / ".local" / "share" / "toolcards" / "workspaces" / ".toolcards" / "state.db"

    # serve starts the team where the lookup lands (stdin is closed at once: it starts and stops).
    ok(toolcards(one, env, "serve"))
    assert user_store.is_file()
    assert ok(toolcards(one, env, "call", "/update_planning", f"create_tasks={CREATE}")) == "Created task 1.\n"

    assert "Found from anywhere" in ok(toolcards(two, env, "call", "/get_planning"))
    info = json.loads(ok(toolcards(two, env, "info", "--json")))
    assert (info["store"]["location"], info["store"]["step"]) == (str(user_store), "user")
    assert not (one / "workspaces").exists() and not (two / "workspaces").exists()


def test_xdg_data_home_moves_the_per_user_team(tmp_path: Path, env: dict[str, str]) -> None:
    here = tmp_path / "here"
    here.mkdir()
    env = {**env, "XDG_DATA_HOME": str(tmp_path / "data")}
    ok(toolcards(here, env, "serve"))
    assert (tmp_path / "data" / "toolcards" / "workspaces" / ".toolcards" / "state.db").is_file()


@pytest.mark.parametrize(
    "command",
    [["call", "/get_planning"], ["dashboard", "--port", "0"], ["backup", "copy.db"], ["info"]],
    ids=lambda command: command[0],
)
def test_a_command_that_reads_a_team_never_starts_an_empty_one(
    tmp_path: Path, env: dict[str, str], home: Path, command: list[str]
) -> None:
    here = tmp_path / "here"
    here.mkdir()

    done = toolcards(here, env, *command)

    assert done.returncode == 1, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"toolcards: error: toolcards {command[0]} found no team: its store ")
    user = home / ".local" / "share" / "toolcards" / "workspaces"
    for step in (
        "1. explicit (--store, --root): not given",
        "2. environment (TOOLCARDS_STORE, TOOLCARDS_WORKSPACES_ROOT): not set",
        f"3. project file: no toolcards.toml in {here} or its parents",
        f"4. ./workspaces: {here / 'workspaces' / '.toolcards'} does not exist",
        f"5. per-user directory: {user}",
    ):
        assert step in error, error
    assert "toolcards init" in error and "--store or --root" in error
    assert list(here.iterdir()) == [] and list(home.iterdir()) == []  # nothing was created


def test_a_legacy_workspaces_directory_keeps_its_team_and_init_makes_it_explicit(
    tmp_path: Path, env: dict[str, str]
) -> None:
    here = tmp_path / "old-project"
    (here / "workspaces" / ".toolcards").mkdir(parents=True)
    SQLiteStore(here / "workspaces" / ".toolcards" / "state.db").close()  # as an earlier version left it
    ok(toolcards(here, env, "call", "/update_planning", f"create_tasks={CREATE}"))

    done = toolcards(here, env, "call", "/get_planning")

    assert "Found from anywhere" in ok(done)
    (note,) = done.stderr.splitlines()  # said once, on stderr
    assert f"using the team in {here / 'workspaces'}" in note and "toolcards init" in note

    ok(toolcards(here, env, "init"))
    assert 'root = "workspaces"' in (here / "toolcards.toml").read_text()
    done = toolcards(here, env, "call", "/get_planning")
    assert "Found from anywhere" in ok(done) and done.stderr == ""  # the same team, and nothing to say


def test_root_on_the_command_line_comes_before_the_project_file(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ok(toolcards(project, env, "init"))
    other = tmp_path / "other-root"
    ok(toolcards(project, env, "serve", "--root", str(other)))

    info = json.loads(ok(toolcards(project, env, "info", "--json", "--root", str(other))))

    assert (info["root"]["path"], info["root"]["step"]) == (str(other), "explicit")
    assert info["store"]["location"] == str(other / ".toolcards" / "state.db")
    assert info["project_file"] == {"path": str(project / "toolcards.toml"), "used": False}
