"""Confinement of paths to a workspace root, and workspace ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workspace.hostile import CheckedAgent
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


def test_display_name_escapes_what_does_not_print() -> None:
    assert display_name("notes.txt") == "notes.txt"
    assert display_name("evil\nfake.txt (99 bytes)") == "evil\\nfake.txt (99 bytes)"
    assert display_name("red\x1b[31m\tname\u202e.txt") == "red\\u001b[31m\\tname\\u202e.txt"


def test_a_name_made_by_a_command_cannot_forge_a_listing(a: CheckedAgent) -> None:
    # A newline in a name, shown raw, ends a line of the listing and forges the next one.
    (a.root / "nl").mkdir()
    (a.root / "nl" / "evil\nfake.txt (99 bytes)").write_text("x\n")
    for answer in (a("workspace_list", path="nl"), a("workspace_glob", pattern="**/*", path="nl")):
        assert "evil\\nfake.txt (99 bytes)" in answer and "\nfake.txt" not in answer
    # The escape, read back as JSON, names the file again.
    assert "x" in a("workspace_read", path="nl/evil\nfake.txt (99 bytes)")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("workspace_write", {"path": "evil\nfake.txt", "content": "x\n"}),
        ("workspace_move", {"source": "a.txt", "destination": "dir/\x1b[31mred.txt"}),
        ("workspace_mkdir", {"path": "new\tdir"}),
        ("workspace_patch", {"patch_text": "--- /dev/null\n+++ b/bad\rname.txt\n@@ -0,0 +1 @@\n+x\n"}),
    ],
)
def test_tools_do_not_make_names_that_do_not_print(a: CheckedAgent, tool: str, args: dict[str, object]) -> None:
    a("workspace_write", path="a.txt", content="a\n")
    before = sorted(p.name for p in a.root.rglob("*"))
    assert "a character that does not print, and tools do not make such names" in a.refused(tool, **args)
    assert sorted(p.name for p in a.root.rglob("*")) == before
