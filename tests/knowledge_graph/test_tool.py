"""KnowledgeGraphTool through the factory and a pydantic-ai agent."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import RetriableError, ToolFactory, dump_cards, load_cards
from toolcards.actors import ActorSystem
from toolcards.knowledge_graph._tool import GetGraphParam, KnowledgeGraphTool, SearchGraphParam
from toolcards.testing import FakeObserver
from toolcards.vector import EmbeddingParam


def tools(observer: FakeObserver, card: KnowledgeGraphTool | None = None) -> dict[str, Any]:
    return {t.name: t for t in ToolFactory([card or KnowledgeGraphTool()], observer=observer).tools()}


BATCH = {
    "create_entities": [
        {"name": "auth-service", "entity_type": "service", "description": "Issues login tokens", "is_root": True},
        {"name": "user-db", "entity_type": "database", "observations": ["PostgreSQL 15"]},
    ],
    "create_relations": [{"from_entity": "auth-service", "to_entity": "user-db", "relation_type": "reads_from"}],
}


def test_entities_and_relations_created_together_and_shared(alice: FakeObserver, bob: FakeObserver) -> None:
    out = tools(alice)["update_graph"].call_sync(BATCH)
    assert "auth-service" in out
    summary = tools(bob)["get_graph"].call_sync({})
    assert "2 entities, 1 relations" in summary and "auth-service" in summary and "search_graph" in summary
    found = tools(bob)["search_graph"].call_sync({"query": "login tokens", "include_edges": True})
    assert "auth-service" in found and "reads_from" in found


def test_failures_are_reported_together_after_valid_parts(alice: FakeObserver) -> None:
    update = tools(alice)["update_graph"]
    update.call_sync(BATCH)
    with pytest.raises(RetriableError) as err:
        update.call_sync(
            {
                "create_entities": [
                    {"name": "auth-service", "entity_type": "service"},
                    {"name": "cache", "entity_type": "service"},
                ],
                "create_relations": [{"from_entity": "cache", "to_entity": "ghost", "relation_type": "uses"}],
            }
        )
    assert "auth-service" in str(err.value) and "ghost" in str(err.value)
    assert "cache" in tools(alice)["search_graph"].call_sync({"query": "cache", "mode": "keyword"})


def test_read_only_removes_update_everywhere(alice: FakeObserver) -> None:
    names = set(tools(alice, KnowledgeGraphTool(read_only=True)))
    assert names == {"get_graph", "search_graph", "get_entities", "read_graph"}


def test_hybrid_search_with_an_embedding_and_paths(alice: FakeObserver) -> None:
    card = KnowledgeGraphTool(embedding=EmbeddingParam(provider="hashing"))
    t = tools(alice, card)
    t["update_graph"].call_sync(BATCH)
    out = t["search_graph"].call_sync({"query": "auth service user db", "find_paths": True})
    assert "auth-service" in out and "user-db" in out


def test_an_agent_records_knowledge_and_sees_the_summary(alice: FakeObserver) -> None:
    seen: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return ModelResponse(parts=[TextPart("recorded")])
        return ModelResponse(
            parts=[ToolCallPart("update_graph", {"create_entities": json.dumps(BATCH["create_entities"])})]
        )

    factory = ToolFactory([KnowledgeGraphTool()], observer=alice)
    assert Agent(FunctionModel(model), toolsets=[factory.toolset()]).run_sync("learn").output == "recorded"
    assert seen[0] == "The knowledge graph is empty."
    assert "2 entities" in (seen[1] or "")


def test_the_graph_survives_a_restart() -> None:
    with ActorSystem() as system:
        tools(FakeObserver("Alice", "t", system=system))["update_graph"].call_sync(BATCH)
    with ActorSystem() as system:
        assert "2 entities" in tools(FakeObserver("Bob", "t", system=system))["get_graph"].call_sync({})


def test_round_trip_and_no_embedding_client_without_embedding() -> None:
    card = KnowledgeGraphTool(
        get_graph=GetGraphParam(instructions="x"), search_graph=SearchGraphParam(alpha=0.5), read_only=True
    )
    assert load_cards(json.loads(json.dumps(dump_cards([card])))) == [card]
    code = (
        "from toolcards.testing import FakeObserver; from toolcards import ToolFactory;"
        "from toolcards.knowledge_graph._tool import KnowledgeGraphTool;"
        "o = FakeObserver('A', 't');"
        "t = {x.name: x for x in ToolFactory([KnowledgeGraphTool()], observer=o).tools()};"
        "t['update_graph'].call_sync({'create_entities': [{'name': 'a', 'entity_type': 'b'}]});"
        "t['search_graph'].call_sync({'query': 'a'}); o.close();"
        "import sys; print('onnxruntime' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_without_an_embedding_the_description_says_keyword_once_and_results_carry_no_note(
    alice: FakeObserver,
) -> None:
    tools = {t.name: t for t in ToolFactory([KnowledgeGraphTool()], observer=alice).tools()}
    tools["update_graph"].call_sync({"create_entities": [{"name": "Auth", "entity_type": "service"}]})
    search = tools["search_graph"]

    assert "or meaning if embedded" in search.description
    for mode in ("hybrid", "vector", "keyword"):
        answer = str(search.call_sync({"query": "auth", "mode": mode}))
        assert "Note:" not in answer and "Auth" in answer


def test_cards_with_other_search_settings_for_one_team_graph_are_refused(alice: FakeObserver) -> None:
    from toolcards.errors import WiringError

    ToolFactory([KnowledgeGraphTool(search_graph=SearchGraphParam(alpha=0.7))], observer=alice).tools()
    ToolFactory([KnowledgeGraphTool()], observer=alice).tools()  # the same settings: shared
    with pytest.raises(WiringError, match=r"alpha 0\.9 \(the graph has 0\.7\)"):
        ToolFactory([KnowledgeGraphTool(search_graph=SearchGraphParam(alpha=0.9))], observer=alice).tools()
    with pytest.raises(WiringError, match="embedding"):
        ToolFactory([KnowledgeGraphTool(embedding=EmbeddingParam(provider="hashing"))], observer=alice).tools()


def test_a_long_observation_is_accepted(alice: FakeObserver) -> None:
    turn = "word " * 700
    out = tools(alice)["update_graph"].call_sync(
        {"create_entities": [{"name": "chat", "entity_type": "session", "observations": [turn.strip()]}]}
    )
    assert "created entities chat" in out
    with pytest.raises(RetriableError, match="4000"):
        tools(alice)["update_graph"].call_sync(
            {"create_entities": [{"name": "chat2", "entity_type": "session", "observations": ["x" * 4001]}]}
        )


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"entity_type": ""}, "update_entities.0.entity_type: must not be empty; omit entity_type to keep the type"),
        ({"entity_type": "  "}, "update_entities.0.entity_type: must not be empty; omit entity_type to keep the type"),
        ({"entity_type": "a\nb"}, "update_entities.0.entity_type: a line break (U+000A) at character 2: names and"),
        ({"entity_type": "t" * 61}, "update_entities.0.entity_type: String should have at most 60 characters"),
        ({"description": "d" * 501}, "update_entities.0.description: String should have at most 500 characters"),
        ({"is_root": "maybe"}, "update_entities.0.is_root: Input should be a valid boolean"),
    ],
)
def test_a_bad_change_to_an_entity_is_refused_as_plainly_as_a_bad_new_entity(
    alice: FakeObserver, change: dict[str, Any], refusal: str
) -> None:
    # These optional fields were unions with a hidden null branch: the refusal listed both
    # branches under pydantic's names ("update_entities.0.entity_type.function-after[
    # _one_line_name(), constrained-str]: ...; update_entities.0.entity_type.none: ...").
    update = tools(alice)["update_graph"]
    update.call_sync({"create_entities": [{"name": "Acme", "entity_type": "org", "description": "A firm"}]})
    with pytest.raises(RetriableError) as refused:
        update.call_sync({"update_entities": [{"name": "Acme", **change}]})
    message = str(refused.value)
    assert message.startswith(f"Invalid arguments for update_graph: {refusal}")
    assert message.count(f"update_entities.0.{next(iter(change))}") == 1
    assert "function-after" not in message and "constrained-str" not in message and ".none" not in message
    assert "Value error" not in message
    # Null, like leaving a field out, keeps what the entity has.
    update.call_sync({"update_entities": [{"name": "Acme", "entity_type": None, "description": None, "is_root": None}]})
    shown = tools(alice)["get_entities"].call_sync({"names": ["Acme"]})
    assert "org" in shown and "A firm" in shown
