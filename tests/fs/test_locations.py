"""Where workspaces live: resolved once, made on first use, made again when gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from toolcards.fs._locations import internal_dir, workspace_dir, workspaces_root


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(tmp_path / "alias" / "workspaces"))
    return real / "workspaces"


def test_the_root_is_resolved_and_made_again_when_it_is_gone(configured: Path) -> None:
    assert workspaces_root() == configured and configured.is_dir()
    shutil.rmtree(configured)
    assert workspace_dir("team-1") == configured / "team-1" and (configured / "team-1").is_dir()


def test_a_workspace_is_its_real_directory(configured: Path, tmp_path: Path) -> None:
    made = workspace_dir("made")
    assert made == configured / "made" and made.is_dir() and workspace_dir("made") == made
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (configured / "linked").symlink_to(elsewhere)  # an operator's link is followed, as resolve() does
    assert workspace_dir("linked") == elsewhere
    (configured / "a-file").write_text("not a directory")
    with pytest.raises(FileExistsError):
        workspace_dir("a-file")


def test_a_relative_root_follows_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", "spaces")
    for place in ("one", "two"):
        (tmp_path / place).mkdir()
        monkeypatch.chdir(tmp_path / place)
        assert workspaces_root() == tmp_path / place / "spaces"
        assert internal_dir(create=False) == tmp_path / place / "spaces" / ".toolcards"
        assert not internal_dir(create=False).exists() and internal_dir().is_dir()
