"""The graph's views: the whole graph, and search_graph's ranking as data."""

from __future__ import annotations

from toolcards import ToolFactory
from toolcards.knowledge_graph import KnowledgeGraphTool
from toolcards.testing import FakeObserver


def test_the_graph_view_and_its_search(alice: FakeObserver) -> None:
    factory = ToolFactory([KnowledgeGraphTool()], observer=alice)
    views = factory.views()
    update = {t.name: t for t in factory.tools()}["update_graph"]
    assert views["knowledge_graph.graph"].current_version() == 0

    update.call_sync(
        {
            "create_entities": [
                {"name": "auth-service", "entity_type": "service", "observations": ["Go"], "is_root": True},
                {"name": "user-db", "entity_type": "database", "description": "Holds the users"},
            ],
            "create_relations": [{"from_entity": "auth-service", "to_entity": "user-db", "relation_type": "reads"}],
        }
    )

    graph = views["knowledge_graph.graph"].render()
    assert [e["name"] for e in graph["entities"]] == ["auth-service", "user-db"]
    assert graph["entities"][0]["observations"] == ["Go"] and graph["entities"][0]["is_root"]
    assert graph["relations"] == [
        {"from_entity": "auth-service", "to_entity": "user-db", "relation_type": "reads", "description": ""}
    ]
    assert views["knowledge_graph.graph"].current_version() == 1
    found = views["knowledge_graph.search"].render(query="users")
    assert found["mode"] == "keyword" and found["hits"][0]["name"] == "user-db"
    assert views["knowledge_graph.search"].render(query="  ")["hits"] == []
