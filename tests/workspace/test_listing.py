"""Kept listings: a directory is read again whenever it has changed, however the change came."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workspace.hostile import CheckedAgent
from tests.workspace.test_journal import plain
from toolcards.workspace import _kept, _listing
from toolcards.workspace._listing import listing_of
from toolcards.workspace._tree import Tree

HOURS_AGO = time.time() - 7200


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    _listing._KEPT.clear()
    yield
    _listing._KEPT.clear()


def settle(directory: Path) -> None:
    """Make ``directory`` look unchanged for hours (its modification time; its change time
    moves, as the kernel sets it, and is only now, so the listing is not kept yet)."""
    os.utime(directory, (HOURS_AGO, HOURS_AGO))


def names(tree: Tree, path: str = "") -> tuple[str, ...]:
    with tree.directory(path) as directory:
        return listing_of(directory).names


def test_a_settled_directory_is_listed_from_what_was_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "A").mkdir()
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)  # the change time just set counts as settled
    tree = Tree(tmp_path)
    first = names(tree)
    assert first == ("A", "b.txt")
    assert names(tree) is first  # kept: not read again


def test_a_recent_change_is_never_kept(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    for index in range(20):  # each listing follows a change made in the same second
        (tmp_path / f"f{index:02}").write_text("")
        assert names(tree)[-1] == f"f{index:02}"
    assert names(tree) is not names(tree)


def test_a_change_whose_modification_time_is_set_back_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What `rsync -t` and `tar` do: add entries, then restore the directory's modification time.
    (tmp_path / "old.txt").write_text("")
    settle(tmp_path)
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    tree = Tree(tmp_path)
    assert names(tree) == ("old.txt",)
    (tmp_path / "new.txt").write_text("")
    settle(tmp_path)  # the modification time as it was; the change time moved
    assert names(tree) == ("new.txt", "old.txt")


def test_a_rename_over_a_name_is_seen_in_the_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "x").write_text("")
    (tmp_path / "d").mkdir()
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    tree = Tree(tmp_path)
    with tree.directory("") as directory:
        assert listing_of(directory).kinds["x"] != listing_of(directory).kinds["d"]
    os.rename(tmp_path / "d", tmp_path / "y")
    (tmp_path / "x").unlink()
    os.rename(tmp_path / "y", tmp_path / "x")  # "x" is now a directory
    settle(tmp_path)
    assert names(tree) == ("x",)
    with tree.directory("") as directory:
        assert listing_of(directory).kinds["x"] == (tmp_path / "x").lstat().st_mode & 0o170000


def test_what_is_kept_stays_within_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)
    monkeypatch.setattr(_listing._KEPT, "max_weight", 25)
    tree = Tree(tmp_path)
    for index in range(6):
        folder = tmp_path / f"d{index}"
        folder.mkdir()
        for name in range(10):
            (folder / f"{name}").write_text("")
        assert len(names(tree, f"d{index}")) == 10
    assert _listing._KEPT._weight <= 25
    with tree.directory("d5") as directory:  # the newest is kept, the oldest dropped
        assert listing_of(directory) is listing_of(directory)


def test_a_listing_sees_what_another_process_adds(a: CheckedAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kept, "SETTLED_S", -10.0)  # keep every listing, however recent
    folder = a.root / "out"
    folder.mkdir()
    for index in range(300):
        (folder / f"{index:03}.txt").write_text("")
    os.utime(folder, (0, 0))
    assert plain(a("workspace_list", path="out")).split("\n")[-1] == "299.txt"
    # Another process adds files and puts the modification time back, as `cp -a` would.
    subprocess.run(
        ["sh", "-c", 'for i in 1 2 3; do : > "$1/z$i.txt"; done; touch -d @0 "$1"', "sh", str(folder)], check=True
    )
    assert plain(a("workspace_list", path="out")).split("\n")[-3:] == ["z1.txt", "z2.txt", "z3.txt"]
