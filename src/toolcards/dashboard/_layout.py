"""Where the knowledge graph's nodes go: a deterministic force layout, bounded in time.

Fruchterman and Reingold's force layout in its grid form (their paper's own variant):
every relation pulls its two entities together (``d² / k``), and an entity pushes away
only the entities in its own and the eight neighbouring cells of a grid of side ``k``
(``k² / d``), so an iteration costs the entities and relations, not their square. Entities
stay inside a square frame whose area grows with their number, so unrelated ones stay near. An iteration over thousands
of entities still costs milliseconds (more as the picture settles and cells fill), so a
cold layout's iterations are capped by the number of entities
(:data:`ENTITY_ITERATIONS`).

Nothing is random: an entity starts where a hash of its name puts it, so the same graph
is drawn the same way in every process. :class:`GraphLayout` keeps the last positions and
starts the next layout from them: when a few entities or relations are added, only they and
the entities they touch move (the forces are computed for them alone), so the picture does not
jump and the cost is that of the change, not of the graph.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Hashable, Sequence
from typing import Any

__all__ = ["COLD_ITERATIONS", "ENTITY_ITERATIONS", "WARM_ITERATIONS", "GraphLayout", "force_layout"]

COLD_ITERATIONS = 100
"""Iterations of a layout started from nothing, for up to :data:`ENTITY_ITERATIONS` / 100 entities."""
ENTITY_ITERATIONS = 60_000
"""Entities times iterations a cold layout may spend: 2,000 entities get 30 iterations (never fewer than 15)."""
WARM_ITERATIONS = 30
"""Iterations of a layout started from the previous positions."""
_K = 1.0
"""The ideal distance between two related entities, in layout units."""


def _hashed_point(name: str, side: float) -> tuple[float, float]:
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    x = int.from_bytes(digest[:4], "big") / 0xFFFFFFFF
    y = int.from_bytes(digest[4:], "big") / 0xFFFFFFFF
    return (x - 0.5) * side, (y - 0.5) * side


def force_layout(
    names: Sequence[str],
    edges: Sequence[tuple[int, int]],
    *,
    start: dict[str, tuple[float, float]] | None = None,
    iterations: int = COLD_ITERATIONS,
) -> list[tuple[float, float]]:
    """Positions for ``names`` (in layout units, centred on 0) linked by ``edges`` (index pairs).

    ``start`` gives known positions; an entity without one starts next to a related entity
    that has one, else where its name's hash puts it.
    """
    import numpy as np

    n = len(names)
    if n == 0:
        return []
    side = _K * math.sqrt(n) * 2.0
    pos = np.empty((n, 2), dtype=np.float64)
    known = np.zeros(n, dtype=bool)
    for index, name in enumerate(names):
        point = start.get(name) if start else None
        if point is not None:
            pos[index] = point
            known[index] = True
        else:
            pos[index] = _hashed_point(name, side)
    if start and not known.all():
        for a, b in edges:  # a newcomer starts beside a neighbour already placed
            for new, old in ((a, b), (b, a)):
                if not known[new] and known[old]:
                    dx, dy = _hashed_point(names[new], 2 * _K)
                    pos[new] = pos[old] + (dx, dy)
                    known[new] = True
    edge_array = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edge_array = edge_array[edge_array[:, 0] != edge_array[:, 1]]
    moving = None
    if start:
        # Only what changed moves: the newcomers and the entities related to them, unless
        # that is most of the graph.
        placed = np.array([name in start for name in names])
        free = ~placed
        if len(edge_array):
            touched = free[edge_array[:, 0]] | free[edge_array[:, 1]]
            free[edge_array[touched].ravel()] = True
        if not free.any():
            return [(float(x), float(y)) for x, y in pos]
        if free.sum() < n // 3:
            moving = np.flatnonzero(free)
    temperature = side / 10 if not start else _K
    cooling = temperature / (iterations + 1)
    for _ in range(iterations):
        disp = _repulsion(pos, np, moving)
        if len(edge_array):
            delta = pos[edge_array[:, 0]] - pos[edge_array[:, 1]]
            dist = np.maximum(np.hypot(delta[:, 0], delta[:, 1]), 1e-6)
            pull = (np.log1p(dist / _K) * _K / dist)[:, None] * delta  # |f| = k log(1 + d/k)
            for axis in (0, 1):
                disp[:, axis] -= np.bincount(edge_array[:, 0], weights=pull[:, axis], minlength=n)
                disp[:, axis] += np.bincount(edge_array[:, 1], weights=pull[:, axis], minlength=n)
        if moving is not None:
            still = np.ones(n, dtype=bool)
            still[moving] = False
            disp[still] = 0.0
        length = np.maximum(np.hypot(disp[:, 0], disp[:, 1]), 1e-9)
        pos += disp / length[:, None] * np.minimum(length, temperature)[:, None]
        np.clip(pos, -side / 2, side / 2, out=pos)  # the frame keeps unrelated entities near
        temperature = max(temperature - cooling, _K * 0.02)
    if moving is None:
        pos -= pos.mean(axis=0)  # a partial layout keeps the others where they were drawn
    return [(float(x), float(y)) for x, y in pos]


_OFFSETS = tuple((dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1))


def _repulsion(pos: Any, np: Any, moving: Any = None) -> Any:
    """Each entity (of ``moving``, an index array; default all) pushed by those in its own and
    the 8 neighbouring cells of side ``k``."""
    n = len(pos)
    cell = _K
    cells = np.floor(pos / cell).astype(np.int64)
    cells -= cells.min(axis=0)
    width = int(cells[:, 1].max()) + 3
    keys = cells[:, 0] * width + cells[:, 1]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    shifts = np.array([dx * width + dy for dx, dy in _OFFSETS], dtype=np.int64)
    pushed = order if moving is None else moving[np.argsort(keys[moving], kind="stable")]
    # The 9 neighbour cells of every pushed entity, in key order (searchsorted is far faster on sorted input).
    targets = (keys[pushed][None, :] + shifts[:, None]).ravel()
    first = np.searchsorted(sorted_keys, targets, "left")
    counts = np.searchsorted(sorted_keys, targets, "right") - first
    total = int(counts.sum())
    if total == 0:
        return np.zeros((n, 2))
    i = np.repeat(np.tile(pushed, len(_OFFSETS)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    j = order[np.repeat(first, counts) + offsets]
    delta = pos[i] - pos[j]
    dist2 = delta[:, 0] ** 2 + delta[:, 1] ** 2
    near = (i != j) & (dist2 < (2 * cell) ** 2)
    push = (_K * _K / np.maximum(dist2[near], 1e-6))[:, None] * delta[near]  # |f| = k² / d
    index = i[near]
    disp = np.zeros((n, 2))
    if len(index):  # bincount of nothing is an integer array
        disp[:, 0] = np.bincount(index, weights=push[:, 0], minlength=n)
        disp[:, 1] = np.bincount(index, weights=push[:, 1], minlength=n)
    return disp


class GraphLayout:
    """The positions of one graph's entities, laid out once per graph version. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: Hashable = object()
        self._positions: dict[str, tuple[float, float]] = {}

    def positions_known(self) -> int:
        """How many entities have a position (0 before the first layout)."""
        with self._lock:
            return len(self._positions)

    def positions(
        self, version: Hashable, names: Sequence[str], edges: Sequence[tuple[str, str]]
    ) -> dict[str, tuple[float, float]]:
        """Positions of ``names`` for the graph at ``version`` (computed once per version)."""
        with self._lock:
            if version == self._version and len(self._positions) == len(names):
                return self._positions
            index = {name: i for i, name in enumerate(names)}
            pairs = [(index[a], index[b]) for a, b in edges if a in index and b in index]
            warm = bool(self._positions) and any(name in self._positions for name in names)
            cold = max(15, min(COLD_ITERATIONS, ENTITY_ITERATIONS // max(len(names), 1)))
            points = force_layout(
                names, pairs, start=self._positions if warm else None, iterations=WARM_ITERATIONS if warm else cold
            )
            self._positions = dict(zip(names, points, strict=True))
            self._version = version
            return self._positions
