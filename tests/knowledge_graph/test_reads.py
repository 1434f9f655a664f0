"""Exact-name lookup (``get_entities``), the whole graph a page at a time (``read_graph``), and
a search that puts the entity named exactly the query first and counts the rest."""

from __future__ import annotations

import pytest

from tests.knowledge_graph.conftest import HASHING, StartGraph
from toolcards import RetriableError, ToolFactory
from toolcards.knowledge_graph import (
    EntityCreate,
    EntityUpdate,
    GetEntitiesParam,
    KnowledgeGraphProxy,
    KnowledgeGraphTool,
    ReadGraphParam,
    RelationCreate,
)
from toolcards.knowledge_graph._render import render_entities, render_graph_page, render_search_result
from toolcards.testing import FakeObserver


def ent(name: str, *observations: str, entity_type: str = "service") -> EntityCreate:
    return EntityCreate(name=name, entity_type=entity_type, observations=list(observations))


@pytest.fixture
def kg(start_graph: StartGraph) -> KnowledgeGraphProxy:
    graph = start_graph()
    graph.update(
        "@Ann",
        create_entities=[
            ent("svc", "the service"),
            ent("svc-db", "the svc database"),
            ent("svc-api", "svc entry point"),
            ent("svc-cache", "svc cache layer"),
            ent("Gateway", "routes to svc"),
        ],
        create_relations=[
            RelationCreate(from_entity="svc", to_entity="svc-db", relation_type="reads"),
            RelationCreate(from_entity="Gateway", to_entity="svc", relation_type="routes_to"),
        ],
    ).get()
    return graph


def test_get_entities_is_exact_and_case_insensitive(kg: KnowledgeGraphProxy) -> None:
    page = kg.get_entities(["SVC", "  gateway ", "sv", "nowhere"]).get()
    assert [view.entity.name for view in page.entities] == ["svc", "Gateway"]
    assert page.missing == ["sv", "nowhere"]
    text = render_entities(page)
    assert "svc [service]\n   - the service\n   neighbours: <-[routes_to]- Gateway [service]; -[reads]-> svc-db" in text
    assert "No entity named 'sv', 'nowhere'; search_graph finds by words." in text


def test_get_entities_finds_aliases_and_every_case_variant(kg: KnowledgeGraphProxy) -> None:
    kg.update("@Ann", create_entities=[ent("SVC", "upper case twin")]).get()
    kg.merge("@Ann", "svc-api", ["svc-cache"]).get()
    assert [v.entity.name for v in kg.get_entities(["svc"]).get().entities] == ["SVC", "svc"]
    assert [v.entity.name for v in kg.get_entities(["SVC-CACHE"]).get().entities] == ["svc-api"]


def test_read_graph_pages_through_what_holds(kg: KnowledgeGraphProxy) -> None:
    kg.update("@Ann", update_entities=[EntityUpdate(name="svc-cache", invalidate={"svc-cache": "removed"})]).get()
    first = kg.read_graph(0, 2).get()
    assert ([v.entity.name for v in first.entities], first.total) == (["Gateway", "svc"], 4)
    text = render_graph_page(first)
    assert text.startswith("Entities 1-2 of 4, by name:")
    assert text.endswith("2 more; next offset 2.")
    assert "-[routes_to]-> svc" in text and "<-[routes_to]-" not in text  # each relation once
    last = kg.read_graph(2, 100).get()
    assert [v.entity.name for v in last.entities] == ["svc-api", "svc-db"]
    assert "more; next offset" not in render_graph_page(last)
    assert render_graph_page(kg.read_graph(9, 5).get()) == "No entities from offset 9: the graph has 4 entities."


def test_read_graph_of_an_empty_graph(start_graph: StartGraph) -> None:
    assert render_graph_page(start_graph().read_graph().get()) == "The knowledge graph is empty."


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_an_exact_name_comes_first_alone_and_the_rest_are_counted(start_graph: StartGraph, mode: str) -> None:
    kg = start_graph(HASHING)
    kg.update(
        "@Ann",
        create_entities=[ent("svc"), ent("svc-db"), ent("svc-api"), ent("svc-cache"), ent("authentication-service")],
    ).get()
    result = kg.search("svc", mode, top_k=2).get()
    assert result.exact and result.hits[0].entity.name == "svc"
    assert result.hits[0].score >= result.hits[1].score
    assert result.more == 2
    assert render_search_result(result).endswith("2 more match; raise top_k to see them.")
    # A name that only starts with the query is still found, ranked by how much of it the query covers.
    prefix = kg.search("authen", "keyword").get()
    assert [h.entity.name for h in prefix.hits] == ["authentication-service"] and not prefix.exact
    assert 0 < prefix.hits[0].score < 1


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("top_k", [5, 10])
def test_names_starting_with_the_query_are_counted_once_past_the_best(
    start_graph: StartGraph, mode: str, top_k: int
) -> None:
    kg = start_graph(HASHING)
    # One at a time, oldest first: the names pinned first (the shortest) are the oldest, so
    # they rank below the most recent ones, outside the best that ranking returns.
    for n in range(30):
        kg.update("@Ann", create_entities=[ent(f"service-{n:02}")]).get()
    kg.update("@Ann", create_entities=[ent("other", entity_type="person")]).get()
    result = kg.search("service", mode, top_k=top_k).get()
    assert not result.exact and [h.entity.name for h in result.hits][:2] == ["service-00", "service-01"]
    assert result.more == 30 - top_k
    assert render_search_result(result).endswith(f"{30 - top_k} more match; raise top_k to see them.")


def test_a_name_starting_with_the_query_but_matching_nothing_else_is_counted_too(start_graph: StartGraph) -> None:
    kg = start_graph()
    kg.update("@Ann", create_entities=[ent(f"svc {n:02}") for n in range(30)]).get()
    kg.update("@Ann", create_entities=[ent("servicemesh", entity_type="thing")]).get()
    result = kg.search("service", "keyword", top_k=5).get()
    assert result.hits[0].entity.name == "servicemesh"
    # The 30 services and the mesh match; 5 are shown.
    assert result.more == 26


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "vector"])
def test_what_more_match_says_is_what_a_larger_top_k_shows(start_graph: StartGraph, mode: str) -> None:
    kg = start_graph(HASHING)
    # The cachelines share no word with "cache": only their names starting with it find them,
    # more of them than a small top_k pins.
    kg.update(
        "@Ann",
        create_entities=[
            ent("cache", entity_type="component"),
            *(ent(f"cacheline-{n:02}", entity_type="concept") for n in range(12)),
            ent("redis", "used as a cache", entity_type="database"),
        ],
    ).get()
    everything = kg.search("cache", mode, top_k=50).get()
    total = len(everything.hits)
    assert everything.more == 0 and {"cache", "cacheline-11"} <= {h.entity.name for h in everything.hits}
    for top_k in (1, 2, 5, total - 1):
        result = kg.search("cache", mode, top_k=top_k).get()
        assert (len(result.hits), result.more) == (top_k, total - top_k), top_k
        assert render_search_result(result).endswith(f"{total - top_k} more match; raise top_k to see them.")


def test_the_tools_and_commands(alice: FakeObserver) -> None:
    factory = ToolFactory([KnowledgeGraphTool()], observer=alice)
    tools = {t.name: t for t in factory.tools()}
    tools["update_graph"].call_sync({"create_entities": [{"name": "api", "entity_type": "service"}]})
    assert tools["get_entities"].call_sync({"names": ["API"]}).startswith("api [service]")
    with pytest.raises(RetriableError, match="No entity named 'nope'"):
        tools["get_entities"].call_sync({"names": ["nope"]})
    with pytest.raises(RetriableError):
        tools["get_entities"].call_sync({"names": []})
    assert tools["read_graph"].call_sync({}).startswith("Entities 1-1 of 1, by name:")
    with pytest.raises(RetriableError):
        tools["read_graph"].call_sync({"offset": -1})
    commands = factory.get_commands()
    assert commands[GetEntitiesParam](names=["api"]).startswith("api [service]")
    assert commands[ReadGraphParam](offset=0, limit=1).startswith("Entities 1-1 of 1")


def test_a_hit_shows_its_best_matching_observations_and_counts_the_rest(start_graph: StartGraph) -> None:
    kg = start_graph(HASHING)
    turns = [f"turn {n}: we chatted about the weather" for n in range(12)]
    turns[7] = "turn 7: Alice adopted a greyhound named Comet"
    kg.update("@Ann", create_entities=[ent("session 1", *turns, entity_type="session")]).get()
    for mode in ("keyword", "hybrid"):
        result = kg.search("greyhound", mode).get()
        text = render_search_result(result)
        lines = text.splitlines()
        assert lines[2] == "   - turn 7: Alice adopted a greyhound named Comet", text
        assert "   (+9 more observations: get_entities)" in lines
        assert len([line for line in lines if line.startswith("   - ")]) == 3
    # get_entities shows them all.
    assert render_entities(kg.get_entities(["session 1"]).get()).count("\n   - ") == 12


def test_top_k_is_the_number_of_entities_shown(start_graph: StartGraph) -> None:
    kg = start_graph()
    kg.update("@Ann", create_entities=[ent(f"e{n}", "shared words") for n in range(8)]).get()
    result = kg.search("shared words", "keyword", top_k=3).get()
    assert len(result.hits) == 3 and result.more == 5
    assert render_search_result(result).startswith("3 hits for 'shared words' (keyword):")
