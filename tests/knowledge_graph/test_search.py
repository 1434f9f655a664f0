"""Keyword scores (BM25 with field weights over the graph's index), ranking and shortest paths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.knowledge_graph._index import GraphIndex, fuse
from toolcards.knowledge_graph._models import Entity
from toolcards.knowledge_graph._search import shortest_paths

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entity(
    name: str, *observations: str, description: str = "", minutes: int = 0, aliases: tuple[str, ...] = ()
) -> Entity:
    when = T0 + timedelta(minutes=minutes)
    return Entity.model_validate(
        {
            "name": name,
            "entity_type": "thing",
            "description": description,
            "aliases": list(aliases),
            "created_at": when,
            "observations": [
                {"id": f"{name}#{n}:{text}", "text": text, "created_at": when} for n, text in enumerate(observations)
            ],
        }
    )


def ranked(index: GraphIndex, query: str, limit: int = 10) -> list[str]:
    hits, _ = index.rank(
        query, None, mode="keyword", at=None, include_invalid=False, alpha=0.5, threshold=0.3, limit=limit
    )
    return [hit[0] for hit in hits]


def test_rare_words_outweigh_words_every_entity_shares() -> None:
    index = GraphIndex()
    index.put_entities(
        [entity(f"session {n}", "we talked about the weather", "Alice said hello") for n in range(20)]
        + [entity("session 99", "we talked about the weather", "Alice adopted a greyhound named Comet")]
    )
    assert ranked(index, "what did alice say about her greyhound")[0] == "session 99"


def test_the_best_observation_counts_not_their_sum() -> None:
    index = GraphIndex()
    long = entity("long", *[f"deploy note {n} about the pipeline" for n in range(30)])
    short = entity("short", "the deploy pipeline broke on friday")
    index.put_entities([long, short])
    assert ranked(index, "pipeline broke friday")[0] == "short"
    scores = index.keyword_scores("deploy", index.visible_entities(None, False), None, False)
    assert scores[index.number("long")] < 2 * scores[index.number("short")]


def test_name_and_alias_terms_weigh_more_than_observations() -> None:
    index = GraphIndex()
    fillers = [entity(f"dog {n}", "a dog that barks") for n in range(10)]
    index.put_entities(
        [*fillers, entity("Comet", "a dog"), entity("Rex", "chases comet all day"), entity("X", aliases=("comet",))]
    )
    assert ranked(index, "comet")[:2] == ["Comet", "X"]


def test_ties_go_to_the_most_recently_recorded_not_to_name_order() -> None:
    index = GraphIndex()
    index.put_entities([entity(f"e{n}", "same words here", minutes=n) for n in range(12)])
    assert ranked(index, "same words", limit=3) == ["e11", "e10", "e9"]


def test_keyword_scores_follow_changes_and_deletions() -> None:
    index = GraphIndex()
    index.put_entities([entity("A", "old words")])
    index.put_entities([entity("A", "new words")])
    assert ranked(index, "old") == [] and ranked(index, "new") == ["A"]
    index.drop_entity("A")
    index.drop_entity("A")
    assert ranked(index, "word") == [] and len(index) == 0


_NAMES = st.sampled_from(["alpha", "beta", "gamma"])
_TEXTS = st.lists(st.sampled_from(["red fox", "blue fox jumps", "red red sky", "green"]), max_size=3)
_OPS = st.lists(
    st.one_of(st.tuples(st.just("put"), _NAMES, _TEXTS), st.tuples(st.just("drop"), _NAMES, st.just([]))),
    max_size=15,
)


@settings(max_examples=60, deadline=None)
@given(_OPS)
def test_an_index_after_any_changes_scores_as_one_built_from_scratch(ops: list[tuple[str, str, list[str]]]) -> None:
    index = GraphIndex()
    current: dict[str, list[str]] = {}
    for op, name, texts in ops:
        if op == "put":
            index.put_entities([entity(name, *texts)])
            current[name] = texts
        else:
            index.drop_entity(name)
            current.pop(name, None)
        if len(current) % 2:
            index.compact()
    fresh = GraphIndex()
    fresh.put_entities([entity(name, *texts) for name, texts in current.items()])
    for query in ("red", "fox", "red fox sky", "green alpha"):
        mine = index.keyword_scores(query, index.visible_entities(None, False), None, False)
        theirs = fresh.keyword_scores(query, fresh.visible_entities(None, False), None, False)
        assert {n: mine[index.number(n)] for n in current} == pytest.approx(
            {n: theirs[fresh.number(n)] for n in current}
        )


def test_a_renamed_entity_moves_in_the_name_lookup() -> None:
    index = GraphIndex()
    index.put_entities([entity("Alpha", "one")])
    assert index.name_matches("alp", 5) == ["Alpha"]
    index.drop_entity("Alpha")
    index.put_entities([entity("Beta", "two")])
    assert index.name_matches("alp", 5) == []
    assert index.name_matches("beta", 5) == ["Beta"]


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


def test_the_hybrid_fusion_calibrates_each_leg_to_its_range() -> None:
    keyword = np.array([4.0, 1.0, 0.0, 0.0])
    cosines = np.array([0.2, 0.4, 0.6, 0.9])
    embedded = np.array([True, True, True, False])
    scores, eligible = fuse(keyword, cosines, embedded, 0.7, 0.3)
    # cos' = (cos - 0.2) / (0.6 - 0.2) over the embedded; keyword' = sqrt((4 - 1) / 4) for the best only.
    assert scores.tolist() == pytest.approx([0.3 * 0.75**0.5, 0.7 * 0.5, 0.7, 0.0])
    assert eligible.tolist() == [True, True, True, False]


def test_a_keyword_match_counts_only_where_one_entity_stands_out() -> None:
    cosines = np.array([0.5, 0.5, 0.5])
    embedded = np.array([True, True, True])
    shared, _ = fuse(np.array([2.0, 2.0, 1.0]), cosines, embedded, 0.5, 0.3)
    assert shared.tolist() == [0.0, 0.0, 0.0]  # the best is shared: nothing tells them apart
    alone, _ = fuse(np.array([2.0, 0.0, 0.0]), cosines, embedded, 0.5, 0.3)
    assert alone.tolist() == pytest.approx([0.5, 0.0, 0.0])
    ahead, _ = fuse(np.array([2.0, 1.5, 0.0]), cosines, embedded, 0.5, 0.3)
    assert ahead.tolist() == pytest.approx([0.5 * 0.25**0.5, 0.0, 0.0])
    nothing, _ = fuse(np.zeros(3), cosines, embedded, 0.5, 0.3)
    assert nothing.tolist() == [0.0, 0.0, 0.0]


def matched(index: GraphIndex, query: str, limit: int = 10) -> tuple[list[str], int]:
    hits, matching = index.rank(
        query, None, mode="keyword", at=None, include_invalid=False, alpha=0.5, threshold=0.3, limit=limit
    )
    return [hit[0] for hit in hits], matching


def test_a_word_every_entity_has_finds_nothing_beside_a_rarer_one() -> None:
    index = GraphIndex()
    index.put_entities([entity(f"entity-{n:03}", f"fact {n}") for n in range(100)])
    # "entity" is in every name: alone it finds them all, beside "042" it finds only that one.
    assert matched(index, "entity-042") == (["entity-042"], 1)
    names, matching = matched(index, "entity")
    assert (len(names), matching) == (10, 100)


def test_a_word_many_entities_share_still_finds_them() -> None:
    index = GraphIndex()
    index.put_entities(
        [entity("alice", "alice owns the deploy pipeline")]
        + [entity(f"service {n}", "deploy runs nightly" if n % 2 else "backups run weekly") for n in range(40)]
    )
    names, matching = matched(index, "alice deploy", limit=50)
    assert names[0] == "alice"
    assert matching == 21  # alice and the twenty services that deploy: half of them is not noise


def test_the_hybrid_leg_keeps_the_keyword_floor() -> None:
    keyword = np.array([4.0, 0.01, 0.0])
    cosines = np.array([0.1, 0.1, 0.1])
    embedded = np.array([True, True, True])
    _, eligible = fuse(keyword, cosines, embedded, 0.7, 0.3)
    assert eligible.tolist() == [True, False, False]
