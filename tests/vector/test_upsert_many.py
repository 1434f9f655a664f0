"""VectorIndex.upsert_many: a batch stores what one upsert after another would, and a bad
vector refuses only itself."""

from __future__ import annotations

import numpy as np
import pytest

from toolcards.vector import VectorIndex
from toolcards.vector._index import unit_rows

DIM = 8


def vectors(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def stored(index: VectorIndex, key: str) -> np.ndarray:
    vector = index.get(key)
    assert vector is not None, key
    return vector


def test_a_batch_stores_what_one_upsert_after_another_stores() -> None:
    given = vectors(100)
    keys = [f"k{n}" for n in range(100)]
    batch, one_by_one = VectorIndex(DIM), VectorIndex(DIM)
    assert batch.upsert_many(keys, list(given)) == {}
    for key, vector in zip(keys, given, strict=True):
        one_by_one.upsert(key, vector)
    assert batch.keys() == one_by_one.keys() == keys  # rows taken in the order given
    for key in keys:
        np.testing.assert_array_equal(batch.get(key), one_by_one.get(key))
    query = vectors(1, seed=1)[0]
    assert batch.search(query, top_k=5) == one_by_one.search(query, top_k=5)


def test_a_vector_comes_out_of_a_batch_as_it_does_alone() -> None:
    given = vectors(50)
    alone = unit_rows(["x"], [given[17]], DIM).matrix[0]
    among = unit_rows([f"k{n}" for n in range(50)], list(given), DIM).matrix[17]
    np.testing.assert_array_equal(alone, among)
    assert np.linalg.norm(among) == pytest.approx(1.0, abs=1e-6)


def test_a_bad_vector_refuses_only_itself() -> None:
    index = VectorIndex(DIM)
    old = vectors(1, seed=2)[0]
    index.upsert("nan", old)
    good = vectors(3, seed=3)
    bad_nan = good[0].copy()
    bad_nan[4] = np.nan
    bad_inf = good[0].copy()
    bad_inf[0] = -np.inf
    refused = index.upsert_many(
        ["a", "nan", "short", "b", "inf", "words", "c"],
        [good[0], bad_nan, np.ones(DIM - 1), good[1], bad_inf, "not numbers", good[2]],
    )
    assert sorted(refused) == [1, 2, 4, 5]
    assert "NaN or infinity" in refused[1] and "'nan'" in refused[1]
    assert "7 dimensions" in refused[2] and f"holds {DIM}" in refused[2]
    assert "NaN or infinity" in refused[4]
    assert "'words'" in refused[5]
    assert sorted(index.keys()) == ["a", "b", "c", "nan"]
    # Refused: it keeps the vector it had.
    np.testing.assert_allclose(stored(index, "nan"), old / np.linalg.norm(old), atol=1e-6)
    for key, vector in zip("abc", good, strict=True):
        np.testing.assert_allclose(stored(index, key), vector / np.linalg.norm(vector), atol=1e-6)


def test_a_batch_of_wrong_size_refuses_every_vector_and_leaves_the_index_as_it_was() -> None:
    index = VectorIndex(DIM)
    index.upsert("kept", vectors(1)[0])
    refused = index.upsert_many(["a", "b"], list(np.ones((2, DIM + 1), dtype=np.float32)))
    assert sorted(refused) == [0, 1]
    assert all(f"{DIM + 1} dimensions" in why for why in refused.values())
    assert index.keys() == ["kept"]


def test_upserting_an_existing_key_overwrites_its_row() -> None:
    index = VectorIndex(DIM)
    first, second = vectors(2, seed=4)
    index.upsert_many(["a", "b"], [first, first])
    assert index.upsert_many(["b", "c"], [second, second]) == {}
    assert index.keys() == ["a", "b", "c"]
    np.testing.assert_allclose(stored(index, "b"), second / np.linalg.norm(second), atol=1e-6)
    np.testing.assert_allclose(stored(index, "a"), first / np.linalg.norm(first), atol=1e-6)


def test_a_key_given_twice_ends_with_its_last_vector_stored() -> None:
    index = VectorIndex(DIM)
    first, second = vectors(2, seed=5)
    broken = np.full(DIM, np.inf, dtype=np.float32)
    refused = index.upsert_many(["a", "b", "a", "b"], [first, first, second, broken])
    assert list(refused) == [3]
    assert index.keys() == ["a", "b"]
    np.testing.assert_allclose(stored(index, "a"), second / np.linalg.norm(second), atol=1e-6)
    np.testing.assert_allclose(
        stored(index, "b"), first / np.linalg.norm(first), atol=1e-6
    )  # the later one was refused


def test_a_batch_larger_than_the_capacity_grows_it_once_and_fills_removed_rows() -> None:
    index = VectorIndex(DIM)
    given = vectors(1000, seed=6)
    index.upsert_many([f"k{n}" for n in range(1000)], list(given))
    assert len(index) == 1000
    for n in range(0, 1000, 2):
        index.remove(f"k{n}")
    index.upsert_many([f"new{n}" for n in range(600)], list(vectors(600, seed=7)))
    assert len(index) == 1100
    query = given[501]
    assert index.search(query, top_k=1)[0][0] == "k501"


def test_a_zero_vector_stays_zero_and_an_empty_batch_does_nothing() -> None:
    index = VectorIndex(DIM)
    assert index.upsert_many([], []) == {}
    assert len(index) == 0
    assert index.upsert_many(["zero"], [np.zeros(DIM)]) == {}
    np.testing.assert_array_equal(index.get("zero"), np.zeros(DIM, dtype=np.float32))


def test_keys_and_vectors_of_different_lengths_are_a_mistake() -> None:
    with pytest.raises(ValueError, match="2 keys for 1 vectors"):
        VectorIndex(DIM).upsert_many(["a", "b"], [vectors(1)[0]])


def test_decode_without_a_copy_is_a_read_only_view_of_the_same_values() -> None:
    vector = vectors(1, seed=8)[0]
    text = VectorIndex.encode(vector)
    view = VectorIndex.decode(text, copy=False)
    assert view.dtype == np.float32
    np.testing.assert_array_equal(view, vector)
    assert not view.flags.writeable
    assert VectorIndex.decode(text).flags.writeable
