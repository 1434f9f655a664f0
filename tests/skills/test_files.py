"""read_skill_file stays inside the skill's folder: no ``..``, no symlink out, regular files only, bounded."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from toolcards import RetriableError, ToolFailed
from toolcards.skills import read_skill_file
from toolcards.skills._files import list_skill_files


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    folder = tmp_path / "skills" / "demo"
    (folder / "docs").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: demo\ndescription: Demo.\n---\nBody\n")
    (folder / "docs" / "guide.md").write_text("# Guide\n")
    (tmp_path / "secret.txt").write_text("do not read")
    return folder


def read(folder: Path, path: str, max_bytes: int = 1024) -> str:
    return read_skill_file(folder, path, skill="demo", max_bytes=max_bytes)


def test_a_file_inside_is_read(skill: Path) -> None:
    assert read(skill, "docs/guide.md") == "# Guide\n"
    assert read(skill, "./docs//guide.md") == "# Guide\n"


@pytest.mark.parametrize("path", ["../secret.txt", "docs/../../secret.txt", "..", "docs/.."])
def test_dot_dot_is_refused(skill: Path, path: str) -> None:
    with pytest.raises(RetriableError, match=r"'\.\.' is not allowed"):
        read(skill, path)


@pytest.mark.parametrize("path", ["/etc/passwd", "\\etc\\passwd", "C:/Windows/win.ini"])
def test_absolute_paths_are_refused(skill: Path, path: str) -> None:
    with pytest.raises(RetriableError, match="is absolute"):
        read(skill, path)


@pytest.mark.parametrize("path", ["", ".", "a\0b"])
def test_empty_paths_are_refused(skill: Path, path: str) -> None:
    with pytest.raises(RetriableError):
        read(skill, path)


@pytest.mark.parametrize("path", ["\ud800", "docs/guide\udbff.md", "caf\u00e9/\udfff"])
def test_a_path_that_is_not_text_is_refused_in_words(skill: Path, path: str) -> None:
    """A lone surrogate no file system can name: ``os.stat`` would raise ``UnicodeEncodeError``."""
    with pytest.raises(RetriableError, match=r"which is not text, so it names no file of skill demo"):
        read(skill, path)


def test_a_file_name_that_is_not_utf8_is_read_by_the_name_python_gives_it(skill: Path) -> None:
    os.mkdir(bytes(skill) + b"/docs/\xff")
    with open(bytes(skill) + b"/docs/\xff/odd.md", "wb") as odd:
        odd.write(b"odd\n")
    assert read(skill, "docs/\udcff/odd.md") == "odd\n"


def test_a_symlink_to_a_file_outside_is_refused(skill: Path, tmp_path: Path) -> None:
    (skill / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ToolFailed, match=r"link\.txt of skill demo is a symbolic link"):
        read(skill, "link.txt")


def test_a_symlinked_folder_on_the_way_is_refused(skill: Path, tmp_path: Path) -> None:
    (skill / "out").symlink_to(tmp_path)
    with pytest.raises(ToolFailed, match="out of skill demo is a symbolic link"):
        read(skill, "out/secret.txt")


def test_even_a_symlink_inside_the_folder_is_refused(skill: Path) -> None:
    (skill / "again.md").symlink_to(skill / "docs" / "guide.md")
    with pytest.raises(ToolFailed, match="symbolic link"):
        read(skill, "again.md")


def test_a_named_pipe_is_refused_without_blocking(skill: Path) -> None:
    os.mkfifo(skill / "pipe")
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            read(skill, "pipe")
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "reading a named pipe blocked"
    assert isinstance(outcome[0], ToolFailed) and "is a named pipe" in str(outcome[0])


def test_a_socket_and_a_folder_are_refused(skill: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(skill / "sock"))
        with pytest.raises(ToolFailed, match="is a socket"):
            read(skill, "sock")
    finally:
        server.close()
    with pytest.raises(ToolFailed, match="docs of skill demo is a folder"):
        read(skill, "docs")


def test_a_device_is_refused(skill: Path) -> None:
    try:
        os.mknod(skill / "null", 0o666 | 0o020000, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("this user cannot make device nodes")
    with pytest.raises(ToolFailed, match="is a device"):
        read(skill, "null")


def test_a_huge_file_is_refused_unread(skill: Path) -> None:
    with open(skill / "huge.md", "wb") as file:
        file.truncate(64 * 1024 * 1024)  # sparse: 64 MiB that take no disk
    with pytest.raises(ToolFailed, match=r"huge.md of skill demo has 67,108,864 bytes; files over 1,024 are not read"):
        read(skill, "huge.md")
    (skill / "edge.md").write_text("x" * 1024)
    assert len(read(skill, "edge.md")) == 1024


def test_binary_and_non_utf8_files_are_refused(skill: Path) -> None:
    (skill / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    (skill / "latin.txt").write_bytes(b"caf\xe9")
    with pytest.raises(ToolFailed, match="is binary"):
        read(skill, "image.png")
    with pytest.raises(ToolFailed, match="is not UTF-8 text"):
        read(skill, "latin.txt")


def test_a_missing_file_names_what_to_do(skill: Path) -> None:
    with pytest.raises(RetriableError, match=r"Skill demo has no docs/missing\.md"):
        read(skill, "docs/missing.md")
    with pytest.raises(ToolFailed, match=r"SKILL\.md of skill demo is not a folder"):
        read(skill, "SKILL.md/x")


def test_the_listing_skips_links_hidden_files_and_skill_md(skill: Path, tmp_path: Path) -> None:
    (skill / ".cache").mkdir()
    (skill / ".cache" / "x").write_text("x")
    (skill / "out").symlink_to(tmp_path)
    (skill / "scripts").mkdir()
    (skill / "scripts" / "run.py").write_text("print(1)\n")
    assert list_skill_files(skill) == ["docs/guide.md", "scripts/run.py"]
