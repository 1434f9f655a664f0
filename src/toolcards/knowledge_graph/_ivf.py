"""``InvertedFile``: a coarse quantizer over a :class:`GraphIndex`'s passage vectors, so a
search reads the rows near the query instead of every row.

Spherical k-means centroids (half the square root of the row count of them) split the
rows into lists, each row in the list of its nearest centroid. A query scores the
centroids, takes the :data:`PROBES` nearest lists and the index computes exact cosines on
their rows only. The structure lives in memory, beside the matrix the vectors persist
from: it is trained at the first search that finds enough rows, trained again when the
rows have doubled since, and new or rewritten rows join their nearest list at the next
search (in one batch). Freed rows stay in their list until then and are skipped by
their owner (-1).

Training also says how to reorder the rows so that each list is one contiguous block of
the matrix (:meth:`InvertedFile.train` returns the order; the index moves its rows): a
probe then reads whole blocks in place instead of gathering scattered rows. Rows that join
a list later are kept beside its block and gathered.

Approximate: a row whose centroid is not among the probed ones is not read. See
``docs/architecture.md`` for where the index switches to it and what it buys.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["APPROXIMATE_FROM", "PROBES", "InvertedFile"]

APPROXIMATE_FROM = 20_000
"""Vector rows from which a search probes an :class:`InvertedFile` instead of scanning every row."""
PROBES = 8
"""Lists a query reads (of about ``sqrt(rows) / 2``)."""
_TRAIN_SAMPLE = 32
"""Rows sampled per centroid to train on."""
_TRAIN_ROUNDS = 8
_SEED = 20261128


class InvertedFile:
    """Lists of vector rows by nearest centroid (see the module docstring). Not thread-safe."""

    def __init__(self, probes: int = PROBES) -> None:
        self.probes = probes
        self.centroids: npt.NDArray[np.float32] | None = None
        self.trained_rows = 0
        """How many rows the centroids were trained on (retrained when the rows double)."""
        self._lists: list[npt.NDArray[np.int64]] = []
        """List → the rows put in it since training (outside its block)."""
        self._blocks = np.zeros(1, dtype=np.int64)
        """List ``i``'s block is rows ``_blocks[i]`` to ``_blocks[i + 1]``."""
        self._member = np.full(0, -1, dtype=np.int32)
        """Row → the list it was last put in; -1 when none."""
        self._stale: dict[int, None] = {}
        """Rows written since they were last put in a list."""

    @property
    def trained(self) -> bool:
        return self.centroids is not None

    def touch(self, rows: Iterable[int]) -> None:
        """Rows ``rows`` were written (or freed): put them in their lists again at the next
        :meth:`probe`. Untrained, there are no lists and nothing to do: a batch of rows costs
        one call, not one per row."""
        if self.centroids is not None:
            self._stale.update(dict.fromkeys(rows))

    def needs_training(self, rows: int) -> bool:
        """Whether ``rows`` rows call for (re)training: none yet, or twice those trained on."""
        return self.centroids is None or rows >= 2 * self.trained_rows

    def train(self, matrix: npt.NDArray[np.float32], owner: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Fit centroids to the used rows of ``matrix`` (``owner >= 0``) and list every row.

        Returns the order to put the rows in (``new[i] = old[order[i]]``, for the matrix, the
        owners and everything else numbered by row): the used rows list by list, then the
        free ones. The lists are numbered in that new order; the caller must reorder.
        """
        used = np.flatnonzero(owner >= 0)
        count = max(1, round(math.sqrt(len(used)) / 2))
        rng = np.random.default_rng(_SEED)
        sample = used if len(used) <= _TRAIN_SAMPLE * count else rng.choice(used, _TRAIN_SAMPLE * count, replace=False)
        points = matrix[np.sort(sample)]
        centroids = points[rng.choice(len(points), min(count, len(points)), replace=False)].copy()
        for _ in range(_TRAIN_ROUNDS):
            nearest = np.argmax(points @ centroids.T, axis=1)
            sums = np.zeros_like(centroids)
            np.add.at(sums, nearest, points)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            empty = norms[:, 0] == 0
            # An empty cluster keeps its centroid rather than collapsing to zero.
            centroids = np.where(empty[:, None], centroids, sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        self.centroids = centroids
        self.trained_rows = len(used)
        nearest = self._nearest(matrix, used)
        by_list = np.argsort(nearest, kind="stable")
        order = np.concatenate((used[by_list], np.flatnonzero(owner < 0))).astype(np.int64)
        self._blocks = np.searchsorted(nearest[by_list], np.arange(len(centroids) + 1)).astype(np.int64)
        self._member = np.full(len(owner), -1, dtype=np.int32)
        self._member[: len(used)] = nearest[by_list]
        self._lists = [np.empty(0, dtype=np.int64) for _ in range(len(centroids))]
        self._stale = {}
        return order

    def _nearest(self, matrix: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        """The list of the centroid nearest each of ``rows``."""
        assert self.centroids is not None
        nearest = np.empty(len(rows), dtype=np.int32)
        for start in range(0, len(rows), 8192):
            chunk = rows[start : start + 8192]
            nearest[start : start + len(chunk)] = np.argmax(matrix[chunk] @ self.centroids.T, axis=1)
        return nearest

    def _assign(self, matrix: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]) -> None:
        """Put ``rows`` in the lists of their nearest centroids (a row already there is not repeated)."""
        assert self.centroids is not None
        if len(self._member) < len(matrix):
            grown = np.full(len(matrix), -1, dtype=np.int32)
            grown[: len(self._member)] = self._member
            self._member = grown
        nearest = self._nearest(matrix, rows)
        moved = self._member[rows] != nearest
        rows, nearest = rows[moved], nearest[moved]
        self._member[rows] = nearest
        order = np.argsort(nearest, kind="stable")
        rows, nearest = rows[order], nearest[order]
        bounds = np.searchsorted(nearest, np.arange(len(self._lists) + 1))
        for list_id in np.flatnonzero(np.diff(bounds)).tolist():
            added = rows[bounds[list_id] : bounds[list_id + 1]]
            self._lists[list_id] = np.concatenate((self._lists[list_id], added))

    def probe(
        self, matrix: npt.NDArray[np.float32], owner: npt.NDArray[np.int64], query: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The used rows in the :attr:`probes` lists nearest ``query`` (a row may repeat) and
        their cosines with it (``matrix`` rows are normalised)."""
        assert self.centroids is not None
        if self._stale:
            stale = np.fromiter(self._stale, dtype=np.int64, count=len(self._stale))
            self._stale = {}
            self._assign(matrix, stale[owner[stale] >= 0])
        scores = np.einsum("ij,j->i", self.centroids, query)
        probes = min(self.probes, len(scores))
        nearest = np.argpartition(-scores, probes - 1)[:probes] if probes < len(scores) else np.arange(len(scores))
        blocks = self._blocks
        found_rows: list[npt.NDArray[np.int64]] = []
        found_cosines: list[npt.NDArray[np.float32]] = []
        member = self._member
        for list_id in nearest.tolist():
            start, end = int(blocks[list_id]), int(blocks[list_id + 1])
            if end > start:
                # Rows moved to another list since, or freed, are skipped.
                keep = (member[start:end] == list_id) & (owner[start:end] >= 0)
                found_rows.append(np.flatnonzero(keep) + start)
                found_cosines.append(np.einsum("ij,j->i", matrix[start:end], query)[keep])
            extra = self._lists[list_id]
            if len(extra):
                extra = extra[(member[extra] == list_id) & (owner[extra] >= 0)]
                found_rows.append(extra)
                found_cosines.append(np.einsum("ij,j->i", matrix[extra], query))
        if not found_rows:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        return np.concatenate(found_rows).astype(np.int64), np.concatenate(found_cosines)
