"""``WorkspaceActor``: one per tree, serialized changes, rollback and events."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pykka
import pytest

from toolcards.core._events import StateChanged
from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._actor import (
    WorkspaceActor,
    WorkspaceProxy,
    stop_workspace_actors,
    workspace_actor,
    workspace_hub,
)
from toolcards.workspace._models import FileEdit, content_digest
from toolcards.workspace._tree import Tree

AGENT = "team-1/@Alice"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    return tree


@pytest.fixture
def ws(root: Path) -> WorkspaceProxy:
    return workspace_actor(root)


def read(ws: WorkspaceProxy, root: Path, path: str, *, full: bool = True) -> None:
    data = (root / path).read_bytes()
    ws.record_read(AGENT, path, data, full, content_digest(data)).get()


def test_one_actor_per_tree_whatever_the_spelling(root: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(root)
    first = workspace_actor(root)
    assert workspace_actor(root / "." / "").actor_ref == first.actor_ref
    assert workspace_actor(tmp_path / "link").actor_ref == first.actor_ref
    assert first.actor_ref.proxy().name.get() == "#WorkspaceActor:tree"


def test_one_hub_per_tree_whether_its_root_comes_resolved_or_not(root: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(root)
    real = root.resolve()
    hub = workspace_hub(real, resolved=True)
    assert workspace_hub(tmp_path / "link") is hub and workspace_hub(root / ".") is hub
    assert workspace_hub(real, resolved=True) is hub and hub.root == real


def test_concurrent_first_uses_start_one_actor(root: Path) -> None:
    barrier = threading.Barrier(8)
    refs: list[Any] = []

    def use() -> None:
        barrier.wait()
        refs.append(workspace_actor(root).actor_ref)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(refs)) == 1
    assert len(pykka.ActorRegistry.get_by_class(WorkspaceActor)) == 1


def test_stopped_actors_are_replaced_and_stop_workspace_actors_stops_them(root: Path, tmp_path: Path) -> None:
    first = workspace_actor(root)
    first.actor_ref.stop()
    second = workspace_actor(root)
    assert second.actor_ref != first.actor_ref and second.actor_ref.is_alive()
    other = workspace_actor(tmp_path)
    stop_workspace_actors()
    assert not second.actor_ref.is_alive() and not other.actor_ref.is_alive()


def test_the_actor_thread_does_not_keep_a_process_alive() -> None:
    assert WorkspaceActor.use_daemon_thread


def test_changes_are_published_to_every_attached_team(ws: WorkspaceProxy, root: Path) -> None:
    team_1: list[Any] = []
    team_2: list[Any] = []

    def gone(event: Any) -> None:
        raise pykka.ActorDeadError("stopped")

    ws.attach("team-1", team_1.append).get()
    ws.attach("team-2", team_2.append).get()
    ws.attach("team-3", gone).get()
    ws.write(AGENT, "a.txt", "x\n").get()
    ws.mkdir(AGENT, "d").get()
    assert [e.seq for e in team_1] == [1, 2] and [e.seq for e in team_2] == [1, 2]
    event = team_1[0]
    assert isinstance(event, StateChanged)
    assert (event.team_id, event.source, event.summary) == ("team-1", "#WorkspaceActor:tree", f"{AGENT} created a.txt")
    assert team_2[0].team_id == "team-2"


def test_write_keeps_crlf_bom_and_permissions(ws: WorkspaceProxy, root: Path) -> None:
    path = root / "win.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    path.chmod(0o750)
    read(ws, root, "win.txt")
    assert ws.write(AGENT, "win.txt", "uno\ndos\n").get() == "Wrote win.txt (2 lines)."
    assert path.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\n"
    assert path.stat().st_mode & 0o777 == 0o750


def test_mkdir_is_idempotent_and_rmdir_refuses_a_non_empty_directory(ws: WorkspaceProxy, root: Path) -> None:
    assert ws.mkdir(AGENT, "a/b/c").get() == "Created directory a/b/c/."
    assert ws.mkdir(AGENT, "a/b/c").get() == "Directory a/b/c/ already exists."
    (root / "a" / "b" / "c" / "f.txt").write_text("x")
    with pytest.raises(RetriableError, match=r"'a' is not empty \(1 entry\).*recursive=true"):
        ws.rmdir(AGENT, "a").get()
    with pytest.raises(RetriableError, match="is a file"):
        ws.rmdir(AGENT, "a/b/c/f.txt").get()
    with pytest.raises(RetriableError, match="root cannot be removed"):
        ws.rmdir(AGENT, "").get()
    assert ws.rmdir(AGENT, "a", recursive=True).get() == "Removed directory a/."
    assert not (root / "a").exists()
    with pytest.raises(RetriableError, match="it or one of its parents is a file"):
        (root / "f").write_text("x")
        ws.mkdir(AGENT, "f/sub").get()


def test_recursive_rmdir_removes_links_not_what_they_point_to(ws: WorkspaceProxy, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (root / "d").mkdir()
    (root / "d" / "link").symlink_to(outside)
    ws.rmdir(AGENT, "d", recursive=True).get()
    assert (outside / "keep.txt").read_text() == "keep"


def test_delete_removes_files_only(ws: WorkspaceProxy, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(RetriableError, match="removes files only"):
        ws.delete(AGENT, "d").get()
    with pytest.raises(RetriableError, match="does not exist"):
        ws.delete(AGENT, "nope.txt").get()


def test_a_patch_whose_second_file_cannot_be_written_changes_nothing(ws: WorkspaceProxy, root: Path) -> None:
    (root / "a.txt").write_text("one\n")
    (root / "blocker").write_text("a file where a directory is needed\n")
    read(ws, root, "a.txt")
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n--- /dev/null\n+++ b/blocker/new.txt\n@@ -0,0 +1 @@\n+new\n"
    )
    with pytest.raises(RetriableError) as info:
        ws.patch(AGENT, patch).get()
    assert "Writing blocker/new.txt failed" in str(info.value)
    assert "1 file(s) already written were restored" in str(info.value)
    assert (root / "a.txt").read_text() == "one\n"


@pytest.fixture
def both_edited(ws: WorkspaceProxy, root: Path) -> list[FileEdit]:
    """``a.txt`` and ``b.txt``, both read, and a multi-edit that changes each."""
    for name in ("a.txt", "b.txt"):
        (root / name).write_text(f"{name} old\n")
        read(ws, root, name)
    return [FileEdit(path=n, old_string="old", new_string="new") for n in ("a.txt", "b.txt")]


def fail_writes(monkeypatch: pytest.MonkeyPatch, fails: Callable[[int], bool], message: str) -> None:
    """``Tree.write_bytes`` raises ``ToolFailed(message)`` on the calls (counted from 1) ``fails`` picks."""
    calls = 0
    write_bytes = Tree.write_bytes

    def failing(tree: Tree, path: str, data: bytes, **kwargs: Any) -> str:
        nonlocal calls
        calls += 1
        if fails(calls):
            raise ToolFailed(message)
        return write_bytes(tree, path, data, **kwargs)

    monkeypatch.setattr(Tree, "write_bytes", failing)


def test_a_failed_multi_edit_write_is_rolled_back(
    ws: WorkspaceProxy, root: Path, both_edited: list[FileEdit], monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_writes(monkeypatch, lambda call: call == 2, "Cannot write 'b.txt': no space left on the device.")
    with pytest.raises(ToolFailed, match="nothing was changed; the 1 file"):
        ws.multi_edit(AGENT, both_edited).get()
    assert (root / "a.txt").read_text() == "a.txt old\n" and (root / "b.txt").read_text() == "b.txt old\n"


def test_a_rollback_that_fails_names_the_files_to_check(
    ws: WorkspaceProxy, both_edited: list[FileEdit], monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_writes(monkeypatch, lambda call: call > 1, "disk gone")
    with pytest.raises(ToolFailed, match=r"restoring a\.txt failed too"):
        ws.multi_edit(AGENT, both_edited).get()


def test_the_same_file_twice_in_a_patch_is_refused(ws: WorkspaceProxy, root: Path) -> None:
    (root / "a.txt").write_text("one\n")
    read(ws, root, "a.txt")
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n--- a/./a.txt\n+++ b/./a.txt\n@@ -1 +1 @@\n-one\n+3\n"
    with pytest.raises(RetriableError, match="names one file twice"):
        ws.patch(AGENT, patch).get()
    assert (root / "a.txt").read_text() == "one\n"
