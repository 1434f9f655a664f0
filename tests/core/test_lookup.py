"""Where a team lives: the lookup order, step by step, in this process.

Each test starts from nothing (no option, no environment, an empty per-user directory of its
own) and adds one step at a time; the subprocess tests in ``tests/cli/test_locations.py``
check the same order through the command line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolcards.core._lookup import (
    CONFIG_FILE,
    Step,
    config_values,
    find_config,
    forget_lookup,
    locate,
    use_locations,
    user_data_dir,
)
from toolcards.errors import WiringError
from toolcards.fs._locations import store_location, store_path, workspaces_root


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with nothing around it: no option, no environment, no project file."""
    monkeypatch.delenv("TOOLCARDS_WORKSPACES_ROOT", raising=False)
    monkeypatch.delenv("TOOLCARDS_STORE", raising=False)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    forget_lookup()
    return here


def test_with_nothing_named_the_team_lives_in_the_per_user_directory(nowhere: Path, tmp_path: Path) -> None:
    found = locate()
    user = tmp_path / "xdg-data" / "toolcards" / "workspaces"  # XDG_DATA_HOME, set by the root conftest
    assert (found.root, found.root_step) == (user, Step.USER)
    assert (found.store, found.store_step) == (str(user / ".toolcards" / "state.db"), Step.USER)
    assert [step for step, _ in found.trail] == list(Step)
    assert not user.exists()  # looking creates nothing


def test_the_xdg_rule_takes_an_absolute_data_home_only(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(nowhere / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    assert user_data_dir() == nowhere / "home" / ".local" / "share" / "toolcards"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert user_data_dir() == nowhere / "home" / ".local" / "share" / "toolcards"
    monkeypatch.setenv("XDG_DATA_HOME", str(nowhere / "data"))
    assert user_data_dir() == nowhere / "data" / "toolcards"


def test_a_project_file_in_a_parent_is_found_and_resolved_against_its_directory(nowhere: Path) -> None:
    project = nowhere / "project"
    (project / "src" / "deep").mkdir(parents=True)
    (project / CONFIG_FILE).write_text('root = "spaces"\nstore = "state/team.db"\n')
    os.chdir(project / "src" / "deep")

    found = locate()

    assert found.config == project / CONFIG_FILE == find_config()
    assert (found.root, found.root_step) == (project / "spaces", Step.PROJECT)
    assert (found.store, found.store_step) == (str(project / "state" / "team.db"), Step.PROJECT)


def test_an_empty_project_file_means_workspaces_beside_it(nowhere: Path) -> None:
    (nowhere / CONFIG_FILE).write_text("")
    found = locate()
    assert found.root == nowhere / "workspaces"
    assert found.store == str(nowhere / "workspaces" / ".toolcards" / "state.db")


def test_a_project_file_may_name_a_database_url_and_home_paths(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(nowhere / "home"))
    path = nowhere / CONFIG_FILE
    path.write_text('root = "~/spaces"\nstore = "postgresql://team:secret@db/toolcards"\n')
    assert config_values(path) == {
        "root": str(nowhere / "home" / "spaces"),
        "store": "postgresql://team:secret@db/toolcards",
    }
    assert "secret" not in locate().trail_text()  # the trail is printed: passwords are masked


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('stor = "x.db"\n', ["unknown key 'stor'", "root and store"]),
        ("root = [\n", ["is not valid TOML"]),
        ("root = 3\n", ["root must be a non-empty string", "3"]),
        ('store = ""\n', ["store must be a non-empty string"]),
    ],
)
def test_a_project_file_that_could_pick_the_wrong_team_is_refused(
    nowhere: Path, content: str, named: list[str]
) -> None:
    (nowhere / CONFIG_FILE).write_text(content)
    with pytest.raises(WiringError) as raised:
        locate()
    assert str(nowhere / CONFIG_FILE) in str(raised.value)
    for text in named:
        assert text in str(raised.value)


def test_the_environment_comes_before_the_project_file(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (nowhere / CONFIG_FILE).write_text('root = "from-file"\n')
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", "from-env")  # relative: to the working directory

    found = locate()

    # The store follows the root the environment names, as it always did.
    assert (found.root, found.root_step) == (nowhere / "from-env", Step.ENVIRONMENT)
    assert (found.store, found.store_step) == (str(nowhere / "from-env" / ".toolcards" / "state.db"), Step.ENVIRONMENT)
    assert found.config is None  # not reached


def test_a_store_named_alone_leaves_the_root_to_later_steps(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (nowhere / CONFIG_FILE).write_text('root = "files"\nstore = "ignored.db"\n')
    monkeypatch.setenv("TOOLCARDS_STORE", "postgresql://db/team")

    found = locate()

    assert (found.store, found.store_step, found.store_reason) == (
        "postgresql://db/team",
        Step.ENVIRONMENT,
        "TOOLCARDS_STORE",
    )
    assert (found.root, found.root_step) == (nowhere / "files", Step.PROJECT)
    assert store_location() == "postgresql://db/team"


def test_an_explicit_choice_comes_first_and_a_root_alone_brings_its_store(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(nowhere / "env.db"))
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(nowhere / "env-root"))
    use_locations(root="chosen")

    found = locate()

    assert (found.root, found.root_step) == (nowhere / "chosen", Step.EXPLICIT)
    assert (found.store, found.store_step) == (str(nowhere / "chosen" / ".toolcards" / "state.db"), Step.EXPLICIT)
    assert found.store_reason == "--root"
    use_locations(store=nowhere / "mine.db", root="chosen")
    assert (locate().store, locate().store_reason) == (str(nowhere / "mine.db"), "--store")
    use_locations()
    assert locate().root_step is Step.ENVIRONMENT


def test_a_legacy_workspaces_directory_is_used_where_it_is_found_with_one_note(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = nowhere / "workspaces"
    (legacy / ".toolcards").mkdir(parents=True)

    for _ in range(3):
        found = locate()
        assert (found.root, found.root_step) == (legacy, Step.LEGACY)
        assert found.store == str(legacy / ".toolcards" / "state.db")

    err = capsys.readouterr().err
    assert err.count("\n") == 1  # once per process
    assert f"using the team in {legacy}" in err and "toolcards init" in err
    assert f"TOOLCARDS_WORKSPACES_ROOT={legacy}" in err


def test_a_project_file_comes_before_a_legacy_directory(nowhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (nowhere / "workspaces" / ".toolcards").mkdir(parents=True)
    (nowhere / CONFIG_FILE).write_text('root = "elsewhere"\n')
    assert locate().root == nowhere / "elsewhere"
    assert capsys.readouterr().err == ""


def test_a_plain_workspaces_directory_is_not_taken_for_a_team(nowhere: Path, tmp_path: Path) -> None:
    (nowhere / "workspaces").mkdir()  # no .toolcards: not made by toolcards
    assert locate().root_step is Step.USER


def test_the_root_is_made_on_first_use_and_the_default_store_directory_with_it(nowhere: Path) -> None:
    (nowhere / CONFIG_FILE).write_text('root = "made"\n')
    assert workspaces_root() == nowhere / "made" and (nowhere / "made").is_dir()
    assert store_path() == nowhere / "made" / ".toolcards" / "state.db"
    assert (nowhere / "made" / ".toolcards").is_dir()


def test_a_named_store_file_s_directory_is_never_made(nowhere: Path) -> None:
    (nowhere / CONFIG_FILE).write_text('store = "typo/state.db"\n')
    assert store_path() == nowhere / "typo" / "state.db"
    assert not (nowhere / "typo").exists()
