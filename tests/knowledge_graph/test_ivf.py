"""The approximate vector search (an inverted file) against the exact scan it stands in for."""

from __future__ import annotations

import numpy as np
import pytest

from tests.knowledge_graph.note_entities import entity
from toolcards.knowledge_graph._index import GraphIndex
from toolcards.knowledge_graph._ivf import InvertedFile
from toolcards.knowledge_graph._passages import head_key, observation_key

DIM = 48
TOPICS = 300


def topical_vectors(rng: np.random.Generator, centres: np.ndarray, count: int) -> np.ndarray:
    """Vectors near one of ``centres`` each, as texts on a few topics embed."""
    topics = rng.integers(0, len(centres), count)
    return centres[topics] + 0.5 * rng.standard_normal((count, centres.shape[1]))


def filled(
    indexes: list[GraphIndex], entities: int, observations: int, seed: int
) -> tuple[np.random.Generator, np.ndarray]:
    """Put the same entities and passage vectors in every one of ``indexes``; the generator
    and the topics' centres."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((TOPICS, DIM))
    made = [entity(n, observations) for n in range(entities)]
    vectors = topical_vectors(rng, centres, entities * (observations + 1))
    for index in indexes:
        index.put_entities(made)
        index.flush()
        rows = index.vector_rows(DIM)
        position = 0
        for each in made:
            keys = [head_key(each.name)] + [observation_key(each.name, o.id) for o in each.observations]
            for key in keys:
                rows.upsert(key, vectors[position])
                position += 1
    return rng, centres


def top(index: GraphIndex, query: np.ndarray, mode: str = "vector", words: str = "note") -> list[str]:
    hits, _ = index.rank(
        words,
        query.astype(np.float32),
        mode=mode,
        at=None,
        include_invalid=False,
        alpha=0.7,
        threshold=-1.0,
        limit=10,
    )
    return [hit[0] for hit in hits]


def test_probing_every_list_ranks_as_the_exact_scan() -> None:
    exact = GraphIndex()
    probed = GraphIndex(approximate_from=100, probes=10_000)
    rng, _ = filled([exact, probed], entities=300, observations=3, seed=1)
    for _ in range(20):
        query = rng.standard_normal(DIM)
        assert top(probed, query) == top(exact, query)
        assert top(probed, query, "hybrid", "note 7") == top(exact, query, "hybrid", "note 7")
    assert probed._ivf.trained and not exact._ivf.trained


def test_the_approximate_search_finds_most_of_the_exact_top_10() -> None:
    exact = GraphIndex()
    approximate = GraphIndex(approximate_from=1000)
    rng, centres = filled([exact, approximate], entities=1500, observations=5, seed=2)
    overlaps = []
    for query in topical_vectors(rng, centres, 100):
        wanted = top(exact, query)
        overlaps.append(len(set(top(approximate, query)) & set(wanted)) / len(wanted))
    assert approximate._ivf.trained
    assert np.mean(overlaps) >= 0.9


def test_rows_written_after_training_are_found_and_deleted_ones_are_not() -> None:
    index = GraphIndex(approximate_from=100, probes=10_000)
    rng, _ = filled([index], entities=200, observations=2, seed=3)
    top(index, rng.standard_normal(DIM))
    assert index._ivf.trained
    trained_on = index._ivf.trained_rows
    late = entity(999, 1)
    index.put_entities([late])
    index.flush()
    target = rng.standard_normal(DIM)
    index.vector_rows(DIM).upsert(observation_key(late.name, late.observations[0].id), target)
    assert top(index, target)[0] == "entity 999"
    index.drop_entity("entity 999")
    assert "entity 999" not in top(index, target)
    index.vector_rows(DIM).upsert(head_key("entity 5"), target)
    assert top(index, target)[0] == "entity 5"
    assert index._ivf.trained_rows == trained_on


def test_the_lists_are_trained_again_when_the_rows_double() -> None:
    lists = InvertedFile()
    assert lists.needs_training(10)
    rng = np.random.default_rng(4)
    matrix = rng.standard_normal((400, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    owner = np.arange(400, dtype=np.int64)
    owner[::7] = -1
    order = lists.train(matrix, owner)
    assert sorted(order.tolist()) == list(range(400))
    matrix, owner = matrix[order], owner[order]
    assert lists.trained_rows == int((owner >= 0).sum())
    assert not lists.needs_training(lists.trained_rows + 1)
    assert lists.needs_training(2 * lists.trained_rows)
    row = int(np.flatnonzero(order == 1)[0])
    found, cosines = lists.probe(matrix, owner, matrix[row])
    assert row in found.tolist() and not set(found.tolist()) & set(np.flatnonzero(owner < 0).tolist())
    assert cosines.tolist() == pytest.approx((matrix[found] @ matrix[row]).tolist(), abs=1e-5)
