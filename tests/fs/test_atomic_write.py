"""One atomic write for every file toolcards writes whole: old or new content, never a mix."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from toolcards.fs._atomic_write import atomic_write, atomic_write_at


def test_it_creates_the_file_and_its_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c.txt"
    atomic_write(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]


def test_a_stream_is_copied_to_its_end(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 5)
    atomic_write(tmp_path / "model.onnx", io.BytesIO(data))
    assert (tmp_path / "model.onnx").read_bytes() == data


def test_an_explicit_mode_is_exact_and_set_from_creation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[int] = []
    fchmod = os.fchmod

    def recording_fchmod(fd: int, mode: int) -> None:
        created.append(stat.S_IMODE(os.fstat(fd).st_mode))
        fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", recording_fchmod)
    old = os.umask(0)
    try:
        atomic_write(tmp_path / "tokens" / "t.json", b"{}", mode=0o600, directory_mode=0o700)
    finally:
        os.umask(old)
    assert created == [0o600]  # never readable by others, not even while empty
    assert stat.S_IMODE((tmp_path / "tokens" / "t.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "tokens").stat().st_mode) == 0o700


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
    with pytest.raises(OSError, match="No space left"):
        atomic_write(target, b"half")
    assert target.read_bytes() == b"original"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_it_writes_in_a_directory_given_by_its_handle(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    dir_fd = os.open(tmp_path / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rename(tmp_path / "d", tmp_path / "moved")  # the handle follows the directory, not the name
        atomic_write_at(dir_fd, "a.txt", b"one")
    finally:
        os.close(dir_fd)
    assert (tmp_path / "moved" / "a.txt").read_bytes() == b"one"


def test_it_can_sync_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def write_in(directory: Path, name: str, data: bytes, **options: Any) -> None:
    """``atomic_write_at`` in ``directory``, through a handle opened and closed here."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        atomic_write_at(dir_fd, name, data, **options)
    finally:
        os.close(dir_fd)


def _exchange_works() -> bool:
    from toolcards.fs import _atomic_write as module

    return module._renameat2() is not None


@pytest.mark.skipif(not _exchange_works(), reason="no renameat2 here")
def test_without_a_flush_an_existing_file_is_swapped_then_unlinked_not_renamed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ext4 allocates and starts writing a file renamed over another: the exchange avoids that cost.
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)

    def no_rename(*args: object, **kwargs: object) -> None:
        raise AssertionError("renamed over the old file")

    monkeypatch.setattr(os, "replace", no_rename)
    write_in(tmp_path, "f.txt", b"new", mode=0o640, sync_data=False)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_without_a_flush_a_new_file_is_renamed_into_place(tmp_path: Path) -> None:
    write_in(tmp_path, "new.txt", b"hello", sync_data=False)
    assert (tmp_path / "new.txt").read_bytes() == b"hello"
    assert [p.name for p in tmp_path.iterdir()] == ["new.txt"]


@pytest.mark.skipif(not _exchange_works(), reason="no renameat2 here")
def test_a_directory_found_in_place_is_swapped_back_and_the_write_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_rename(*args: object, **kwargs: object) -> None:
        raise AssertionError("the exchange should have been tried")

    monkeypatch.setattr(os, "replace", no_rename)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "inside.txt").write_bytes(b"keep")
    with pytest.raises(IsADirectoryError):
        write_in(tmp_path, "d", b"file", sync_data=False)
    assert (tmp_path / "d" / "inside.txt").read_bytes() == b"keep"
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_without_renameat2_an_unflushed_write_renames_over_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcards.fs import _atomic_write as module

    monkeypatch.setattr(module, "_renameat2", lambda: None)
    (tmp_path / "f.txt").write_bytes(b"old")
    write_in(tmp_path, "f.txt", b"new", sync_data=False)
    assert (tmp_path / "f.txt").read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]
