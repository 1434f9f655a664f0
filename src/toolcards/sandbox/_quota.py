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

Cost. A walk is one ``lstat`` per entry (docs/benchmarks.md has the figures),
capped at :data:`MAX_ENTRIES` entries (beyond, the sum is a lower bound). The usage of a
tree is remembered between commands: a command starts without a walk when the filesystem
has not grown by more than :data:`ESTIMATE_SLACK` since the last one, not longer than
:data:`MAX_AGE_S` ago, and has not shrunk (a shrink may be files deleted from the tree, by
a command, a workspace tool or anything else: the next command near the quota walks, see
:meth:`WorkspaceUsage.at_start`). The watchdog never walks more often than once per
:data:`WALK_SPACING` times the last walk's duration, so it uses at most a few percent of a
core on a large tree.

What it counts: allocated blocks (``st_blocks``, as ``du`` does), hard links once, nothing
on another filesystem mounted inside the tree (``du -x``), symlinks not followed. Space
freed outside the tree while a command writes inside it hides growth from the estimate
until the next periodic walk.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from toolcards.fs._tree_usage import (
    ESTIMATE_SLACK,
    MAX_AGE_S,
    MAX_ENTRIES,
    MIB,
    WALK_SPACING,
    QuotaStart,
    TreeUsage,
    WorkspaceUsage,
    filesystem_used,
    tree_usage,
)

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

TICK_S = 0.02
"""How often the watchdog reads the filesystem's used space."""
PERIOD_S = 2.0
"""Longest time between two walks while a command runs (catches growth the estimate hides)."""


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
