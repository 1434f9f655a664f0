"""The workspace's views: the tree as data and previews, read only through the tree's handles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolcards import RetriableError, ToolFactory
from toolcards.core._views import FileBytes
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool, stop_workspace_actors
from toolcards.workspace._browse import image_type, preview_file, tree_listing, tree_signature
from toolcards.workspace._tree import Tree

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63640000000600023081d02f"
    "0000000049454e44ae426082"
)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = tmp_path / "tree"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n")
    (root / "z.txt").write_text("z")
    (root / "pixel.png").write_bytes(PNG)
    (root / "fake.png").write_text("<html><script>alert(1)</script></html>")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    os.mkfifo(root / "pipe")
    os.symlink("/etc/passwd", root / "outside")
    return Tree(root)


def test_the_listing_is_depth_first_and_follows_no_link(tree: Tree) -> None:
    listing = tree_listing(tree)
    kinds = {entry["path"]: entry["kind"] for entry in listing["entries"]}
    assert kinds == {
        ".git": "dir",
        "docs": "dir",
        "docs/a.md": "file",
        "blob.bin": "file",
        "fake.png": "file",
        "outside": "link",
        "pipe": "special",
        "pixel.png": "file",
        "z.txt": "file",
    }
    assert [e["path"] for e in listing["entries"]][:3] == [".git", "docs", "docs/a.md"]
    assert listing["truncated"] is False
    assert tree_listing(tree, limit=2) == {"entries": listing["entries"][:2], "truncated": True}


def test_previews_read_the_content_not_the_name(tree: Tree) -> None:
    assert preview_file(tree, "docs/a.md") == {
        "path": "docs/a.md",
        "size": 4,
        "kind": "text",
        "text": "# A\n",
        "truncated": False,
    }
    assert preview_file(tree, "pixel.png")["media_type"] == "image/png"
    assert preview_file(tree, "fake.png")["kind"] == "text"  # HTML named .png is shown as text
    assert preview_file(tree, "blob.bin")["kind"] == "binary"
    for hostile in ["pipe", "outside", "../etc/passwd", "docs"]:
        with pytest.raises(RetriableError):
            preview_file(tree, hostile)
    assert image_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp" and image_type(b"GIF89a") == "image/gif"


def test_the_signature_moves_when_a_file_changes_whoever_wrote_it(tree: Tree) -> None:
    before = tree_signature(tree)
    assert tree_signature(tree) == before
    (tree.root / "docs" / "a.md").write_text("# A, longer\n")
    assert tree_signature(tree) != before


def test_the_cards_views(alice: FakeObserver, isolated_root: Path) -> None:
    views = ToolFactory([WorkspaceTool()], observer=alice).views()
    tree_dir = isolated_root / "team-1"
    (tree_dir / "pixel.png").write_bytes(PNG)
    (tree_dir / "notes.md").write_text("hello")
    assert {e["path"] for e in views["workspace.tree"].render()["entries"]} == {"pixel.png", "notes.md"}
    assert views["workspace.file"].render(path="notes.md")["text"] == "hello"
    image = views["workspace.image"].render(path="pixel.png")
    assert isinstance(image, FileBytes) and image.media_type == "image/png" and image.data == PNG
    with pytest.raises(RetriableError, match="not a PNG"):
        views["workspace.image"].render(path="notes.md")
    with pytest.raises(RetriableError, match="path of a file"):
        views["workspace.file"].render(path="")
    assert isinstance(views["workspace.tree"].current_version(), str)
    stop_workspace_actors()
