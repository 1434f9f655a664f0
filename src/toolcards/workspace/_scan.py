"""Stat scans of a workspace tree: what is there, and the content of what changed.

The journal (:mod:`toolcards.workspace._journal`) notices changes made without the
workspace tools — by a sandboxed command, an editor, another program — by comparing the
tree with what it last saw. :func:`scan_tree` walks the tree through directory handles
(never following a link, never opening anything but a regular file, without blocking on a
named pipe) and ``stat``\\ s every regular file: its size, modification time, inode and
permission bits. Only files whose status differs from what the journal knew are read and
hashed, in the same walk; the others cost one ``stat`` each.

Not scanned: symbolic links, named pipes, sockets and devices; names that are not valid
text; directories named in :data:`UNJOURNALED_DIRS` (version-control internals, caches and
installed packages, which commands rewrite by the thousand and which are rebuilt rather
than restored). A tree of more than :data:`MAX_SCAN_ENTRIES` entries, or deeper than
:data:`MAX_SCAN_DEPTH`, is scanned in part; the result says so, and deletions are then not
inferred.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._models import DIRECTORY
from toolcards.workspace._paths import SKIPPED_DIRS
from toolcards.workspace._tree import OpenFile, Tree

__all__ = [
    "MAX_SCAN_DEPTH",
    "MAX_SCAN_ENTRIES",
    "MAX_SCAN_MEMORY",
    "UNJOURNALED_DIRS",
    "UNKNOWN_STATE",
    "Known",
    "Scan",
    "ScannedFile",
    "Stat",
    "is_journaled",
    "path_state",
    "scan_tree",
]

UNJOURNALED_DIRS = SKIPPED_DIRS | frozenset(
    {"node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)
"""Directory names a scan does not enter (changes the tools make there are still journaled)."""

MAX_SCAN_ENTRIES = 200_000
"""Entries one scan visits at most."""

MAX_SCAN_MEMORY = 256 * 1024 * 1024
"""Bytes of file content one scan holds at most; what it reads past that is hashed only, and
kept by the scans that follow (a first scan of a large tree takes several)."""

MAX_SCAN_DEPTH = 128
"""Directory levels one scan descends at most."""

Stat = tuple[int, int, int, int]
"""What a scan compares: ``(size, mtime_ns, inode, permission bits)``."""

UNKNOWN_STATE = "?"
"""What :func:`path_state` gives for something a journal does not record (a link, a pipe) or
cannot read."""

Known = tuple["Stat | None", object]
"""What the journal knew of a path: its :data:`Stat` (``None``: unknown) and its content's name."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TYPE = stat.S_IFMT(0o177777)
_REGULAR = stat.S_IFREG
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """A file the scan read because its status changed."""

    stat: Stat
    """Its status when it was read."""
    digest: str
    """The SHA-256 of its content."""
    data: bytes | None
    """Its content; ``None`` when it is larger than the scan keeps, or the scan's memory was
    spent (hashed as it streamed)."""
    deferred: bool = False
    """The scan's memory was spent: its content is to be kept by a later scan."""


@dataclass(slots=True)
class _Limits:
    entries: int
    """Entries the scan may still visit."""
    keep_bytes: int
    """Files up to this size are kept whole."""
    room: int
    """Bytes of content the scan may still hold in memory."""


@dataclass(slots=True)
class Scan:
    """What one scan found."""

    files: dict[str, Stat] = field(default_factory=dict)
    """Every regular file seen, by workspace-relative path."""
    read: dict[str, ScannedFile] = field(default_factory=dict)
    """The files read, those whose status changed (a file that changed while it was read is
    left out: the next scan reads it)."""
    directories: set[str] = field(default_factory=set)
    """Every directory seen (the root left out)."""
    complete: bool = True
    """Whether the whole tree was seen (not cut by the entry or depth limit)."""


def is_journaled(path: str) -> bool:
    """Whether a scan looks at ``path``: no component of it is in :data:`UNJOURNALED_DIRS`."""
    return not any(part in UNJOURNALED_DIRS for part in path.split("/"))


def scan_tree(
    tree: Tree, known: Mapping[str, Known], *, keep_bytes: int, under: str = "", memory: int = MAX_SCAN_MEMORY
) -> Scan:
    """Walk ``tree`` (or its directory ``under``) and read the files whose status is not the
    one ``known`` gives them (``known[path][0]``: a :data:`Stat`, or ``None`` for unknown).

    Files up to ``keep_bytes`` are read whole, while the content held stays within
    ``memory`` bytes; larger ones, and those read once it is spent, are hashed as they stream
    (:attr:`ScannedFile.deferred` says which were left for a later scan).

    Raises:
        RetriableError: ``under`` is not a directory of the tree.
        ToolFailed: the root cannot be opened.
    """
    result = Scan()
    with tree.directory(under or ".", doing="list") as start:
        fd = os.dup(start.fd)
    prefix = "" if start.rel == "." else start.rel
    _walk(fd, prefix, 0, known, _Limits(entries=MAX_SCAN_ENTRIES, keep_bytes=keep_bytes, room=memory), result)
    return result


def path_state(tree: Tree, path: str) -> str | None:
    """What ``path`` holds now, as a journal compares it with a version it recorded: ``None``
    (nothing), :data:`~toolcards.workspace._models.DIRECTORY`, the SHA-256 of a regular
    file's content (streamed, whatever its size), or :data:`UNKNOWN_STATE`.

    As in a scan, the last component is not followed and only a regular file is opened.
    """
    try:
        status = tree.status(path)
        if status is None:
            return None
        if stat.S_ISDIR(status.st_mode):
            return DIRECTORY
        if not stat.S_ISREG(status.st_mode):
            return UNKNOWN_STATE
        with tree.open_file(path) as opened:
            return opened.digest()
    except (RetriableError, ToolFailed):
        return UNKNOWN_STATE


def _walk(
    fd: int,
    rel: str,
    depth: int,
    known: Mapping[str, Known],
    limits: _Limits,
    result: Scan,
) -> None:
    """Scan the directory open as ``fd`` (closed here), at ``rel``."""
    # The loop runs once per file of the tree: it is kept to the fewest Python operations.
    files, read = result.files, result.read
    try:
        try:
            scan = os.scandir(fd)
        except OSError:
            result.complete = False
            return
        subdirectories: list[str] = []
        left = limits.entries
        with scan:
            for entry in scan:
                left -= 1
                if left < 0:
                    break
                name = entry.name
                if not name.isascii() and not _is_text(name):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):  # from the directory listing: no system call
                        if name not in UNJOURNALED_DIRS:
                            subdirectories.append(name)
                        continue
                    status = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone meanwhile
                mode = status.st_mode
                if mode & _TYPE != _REGULAR:
                    continue  # a link, a pipe, a socket, a device
                path = f"{rel}/{name}" if rel else name
                key = (status.st_size, status.st_mtime_ns, status.st_ino, mode & 0o7777)
                files[path] = key
                seen = known.get(path)
                if seen is None or seen[0] != key:
                    found = _read(fd, name, path, limits)
                    if found is not None:
                        files[path] = found.stat
                        read[path] = found
        limits.entries = left
        if left < 0:
            result.complete = False
            return
        for name in subdirectories:
            path = f"{rel}/{name}" if rel else name
            if depth + 1 > MAX_SCAN_DEPTH:
                result.complete = False
                continue
            try:
                child = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError:
                continue  # replaced by a link or removed meanwhile
            result.directories.add(path)
            _walk(child, path, depth + 1, known, limits, result)
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str, path: str, limits: _Limits) -> ScannedFile | None:
    """The content (or the digest) of the regular file ``name``; ``None`` when it is not one
    any more, or changed while it was read."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        return None
    key = (status.st_size, status.st_mtime_ns, status.st_ino, status.st_mode & 0o7777)
    with OpenFile(fd, path, status) as opened:
        try:
            size = status.st_size
            if size <= limits.keep_bytes and size <= limits.room:
                data = opened.read_all(limits.keep_bytes, too_large="")
                limits.room -= len(data)
                return ScannedFile(stat=key, digest=hashlib.sha256(data).hexdigest(), data=data)
            deferred = size <= limits.keep_bytes
            return ScannedFile(stat=key, digest=opened.digest(), data=None, deferred=deferred)
        except (RetriableError, ToolFailed):
            return None


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
