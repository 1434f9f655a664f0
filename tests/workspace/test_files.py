"""Atomic writes, numbered reads and directory listings."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace.files import (
    MAX_LINE_CHARS,
    atomic_write,
    list_directory,
    page_of_text,
    read_bytes,
    read_page,
    render_page,
)
from toolcards.workspace.tree import Tree

# -- atomic_write -----------------------------------------------------------------------


def test_atomic_write_creates_the_file_and_its_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c.txt"
    atomic_write(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]


def test_atomic_write_replaces_and_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_bytes(b"old")
    target.chmod(0o750)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_atomic_write_applies_an_explicit_mode(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    atomic_write(target, b"x", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_new_file_gets_the_umask_default(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "keep.txt"
    target.write_bytes(b"original")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdatasync", broken_fsync)
    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(ToolFailed, match="no space left on the device"):
        atomic_write(target, b"half")
    assert target.read_bytes() == b"original"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_writing_over_a_directory_is_retriable(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(RetriableError, match="is a directory"):
        atomic_write(tmp_path / "d", b"x")
    assert list((tmp_path / "d").iterdir()) == []


def test_writing_below_a_file_is_retriable(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(RetriableError, match=re.escape("'f/g.txt'")):
        atomic_write(tmp_path / "f" / "g.txt", b"x")


# -- read_page and render_page ----------------------------------------------------------


def read_numbered(path: Path, offset: int = 1, limit: int = 2000) -> str:
    """The page a model reads of the file at ``path``, as ``workspace_read`` renders it."""
    with Tree(path.parent).open_file(path.name) as file:
        return render_page(read_page(file, offset, limit).page, shown_as=file.rel)


def test_lines_are_numbered_like_cat_n(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first\n\tindented\nlast")
    assert read_numbered(tmp_path / "a.txt") == "     1\tfirst\n     2\t\tindented\n     3\tlast"


def test_a_cut_page_says_the_total_and_the_next_offset(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 26)))
    page = read_numbered(tmp_path / "long.txt", offset=11, limit=10).splitlines()
    assert page[0] == "    11\tline 11"
    assert page[9] == "    20\tline 20"
    assert page[10] == "(showing lines 11-20 of 25; read again with offset=21 to continue)"
    last = read_numbered(tmp_path / "long.txt", offset=21, limit=10).splitlines()
    assert last[-1] == "    25\tline 25"


def test_the_default_page_is_2000_lines(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x\n" * 2500)
    page = read_numbered(tmp_path / "big.txt").splitlines()
    assert len(page) == 2001
    assert "offset=2001" in page[-1]
    assert "of 2500" in page[-1]


def test_crlf_and_bom_are_not_shown(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert read_numbered(tmp_path / "w.txt") == "     1\tone\n     2\ttwo"


def test_long_lines_are_clipped_with_a_marker(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    first, second = read_numbered(tmp_path / "min.js").splitlines()
    assert first == f"     1\t{'a' * MAX_LINE_CHARS}… [line clipped: 500 more characters]"
    assert second == "     2\tshort"


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00", b"caf\xe9\n", b"text\x00more"])
def test_binary_content_is_retriable_with_hints(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "x.bin").write_bytes(content)
    with pytest.raises(RetriableError) as info:
        read_numbered(tmp_path / "x.bin")
    message = str(info.value)
    assert "'x.bin' looks binary" in message
    assert "workspace_view" in message
    assert "converted" in message


def test_a_directory_hints_at_listing(tmp_path: Path) -> None:
    with pytest.raises(RetriableError, match="workspace_list"):
        read_numbered(tmp_path)


def test_a_missing_file_hints_at_glob(tmp_path: Path) -> None:
    with pytest.raises(RetriableError) as info:
        read_numbered(tmp_path / "nope.py")
    assert "'nope.py' does not exist" in str(info.value)
    assert "workspace_glob" in str(info.value)


def test_an_offset_past_the_end_gives_the_line_count(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    with pytest.raises(RetriableError, match="has 3 lines"):
        read_numbered(tmp_path / "a.txt", offset=4)
    with pytest.raises(RetriableError, match="at least 1"):
        read_numbered(tmp_path / "a.txt", offset=0)
    with pytest.raises(RetriableError, match="at least 1"):
        read_numbered(tmp_path / "a.txt", limit=0)


def test_an_empty_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    assert read_numbered(tmp_path / "e.txt") == "(empty file)"


def test_a_page_of_text_that_is_not_a_file_is_numbered_the_same_way() -> None:
    assert render_page(page_of_text("# Title\n\nbody\n", offset=3)) == "     3\tbody"


def test_read_bytes_hints_like_a_page_read(tmp_path: Path) -> None:
    with pytest.raises(RetriableError, match="workspace_glob"):
        read_bytes(tmp_path / "missing")
    with pytest.raises(RetriableError, match="workspace_list"):
        read_bytes(tmp_path)


# -- list_directory ---------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel in ["src/pkg/mod.py", "src/main.py", "docs/Guide.md", "README.md", "b.txt", ".env", ".git/HEAD"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / "zeta").mkdir()
    return root


def test_flat_listing_puts_directories_first_then_files_alphabetically(tree: Path) -> None:
    assert list_directory(Tree(tree)).splitlines() == [
        ".git/ (skipped)",
        "docs/",
        "src/",
        "zeta/",
        ".env",
        "b.txt",
        "README.md",
    ]


def test_a_tree_by_depth(tree: Path) -> None:
    assert list_directory(Tree(tree), depth=2) == "\n".join(
        [
            "./",
            "├── .git/ (skipped)",
            "├── docs/",
            "│   └── Guide.md",
            "├── src/",
            "│   ├── pkg/",
            "│   └── main.py",
            "├── zeta/",
            "├── .env",
            "├── b.txt",
            "└── README.md",
        ]
    )


def test_depth_zero_lists_every_level_but_not_git_internals(tree: Path) -> None:
    listing = list_directory(Tree(tree), depth=0)
    assert "│   │   └── mod.py" in listing
    assert "HEAD" not in listing


def test_listing_a_subdirectory(tree: Path) -> None:
    assert list_directory(Tree(tree), "src") == "pkg/\nmain.py"
    assert list_directory(Tree(tree), "src", depth=0).splitlines()[0] == "src/"


def test_symlinks_are_marked_and_not_followed(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("no")
    (tree / "out").symlink_to(outside)
    listing = list_directory(Tree(tree), depth=0)
    assert "out@" in listing
    assert "secret.txt" not in listing


def test_listing_is_capped_with_a_notice(tmp_path: Path) -> None:
    for i in range(600):
        (tmp_path / f"f{i:03}.txt").write_text("")
    lines = list_directory(Tree(tmp_path)).splitlines()
    assert len(lines) == 501
    assert lines[499] == "f499.txt"
    assert "cut at 500 entries" in lines[500]


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    assert list_directory(Tree(tmp_path)) == "(empty directory)"
    assert list_directory(Tree(tmp_path), depth=2) == "./\n(empty directory)"


def test_listing_refuses_bad_paths(tree: Path) -> None:
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        list_directory(Tree(tree), "..")
    with pytest.raises(RetriableError, match="is a file"):
        list_directory(Tree(tree), "README.md")
    with pytest.raises(RetriableError, match="does not exist"):
        list_directory(Tree(tree), "nope")
    with pytest.raises(RetriableError, match="depth"):
        list_directory(Tree(tree), depth=-1)


def test_atomic_write_can_sync_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    atomic_write(tmp_path / "a.txt", b"one")
    assert synced == []
    atomic_write(tmp_path / "a.txt", b"two", sync_directory=True)
    assert synced == [tmp_path.stat().st_ino] and (tmp_path / "a.txt").read_bytes() == b"two"
