"""The workspace's disk quota: what the tree uses, and a watchdog that stops a command past it.

``ExecLimits.disk_mb`` caps the space the tree may use when commands write to it, enforced
three ways, cheapest first: before a command, every file it writes is capped at what remains
(``RLIMIT_FSIZE``), so one big file stops exactly at the quota; while it runs, a
:class:`DiskWatch` thread reads the file system's used space every :data:`TICK_S` and walks the
tree only when the last usage plus that growth may pass the quota (or every :data:`PERIOD_S`),
stopping the process group when the walk confirms it, so fast small files overshoot by at most
one tick's writes; after it, the same estimate decides on a final walk.

A walk is one ``lstat`` per entry, capped at :data:`MAX_ENTRIES` (beyond, a lower bound). A
tree's usage is remembered between commands and trusted while the file system grew by less
than :data:`ESTIMATE_SLACK`, for at most :data:`MAX_AGE_S`, and did not shrink (a shrink may be
deletions in the tree: :meth:`WorkspaceUsage.at_start`). Walks are spaced by
:data:`WALK_SPACING` times the last one's duration, bounding the watchdog's CPU.

It counts allocated blocks (as ``du -x``: hard links once, not other mounts, symlinks not
followed). Space freed outside the tree during a command hides growth from the estimate until
the next periodic walk.
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
