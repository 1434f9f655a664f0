"""Kept pages: a file is read again whenever it has changed, however the change came."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workspace.hostile import CheckedAgent
from tests.workspace.test_journal import plain
from toolcards.workspace import _files, _kept
from toolcards.workspace._files import PageRead, read_page
from toolcards.workspace._tree import Tree


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    _files._PAGES.clear()
    yield
    _files._PAGES.clear()


def page(tree: Tree, path: str, offset: int = 1, limit: int = 2000) -> PageRead:
    with tree.open_file(path) as file:
        return read_page(file, offset, limit)


def shown(read: PageRead) -> list[str]:
    return read.page.lines


def test_an_unchanged_file_is_paged_from_what_was_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)  # the change time just set counts as settled
    tree = Tree(tmp_path)
    first = page(tree, "a.txt")
    assert shown(first) == ["1\tone", "2\ttwo"] and first.data == b"one\ntwo\n"
    assert page(tree, "a.txt") is first  # kept: not read again
    assert shown(page(tree, "a.txt", offset=2)) == ["2\ttwo"]  # another page is its own


def test_a_recent_change_is_never_kept(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    for index in range(20):  # each read follows a change made in the same second, same size
        (tmp_path / "a.txt").write_text(f"v{index:02}\n")
        assert shown(page(tree, "a.txt")) == [f"1\tv{index:02}"]
    assert page(tree, "a.txt") is not page(tree, "a.txt")


def test_a_change_in_place_with_its_times_set_back_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Same size, same modification time: only the change time, which the kernel sets, moved.
    target = tmp_path / "a.txt"
    target.write_text("old text\n")
    os.utime(target, (0, 0))
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    tree = Tree(tmp_path)
    before = page(tree, "a.txt")
    assert shown(before) == ["1\told text"]
    with open(target, "r+b") as file:
        file.write(b"new text\n")
    os.utime(target, (0, 0))
    after = page(tree, "a.txt")
    assert shown(after) == ["1\tnew text"] and after.digest != before.digest


def test_a_file_replaced_by_a_rename_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("first\n")
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    tree = Tree(tmp_path)
    assert shown(page(tree, "a.txt")) == ["1\tfirst"]
    (tmp_path / "b.txt").write_text("second\n")
    os.utime(tmp_path / "b.txt", (0, 0))
    os.replace(tmp_path / "b.txt", tmp_path / "a.txt")
    assert shown(page(tree, "a.txt")) == ["1\tsecond"]


def test_what_is_kept_stays_within_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    monkeypatch.setattr(_files._PAGES, "max_weight", 100)
    tree = Tree(tmp_path)
    for index in range(6):
        (tmp_path / f"f{index}.txt").write_text("x" * 20 + "\n")
        page(tree, f"f{index}.txt")
    assert _files._PAGES._weight <= 100
    assert page(tree, "f5.txt") is page(tree, "f5.txt")  # the newest is kept, the oldest dropped


def test_a_read_sees_what_another_process_wrote_in_place(a: CheckedAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)  # keep every page, however recent
    target = a.root / "notes.txt"
    target.write_text("".join(f"line {index}\n" for index in range(300)))
    os.utime(target, (0, 0))
    assert plain(a("workspace_read", path="notes.txt")).split("\n")[0] == "1\tline 0"
    # Another process rewrites the file in place, same size, and puts its times back.
    subprocess.run(
        ["sh", "-c", 'printf "LINE 0" | dd of="$1" conv=notrunc 2>/dev/null; touch -d @0 "$1"', "sh", str(target)],
        check=True,
    )
    assert plain(a("workspace_read", path="notes.txt")).split("\n")[0] == "1\tLINE 0"


def test_a_kept_read_licenses_an_edit_of_the_file_as_it_is(a: CheckedAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    (a.root / "code.py").write_text("x = 1\ny = 2\n")
    a("workspace_read", path="code.py")
    a("workspace_read", path="code.py")  # from what was kept
    a("workspace_edit", path="code.py", old_string="y = 2", new_string="y = 3")
    assert (a.root / "code.py").read_text() == "x = 1\ny = 3\n"
    assert plain(a("workspace_read", path="code.py")).split("\n")[1] == "2\ty = 3"  # the edit made a new file
