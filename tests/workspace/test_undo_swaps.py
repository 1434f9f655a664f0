"""``workspace_undo`` when a step fails midway, and when a file became a directory or back.

Through the card and the pipeline, on real files. A failed undo must leave the tree exactly as
it found it, a file over the journal's content limit included; a swap must round-trip byte for
byte; and a dry run must refuse whatever the real undo would refuse.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.workspace.test_journal import Member
from toolcards import ToolFailed
from toolcards.testing import FakeObserver
from toolcards.workspace._journal import MAX_KEPT_BYTES, Journal
from toolcards.workspace._tree import Tree

BIG = MAX_KEPT_BYTES + 1024
"""A size the journal keeps by digest alone."""

Snapshot = dict[str, tuple[Any, ...]]


@pytest.fixture(autouse=True)
def history_scans_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``workspace_history`` records what changed outside the tools at every call here."""
    monkeypatch.setattr("toolcards.workspace._tool.HISTORY_SCAN_INTERVAL_S", 0.0)


@pytest.fixture
def a(alice: FakeObserver) -> Member:
    return Member(alice)


@pytest.fixture
def b(bob: FakeObserver) -> Member:
    return Member(bob)


def snapshot(root: Path) -> Snapshot:
    """Every path of the tree but toolcards' own folder: its kind, permission bits and content."""
    found: Snapshot = {}
    for here, directories, files in os.walk(root):
        if here == str(root):
            directories[:] = [name for name in directories if name != ".toolcards"]
        for name in directories + files:
            path = Path(here, name)
            status = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISDIR(status.st_mode):
                found[rel] = ("dir", stat.S_IMODE(status.st_mode))
            else:
                found[rel] = ("file", stat.S_IMODE(status.st_mode), hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def listed(answer: str) -> list[str]:
    """The ``A``/``D``/``M`` lines of an undo's answer, dry or real."""
    return [line for line in answer.splitlines()[1:] if line[:2] in ("A ", "D ", "M ")]


def write(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, mode)


def last_id(member: Member) -> int:
    return member.ids()[0]


def set_aside_left(member: Member) -> list[str]:
    folder = member.root / ".toolcards" / "undo"
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


# -- a step failing midway -------------------------------------------------------------------------


def made_a_command_like_change(member: Member) -> tuple[Snapshot, Snapshot]:
    """Directory ``d/`` replaced by a file, ``a_data.bin`` overwritten and ``new.bin`` created,
    both over the journal's limit, as a sandboxed command would; the tree before and after."""
    root = member.root
    write(root / "a_data.bin", b"small\n", 0o640)
    write(root / "d/in", b"x\n")
    write(root / "d/sub/deep.txt", b"deep\n", 0o600)
    member.history()  # adopted as it is
    before = snapshot(root)
    shutil.rmtree(root / "d")
    write(root / "d", b"now a file\n")
    write(root / "a_data.bin", os.urandom(BIG), 0o640)
    write(root / "new.bin", os.urandom(BIG))
    assert member.history()[0].split()[3] == "outside:"
    return before, snapshot(root)


def fail_the_nth_change(monkeypatch: pytest.MonkeyPatch, n: int) -> list[str]:
    """Make the ``n``-th change of the tree (a write, a deletion, a directory made or removed)
    fail as a full disk would; returns the paths each call was made for."""
    calls: list[str] = []

    def failing(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: Tree, path: str, *args: Any, **kwargs: Any) -> Any:
            calls.append(path)
            if len(calls) == n:
                raise ToolFailed(f"{path!r} could not be written (no space left on the device).")
            return real(self, path, *args, **kwargs)

        return call

    for name in ("write_bytes", "unlink", "make_directory", "remove_directory"):
        monkeypatch.setattr(Tree, name, failing(getattr(Tree, name)))
    return calls


STEPS = 7
"""The changes undoing :func:`made_a_command_like_change` makes: two deletions, three files and
two directories written."""


@pytest.mark.parametrize("failing_step", range(1, STEPS + 1))
def test_an_undo_failing_at_any_step_leaves_the_tree_byte_identical(
    a: Member, monkeypatch: pytest.MonkeyPatch, failing_step: int
) -> None:
    original, changed = made_a_command_like_change(a)
    change = last_id(a)

    calls = fail_the_nth_change(monkeypatch, failing_step)
    message = a.refused("workspace_undo", change_id=change)
    monkeypatch.undo()

    assert f"The undo stopped at {calls[failing_step - 1]} " in message
    assert "everything was put back: nothing was changed" in message
    assert snapshot(a.root) == changed
    assert set_aside_left(a) == []
    assert last_id(a) == change  # nothing was recorded, and nothing changed outside either
    a("workspace_undo", change_id=change)
    assert snapshot(a.root) == original


def test_a_file_on_a_file_system_without_hard_links_is_copied_aside(a: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    _, changed = made_a_command_like_change(a)

    def no_links(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    calls = fail_the_nth_change(monkeypatch, 5)
    assert "everything was put back" in a.refused("workspace_undo", change_id=last_id(a))
    monkeypatch.undo()
    assert calls[4] == "d/in"
    assert snapshot(a.root) == changed
    assert set_aside_left(a) == []


def test_a_journal_failure_after_the_writes_puts_back_a_file_over_the_limit(
    a: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, changed = made_a_command_like_change(a)
    change = last_id(a)
    real = Journal.commit

    def failing(self: Journal, *args: Any, **kwargs: Any) -> int:
        if kwargs.get("tool") == "workspace_undo":
            from toolcards.errors import StoreError

            raise StoreError("The store is out of reach (test).")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Journal, "commit", failing)
    message = a.refused("workspace_undo", change_id=change)
    monkeypatch.undo()
    assert "so the files were put back: nothing was changed" in message
    assert snapshot(a.root) == changed
    assert set_aside_left(a) == []


def test_a_file_that_cannot_be_set_aside_stops_the_undo_before_it_writes(
    a: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, changed = made_a_command_like_change(a)

    def no_links(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", no_links)
    monkeypatch.setattr("toolcards.workspace._undo.atomic_write_at", disk_full)
    message = a.refused("workspace_undo", change_id=last_id(a))
    monkeypatch.undo()
    assert message.startswith("Nothing was undone: a_data.bin is over 16.0 MB, a size the journal does not keep")
    assert "no space left on the device" in message
    assert snapshot(a.root) == changed
    assert set_aside_left(a) == []


def test_an_undo_that_does_not_fit_on_disk_is_refused_by_the_dry_run_too(
    a: Member, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(a.root / "a.txt", b"x" * 10_000)
    a.history()
    (a.root / "a.txt").unlink()
    change = last_id(a)
    real = os.statvfs

    def almost_full(path: Any) -> os.statvfs_result:
        found = real(path)
        return os.statvfs_result((*found[:4], 1, *found[5:]))  # one block free

    monkeypatch.setattr(os, "statvfs", almost_full)
    dry = a.refused("workspace_undo", change_id=change, dry_run=True)
    assert dry == a.refused("workspace_undo", change_id=change)
    assert dry.startswith("Nothing was undone: it writes 9.8 KB and the workspace's file system has")
    monkeypatch.undo()
    assert not (a.root / "a.txt").exists()
    a("workspace_undo", change_id=change)
    assert (a.root / "a.txt").read_bytes() == b"x" * 10_000


def test_a_directory_the_process_may_not_write_is_refused_by_the_dry_run_too(a: Member) -> None:
    write(a.root / "locked/a.txt", b"one\n")
    a.history()
    (a.root / "locked/a.txt").unlink()
    change = last_id(a)
    os.chmod(a.root / "locked", 0o555)
    try:
        if os.access(a.root / "locked", os.W_OK, effective_ids=os.access in os.supports_effective_ids):
            pytest.skip("this process may write a read-only directory (root with CAP_DAC_OVERRIDE)")
        dry = a.refused("workspace_undo", change_id=change, dry_run=True)
        assert dry == a.refused("workspace_undo", change_id=change)
        assert dry.startswith("Nothing was undone: it changes locked/ of the workspace, which this process may not")
    finally:
        os.chmod(a.root / "locked", 0o755)


# -- a file turned into a directory, and back ------------------------------------------------------


def undo_both_ways(member: Member, change: int, before: Snapshot, after: Snapshot) -> None:
    """Undo ``change`` (the tree back to ``before``), then the undo (back to ``after``),
    each after a dry run listing exactly what the real one does."""
    dry = member("workspace_undo", change_id=change, dry_run=True)
    assert snapshot(member.root) == after  # a dry run writes nothing
    done = member("workspace_undo", change_id=change)
    assert listed(done) == listed(dry)
    assert snapshot(member.root) == before
    undo = last_id(member)
    assert done.endswith(f"This undo is change {undo}; undo it to redo.")

    dry = member("workspace_undo", change_id=undo, dry_run=True)
    redone = member("workspace_undo", change_id=undo)
    assert listed(redone) == listed(dry)
    assert snapshot(member.root) == after
    assert set_aside_left(member) == []


def test_undo_turns_a_directory_back_into_the_file_it_was(a: Member) -> None:
    write(a.root / "f", b"the file\n", 0o640)
    write(a.root / "keep.txt", b"untouched\n")
    a.history()
    before = snapshot(a.root)
    (a.root / "f").unlink()
    write(a.root / "f/sub/deep.bin", bytes(range(256)), 0o600)
    write(a.root / "f/y.txt", b"why\n", 0o755)
    a.history()
    after = snapshot(a.root)

    dry = a("workspace_undo", change_id=last_id(a), dry_run=True)
    assert listed(dry) == ["M f (a directory now)", "D f/sub/", "D f/sub/deep.bin", "D f/y.txt"]
    assert "+the file" in dry
    undo_both_ways(a, last_id(a), before, after)


def test_undo_turns_a_file_back_into_the_directory_it_was(a: Member) -> None:
    write(a.root / "d/in", b"x\n", 0o600)
    write(a.root / "d/sub/deep.txt", b"deep\n", 0o751)
    a.history()
    before = snapshot(a.root)
    shutil.rmtree(a.root / "d")
    write(a.root / "d", b"now a file\n")
    a.history()
    after = snapshot(a.root)

    dry = a("workspace_undo", change_id=last_id(a), dry_run=True)
    assert listed(dry) == ["M d/ (a file now)", "A d/in", "A d/sub/", "A d/sub/deep.txt"]
    undo_both_ways(a, last_id(a), before, after)


def test_a_directory_holding_later_work_is_not_replaced_and_the_dry_run_says_so(a: Member, b: Member) -> None:
    write(a.root / "f", b"the file\n")
    a.history()
    (a.root / "f").unlink()
    write(a.root / "f/a.txt", b"made with the directory\n")
    a.history()
    change = last_id(a)
    b("workspace_write", path="f/b.txt", content="Bob's later work\n")
    after = snapshot(a.root)

    dry = a.refused("workspace_undo", change_id=change, dry_run=True)
    assert dry == a.refused("workspace_undo", change_id=change)
    assert dry.startswith(
        "Nothing was undone: directory f/ would have to be replaced by the file f it was before, but it holds "
        f"b.txt, last changed by change {change + 1} (@Bob, workspace_write, "
    )
    assert snapshot(a.root) == after
    assert last_id(a) == change + 1


def test_a_path_under_a_file_the_undo_does_not_take_back_is_refused_alike_by_the_dry_run(a: Member) -> None:
    write(a.root / "d/in", b"x\n")
    a.history()
    shutil.rmtree(a.root / "d")
    write(a.root / "d", b"now a file\n")
    a.history()
    change = last_id(a)
    after = snapshot(a.root)

    dry = a.refused("workspace_undo", path="d/in", dry_run=True)
    assert dry == a.refused("workspace_undo", path="d/in")
    assert dry.startswith(
        "Nothing was undone: d/in cannot be put back, because d is not a directory now, "
        f"last changed by change {change} "
    )
    assert "Undo it as well (path='d', or no path)" in dry
    assert snapshot(a.root) == after
    a("workspace_undo", path="d")
    assert (a.root / "d/in").read_bytes() == b"x\n"
