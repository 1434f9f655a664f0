"""``toolcards init``: a project file here, and the team's store started where it points."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from toolcards.cli import main
from toolcards.core._lookup import config_values


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TOOLCARDS_WORKSPACES_ROOT", raising=False)
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def test_init_writes_the_project_file_and_starts_the_store(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 0

    written = project / "toolcards.toml"
    assert tomllib.loads(written.read_text()) == {"root": "workspaces"}
    assert config_values(written) == {"root": str(project / "workspaces")}
    assert (project / "workspaces" / ".toolcards" / "state.db").is_file()
    out = capsys.readouterr().out
    assert f"Team store: {project / 'workspaces' / '.toolcards' / 'state.db'} (new)" in out


def test_init_writes_the_locations_it_is_given(project: Path) -> None:
    assert main(["init", "--root", "files", "--store", "data/team.db"]) == 0

    assert config_values(project / "toolcards.toml") == {
        "root": str(project / "files"),
        "store": str(project / "data" / "team.db"),
    }
    assert (project / "data" / "team.db").is_file() and (project / "files").is_dir()


def test_an_existing_project_file_is_kept_unless_forced(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "toolcards.toml").write_text('root = "mine"\n')

    assert main(["init"]) == 0
    assert (project / "toolcards.toml").read_text() == 'root = "mine"\n'
    assert (project / "mine" / ".toolcards" / "state.db").is_file()  # its store is started all the same

    assert main(["init", "--root", "other"]) == 2
    assert "exists already: add --force" in capsys.readouterr().err
    assert main(["init", "--force", "--root", "other"]) == 0
    assert config_values(project / "toolcards.toml")["root"] == str(project / "other")


def test_the_environment_coming_first_is_said(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(project / "env-root"))
    assert main(["init"]) == 0
    assert "TOOLCARDS_WORKSPACES_ROOT is set, and comes before toolcards.toml" in capsys.readouterr().err
