"""The stat walk and inotify watches that tell the workspace index what changed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workspace.hostile import answer_within
from toolcards.workspace import _watch as watch_module
from toolcards.workspace._watch import Changes, FileStat, TreeWatch, inotify_available, is_directory, stat_walk


@pytest.fixture
def root_fd(tmp_path: Path) -> Iterator[int]:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / "deep" / "b.txt").write_text("b")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("x")
    os.symlink("a.txt", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def test_the_walk_finds_what_grep_searches(root_fd: int) -> None:
    walk = stat_walk(root_fd)
    assert sorted(walk.files) == ["a.txt", "sub/deep/b.txt"]
    assert walk.files["a.txt"].size == 1 and not walk.truncated and not walk.watched
    assert sorted(stat_walk(root_fd, below="sub").files) == ["sub/deep/b.txt"]
    assert stat_walk(root_fd, below="missing").files == {}
    assert FileStat.of(os.stat("a.txt", dir_fd=root_fd)) == walk.files["a.txt"]


def test_the_walk_stops_at_the_depth_limit(root_fd: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "MAX_WALK_DEPTH", 2)
    walk = stat_walk(root_fd)
    assert walk.truncated and sorted(walk.files) == ["a.txt"]


def test_a_check_can_stop_the_walk(root_fd: int) -> None:
    def stop() -> None:
        raise TimeoutError

    with pytest.raises(TimeoutError):
        stat_walk(root_fd, check=stop)


def test_is_directory_does_not_follow_links(root_fd: int) -> None:
    assert is_directory(root_fd, "sub") and not is_directory(root_fd, "a.txt")
    assert not is_directory(root_fd, "missing") and not is_directory(root_fd, "link")


@pytest.fixture
def watched(tmp_path: Path, root_fd: int) -> Iterator[TreeWatch]:
    if not inotify_available(str(tmp_path)):
        pytest.skip("inotify is not available here")
    watch = TreeWatch()
    walk = stat_walk(root_fd, watch=watch)
    assert walk.watched and watch.working
    # The notifier is the process's: an earlier test's burst of events may have overflowed its
    # queue, which (rightly) asks every watch to walk again once. Start from a clean slate.
    watch.take()
    yield watch
    watch.close()


def test_watches_report_files_and_directories(watched: TreeWatch, tmp_path: Path) -> None:
    assert not watched.take()
    (tmp_path / "a.txt").write_text("changed")
    (tmp_path / "sub" / "deep" / "c.txt").write_text("new")
    (tmp_path / "made").mkdir()
    changes = watched.take()
    assert {"a.txt", "sub/deep/c.txt"} <= changes.paths and changes.created == {"made"} and not changes.rewalk
    os.rmdir(tmp_path / "made")
    assert watched.take().removed == {"made"}
    os.rename(tmp_path / "sub", tmp_path / "moved")
    assert watched.take().rewalk
    watched.unwatch_below("moved")
    watched.unwatch_below("")
    (tmp_path / "a.txt").write_text("again")
    assert not watched.take().paths


def test_a_refused_watch_leaves_the_tree_to_walks(
    tmp_path: Path, root_fd: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not inotify_available(str(tmp_path)):
        pytest.skip("inotify is not available here")
    watch = TreeWatch()
    notifier = watch._notifier
    assert notifier is not None
    monkeypatch.setattr(notifier, "add", lambda owner, fd, rel: None)
    walk = stat_walk(root_fd, watch=watch)
    assert not walk.watched and not watch.working
    assert not watch.watch_directory(root_fd, "")


def test_network_file_systems_are_not_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "_filesystem_of", lambda path: "nfs4")
    assert not inotify_available("/anywhere")
    monkeypatch.setattr(watch_module, "_filesystem_of", lambda path: "fuse.sshfs")
    assert not inotify_available("/anywhere")


_RENAMER = """
import os, sys
os.chdir(sys.argv[1])
print("ready", flush=True)
while not os.path.exists("stop"):
    os.rename("a.txt", "b.txt")
    os.rename("b.txt", "a.txt")
"""


def test_a_tree_renamed_without_pause_cannot_hold_a_take(
    watched: TreeWatch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each event handled slowly, as on a loaded machine: the renamer always queues more than
    # is read. A take reads what was queued when it began, never the stream that follows.
    real = TreeWatch.record

    def slow(self: TreeWatch, directory: str, name: str, mask: int) -> None:
        time.sleep(0.0002)
        real(self, directory, name, mask)

    monkeypatch.setattr(TreeWatch, "record", slow)
    renamer = subprocess.Popen([sys.executable, "-c", _RENAMER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert renamer.stdout is not None and renamer.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        taken: list[Changes] = []
        for _ in range(5):
            answer_within(30, lambda: str(taken.append(watched.take())))
        assert len(taken) == 5 and all(changes.paths or changes.rewalk for changes in taken)
    finally:
        (tmp_path / "stop").write_text("")
        renamer.wait(timeout=30)
