"""What was read from a file or a directory, kept while the object's change stamp holds.

Agents read the same files and list the same directories again and again, and most of what
such a read costs is the work after the system calls: sorting a directory's entries,
decoding, numbering and hashing a file. So the result of a read is kept per process, keyed by
the object's device and inode (and by what was asked of it), with the stamp its ``fstat``
gave before the read: its change and modification times, size and link count. A later read
``fstat``\\ s the open object (one system call, made anyway) and uses the kept result when
nothing in the stamp moved.

Only an object that had not changed for :data:`SETTLED_S` seconds when its ``fstat`` was
taken is kept. The kernel stamps times from a clock that ticks every few milliseconds (some
file systems keep whole seconds, or two), so a change made in the same tick as the read could
leave the stamp as it was; an object whose stamp is older than the read by more than a tick
cannot. The change time is set by the kernel at every change (a write, a rename, a new or
removed entry) and no program can set it back, so a tool that restores modification times
(``tar``, ``rsync -t``, ``touch -d``) is noticed too. A file replaced by a rename is another
inode, and an inode number used again has a new change time.

Each kind of result has its own :class:`Kept` store, bounded by a weight (names, bytes), the
results used longest ago dropped first.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["SETTLED_S", "Kept", "Stamp", "settled", "stamp_of"]

SETTLED_S = 2.0
"""An object changed more recently than this is read again at every use."""

Stamp = tuple[int, int, int, int]
"""Change time, modification time (both in nanoseconds), size, link count."""

Value = TypeVar("Value")


def stamp_of(status: os.stat_result) -> Stamp:
    """The change stamp of an ``fstat``."""
    return (status.st_ctime_ns, status.st_mtime_ns, status.st_size, status.st_nlink)


def settled(status: os.stat_result, before_ns: int) -> bool:
    """Whether the object of ``status`` had not changed for :data:`SETTLED_S` seconds at
    ``before_ns`` (wall clock, taken before the ``fstat``): then a read of it may be kept."""
    return max(status.st_ctime_ns, status.st_mtime_ns) < before_ns - int(SETTLED_S * 1e9)


class Kept(Generic[Value]):
    """Results of reads by key, each with the stamp it was read under; at most
    ``max_weight`` in all. Thread-safe. A kept value is shared between readers: treat it as
    read-only."""

    def __init__(self, max_weight: int) -> None:
        self.max_weight = max_weight
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[Stamp, Value, int]] = OrderedDict()
        self._weight = 0

    def get(self, key: Hashable, stamp: Stamp) -> Value | None:
        """The value kept for ``key`` if it was read under ``stamp``, else ``None``."""
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != stamp:
                return None
            self._entries.move_to_end(key)
            return found[1]

    def put(self, key: Hashable, stamp: Stamp, value: Value, weight: int) -> None:
        """Keep ``value`` for ``key``; one heavier than ``max_weight`` is not kept."""
        if weight > self.max_weight:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._weight -= old[2]
            while self._entries and self._weight + weight > self.max_weight:
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._weight -= dropped
            self._entries[key] = (stamp, value, weight)
            self._weight += weight

    def clear(self) -> None:
        """Forget everything kept."""
        with self._lock:
            self._entries.clear()
            self._weight = 0
