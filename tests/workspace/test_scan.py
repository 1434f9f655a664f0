"""Scans: what changed in a tree outside the tools, found by ``stat``, read only where it changed."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from toolcards.store import MemoryStore
from toolcards.workspace._journal import Journal
from toolcards.workspace._scan import UNJOURNALED_DIRS, Known, scan_tree
from toolcards.workspace._tree import Tree


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "tree"
    path.mkdir()
    return path


@pytest.fixture
def journal() -> Journal:
    return Journal(MemoryStore(), "tree")


def summaries(journal: Journal) -> list[str]:
    return [f"{entry.tool}: {entry.summary}" for entry in reversed(journal.history(limit=100))]


def test_only_files_whose_status_changed_are_read(root: Path) -> None:
    (root / "a.txt").write_text("a")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("b")
    first = scan_tree(Tree(root), {}, keep_bytes=1024)
    assert sorted(first.read) == ["a.txt", "sub/b.txt"]  # nothing known: every file is read
    (root / "sub" / "b.txt").write_text("bee")
    known: dict[str, Known] = {path: (status, None) for path, status in first.files.items()}

    found = scan_tree(Tree(root), known, keep_bytes=1024)
    assert sorted(found.files) == ["a.txt", "sub/b.txt"]
    assert list(found.read) == ["sub/b.txt"] and found.read["sub/b.txt"].data == b"bee"
    assert found.directories == {"sub"} and found.complete


def test_links_pipes_sockets_and_tool_directories_are_not_followed_or_opened(root: Path) -> None:
    (root / "outside.txt").write_text("x")
    os.symlink("/etc", root / "link")
    os.mkfifo(root / "pipe")  # opening it would block
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock"))
    for name in sorted(UNJOURNALED_DIRS)[:3]:
        (root / name).mkdir()
        (root / name / "inside.txt").write_text("skipped")

    found = scan_tree(Tree(root), {}, keep_bytes=1024)
    listener.close()
    assert list(found.files) == ["outside.txt"]
    assert found.directories == set()


def test_a_large_file_is_hashed_not_kept(root: Path) -> None:
    (root / "big.bin").write_bytes(b"x" * 5000)

    found = scan_tree(Tree(root), {}, keep_bytes=1000)
    read = found.read["big.bin"]
    assert read.data is None and read.digest == __import__("hashlib").sha256(b"x" * 5000).hexdigest()


def test_the_first_scan_adopts_the_tree_and_later_ones_record_what_changed(root: Path, journal: Journal) -> None:
    (root / "keep.txt").write_text("keep")
    os.chmod(root / "keep.txt", 0o644)
    (root / "edit.txt").write_text("one")
    (root / "gone.txt").write_text("bye")
    (root / "old").mkdir()
    tree = Tree(root)
    assert journal.scan(tree) == []

    (root / "edit.txt").write_text("two")
    (root / "gone.txt").unlink()
    (root / "old").rmdir()
    (root / "new").mkdir()
    (root / "new" / "file.txt").write_text("new")
    os.chmod(root / "keep.txt", 0o600)
    assert journal.scan(tree) == [1]
    assert summaries(journal) == [
        "outside: changed edit.txt, deleted gone.txt, mode of keep.txt 644 -> 600 and 3 more",
    ]
    paths = [change.path for change in journal.entry(1).public().files]
    assert paths == ["edit.txt", "gone.txt", "keep.txt", "new", "new/file.txt", "old"]
    assert journal.scan(tree) == []


def test_a_touched_file_is_read_once_and_recorded_as_nothing(
    root: Path, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcards.workspace import _scan as scan

    (root / "a.txt").write_text("same")
    tree = Tree(root)
    journal.scan(tree)
    os.utime(root / "a.txt", ns=(1, 1))
    real = scan._read
    reads: list[str] = []

    def counted(dir_fd: int, name: str, path: str, keep_bytes: int) -> scan.ScannedFile | None:
        reads.append(path)
        return real(dir_fd, name, path, keep_bytes)

    monkeypatch.setattr(scan, "_read", counted)
    assert journal.scan(tree) == []
    assert journal.scan(tree) == []
    assert reads == ["a.txt"]


def test_a_scan_holds_a_bounded_amount_of_content_and_the_next_ones_keep_the_rest(
    root: Path, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcards.workspace import _journal as journal_module
    from toolcards.workspace import _scan as scan

    real = scan.scan_tree
    monkeypatch.setattr(journal_module, "scan_tree", lambda *args, **kwargs: real(*args, **{**kwargs, "memory": 2_500}))
    for n in range(5):
        (root / f"f{n}.txt").write_bytes(bytes([65 + n]) * 1000)
    tree = Tree(root)
    journal.scan(tree)  # adopts: two files kept, three hashed only
    kept = [path for path, (status, ref) in journal._files.items() if ref and not ref.startswith("!")]
    assert len(kept) == 2
    journal.scan(tree)
    journal.scan(tree)
    assert all(not ref.startswith("!") for _, ref in journal._files.values())
    (root / "f4.txt").write_bytes(b"changed")
    assert journal.scan(tree) == [1]
    assert journal.contents([journal.entry(1).files[0][1]]) == {journal.entry(1).files[0][1]: b"E" * 1000}
