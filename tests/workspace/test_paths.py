"""Confinement of paths to a workspace root, and workspace ids."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolcards.errors import RetriableError
from toolcards.workspace.paths import (
    ESCAPE_MESSAGE,
    display_name,
    relative,
    resolve_in_root,
    validate_workspace_id,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    team = tmp_path / "team-1"
    (team / "src").mkdir(parents=True)
    (team / "src" / "a.py").write_text("x = 1\n")
    return team


def test_relative_paths_resolve_inside_the_root(root: Path) -> None:
    assert resolve_in_root(root, "src/a.py") == root.resolve() / "src" / "a.py"
    assert resolve_in_root(root, "src/../src/a.py") == root.resolve() / "src" / "a.py"
    assert resolve_in_root(root, "new/file.txt") == root.resolve() / "new" / "file.txt"


@pytest.mark.parametrize("path", ["", ".", "./", "src/.."])
def test_empty_and_dot_name_the_root(root: Path, path: str) -> None:
    assert resolve_in_root(root, path) == root.resolve()


@pytest.mark.parametrize(
    "path",
    ["..", "../x", "src/../../x", "/etc/passwd", "/", "\\server\\share", "a\x00b", "../team-11/secret"],
)
def test_escaping_paths_are_refused_with_one_message(root: Path, path: str) -> None:
    (root.parent / "team-11").mkdir()
    with pytest.raises(RetriableError) as info:
        resolve_in_root(root, path)
    assert str(info.value) == f"{ESCAPE_MESSAGE} (got {path!r})"


def test_sibling_sharing_the_roots_name_as_prefix_is_refused(root: Path) -> None:
    sibling = root.parent / "team-11"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("no")
    (root / "link").symlink_to(sibling)
    for path in ("../team-11/secret.txt", "link/secret.txt", "link"):
        with pytest.raises(RetriableError, match="path escapes the workspace root"):
            resolve_in_root(root, path)


def test_symlinks_pointing_outside_are_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("no")
    (root / "to_dir").symlink_to(outside)
    (root / "to_file").symlink_to(outside / "secret.txt")
    (root / "src" / "up").symlink_to("../..")
    for path in ("to_dir", "to_dir/secret.txt", "to_file", "src/up/outside/secret.txt", "src/up"):
        with pytest.raises(RetriableError) as info:
            resolve_in_root(root, path)
        assert path in str(info.value)
    # A link that leaves the tree and comes back in is fine: only the destination counts.
    assert resolve_in_root(root, "src/up/team-1/src/a.py") == root.resolve() / "src" / "a.py"


def test_symlinks_inside_the_tree_resolve_to_their_target(root: Path) -> None:
    (root / "alias.py").symlink_to("src/a.py")
    assert resolve_in_root(root, "alias.py") == root.resolve() / "src" / "a.py"


def test_a_symlinked_root_is_followed(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(root)
    assert resolve_in_root(link, "src/a.py") == root.resolve() / "src" / "a.py"


def test_a_symlink_loop_does_not_crash(root: Path) -> None:
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    result = resolve_in_root(root, "loop_a/x")
    assert result.is_relative_to(root.resolve())


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


def test_escape_check_does_not_depend_on_the_current_directory(root: Path, tmp_path: Path) -> None:
    cwd = os.getcwd()
    try:
        os.chdir(root / "src")
        assert resolve_in_root(root, "a.py") == root.resolve() / "a.py"
    finally:
        os.chdir(cwd)


def test_display_name_replaces_undecodable_bytes() -> None:
    assert display_name("caf\udce9.txt") == "caf\ufffd.txt"
    assert display_name("naïve.txt") == "naïve.txt"
