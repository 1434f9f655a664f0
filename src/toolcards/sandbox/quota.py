"""The workspace's disk quota: what the tree uses, and a watchdog that stops a command past it.

``ExecLimits.disk_mb`` caps the space the workspace tree may use when commands write to it.
Three mechanisms enforce it, from the cheapest:

1. Before a command starts, the tree's usage gives what remains of the quota, and every
   file the command writes is capped at that (``RLIMIT_FSIZE``, lowered below
   ``ExecLimits.file_size_mb`` when less remains): one big file stops exactly at the quota.
2. While it runs, a :class:`DiskWatch` thread reads the filesystem's used space every
   :data:`TICK_S` (one ``statvfs``, a few µs). The tree cannot have grown by more than the
   filesystem did, so only when the last measured usage plus that growth passes the quota
   (or every :data:`PERIOD_S` regardless) does it walk the tree to measure; a walk that
   confirms it stops the command's whole process group. Many small files written fast
   therefore overshoot by at most what is written in one tick.
3. After the command, the same estimate decides whether a final walk is needed, so a
   command that ended between two ticks is still reported.

Cost. A walk is one ``lstat`` per entry (about 4 µs here; 18,000 entries take ~80 ms),
capped at :data:`MAX_ENTRIES` entries (beyond, the sum is a lower bound). The usage of a
tree is remembered between commands: a command starts without a walk when the filesystem
has not grown by more than :data:`ESTIMATE_SLACK` since the last one, not longer than
:data:`MAX_AGE_S` ago. The watchdog never walks more often than once per
:data:`WALK_SPACING` times the last walk's duration, so it uses at most a few percent of a
core on a large tree.

What it counts: allocated blocks (``st_blocks``, as ``du`` does), hard links once, nothing
on another filesystem mounted inside the tree (``du -x``), symlinks not followed. Space
freed outside the tree while a command writes inside it hides growth from the estimate
until the next periodic walk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ESTIMATE_SLACK",
    "MAX_AGE_S",
    "MAX_ENTRIES",
    "MIB",
    "PERIOD_S",
    "TICK_S",
    "WALK_SPACING",
    "DiskWatch",
    "QuotaStart",
    "TreeUsage",
    "WorkspaceUsage",
    "filesystem_used",
    "tree_usage",
]

MIB = 1024 * 1024
"""Bytes in a MiB, the unit of every size in ``ExecLimits``."""

MAX_ENTRIES = 250_000
"""Entries one walk visits at most (~1 s); a larger tree's usage is a lower bound."""
TICK_S = 0.02
"""How often the watchdog reads the filesystem's used space."""
PERIOD_S = 2.0
"""Longest time between two walks while a command runs (catches growth the estimate hides)."""
WALK_SPACING = 20.0
"""A walk starts at least this many times its last duration after the previous one ended."""
ESTIMATE_SLACK = 4 * MIB
"""Filesystem growth since the last walk below which a command starts without walking."""
MAX_AGE_S = 30.0
"""A remembered usage older than this is measured again before a command starts."""


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

    def at_start(self, quota_mb: int) -> QuotaStart:
        """The quota for a command about to start; walks unless a recent walk still holds."""
        last = self._last
        fresh = (
            last is not None
            and time.monotonic() - last.at < MAX_AGE_S
            and filesystem_used(self.root) - last.filesystem_used < ESTIMATE_SLACK
        )
        start = self.estimate() if fresh else self.measure()
        return QuotaStart(start_bytes=start, quota_bytes=quota_mb * MIB)

    def last_walk_duration(self) -> float:
        """Seconds the last walk took (0 before the first)."""
        last = self._last
        return 0.0 if last is None else last.duration_s


class DiskWatch:
    """Watches the tree while one command runs and calls ``stop`` once it grows past the limit.

    ``start()`` starts the watchdog thread; ``close()`` ends it and makes a final check
    (see the module docstring). After ``close()``, :attr:`exceeded` says whether the tree
    passed the limit and :attr:`usage_bytes` is the usage that showed it.
    """

    def __init__(self, usage: WorkspaceUsage, quota: QuotaStart) -> None:
        self.usage = usage
        self.quota = quota
        self.exceeded = False
        self.usage_bytes = quota.start_bytes
        self._stop_command: Callable[[], None] | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_walk = 0.0
        self._periodic = 0.0

    @property
    def written_bytes(self) -> int:
        """How much the tree grew while the command ran (as last measured)."""
        return max(self.usage_bytes - self.quota.start_bytes, 0)

    def start(self, stop_command: Callable[[], None]) -> None:
        """Start watching; ``stop_command`` is called (once, from the watchdog) on excess."""
        self._stop_command = stop_command
        self._periodic = time.monotonic() + PERIOD_S
        self._thread = threading.Thread(target=self._watch, name="sandbox-disk-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop watching and check once more (walks only if the estimate passes the limit)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if not self.exceeded:
            self._check(periodic=False, final=True)

    def _watch(self) -> None:
        while not self._done.wait(TICK_S):
            if self._check(periodic=time.monotonic() >= self._periodic, final=False):
                if self._stop_command is not None:
                    with contextlib.suppress(Exception):
                        self._stop_command()
                return

    def _check(self, *, periodic: bool, final: bool) -> bool:
        """Whether the tree is past the limit; walks only when the estimate says it may be."""
        limit = self.quota.limit_bytes
        if not periodic and self.usage.estimate() <= limit:
            return False
        now = time.monotonic()
        if not final and now < self._next_walk:
            return False
        measured = self.usage.measure()
        ended = time.monotonic()
        self._next_walk = ended + WALK_SPACING * self.usage.last_walk_duration()
        self._periodic = ended + max(PERIOD_S, self._next_walk - ended)
        self.usage_bytes = measured
        if measured > limit:
            self.exceeded = True
        return self.exceeded
