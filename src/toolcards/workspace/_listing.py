"""A directory's entries in listing order, read again only when the directory has changed.

Reading a large directory is most of what a listing costs (the kernel's read of every entry,
then a sort), and agents list the same directories again and again. So the entries of a
directory are kept, keyed by its device and inode, with the change stamp its ``fstat`` gave
before they were read: its change and modification times, size and link count. A listing
``fstat``\\ s the open directory (one system call) and uses the kept entries when nothing in
the stamp moved.

A directory changed in the last :data:`SETTLED_S` seconds is read and not kept. The kernel
stamps times from a clock that ticks every few milliseconds (some file systems keep whole
seconds, or two), so a change made in the same tick as the read could leave the stamp as it
was; a directory whose stamp is older than the read by more than a tick cannot. The change
time is set by the kernel at every change to the directory (a rename in or out, a new or
removed entry) and no program can set it back, so a tool that restores modification times
(``tar``, ``rsync -t``) is noticed too. What changes inside files (their sizes) is not part of a
directory's entries: sizes are asked at every listing.

At most :data:`MAX_KEPT_NAMES` names are kept in all, the directories listed longest ago
dropped first.
"""

from __future__ import annotations

import itertools
import os
import stat
import threading
import time
from collections import OrderedDict
from typing import NamedTuple

from toolcards.workspace._tree import Directory

__all__ = ["Listing", "listing_of"]

SETTLED_S = 2.0
"""A directory changed more recently than this is read again at every listing."""

MAX_KEPT_NAMES = 200_000
"""Names kept in all, across directories."""


class Listing(NamedTuple):
    """A directory's entries: names in listing order, each name's kind, whether there were
    more than a listing reads. Shared between listings: treat it as read-only."""

    names: tuple[str, ...]
    kinds: dict[str, int]
    more: bool


class _Kept:
    """The listings kept, by (device, inode), with the stamp each was read under."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, int], tuple[tuple[int, ...], Listing]] = OrderedDict()
        self._names = 0

    def get(self, key: tuple[int, int], stamp: tuple[int, ...]) -> Listing | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != stamp:
                return None
            self._entries.move_to_end(key)
            return found[1]

    def put(self, key: tuple[int, int], stamp: tuple[int, ...], listing: Listing) -> None:
        size = len(listing.names)
        if size > MAX_KEPT_NAMES:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._names -= len(old[1].names)
            while self._entries and self._names + size > MAX_KEPT_NAMES:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._names -= len(dropped.names)
            self._entries[key] = (stamp, listing)
            self._names += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._names = 0


_KEPT = _Kept()


def listing_of(directory: Directory) -> Listing:
    """``directory``'s entries in listing order: directories first, then by name case-blind,
    ties by name.

    Raises:
        ToolFailed: the directory cannot be read (permission denied...), in words.
    """
    now = time.time_ns()
    try:
        info = os.fstat(directory.fd)
    except OSError:  # no stamp to check it by: read it, keep nothing
        return _read(directory)
    key = (info.st_dev, info.st_ino)
    stamp = (info.st_ctime_ns, info.st_mtime_ns, info.st_size, info.st_nlink)
    kept = _KEPT.get(key, stamp)
    if kept is not None:
        return kept
    listing = _read(directory)
    if max(info.st_ctime_ns, info.st_mtime_ns) < now - int(SETTLED_S * 1e9):
        _KEPT.put(key, stamp, listing)
    return listing


def _read(directory: Directory) -> Listing:
    kinds, more = directory.kinds()
    return Listing(_in_listing_order(kinds), kinds, more)


def _in_listing_order(kinds: dict[str, int]) -> tuple[str, ...]:
    """The names of ``kinds`` sorted by stable sorts on keys taken in C."""
    names = sorted(kinds)
    names.sort(key=str.casefold)
    if stat.S_IFDIR in kinds.values():
        directories = set(itertools.compress(kinds, map(stat.S_IFDIR.__eq__, kinds.values())))
        names.sort(key=directories.__contains__, reverse=True)  # reverse keeps ties in order
    return tuple(names)
