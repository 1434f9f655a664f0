"""Sorted lists kept sorted as items come and go: the graph's root names, the keyword
index's names for prefix lookups.

A few new items are inserted by bisection; a batch of more is sorted, appended and the
whole list sorted once: two sorted runs, which the list's sort merges in linear time, where
one insertion each would shift the list once per item.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparisonT

__all__ = ["INSORT_MAX", "discard", "insort_all"]

INSORT_MAX = 32
"""Most new items inserted one by one; a larger batch is sorted and merged in."""


def insort_all(items: list[SupportsRichComparisonT], new: Iterable[SupportsRichComparisonT]) -> None:
    """Add every item of ``new`` to the sorted list ``items``, keeping it sorted."""
    batch = list(new)
    if len(batch) <= INSORT_MAX:
        for item in batch:
            bisect.insort(items, item)
    else:
        batch.sort()
        items.extend(batch)
        items.sort()


def discard(items: list[SupportsRichComparisonT], item: SupportsRichComparisonT) -> None:
    """Remove ``item`` from the sorted list ``items``; a no-op if it is not there."""
    index = bisect.bisect_left(items, item)
    if index < len(items) and items[index] == item:
        del items[index]
