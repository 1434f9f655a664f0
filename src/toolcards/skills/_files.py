"""Reading a file of a skill without leaving its folder.

A skill's folder is trusted as the operator installed it (the folder itself may be a
symlink: that is how skills are often installed), but a path the model gives is not. It is
walked one component at a time from the folder's directory handle, never following a
symlink (``O_NOFOLLOW``), so neither ``..`` nor a link can lead out, even one swapped in
while the file is read. Only regular files are opened: a named pipe, a socket or a device is
refused from its ``lstat``, before any ``open`` could block or act on it. A file over the
size bound is refused unread, and bytes that are not UTF-8 text are refused as binary.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from toolcards.errors import RetriableError, ToolFailed

__all__ = ["MAX_LISTED_FILES", "file_kind", "list_skill_files", "read_skill_file"]

MAX_LISTED_FILES = 50
"""Files of a skill named by ``use_skill``, at most."""
_MAX_DEPTH = 4
_MAX_SCANNED = 1000
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def _components(path: str, skill: str) -> list[str]:
    if not path or "\0" in path:
        raise RetriableError(f"Give the path of a file of skill {skill}, e.g. 'reference.md'.")
    if not path.isascii():
        try:
            os.fsencode(path)
        except UnicodeEncodeError as exc:  # a lone surrogate the file system cannot name
            raise RetriableError(
                f"The path holds \\u{ord(path[exc.start]):04x} at position {exc.start}, which is not text, so it "
                f"names no file of skill {skill}: send the path as UTF-8 text, e.g. 'reference.md'."
            ) from None
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise RetriableError(f"{path!r} is absolute: give a path inside skill {skill}'s folder, e.g. 'reference.md'.")
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise RetriableError(f"{path!r} leaves skill {skill}'s folder: '..' is not allowed.")
    if not parts:
        raise RetriableError(f"{path!r} is the skill's folder: give a file in it, e.g. 'reference.md'.")
    return parts


def read_skill_file(folder: Path, path: str, *, skill: str, max_bytes: int) -> str:
    """The text of ``path`` inside ``folder`` (skill ``skill``'s), at most ``max_bytes`` bytes.

    Raises:
        RetriableError: the path is empty, not text (a lone surrogate no file system can
            name), absolute, uses ``..``, or names nothing there.
        ToolFailed: it passes through a symlink, is not a regular file (a directory, a named
            pipe, a socket, a device), is larger than ``max_bytes``, is not UTF-8 text, or
            cannot be read.
    """
    parts = _components(path, skill)
    try:
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ToolFailed(f"Skill {skill}'s folder cannot be opened: {exc.strerror}.") from None
    try:
        for index, part in enumerate(parts[:-1]):
            here = "/".join(parts[: index + 1])
            try:
                inner = os.open(part, _DIRECTORY, dir_fd=directory)
            except OSError as exc:
                raise _walk_error(exc, directory, part, here, skill) from None
            os.close(directory)
            directory = inner
        return _read_regular(directory, parts[-1], "/".join(parts), skill, max_bytes)
    finally:
        os.close(directory)


def _read_regular(directory: int, name: str, rel: str, skill: str, max_bytes: int) -> str:
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except OSError as exc:
        raise _walk_error(exc, directory, name, rel, skill) from None
    _check_regular(info.st_mode, rel, skill)
    try:
        fd = os.open(name, _FILE, dir_fd=directory)
    except OSError as exc:
        raise _walk_error(exc, directory, name, rel, skill) from None
    try:
        info = os.fstat(fd)
        _check_regular(info.st_mode, rel, skill)  # swapped between the lstat and the open
        if info.st_size > max_bytes:
            raise ToolFailed(
                f"{rel} of skill {skill} has {info.st_size:,} bytes; files over {max_bytes:,} are not read."
            )
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(65536, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise ToolFailed(f"{rel} of skill {skill} grew past {max_bytes:,} bytes while read; it is not read.")
    except OSError as exc:
        raise ToolFailed(f"{rel} of skill {skill} cannot be read: {exc.strerror}.") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if b"\0" in data:
        raise ToolFailed(f"{rel} of skill {skill} is binary; only text files are read.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailed(f"{rel} of skill {skill} is not UTF-8 text; only text files are read.") from None


def _check_regular(mode: int, rel: str, skill: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        raise ToolFailed(f"{rel} of skill {skill} is a symbolic link; skill files are read only through real folders.")
    raise ToolFailed(f"{rel} of skill {skill} is {file_kind(mode)}; only regular files are read.")


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: ``"a named pipe"``, ``"a folder"``, ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _walk_error(exc: OSError, directory: int, name: str, rel: str, skill: str) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            mode = os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            return ToolFailed(
                f"{rel} of skill {skill} is a symbolic link; skill files are read only through real folders."
            )
        return ToolFailed(f"{rel} of skill {skill} is not a folder.")
    if exc.errno == errno.ENOENT:
        return RetriableError(f"Skill {skill} has no {rel}. use_skill lists its files.")
    return ToolFailed(f"{rel} of skill {skill} cannot be opened: {exc.strerror}.")


def list_skill_files(folder: Path) -> list[str]:
    """The regular files of a skill's folder besides ``SKILL.md``, as sorted relative paths.

    Hidden entries and symlinks are skipped; at most :data:`MAX_LISTED_FILES` files, four
    folders deep, and no more than :data:`_MAX_SCANNED` entries looked at.
    """
    found: list[str] = []
    _walk(folder, "", 0, found, [_MAX_SCANNED])
    return sorted(path for path in found if path != "SKILL.md")[:MAX_LISTED_FILES]


def _walk(folder: Path, prefix: str, depth: int, found: list[str], budget: list[int]) -> None:
    try:
        entries = sorted(os.scandir(folder / prefix if prefix else folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        rel = f"{prefix}{entry.name}"
        if entry.is_file(follow_symlinks=False):
            found.append(rel)
        elif entry.is_dir(follow_symlinks=False) and depth < _MAX_DEPTH:
            _walk(folder, rel + "/", depth + 1, found, budget)
