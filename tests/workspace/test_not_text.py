"""Files that are not text (not UTF-8, or holding a NUL byte), as a model meets them: no tool
shows them as lines, so the answer that says so stands for the read the write gate asks for,
and every message leads to the one way such a file is replaced, ``workspace_write``. Text
files keep needing a real read.

Every call goes through the factory and the pipeline (:class:`CheckedAgent`); the last test
goes through a real ``toolcards serve`` over stdio.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.workspace.hostile import CheckedAgent

LATIN1 = b"caf\xe9\n"
"""What ``printf 'caf\\xe9\\n' > latin1.txt`` leaves: Latin-1, not UTF-8."""

BLOB = b"\x89PNG\r\n\x1a\n\x00"
"""Bytes holding a NUL."""

REPO = Path(__file__).resolve().parents[2]


def test_a_read_refusing_a_file_that_is_not_text_lets_a_write_replace_it_and_undo_restores_it(
    a: CheckedAgent,
) -> None:
    (a.root / "latin1.txt").write_bytes(LATIN1)
    assert a.refused("workspace_read", path="latin1.txt") == (
        "'latin1.txt' looks binary (it is not UTF-8 text), so it cannot be shown as lines. For an image call "
        "workspace_view; PDF, DOCX, XLSX and PPTX documents are converted to text when read. To replace it, "
        "call workspace_write with the new content."
    )
    assert a("workspace_write", path="latin1.txt", content="replaced\n") == "Wrote latin1.txt (1 line)."
    assert (a.root / "latin1.txt").read_bytes() == b"replaced\n"

    assert a("workspace_undo").startswith("Undid change")  # the caller's last change: the write
    assert (a.root / "latin1.txt").read_bytes() == LATIN1


@pytest.mark.parametrize("content", [LATIN1, BLOB], ids=["latin-1", "nul"])
def test_a_write_to_an_unseen_file_that_is_not_text_goes_through_when_made_again(
    a: CheckedAgent, content: bytes
) -> None:
    (a.root / "f.dat").write_bytes(content)
    refusal = a.refused("workspace_write", path="f.dat", content="new\n")
    assert refusal == (
        "Make the same call again to replace 'f.dat'; nothing was written this time. It exists and you had not "
        "seen it; it is not UTF-8 text, so workspace_read cannot show it, and this answer stands for reading it."
    )
    assert (a.root / "f.dat").read_bytes() == content
    assert a("workspace_write", path="f.dat", content="new\n") == "Wrote f.dat (1 line)."


def test_a_file_that_is_not_text_changed_since_it_was_seen_is_refused_once_more(a: CheckedAgent) -> None:
    (a.root / "f.dat").write_bytes(BLOB)
    a.refused("workspace_read", path="f.dat")
    (a.root / "f.dat").write_bytes(BLOB + b"changed by a command")
    refusal = a.refused("workspace_write", path="f.dat", content="mine\n")
    assert refusal.startswith("Make the same call again to replace 'f.dat'; nothing was written this time. It changed")
    assert refusal.endswith(
        "It was changed outside the workspace tools (e.g. by a command), or through them by another process."
    )
    assert a("workspace_write", path="f.dat", content="mine\n") == "Wrote f.dat (1 line)."


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("workspace_edit", {"path": "f.dat", "old_string": "caf", "new_string": "CAF"}),
        ("workspace_multi_edit", {"edits": [{"path": "f.dat", "old_string": "caf", "new_string": "CAF"}]}),
        ("workspace_patch", {"patch_text": "--- a/f.dat\n+++ b/f.dat\n@@ -1 +1 @@\n-caf\n+CAF\n"}),
    ],
)
def test_an_edit_of_a_file_that_is_not_text_points_to_a_write_that_goes_through_at_once(
    a: CheckedAgent, tool: str, args: dict[str, Any]
) -> None:
    (a.root / "f.dat").write_bytes(LATIN1)
    refusal = a.refused(tool, **args)
    assert "'f.dat' looks binary (it is not UTF-8 text), so it cannot be edited. Overwrite it whole with " in refusal
    assert "workspace_read" not in refusal
    assert a("workspace_write", path="f.dat", content="CAFE\n") == "Wrote f.dat (1 line)."


def test_a_text_file_still_needs_a_read_however_often_the_write_is_tried(a: CheckedAgent) -> None:
    (a.root / "notes.txt").write_text("mine\n")
    for _ in range(2):
        assert a.refused("workspace_write", path="notes.txt", content="x\n").startswith(
            "Call workspace_read on 'notes.txt' first, then retry"
        )
    assert (a.root / "notes.txt").read_text() == "mine\n"


def test_files_read_together_count_as_seen_when_they_are_not_text(a: CheckedAgent) -> None:
    (a.root / "f.dat").write_bytes(BLOB)
    answer = a("workspace_read_many", paths=["f.dat"])
    assert "To replace it, call workspace_write with the new content." in answer
    assert a("workspace_write", path="f.dat", content="x\n") == "Wrote f.dat (1 line)."


def test_moving_onto_a_file_that_is_not_text_asks_for_no_read(a: CheckedAgent) -> None:
    a("workspace_write", path="src.txt", content="new\n")
    a("workspace_write", path="text.txt", content="old\n")
    (a.root / "f.dat").write_bytes(BLOB)
    assert a.refused("workspace_move", source="src.txt", destination="f.dat") == (
        "'f.dat' already exists. Pass overwrite=true to replace it, or choose another destination."
    )
    assert "(read it first)" in a.refused("workspace_move", source="src.txt", destination="text.txt")
    assert a.refused("workspace_move", source="src.txt", destination="f.dat", overwrite=True).startswith(
        "Make the same call again to replace 'f.dat'"
    )
    assert a("workspace_move", source="src.txt", destination="f.dat", overwrite=True) == (
        "Moved src.txt to f.dat (replacing it)."
    )


def test_an_image_viewed_or_refused_by_a_read_may_be_replaced(a: CheckedAgent) -> None:
    image = pytest.importorskip("PIL.Image")
    for name in ("viewed.png", "read.png"):
        buffer = io.BytesIO()
        image.new("RGB", (4, 4), (1, 2, 3)).save(buffer, format="PNG")
        (a.root / name).write_bytes(buffer.getvalue())
    a("workspace_view", path="viewed.png")
    assert a("workspace_write", path="viewed.png", content="placeholder\n") == "Wrote viewed.png (1 line)."
    assert a.refused("workspace_read", path="read.png") == (
        "'read.png' is an image, not text. Call workspace_view to look at it. To replace it, call "
        "workspace_write with the new content."
    )
    assert a("workspace_write", path="read.png", content="placeholder\n") == "Wrote read.png (1 line)."


def test_a_file_too_large_to_overwrite_is_not_offered_for_one(a: CheckedAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolcards.workspace._tool.MAX_EDIT_BYTES", len(BLOB) - 1)
    (a.root / "f.dat").write_bytes(BLOB)
    assert "workspace_write" not in a.refused("workspace_read", path="f.dat")


@pytest.mark.slow
def test_a_file_that_is_not_text_is_replaced_through_a_real_stdio_server(tmp_path: Path) -> None:
    config = tmp_path / "team.yaml"
    config.write_text("team_id: crew\ncards:\n  - kind: workspace\n")
    tree = tmp_path / "workspaces" / "crew"
    tree.mkdir(parents=True)
    (tree / "latin1.txt").write_bytes(LATIN1)
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path / "workspaces")}
    env.pop("TOOLCARDS_STORE", None)
    args = ["-m", "toolcards.cli", "serve", "--config", str(config), "--agent", "Bin"]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO), env=env)

    async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        result = await client.call_tool(tool, arguments)
        part = result.content[0]
        assert isinstance(part, types.TextContent)
        return result.is_error, part.text

    async def main() -> None:
        info = types.Implementation(name="fuzzer", version="1")
        async with Client(stdio_client(params), mode="legacy", client_info=info) as client:
            error, text = await call(client, "workspace_read", {"path": "latin1.txt"})
            assert error and text.endswith("To replace it, call workspace_write with the new content.")
            written = await call(client, "workspace_write", {"path": "latin1.txt", "content": "replaced\n"})
            assert written == (False, "Wrote latin1.txt (1 line).")

    anyio.run(main)
    assert (tree / "latin1.txt").read_bytes() == b"replaced\n"
