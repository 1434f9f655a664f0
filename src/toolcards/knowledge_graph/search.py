"""Ranking for knowledge-graph search: keyword scores, hybrid fusion, shortest paths.

Everything here is pure (no actor, no store, no numpy) except :class:`KeywordIndex`, an
inverted index the actor keeps up to date one entity at a time.

Keyword score, in [0, 1]
    Text is split into lowercase letter/digit runs (``user_service`` → ``user``,
    ``service``), a trailing plural ``s`` / ``ies`` is folded (``services`` → ``service``,
    ``policies`` → ``policy``), and common English stop words are dropped (unless the
    query has nothing else). With ``n`` distinct query terms, ``m`` of them found anywhere
    in the entity (name, type, description, observations) and ``m_name`` of them found in
    its name::

        keyword = 0.8 * m / n + 0.2 * m_name / n

    So every term in the name scores 1.0, every term somewhere but not in the name 0.8,
    and half the terms in the description only 0.4. Only whole terms match (no prefixes
    or typos). A name's own words are indexed even when they are stop words or one letter
    long, so an entity called "IT", "A" or "The Team" is found by its name.

Names first
    Whatever the mode, an entity whose name *is* the query (case and spacing aside) ranks
    first, then those whose name starts with it, shortest name first
    (:meth:`KeywordIndex.name_matches`); the other hits follow by score.

Hybrid score, in [0, 1]
    The vector leg keeps the entities whose raw cosine with the query is at least the
    threshold (default 0.3); the keyword leg keeps those with a keyword score above 0.
    Every entity from either leg is scored::

        hybrid = alpha * (cos + 1) / 2 + (1 - alpha) * keyword      (alpha = 0.7)

    ``(cos + 1) / 2`` maps the cosine from [-1, 1] onto [0, 1] without looking at the
    other candidates, so a score does not change when unrelated entities are added. An
    entity found by keyword but not yet embedded counts as cos = 0 (no evidence either
    way), i.e. 0.5 after normalisation. The vector index computes it for every entity at
    once and returns only the best (:meth:`toolcards.vector.VectorIndex.hybrid_top`).

Paths
    Shortest paths ignore relation direction and are bounded in length (hops).
"""

from __future__ import annotations

import bisect
import functools
import heapq
import re
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from typing import TypeVar

from toolcards.knowledge_graph.sorted_list import discard, insort_all

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_THRESHOLD",
    "KeywordIndex",
    "keyword_score",
    "query_terms",
    "shortest_paths",
    "tokenize",
    "top_k",
]

DEFAULT_ALPHA = 0.7
"""Weight of the vector leg in the hybrid score."""
DEFAULT_THRESHOLD = 0.3
"""Minimum raw cosine for an entity to enter through the vector leg."""
NAME_WEIGHT = 0.2
"""Share of the keyword score given to query terms found in the entity's name."""

_WORD = re.compile(r"[^\W_]+")
# For ASCII text, letter/digit runs are what is left after every other byte becomes a space:
# a byte translation and a split, several times cheaper than the Unicode pattern above.
_ASCII_WORDS = bytes(ord(chr(code).lower()) if chr(code).isalnum() else 32 for code in range(128)) + bytes(
    range(128, 256)
)
_STOP_WORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has"),
        *("have", "how", "in", "is", "it", "its", "of", "on", "or", "that", "the", "their"),
        *("this", "to", "was", "were", "what", "when", "where", "which", "who", "whom", "why", "with"),
    }
)

_NAME = 1
_OTHER = 2

Node = TypeVar("Node", bound=Hashable)
Edge = TypeVar("Edge")


@functools.lru_cache(maxsize=1 << 16)
def _fold(token: str) -> str:
    # Cached: a graph's texts reuse a small vocabulary, and indexing a batch of 1,000
    # entities folds ~40,000 words.
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def words_of(text: str) -> list[str]:
    """The lowercase letter/digit runs of ``text`` (``_`` and punctuation separate words)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return _WORD.findall(text.lower())


def tokenize(text: str) -> list[str]:
    """Lowercase letter/digit runs of ``text`` with plurals folded, stop words dropped."""
    return [_fold(word) for word in words_of(text) if word not in _STOP_WORDS]


def name_tokens(name: str) -> list[str]:
    """The words of an entity's name, plurals folded; stop words kept (a name is an identity)."""
    return list(map(_fold, words_of(name)))


def name_key(text: str) -> str:
    """``text`` as names are compared: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query`` in order; stop words are kept only if nothing else is left."""
    terms = tokenize(query)
    if not terms:
        terms = name_tokens(query)
    return list(dict.fromkeys(terms))


def keyword_score(matched: int, matched_in_name: int, terms: int) -> float:
    """``0.8 * matched / terms + 0.2 * matched_in_name / terms``; 0.0 when there are no terms."""
    if terms <= 0:
        return 0.0
    return ((1.0 - NAME_WEIGHT) * matched + NAME_WEIGHT * matched_in_name) / terms


class KeywordIndex:
    """Inverted index from terms to entities, updated one entity at a time.

    A lookup costs the sizes of the query terms' posting lists, not the number of
    entities. Not thread-safe: the owning actor is its only user.
    """

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = {}
        self._documents: dict[str, dict[str, int]] = {}
        self._names: dict[str, str] = {}
        """Entity key → its name as compared (:func:`name_key`)."""
        self._sorted_names: list[tuple[str, str]] = []
        """``(name_key, entity key)`` in order, for prefix lookups."""

    def __len__(self) -> int:
        return len(self._documents)

    def upsert(self, key: str, name: str, texts: Iterable[str]) -> None:
        """Index (or re-index) entity ``key``: its ``name`` and its other ``texts``."""
        self.upsert_many([(key, name, texts)])

    def upsert_many(self, entities: Iterable[tuple[str, str, Iterable[str]]]) -> None:
        """:meth:`upsert` for each ``(key, name, texts)``; the names' sorted list is merged
        once for a large batch instead of one insertion per entity, and an entity whose name
        stays the same keeps its place in it."""
        postings, documents, names = self._postings, self._documents, self._names
        added: dict[str, str] = {}  # key → name as compared, for the entries still to sort in
        for key, name, texts in entities:
            compared = name_key(name)
            if key in documents:
                self._unpost(key)
                if key in added or names[key] != compared:
                    if key not in added:
                        self._unsort(key)
                    added[key] = compared
            else:
                added[key] = compared
            # One pass over all the texts: words never span two of them (they are joined by a space).
            fields = dict.fromkeys(tokenize(" ".join(texts)), _OTHER)
            for token in name_tokens(name):
                fields[token] = fields.get(token, 0) | _NAME
            documents[key] = fields
            for token, mask in fields.items():
                posting = postings.get(token)
                if posting is None:
                    postings[token] = {key: mask}
                else:
                    posting[key] = mask
            names[key] = compared
        insort_all(self._sorted_names, [(compared, key) for key, compared in added.items()])

    def remove(self, key: str) -> None:
        """Forget entity ``key``; a no-op if it is not indexed."""
        if key not in self._documents:
            return
        self._unpost(key)
        self._unsort(key)
        del self._names[key]

    def _unpost(self, key: str) -> None:
        """Take ``key`` out of the postings of its terms."""
        postings = self._postings
        for token in self._documents.pop(key):
            posting = postings[token]
            del posting[key]
            if not posting:
                del postings[token]

    def _unsort(self, key: str) -> None:
        """Take ``key`` out of the sorted names."""
        discard(self._sorted_names, (self._names[key], key))

    def scores(self, query: str) -> dict[str, float]:
        """Keyword score (see the module docstring) of every entity matching a query term."""
        terms = query_terms(query)
        matched: dict[str, int] = {}
        in_name: dict[str, int] = {}
        for term in terms:
            for key, mask in self._postings.get(term, {}).items():
                matched[key] = matched.get(key, 0) + 1
                if mask & _NAME:
                    in_name[key] = in_name.get(key, 0) + 1
        return {key: keyword_score(count, in_name.get(key, 0), len(terms)) for key, count in matched.items()}

    def name_matches(self, query: str, limit: int) -> list[str]:
        """Keys of the entities named ``query``, then of those whose name starts with it.

        Exact first, then prefixes by name length and name; at most ``limit``. Costs a
        binary search plus the matches returned.
        """
        wanted = name_key(query)
        if not wanted or limit <= 0:
            return []
        start = bisect.bisect_left(self._sorted_names, (wanted, ""))
        found: list[tuple[int, str, str]] = []
        for compared, key in self._sorted_names[start:]:
            if not compared.startswith(wanted) or len(found) >= 4 * limit:
                break
            found.append((len(compared), compared, key))
        found.sort()
        return [key for _, _, key in found[:limit]]


def top_k(scores: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` best ``(key, score)`` pairs, by score descending, then key ascending."""
    return heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))


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
