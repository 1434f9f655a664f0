"""A directory's entries in listing order, read again only when the directory has changed.

Reading a large directory is most of what a listing costs (the kernel's read of every entry,
then a sort), and agents list the same directories again and again. So a directory's sorted
entries are kept while its change stamp holds (:mod:`toolcards.workspace._kept`: the rule, and
why a directory changed in the last two seconds is read again every time). What changes inside
files (their sizes) is not part of a directory's entries: sizes are asked at every listing.

At most :data:`MAX_KEPT_NAMES` names are kept in all, the directories listed longest ago
dropped first.
"""

from __future__ import annotations

import itertools
import os
import stat
import time
from typing import NamedTuple

from toolcards.workspace._kept import Kept, settled, stamp_of
from toolcards.workspace._tree import Directory

__all__ = ["Listing", "listing_of"]

MAX_KEPT_NAMES = 200_000
"""Names kept in all, across directories."""


class Listing(NamedTuple):
    """A directory's entries: names in listing order, each name's kind, whether there were
    more than a listing reads. Shared between listings: treat it as read-only."""

    names: tuple[str, ...]
    kinds: dict[str, int]
    more: bool


_KEPT: Kept[Listing] = Kept(MAX_KEPT_NAMES)


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
    stamp = stamp_of(info)
    kept = _KEPT.get(key, stamp)
    if kept is not None:
        return kept
    listing = _read(directory)
    if settled(info, now):
        _KEPT.put(key, stamp, listing, len(listing.names))
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
