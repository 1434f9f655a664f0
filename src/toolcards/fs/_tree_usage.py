"""How much space a workspace tree uses, measured cheaply enough to check on every change.

Shared by the domains that write into a tree: the sandbox stops a command past the
workspace's disk quota (``ExecLimits.disk_mb``) and the workspace tools refuse a write that
would pass it (``WorkspaceTool.disk_mb``).

:func:`tree_usage` walks a tree once (one ``lstat`` per entry), capped at
:data:`MAX_ENTRIES` entries. :class:`WorkspaceUsage`
remembers the last walk of one tree and estimates the current usage without walking: the
tree cannot have grown by more than its filesystem did since (one ``statvfs``), so the last
walk plus that growth is an upper bound; only when the bound passes a quota is a new walk
needed. The bound says nothing about a shrink: when the filesystem holds less than at the
last walk, files may have been deleted from the tree, and
:meth:`WorkspaceUsage.at_start` walks again before the next command (see there for when).

What it counts: allocated blocks (``st_blocks``, as ``du`` does), hard links once, nothing
on another filesystem mounted inside the tree (``du -x``), symlinks not followed. Space
freed outside the tree while it grows hides that growth from the estimate until the next
walk.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ESTIMATE_SLACK",
    "MAX_AGE_S",
    "MAX_ENTRIES",
    "MIB",
    "WALK_SPACING",
    "QuotaStart",
    "TreeUsage",
    "WorkspaceUsage",
    "filesystem_used",
    "tree_usage",
    "workspace_usage",
]

MIB = 1024 * 1024
"""Bytes in a MiB, the unit of every size in ``ExecLimits``."""

MAX_ENTRIES = 250_000
"""Entries one walk visits at most (~1 s); a larger tree's usage is a lower bound."""
ESTIMATE_SLACK = 4 * MIB
"""Filesystem growth since the last walk below which a command starts without walking."""
MAX_AGE_S = 30.0
"""A remembered usage older than this is measured again before a command starts."""
WALK_SPACING = 20.0
"""A walk that can wait starts at least this many times the last walk's duration after it
ended, so walking takes at most ~5 % of the time on a large tree."""


@dataclass(frozen=True, kw_only=True)
class TreeUsage:
    """What a walk of the tree found."""

    bytes: int
    """Allocated bytes of every entry below the root (not the root itself)."""
    entries: int
    """Entries visited."""
    complete: bool
    """``False`` when the walk stopped at its entry cap (``bytes`` is then a lower bound)."""


def tree_usage(root: Path, *, max_entries: int = MAX_ENTRIES) -> TreeUsage:
    """Walk ``root`` and add up the space its entries use. Blocks for the walk (bounded).

    Entries that vanish or cannot be read while walking are skipped. Never raises for
    anything found inside the tree; a missing root counts as empty.
    """
    try:
        root_dev = os.lstat(root).st_dev
    except OSError:
        return TreeUsage(bytes=0, entries=0, complete=True)
    total = 0
    entries = 0
    linked: set[int] = set()
    pending = [os.fspath(root)]
    while pending:
        directory = pending.pop()
        try:
            scan = os.scandir(directory)
        except OSError:
            continue
        with scan:
            for entry in scan:
                entries += 1
                if entries > max_entries:
                    return TreeUsage(bytes=total, entries=entries - 1, complete=False)
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != root_dev:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    pending.append(entry.path)
                elif info.st_nlink > 1:
                    if info.st_ino in linked:
                        continue
                    linked.add(info.st_ino)
                total += _allocated(info)
    return TreeUsage(bytes=total, entries=entries, complete=True)


def _allocated(info: os.stat_result) -> int:
    blocks = getattr(info, "st_blocks", None)
    return info.st_size if blocks is None else blocks * 512


def filesystem_used(path: Path) -> int:
    """Bytes used on the filesystem holding ``path`` (one ``statvfs``); 0 if unknown."""
    try:
        fs = os.statvfs(path)
    except OSError:
        return 0
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize


@dataclass(frozen=True, kw_only=True)
class _Measurement:
    bytes: int
    filesystem_used: int
    at: float
    duration_s: float


@dataclass(frozen=True, kw_only=True)
class QuotaStart:
    """The quota as a command starts: what the tree held and what it may grow to."""

    start_bytes: int
    """The tree's usage when the command started."""
    quota_bytes: int
    """The card's quota (``ExecLimits.disk_mb``) in bytes."""

    @property
    def limit_bytes(self) -> int:
        """Usage past which the command is stopped: the quota, or the starting usage when the
        tree was already over it (then the command may delete, not grow)."""
        return max(self.quota_bytes, self.start_bytes)

    @property
    def remaining_bytes(self) -> int:
        """What the command may still add (0 when the tree is at or over its quota)."""
        return max(self.quota_bytes - self.start_bytes, 0)


class WorkspaceUsage:
    """The last measured usage of one workspace tree, shared by its commands. Thread-safe."""

    def __init__(self, root: Path, *, max_entries: int = MAX_ENTRIES) -> None:
        self.root = root
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._last: _Measurement | None = None

    def measure(self) -> int:
        """Walk the tree now, remember the result, return its bytes. Blocks for the walk."""
        started = time.monotonic()
        used = filesystem_used(self.root)
        usage = tree_usage(self.root, max_entries=self.max_entries)
        ended = time.monotonic()
        measurement = _Measurement(bytes=usage.bytes, filesystem_used=used, at=ended, duration_s=ended - started)
        with self._lock:
            self._last = measurement
        return usage.bytes

    def estimate(self) -> int:
        """An upper bound of the tree's usage from the last walk plus the filesystem's growth.

        Walks when nothing is remembered yet.
        """
        last = self._last
        if last is None:
            return self.measure()
        return last.bytes + max(filesystem_used(self.root) - last.filesystem_used, 0)

    def at_start(self, quota_mb: int, *, file_size_mb: int | None = None) -> QuotaStart:
        """The quota for a command about to start, whose files may each reach ``file_size_mb``
        (``None``: no cap of its own). Blocks for a walk when one is needed.

        The remembered usage is reused, after one ``statvfs``, while it still holds: the
        last walk is under :data:`MAX_AGE_S` old and the filesystem has grown by less than
        :data:`ESTIMATE_SLACK` since (the start is then the walk plus that growth, an upper
        bound). When the filesystem holds less than at the last walk, files may have left
        the tree and the remembered usage may be too high, so the tree is walked again:

        * always when the remembered usage leaves less than ``file_size_mb`` below the quota
          (it would set the command's file cap, so space freed after a quota stop is seen
          by the very next command);
        * otherwise (no cap could change) once :data:`WALK_SPACING` times the last walk's
          duration has passed since it, so that space freed outside the tree on a busy
          filesystem does not make every command walk a large tree.

        Never raises (see :func:`tree_usage`).
        """
        quota = quota_mb * MIB
        last = self._last
        if last is None:
            return QuotaStart(start_bytes=self.measure(), quota_bytes=quota)
        used = filesystem_used(self.root)
        now = time.monotonic()
        grown = used - last.filesystem_used
        if now - last.at >= MAX_AGE_S or grown >= ESTIMATE_SLACK:
            start = self.measure()
        elif grown >= 0:
            start = last.bytes + grown
        elif (
            file_size_mb is None
            or quota - last.bytes < file_size_mb * MIB
            or now >= last.at + WALK_SPACING * last.duration_s
        ):
            start = self.measure()
        else:
            # Still an upper bound: the tree cannot hold more than before the shrink.
            start = last.bytes
        return QuotaStart(start_bytes=start, quota_bytes=quota)

    def last_walk_duration(self) -> float:
        """Seconds the last walk took (0 before the first)."""
        last = self._last
        return 0.0 if last is None else last.duration_s


_usages: dict[str, WorkspaceUsage] = {}
_usages_lock = threading.Lock()


def workspace_usage(root: Path) -> WorkspaceUsage:
    """The process-wide :class:`WorkspaceUsage` of the tree at ``root`` (one per tree)."""
    key = os.path.realpath(root)
    with _usages_lock:
        usage = _usages.get(key)
        if usage is None:
            usage = _usages[key] = WorkspaceUsage(Path(key))
        return usage
