"""What changed in a workspace tree: a walk that ``stat``s every file, and inotify watches.

**The walk** (:func:`stat_walk`) visits what grep searches (regular files, hidden ones
included, not :data:`~toolcards.workspace._paths.SKIPPED_DIRS`, no symlinks, at most
:data:`~toolcards.workspace._glob.MAX_WALK_DEPTH` deep, each directory opened relative to its
parent) and ``stat``s each file, so comparing with the index tells what changed. Its cost
grows with the tree, too slow before every search of a large one.

**Watches** (Linux): :class:`TreeWatch` watches every directory the walk opens, before listing
it and through ``/proc/self/fd`` (so the watch is on the directory held, whatever its path
becomes); a search reads only the events queued since the last. The kernel queues an event
before the write returns, so a change finished before the search is always seen. A directory
created, deleted or moved, a queue overflow or a refused watch makes the next refresh walk
again (after a refusal, every refresh). Walks alone are used off Linux and on network and FUSE
file systems, whose remote changes inotify does not see. Never reported: writes through a
shared memory mapping or through a hard link in an unwatched directory.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import stat
import struct
import sys
import termios
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from toolcards.workspace._glob import MAX_WALK_DEPTH
from toolcards.workspace._paths import SKIPPED_DIRS

__all__ = ["Changes", "FileStat", "TreeWatch", "Walk", "inotify_available", "stat_walk"]

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_EXCL_UNLINK = 0x4000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_EXCL_UNLINK
)
_EVENT = struct.Struct("iIII")
_UNWATCHED_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "sshfs", "virtiofs"}
)


@dataclass(frozen=True, slots=True)
class FileStat:
    """What the walk knows of a file without reading it; equal stats mean an unchanged file."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileStat:
        """The fields of ``status`` that change when the file does."""
        return cls(status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino)


@dataclass(slots=True)
class Walk:
    """What one :func:`stat_walk` found."""

    files: dict[str, FileStat] = field(default_factory=dict)
    """Every regular file, by root-relative path."""
    truncated: bool = False
    """A directory at the deepest level walked had subdirectories (not entered)."""
    watched: bool = True
    """Every directory got its watch (false when the kernel refused one, or none was asked)."""


def stat_walk(
    root_fd: int,
    *,
    below: str = "",
    watch: TreeWatch | None = None,
    check: Callable[[], None] | None = None,
) -> Walk:
    """Stat every file grep would search under ``below`` (root-relative; ``""`` the root).

    ``watch`` gets a watch on each directory before it is listed. ``check`` is called for
    every directory (a deadline or a stop request raises there). Directories that cannot
    be opened or listed are skipped; so are files that vanish while they are listed.
    """
    found = Walk(watched=watch is not None)
    depth_of_below = 0 if not below else below.count("/") + 1
    try:
        start = os.open(below, _DIRECTORY_FLAGS, dir_fd=root_fd) if below else os.dup(root_fd)
    except OSError:
        return found
    stack: list[tuple[int, str, int]] = [(start, below, depth_of_below + 1)]
    try:
        while stack:
            fd, rel, depth = stack.pop()
            try:
                if check is not None:
                    check()
                if watch is not None and found.watched and not watch.watch_directory(fd, rel):
                    found.watched = False
                prefix = f"{rel}/" if rel else ""
                try:
                    entries = list(os.scandir(fd))
                except OSError:
                    continue
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name in SKIPPED_DIRS:
                                continue
                            if depth >= MAX_WALK_DEPTH:
                                found.truncated = True
                                continue
                            child = os.open(entry.name, _DIRECTORY_FLAGS, dir_fd=fd)
                            stack.append((child, prefix + entry.name, depth + 1))
                        elif entry.is_file(follow_symlinks=False):
                            found.files[prefix + entry.name] = FileStat.of(entry.stat(follow_symlinks=False))
                    except OSError:
                        continue
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return found


@dataclass(slots=True)
class Changes:
    """What the watches of one tree reported since they were last asked."""

    paths: set[str] = field(default_factory=set)
    """Files that may have changed, appeared or gone."""
    created: set[str] = field(default_factory=set)
    """Directories that appeared: to watch and walk."""
    removed: set[str] = field(default_factory=set)
    """Directories that went: every file below is gone."""
    rewalk: bool = False
    """Something the events cannot describe file by file happened: walk the whole tree."""

    def __bool__(self) -> bool:
        return bool(self.paths or self.created or self.removed or self.rewalk)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


def inotify_available(root: str) -> bool:
    """Whether changes under ``root`` can be watched: Linux, and a local file system."""
    if _libc() is None:
        return False
    return _filesystem_of(root) not in _UNWATCHED_FILESYSTEMS and not _filesystem_of(root).startswith("fuse")


def _filesystem_of(path: str) -> str:
    """The type of the file system holding ``path`` (from ``/proc/self/mountinfo``), or ``""``."""
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as mounts:
            for line in mounts:
                head, _, tail = line.partition(" - ")
                fields = head.split()
                if len(fields) < 5 or not tail:
                    continue
                point = fields[4].replace("\\040", " ")
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, tail.split()[0]
    except OSError:
        return ""
    return kind


class _Notifier:
    """The process's one inotify instance, shared by every :class:`TreeWatch`."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._libc = libc
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.fd: int = fd
        self.lock = threading.Lock()
        self._owners: dict[int, tuple[weakref.ReferenceType[TreeWatch], str]] = {}

    def add(self, owner: TreeWatch, dir_fd: int, rel: str) -> int | None:
        path = f"/proc/self/fd/{dir_fd}".encode()
        wd: int = self._libc.inotify_add_watch(self.fd, path, _MASK)
        if wd < 0:
            return None
        with self.lock:
            self._owners[wd] = (weakref.ref(owner), rel)
        return wd

    def remove(self, wd: int) -> None:
        with self.lock:
            self._owners.pop(wd, None)
        self._libc.inotify_rm_watch(self.fd, wd)

    def drain(self) -> None:
        """Read the events queued when called and hand each to its tree's watch.

        Events that arrive meanwhile wait for the next call: a tree that changes faster than
        its events are read (a process renaming in a loop) cannot hold a search here.
        """
        with self.lock:
            left = self._queued_bytes()
            while left > 0:
                try:
                    data = os.read(self.fd, min(left, 64 * 1024))
                except OSError:  # empty (EAGAIN), or the next event no longer fits (EINVAL)
                    return
                if not data:
                    return
                left -= len(data)
                self._dispatch(data)

    def _queued_bytes(self) -> int:
        """How many bytes of events are queued now (``FIONREAD``)."""
        count = array.array("i", [0])
        try:
            fcntl.ioctl(self.fd, termios.FIONREAD, count, True)
        except OSError:
            return 64 * 1024  # cannot tell: one read's worth
        return count[0]

    def _dispatch(self, data: bytes) -> None:
        position = 0
        while position + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, position)
            raw = data[position + _EVENT.size : position + _EVENT.size + length].split(b"\0", 1)[0]
            position += _EVENT.size + length
            if mask & _IN_Q_OVERFLOW:
                for reference, _ in self._owners.values():
                    owner = reference()
                    if owner is not None:
                        owner.pending.rewalk = True
                continue
            found = self._owners.get(wd)
            if found is None:
                continue
            owner = found[0]()
            if owner is None:
                continue
            if mask & _IN_IGNORED:
                del self._owners[wd]
                owner.forget(wd)
                continue
            owner.record(found[1], os.fsdecode(raw), mask)


_notifier: _Notifier | None = None
_notifier_lock = threading.Lock()


def _shared_notifier() -> _Notifier | None:
    global _notifier
    libc = _libc()
    if libc is None:
        return None
    with _notifier_lock:
        if _notifier is None:
            try:
                _notifier = _Notifier(libc)
            except OSError:
                return None
        return _notifier


class TreeWatch:
    """The inotify watches on one tree's directories, and what they reported.

    Thread-safe. :meth:`take` hands over the changes reported since it was last called.
    """

    def __init__(self) -> None:
        self.pending = Changes()
        """Changes reported and not yet taken (filled while the notifier's lock is held)."""
        self._notifier = _shared_notifier()
        self._watches: dict[int, str] = {}
        self._refused = self._notifier is None

    @property
    def working(self) -> bool:
        """Whether every directory walked so far is watched (else changes need walks)."""
        return not self._refused

    def watch_directory(self, dir_fd: int, rel: str) -> bool:
        """Watch the open directory ``dir_fd`` (root-relative ``rel``); False if refused."""
        if self._refused or self._notifier is None:
            return False
        wd = self._notifier.add(self, dir_fd, rel)
        if wd is None:
            self._refused = True
            self.close()
            return False
        with self._notifier.lock:
            self._watches[wd] = rel
        return True

    def take(self) -> Changes:
        """The changes reported since the last call (an empty :class:`Changes` when none)."""
        notifier = self._notifier
        if notifier is None:
            return Changes()
        notifier.drain()
        with notifier.lock:
            taken, self.pending = self.pending, Changes()
        return taken

    def record(self, directory: str, name: str, mask: int) -> None:
        """One event on ``directory``'s entry ``name`` (called with the notifier's lock held)."""
        if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF):
            if mask & _IN_MOVE_SELF:
                self.pending.rewalk = True
            return
        rel = f"{directory}/{name}" if directory else name
        if mask & _IN_ISDIR:
            if name in SKIPPED_DIRS:
                return
            if mask & (_IN_MOVED_FROM | _IN_MOVED_TO):
                self.pending.rewalk = True
            elif mask & _IN_CREATE:
                self.pending.created.add(rel)
            elif mask & _IN_DELETE:
                self.pending.removed.add(rel)
            return
        self.pending.paths.add(rel)

    def forget(self, wd: int) -> None:
        """The kernel dropped watch ``wd`` (its directory is gone); called with the lock held."""
        self._watches.pop(wd, None)

    def unwatch_below(self, rel: str) -> None:
        """Drop the watches of ``rel`` and the directories below it."""
        notifier = self._notifier
        if notifier is None:
            return
        with notifier.lock:
            gone = [wd for wd, where in self._watches.items() if where == rel or where.startswith(f"{rel}/") or not rel]
            for wd in gone:
                del self._watches[wd]
        for wd in gone:
            notifier.remove(wd)

    def close(self) -> None:
        """Remove every watch of this tree."""
        notifier = self._notifier
        if notifier is None:
            return
        with notifier.lock:
            gone = list(self._watches)
            self._watches.clear()
        for wd in gone:
            with contextlib.suppress(OSError):
                notifier.remove(wd)


def is_directory(root_fd: int, rel: str) -> bool:
    """Whether ``rel`` is a directory (not a link to one) below ``root_fd``."""
    try:
        return stat.S_ISDIR(os.stat(rel, dir_fd=root_fd, follow_symlinks=False).st_mode)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return False
        raise
