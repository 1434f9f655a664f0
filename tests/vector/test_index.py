"""VectorIndex: exact search that agrees with brute force through any mix of upserts and removes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.vector import VectorIndex

DIM = 16


def _unit(vector: np.ndarray) -> np.ndarray:
    return np.asarray(vector / np.linalg.norm(vector))


def _brute_force(rows: dict[str, np.ndarray], query: np.ndarray, top_k: int) -> list[tuple[str, float]]:
    q = _unit(query)
    scored = sorted(((key, float(_unit(v) @ q)) for key, v in rows.items()), key=lambda kv: -kv[1])
    return scored[:top_k]


def _assert_same_ranking(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    """The same scores in the same order; keys may differ only where scores tie (two keys
    holding the same vector rank in either order)."""
    assert [score for _, score in got] == pytest.approx([score for _, score in expected], abs=1e-5)
    assert len({key for key, _ in got}) == len(got)
    truth = dict(expected)
    for (key, score), (expected_key, expected_score) in zip(got, expected, strict=True):
        if key != expected_key:
            assert abs(score - expected_score) <= 1e-5, (key, expected_key)
            assert key not in truth or abs(truth[key] - score) <= 1e-5, (key, truth[key], score)


def test_matches_brute_force_after_many_upserts_and_removes() -> None:
    rng = np.random.default_rng(7)
    index = VectorIndex(DIM)
    truth: dict[str, np.ndarray] = {}
    for step in range(3000):
        key = f"k{rng.integers(400)}"
        if rng.random() < 0.35:
            index.remove(key)
            truth.pop(key, None)
        else:
            vector = rng.standard_normal(DIM).astype(np.float32)
            index.upsert(key, vector)
            truth[key] = vector
        if step % 250 == 0:
            query = rng.standard_normal(DIM)
            _assert_same_ranking(index.search(query, top_k=10), _brute_force(truth, query, 10))
    assert len(index) == len(truth)
    assert set(index.keys()) == set(truth)
    for key, vector in truth.items():
        assert key in index
        stored = index.get(key)
        assert stored is not None
        np.testing.assert_allclose(stored, _unit(vector), atol=1e-6)
    query = rng.standard_normal(DIM)
    _assert_same_ranking(index.search(query, top_k=len(truth)), _brute_force(truth, query, len(truth)))


def test_two_keys_with_the_same_vector_tie_in_either_order() -> None:
    index = VectorIndex(DIM)
    vector = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    index.upsert("k1", vector)
    index.upsert("k2", vector)
    found = index.search(vector, top_k=2)
    assert {key for key, _ in found} == {"k1", "k2"}
    _assert_same_ranking(found, _brute_force({"k1": vector, "k2": vector}, vector, 2))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, 30), st.integers(0, 2**32 - 1)),
        max_size=120,
    ),
    st.integers(0, 40),
)
def test_any_operation_sequence_agrees_with_brute_force(ops: list[tuple[bool, int, int]], top_k: int) -> None:
    index = VectorIndex(DIM)
    truth: dict[str, np.ndarray] = {}
    for is_upsert, key_number, seed in ops:
        key = f"k{key_number}"
        if is_upsert:
            vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            index.upsert(key, vector)
            truth[key] = vector
        else:
            index.remove(key)
            truth.pop(key, None)
    query = np.random.default_rng(len(ops)).standard_normal(DIM)
    assert len(index) == len(truth)
    _assert_same_ranking(index.search(query, top_k=top_k), _brute_force(truth, query, top_k))


def test_upsert_replaces_in_place() -> None:
    index = VectorIndex(3)
    index.upsert("a", np.array([1.0, 0.0, 0.0]))
    index.upsert("b", np.array([0.0, 1.0, 0.0]))
    index.upsert("a", np.array([0.0, 0.0, 5.0]))
    assert len(index) == 2
    [(key, score)] = index.search(np.array([0.0, 0.0, 1.0]), top_k=1)
    assert key == "a"
    assert score == pytest.approx(1.0)


def test_scores_are_cosines_of_every_key() -> None:
    index = VectorIndex(2)
    index.upsert("x", np.array([3.0, 0.0]))
    index.upsert("y", np.array([1.0, 1.0]))
    index.upsert("z", np.array([-2.0, 0.0]))
    scores = index.scores(np.array([10.0, 0.0]))
    assert scores == pytest.approx({"x": 1.0, "y": 2**-0.5, "z": -1.0})


def test_min_score_drops_weak_rows_and_top_k_bounds_the_answer() -> None:
    index = VectorIndex(2)
    for key, vector in {"x": [1.0, 0.0], "y": [1.0, 1.0], "z": [-1.0, 0.0]}.items():
        index.upsert(key, np.array(vector))
    query = np.array([1.0, 0.0])
    assert [key for key, _ in index.search(query, top_k=10, min_score=0.5)] == ["x", "y"]
    assert [key for key, _ in index.search(query, top_k=1)] == ["x"]
    assert index.search(query, top_k=0) == []
    assert VectorIndex(2).search(query) == []


def test_remove_of_a_missing_key_is_a_no_op() -> None:
    index = VectorIndex(2)
    index.upsert("x", np.array([1.0, 0.0]))
    index.remove("nope")
    index.remove("x")
    index.remove("x")
    assert len(index) == 0
    assert "x" not in index
    assert index.get("x") is None


def test_zero_vectors_score_zero() -> None:
    index = VectorIndex(2)
    index.upsert("zero", np.zeros(2))
    assert index.scores(np.array([1.0, 0.0])) == {"zero": 0.0}


@pytest.mark.parametrize("bad", [np.zeros(3), np.array([np.nan, 1.0]), np.array([np.inf, 0.0])])
def test_rejects_wrong_size_or_non_finite_vectors(bad: np.ndarray) -> None:
    index = VectorIndex(2)
    with pytest.raises(ValueError):
        index.upsert("k", bad)
    with pytest.raises(ValueError):
        index.search(bad)
    assert len(index) == 0


def test_rejects_a_non_positive_dimension() -> None:
    with pytest.raises(ValueError):
        VectorIndex(0)


def test_encode_decode_round_trip_is_exact() -> None:
    vector = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    text = VectorIndex.encode(vector)
    assert isinstance(text, str)
    decoded = VectorIndex.decode(text)
    assert decoded.dtype == np.float32
    np.testing.assert_array_equal(decoded, vector)
    decoded[0] = 1.0  # a writable copy, not a view of the text's bytes


@pytest.mark.parametrize("bad", ["not base64!", "AAA="])
def test_decode_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError):
        VectorIndex.decode(bad)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2**32 - 1), min_size=0, max_size=40),
    st.dictionaries(st.sampled_from([f"k{n}" for n in range(50)]), st.floats(0.0, 1.0), max_size=15),
    st.integers(1, 12),
)
def test_hybrid_top_is_the_fused_ranking_of_every_candidate(
    seeds: list[int], boosts: dict[str, float], limit: int
) -> None:
    alpha, threshold = 0.7, 0.3
    index = VectorIndex(DIM)
    rows: dict[str, np.ndarray] = {}
    for number, seed in enumerate(seeds):
        rows[f"k{number}"] = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        index.upsert(f"k{number}", rows[f"k{number}"])
    query = np.random.default_rng(len(seeds)).standard_normal(DIM)
    cosines = dict(index.scores(query))
    candidates = {key for key, cosine in cosines.items() if cosine >= threshold} | set(boosts)
    expected = sorted(
        (
            (key, alpha * min(1.0, max(0.0, (cosines.get(key, 0.0) + 1) / 2)) + (1 - alpha) * boosts.get(key, 0.0))
            for key in candidates
        ),
        key=lambda hit: (-hit[1], hit[0]),
    )[:limit]
    got = index.hybrid_top(query, boosts, alpha=alpha, threshold=threshold, limit=limit)
    assert [key for key, _, _ in got] == [key for key, _ in expected]
    assert [score for _, score, _ in got] == pytest.approx([score for _, score in expected], abs=1e-9)
    for key, _, cosine in got:
        assert cosine == (pytest.approx(cosines[key]) if key in cosines else None)
