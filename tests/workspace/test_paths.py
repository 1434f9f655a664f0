"""Confinement of paths to a workspace root, and workspace ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcards.errors import RetriableError
from toolcards.workspace._paths import (
    display_name,
    relative,
    validate_workspace_id,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    team = tmp_path / "team-1"
    (team / "src").mkdir(parents=True)
    (team / "src" / "a.py").write_text("x = 1\n")
    return team


def test_relative_is_posix_and_dot_for_the_root(root: Path) -> None:
    real = root.resolve()
    assert relative(real, real / "src" / "a.py") == "src/a.py"
    assert relative(real, real) == "."


@pytest.mark.parametrize("workspace_id", ["team-1", "a", "A.b_c-9", "x" * 128, "9lives"])
def test_valid_workspace_ids(workspace_id: str) -> None:
    assert validate_workspace_id(workspace_id) == workspace_id


@pytest.mark.parametrize("workspace_id", ["", ".", "..", ".hidden", "a/b", "a b", "x" * 129, "team\n", "é", "a\x00"])
def test_invalid_workspace_ids(workspace_id: str) -> None:
    with pytest.raises(RetriableError) as info:
        validate_workspace_id(workspace_id)
    assert repr(workspace_id) in str(info.value)


def test_display_name_replaces_undecodable_bytes() -> None:
    assert display_name("caf\udce9.txt") == "caf\ufffd.txt"
    assert display_name("naïve.txt") == "naïve.txt"
