"""Ranking for knowledge-graph search: keyword scores, hybrid fusion, shortest paths.

The scores are computed over the arrays of :class:`~toolcards.knowledge_graph._index.GraphIndex`;
this module holds their definition, constants and the pure path search.

Keyword score (BM25 with field weights)
    Texts are read by the package's one tokenizer (:mod:`toolcards.core._words`: case-folded
    letter/digit runs, plurals folded, stop words dropped). Each observation is a passage,
    and so is each entity's type and description; names and aliases form a third field.
    A term weighs by its rarity among the passages the search sees (BM25's
    ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, with ``k1 = 1.2``, ``b = 0.75``), so a word
    every entity shares counts for next to nothing. An entity's keyword score is::

        keyword = best observation's BM25 + description's BM25 + NAME_WEIGHT * name's BM25

    The best observation, not their sum: a long entity is not found for every query. An
    entity scoring under ``KEYWORD_FLOOR`` (1 %) of the best shares only words nearly every
    entity has: the keywords do not find it (it is neither listed nor counted), so
    ``entity-042`` finds ``entity-042``, not the ninety-nine others named ``entity-...``.

Vector score
    The cosine of the query with the entity's text (its head and observations, as the
    embedding model reads them); entities below ``threshold`` do not enter through it. In a
    large graph the cosines are computed only for the passages near the query
    (:mod:`toolcards.knowledge_graph._ivf`) and, in hybrid mode, those of the best keyword
    entities; any other entity has no cosine, as if it had no vector.

Hybrid score, in [0, 1]
    ``alpha * cos' + (1 - alpha) * keyword'``. ``cos'`` is the cosine scaled from the lowest
    to the highest among the embedded entities onto [0, 1]. ``keyword'`` is how far the
    entity's keyword score stands out: ``sqrt((keyword - runner-up) / best)`` for the one
    entity with the best keyword score, 0 for every other (and for all when the best is
    shared). A keyword match several entities share does not tell them apart, so it leaves
    the ranking by meaning alone; one entity matching the query's rare words far better
    than any other (a name, a figure, the question's own words) rises to the top. Summing
    every entity's keyword score instead let words common to many entities reorder the
    meaning-based ranking: on ``bench memory`` every such calibration (over the best score,
    over the query's BM25 ceiling, z-scores, reciprocal-rank fusion at k = 10 and 60,
    weighted, at several candidate depths, per passage rather than per entity) fell below
    vectors alone at depth 5 and 10 for paraphrased questions; ``docs/benchmarks.md`` has
    the table. The result holds for ``alpha`` from 0.5 to 0.7; the default stays 0.7.

Names first
    Whatever the mode, an entity named (or aliased) exactly the query ranks first, alone,
    then those whose name starts with it; the other hits follow by score. Ties fall to the
    most recently recorded entity, never to name order.

Paths
    Shortest paths ignore relation direction and are bounded in length (hops).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = [
    "BM25_B",
    "BM25_K1",
    "DEFAULT_ALPHA",
    "DEFAULT_THRESHOLD",
    "KEYWORD_FLOOR",
    "NAME_WEIGHT",
    "shortest_paths",
]

DEFAULT_ALPHA = 0.7
"""Weight of the vector leg in the hybrid score (``bench memory`` measures the choice)."""
DEFAULT_THRESHOLD = 0.3
"""Minimum raw cosine for an entity to enter through the vector leg."""
NAME_WEIGHT = 2.0
"""How much more a term counts in an entity's name or aliases than in its other texts."""
KEYWORD_FLOOR = 0.01
"""The share of the best keyword score an entity needs to be found by the keywords. A word
in every entity weighs about a thousandth of a rare one, a word in half of them about a
sixth: the floor drops the first kind of match and keeps the second."""
BM25_K1 = 1.2
"""BM25 term-frequency saturation."""
BM25_B = 0.75
"""BM25 length normalisation."""

Node = TypeVar("Node", bound=Hashable)
Edge = TypeVar("Edge")


def shortest_paths(
    source: Node,
    targets: Collection[Node],
    neighbours: Callable[[Node], Iterable[tuple[Node, Edge]]],
    max_depth: int,
) -> dict[Node, list[tuple[Edge, Node]]]:
    """Breadth-first shortest paths from ``source`` to each target within ``max_depth`` hops.

    Args:
        source: where the paths start.
        targets: where they may end; ``source`` itself is ignored.
        neighbours: ``node`` → ``(next_node, edge)`` pairs, in both directions for an
            undirected search.
        max_depth: the longest path returned, in edges.

    Returns:
        Each reachable target → its path as ``[(edge, node), ...]`` steps from ``source``.
        The search stops as soon as every target is reached or the depth is exhausted.
    """
    wanted = set(targets) - {source}
    parents: dict[Node, tuple[Node, Edge] | None] = {source: None}
    found: dict[Node, list[tuple[Edge, Node]]] = {}
    frontier: deque[Node] = deque([source])
    depth = 0
    while frontier and wanted and depth < max_depth:
        depth += 1
        for _ in range(len(frontier)):
            node = frontier.popleft()
            for nxt, edge in neighbours(node):
                if nxt in parents:
                    continue
                parents[nxt] = (node, edge)
                frontier.append(nxt)
                if nxt in wanted:
                    wanted.discard(nxt)
                    found[nxt] = _walk_back(parents, nxt)
    return found


def _walk_back(parents: Mapping[Node, tuple[Node, Edge] | None], node: Node) -> list[tuple[Edge, Node]]:
    steps: list[tuple[Edge, Node]] = []
    link = parents[node]
    while link is not None:
        previous, edge = link
        steps.append((edge, node))
        node = previous
        link = parents[node]
    steps.reverse()
    return steps
