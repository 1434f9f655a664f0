"""Keyword scoring, the hybrid fusion arithmetic, ranking and shortest paths."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcards.knowledge_graph.search import (
    KeywordIndex,
    keyword_score,
    query_terms,
    shortest_paths,
    tokenize,
    top_k,
    words_of,
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


_TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(" _-.,'\"\t\nAZaz09"), max_size=40)


@given(_TEXT)
def test_words_of_finds_the_letter_and_digit_runs_of_the_unicode_pattern(text: str) -> None:
    assert words_of(text) == re.findall(r"[^\W_]+", text.lower())


@given(_TEXT.filter(str.isascii))
def test_words_of_ascii_text_matches_the_unicode_pattern(text: str) -> None:
    assert words_of(text) == re.findall(r"[^\W_]+", text.lower())


def _state(index: KeywordIndex) -> tuple[object, ...]:
    return (index._postings, index._documents, index._names, index._sorted_names)


_KEYS = st.sampled_from(["a", "b", "c", "d"])
_NAMES = st.sampled_from(["Alpha", "alpha beta", "Beta", "gamma", "Gamma ray"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.lists(st.tuples(_KEYS, _NAMES, st.lists(_NAMES, max_size=2)), max_size=40)),
        st.tuples(st.just("remove"), _KEYS),
    ),
    max_size=12,
)


@given(_OPS)
def test_keyword_index_after_any_upserts_and_removes_equals_one_built_from_scratch(
    ops: list[tuple[str, object]],
) -> None:
    index = KeywordIndex()
    current: dict[str, tuple[str, list[str]]] = {}
    for op, arg in ops:
        if op == "upsert":
            assert isinstance(arg, list)
            index.upsert_many(arg)
            for key, name, texts in arg:
                current[key] = (name, texts)
        else:
            assert isinstance(arg, str)
            index.remove(arg)
            current.pop(arg, None)
    fresh = KeywordIndex()
    for key, (name, texts) in current.items():
        fresh.upsert(key, name, texts)
    assert _state(index) == _state(fresh)


def test_a_renamed_entity_moves_in_the_name_lookup() -> None:
    index = KeywordIndex()
    index.upsert("k", "Alpha", ["one"])
    index.upsert("k", "Alpha", ["two"])  # same name: its place in the sorted names is kept
    assert index.name_matches("alp", 5) == ["k"]
    index.upsert("k", "Beta", ["two"])
    assert index.name_matches("alp", 5) == []
    assert index.name_matches("beta", 5) == ["k"]
