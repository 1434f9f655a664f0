"""Keyword scoring, the hybrid fusion arithmetic, ranking and shortest paths."""

from __future__ import annotations

import pytest

from toolcards.knowledge_graph.search import (
    KeywordIndex,
    keyword_score,
    query_terms,
    shortest_paths,
    tokenize,
    top_k,
)


def test_tokenize_splits_identifiers_folds_plurals_and_drops_stop_words() -> None:
    assert tokenize("The user_service handles Policies and tokens") == [
        "user",
        "service",
        "handle",
        "policy",
        "token",
    ]
    assert tokenize("class status") == ["class", "statu"]  # both sides fold the same way


def test_query_of_only_stop_words_keeps_them() -> None:
    assert query_terms("who is it") == ["who", "is", "it"]
    assert query_terms("alice Alice ALICE") == ["alice"]


def test_keyword_score_arithmetic() -> None:
    assert keyword_score(2, 2, 2) == pytest.approx(1.0)
    assert keyword_score(2, 0, 2) == pytest.approx(0.8)
    assert keyword_score(1, 0, 2) == pytest.approx(0.4)
    assert keyword_score(2, 1, 2) == pytest.approx(0.9)
    assert keyword_score(0, 0, 0) == 0.0


def test_keyword_index_scores_name_description_type_and_observations() -> None:
    index = KeywordIndex()
    index.upsert("Alice", "Alice", ["person", "Leads the platform team", "likes rust"])
    index.upsert("Platform", "Platform", ["team", "Runs the deploy pipeline"])
    index.upsert("Bob", "Bob", ["person", "", "writes Rust services"])
    assert index.scores("platform") == pytest.approx({"Alice": 0.8, "Platform": 1.0})
    assert index.scores("rust person") == pytest.approx({"Alice": 0.8, "Bob": 0.8})
    # "alice rust": both terms in Alice (one in its name); one term in Bob.
    assert index.scores("alice rust") == pytest.approx({"Alice": 0.9, "Bob": 0.4})
    assert index.scores("nothing here") == {}


def test_keyword_index_reindexes_and_removes() -> None:
    index = KeywordIndex()
    index.upsert("A", "A", ["old words"])
    index.upsert("A", "A", ["new words"])
    assert "A" not in index.scores("old")
    assert index.scores("new") == pytest.approx({"A": 0.8})
    index.remove("A")
    index.remove("A")
    assert index.scores("word") == {}
    assert len(index) == 0


def test_top_k_orders_by_score_then_name() -> None:
    scores = {"b": 0.5, "a": 0.5, "c": 0.9, "d": 0.1}
    assert top_k(scores, 3) == [("c", 0.9), ("a", 0.5), ("b", 0.5)]
    assert top_k(scores, 10) == [("c", 0.9), ("a", 0.5), ("b", 0.5), ("d", 0.1)]


def _graph(edges: list[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    adjacency: dict[str, list[tuple[str, str]]] = {}
    for a, b in edges:
        label = f"{a}>{b}"
        adjacency.setdefault(a, []).append((b, label))
        adjacency.setdefault(b, []).append((a, label))
    return adjacency


def test_shortest_paths_are_shortest_and_undirected() -> None:
    graph = _graph([("A", "B"), ("B", "C"), ("C", "D"), ("A", "X"), ("X", "D")])
    found = shortest_paths("D", ["A", "C"], lambda n: graph.get(n, []), max_depth=4)
    assert found["C"] == [("C>D", "C")]
    assert found["A"] == [("X>D", "X"), ("A>X", "A")]


def test_shortest_paths_respect_the_depth_bound() -> None:
    graph = _graph([("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")])
    neighbours = lambda n: graph.get(n, [])  # noqa: E731
    assert "E" not in shortest_paths("A", ["E"], neighbours, max_depth=3)
    assert len(shortest_paths("A", ["E"], neighbours, max_depth=4)["E"]) == 4


def test_shortest_paths_skip_unreachable_targets_and_the_source() -> None:
    graph = _graph([("A", "B"), ("C", "D")])
    assert shortest_paths("A", ["A", "D", "Z"], lambda n: graph.get(n, []), max_depth=4) == {}
