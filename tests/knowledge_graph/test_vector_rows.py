"""The graph's passage vector rows written in a batch (``upsert_many``): the same rows as one
upsert after another, a bad vector refused alone, a passage of an unknown entity ignored."""

from __future__ import annotations

import numpy as np
import pytest

from tests.knowledge_graph.note_entities import entity
from toolcards.knowledge_graph._index import GraphIndex
from toolcards.knowledge_graph._models import Entity
from toolcards.knowledge_graph._passages import head_key, observation_key

DIM = 16


def keys_of(made: Entity) -> list[str]:
    return [head_key(made.name)] + [observation_key(made.name, o.id) for o in made.observations]


def indexed(count: int, **options: int) -> GraphIndex:
    index = GraphIndex(**options)
    index.put_entities([entity(n) for n in range(count)])
    index.flush()
    return index


def state(index: GraphIndex) -> tuple[object, ...]:
    """Everything the vector rows are: which key has which row, each row's owner and vector."""
    assert index._vectors is not None and index._matrix is not None
    used = len(index._row_owner)
    return (
        dict(index._rows),
        list(index._row_keys),
        index._row_owner.view().tolist(),
        index._has_vector.view().tolist(),
        {number: list(rows) for number, rows in index._ent_rows.items()},
        sorted(index._free_rows),
        index._vectors.count,
        index._matrix[:used].tobytes(),
    )


def unit(vector: np.ndarray) -> np.ndarray:
    return np.asarray(vector / np.linalg.norm(vector), dtype=np.float32)


def test_a_batch_writes_the_rows_one_upsert_after_another_writes() -> None:
    rng = np.random.default_rng(1)
    batch, one_by_one = indexed(40), indexed(40)
    first = [key for n in range(30) for key in keys_of(entity(n))]
    second = [key for n in range(25, 40) for key in keys_of(entity(n))]  # some again, some new
    first_vectors = rng.standard_normal((len(first), DIM)).astype(np.float32)
    second_vectors = rng.standard_normal((len(second), DIM)).astype(np.float32)
    for index in (batch, one_by_one):
        index.vector_rows(DIM)
        assert index._matrix is not None
        index._matrix = index._matrix[:64].copy()  # small, so the second batch grows it
    assert batch.vector_rows(DIM).upsert_many(first, list(first_vectors)) == {}
    for key, vector in zip(first, first_vectors, strict=True):
        one_by_one.vector_rows(DIM).upsert(key, vector)
    for index in (batch, one_by_one):
        index.drop_entity("entity 3")  # its rows are free, to be taken first
        index.vector_rows(DIM).remove(head_key("entity 7"))
    assert batch.vector_rows(DIM).upsert_many(second, list(second_vectors)) == {}
    for key, vector in zip(second, second_vectors, strict=True):
        one_by_one.vector_rows(DIM).upsert(key, vector)
    assert state(batch) == state(one_by_one)
    # Entity 3's rows and entity 7's head were freed; the second batch rewrites 5 entities' rows.
    assert len(batch.vector_rows(DIM)) == len(first) - 3 - 1 + len(second) - 15
    assert not batch._free_rows  # the freed rows were taken before new ones


def test_a_bad_vector_refuses_only_itself_and_keeps_its_old_row() -> None:
    index = indexed(3)
    rows = index.vector_rows(DIM)
    rng = np.random.default_rng(2)
    old = rng.standard_normal(DIM).astype(np.float32)
    rows.upsert(head_key("entity 1"), old)
    good = rng.standard_normal((2, DIM)).astype(np.float32)
    broken = good[0].copy()
    broken[3] = np.nan
    refused = rows.upsert_many(
        [head_key("entity 0"), head_key("entity 1"), head_key("entity 2"), observation_key("entity 2", "2.0")],
        [good[0], broken, good[1], np.ones(DIM + 2)],
    )
    assert sorted(refused) == [1, 3]
    assert "NaN or infinity" in refused[1] and "entity 1" in refused[1]
    assert f"{DIM + 2} dimensions" in refused[3]
    assert len(rows) == 3
    cosines = index.passage_cosines([head_key(f"entity {n}") for n in range(3)], unit(old))
    assert cosines[head_key("entity 1")] == pytest.approx(1.0, abs=1e-6)  # the old vector stays
    assert index.cosine("entity 0", unit(good[0])) == pytest.approx(1.0, abs=1e-6)
    assert index.cosine("entity 2", unit(good[1])) == pytest.approx(1.0, abs=1e-6)


def test_a_passage_of_an_unknown_entity_is_ignored_whatever_its_vector() -> None:
    index = indexed(2)
    rows = index.vector_rows(DIM)
    good = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    refused = rows.upsert_many(
        [head_key("nobody"), observation_key("nobody", "9.1"), head_key("entity 0"), head_key("ghost")],
        [good, np.full(DIM, np.inf), good, np.ones(3)],
    )
    assert refused == {}
    assert len(rows) == 1
    assert index.passage_cosines([head_key("nobody"), head_key("ghost")], unit(good)) == {}
    rows.upsert(head_key("nobody"), np.ones(3))  # one at a time: ignored as well, not refused


def test_upserting_existing_keys_overwrites_their_rows() -> None:
    index = indexed(2)
    rows = index.vector_rows(DIM)
    keys = keys_of(entity(0)) + keys_of(entity(1))
    first, second = np.random.default_rng(4).standard_normal((2, len(keys), DIM)).astype(np.float32)
    rows.upsert_many(keys, list(first))
    taken = dict(index._rows)
    rows.upsert_many(keys, list(second))
    assert dict(index._rows) == taken
    assert len(rows) == len(keys)
    assert index._has_vector.view().tolist() == [3, 3]
    cosines = index.passage_cosines(keys, unit(second[4]))
    assert cosines[keys[4]] == pytest.approx(1.0, abs=1e-6)


def test_a_vector_of_another_size_is_refused_alone_and_raises_when_upserted_alone() -> None:
    index = indexed(1)
    rows = index.vector_rows(DIM)
    refused = rows.upsert_many([head_key("entity 0")], [np.ones(DIM - 1)])
    assert list(refused) == [0] and f"{DIM - 1} dimensions" in refused[0]
    with pytest.raises(ValueError, match="dimensions"):
        rows.upsert(head_key("entity 0"), np.ones(DIM + 1))
    with pytest.raises(ValueError, match="NaN or infinity"):
        rows.upsert(head_key("entity 0"), np.full(DIM, np.nan))
    assert len(rows) == 0


def test_rows_written_in_a_batch_after_training_are_found_by_the_approximate_search() -> None:
    index = indexed(200, approximate_from=100, probes=10_000)
    rng = np.random.default_rng(5)
    keys = [key for n in range(150) for key in keys_of(entity(n))]
    index.vector_rows(DIM).upsert_many(keys, list(rng.standard_normal((len(keys), DIM)).astype(np.float32)))
    query = rng.standard_normal(DIM).astype(np.float32)

    def top(vector: np.ndarray) -> str:
        hits, _ = index.rank(
            "note", vector, mode="vector", at=None, include_invalid=False, alpha=0.7, threshold=-1.0, limit=1
        )
        return hits[0][0]

    top(query)
    assert index._ivf.trained
    late = [head_key("entity 170"), observation_key("entity 180", "180.1")]
    targets = rng.standard_normal((2, DIM)).astype(np.float32)
    index.vector_rows(DIM).upsert_many(late, list(targets))
    assert top(targets[0]) == "entity 170"
    assert top(targets[1]) == "entity 180"
