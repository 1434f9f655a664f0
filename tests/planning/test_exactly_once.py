"""Exactly-once board writes: a call sent again with its idempotency key is answered, not applied again.

The key travels with the change in one store transaction, so the answer holds in any
process of the team, after a restart, and for every channel that carries a key.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import ToolFactory
from toolcards.core._tool import Tool
from toolcards.errors import ToolFailed
from toolcards.knowledge_graph import KnowledgeGraphTool
from toolcards.planning import PlanningTool
from toolcards.testing import FakeObserver


def tool_of(observer: FakeObserver, name: str, card: Any = None) -> Tool:
    tools = ToolFactory([card or PlanningTool()], observer=observer).tools()
    return next(tool for tool in tools if tool.name == name)


def board(observer: FakeObserver) -> str:
    return str(tool_of(observer, "search_planning").call_sync({}))


def test_a_repeated_key_returns_the_first_answer_and_writes_nothing(alice: FakeObserver) -> None:
    update = tool_of(alice, "update_planning")
    args = {"create_tasks": [{"description": "Write the spec"}]}
    assert update.call_sync(args, idempotency_key="k1") == "Created task 1."
    again = update.call_sync(args, idempotency_key="k1")
    assert again == "This call was already applied (board change 1); nothing was written again. Created task 1."
    assert board(alice).count("Write the spec") == 1
    assert update.call_sync(args) == "Created task 2."  # no key: a new call every time


def test_a_release_sent_again_answers_as_the_first_and_leaves_a_new_claim(alice: FakeObserver) -> None:
    # A client that never got the first answer sends the release again, after claiming the
    # task once more: the retry once released that new claim.
    tools = {tool.name: tool for tool in ToolFactory([PlanningTool()], observer=alice).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "Ship"}]})
    tools["claim_task"].call_sync({"task_id": 1}, idempotency_key="claim-1")
    first = tools["release_task"].call_sync({"task_id": 1}, idempotency_key="rel-1")
    tools["claim_task"].call_sync({"task_id": 1}, idempotency_key="claim-2")
    assert tools["release_task"].call_sync({"task_id": 1}, idempotency_key="rel-1") == first
    held = str(tools["get_planning_task"].call_sync({"task_id": 1}))
    assert "in_progress" in held and held.count("released by @Alice") == 1


def test_a_claim_sent_again_after_it_ended_says_so_rather_than_you_hold_it(alice: FakeObserver) -> None:
    # A retry after a restart, when the killed process's claim was released meanwhile: the
    # first answer ("you hold task 1") would send the model to work on a task it does not hold.
    tools = {tool.name: tool for tool in ToolFactory([PlanningTool()], observer=alice).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "Ship"}]})
    first = tools["claim_task"].call_sync({"task_id": 1}, idempotency_key="claim-1")
    assert first.startswith("You hold task 1 ")
    held = tools["claim_task"].call_sync({"task_id": 1}, idempotency_key="claim-1")
    assert held.startswith("This call was already applied: you hold task 1 ")
    tools["release_task"].call_sync({"task_id": 1})
    ended = tools["claim_task"].call_sync({"task_id": 1}, idempotency_key="claim-1")
    assert ended.startswith(
        "This call was already applied: you claimed task 1, and that claim has ended since (released, or its "
        "lease ran out); nothing was written again. Now: #1 [pending] Ship"
    )
    assert "[pending]" in str(tools["get_planning_task"].call_sync({"task_id": 1}))


def test_a_reused_key_with_other_arguments_is_refused_and_changes_nothing(alice: FakeObserver) -> None:
    update = tool_of(alice, "update_planning")
    update.call_sync({"create_tasks": [{"description": "one"}]}, idempotency_key="k")
    with pytest.raises(ToolFailed, match="reuses the idempotency key"):
        update.call_sync({"create_tasks": [{"description": "two"}]}, idempotency_key="k")
    assert "two" not in board(alice)


def test_keys_belong_to_their_member(alice: FakeObserver, bob: FakeObserver) -> None:
    args = {"create_tasks": [{"description": "same words"}]}
    tool_of(alice, "update_planning").call_sync(args, idempotency_key="k")
    assert tool_of(bob, "update_planning").call_sync(args, idempotency_key="k") == "Created task 2."


def test_a_refused_batch_is_not_recorded_so_its_corrected_retry_applies(alice: FakeObserver) -> None:
    update = tool_of(alice, "update_planning")
    with pytest.raises(Exception, match="Nothing was applied"):
        update.call_sync({"update_tasks": [{"id": 9, "status": "completed"}]}, idempotency_key="k")
    update.call_sync({"create_tasks": [{"description": "x"}]}, idempotency_key="k2")
    assert update.call_sync({"create_tasks": [{"description": "x"}]}, idempotency_key="k2").startswith(
        "This call was already applied"
    )


def test_graph_batches_are_exactly_once_too(alice: FakeObserver) -> None:
    update = tool_of(alice, "update_graph", KnowledgeGraphTool())
    args = {"create_entities": [{"name": "svc", "entity_type": "service", "observations": ["runs on 8080"]}]}
    assert update.call_sync(args, idempotency_key="g1") == "Applied: created entities svc."
    assert update.call_sync(args, idempotency_key="g1") == (
        "This call was already applied (graph change 1); nothing was written again.\nApplied: created entities svc."
    )
    # Without the key the same batch is a new call, refused for the name it already took.
    with pytest.raises(Exception, match="already exists"):
        update.call_sync(args)


def test_a_retry_reaching_another_process_is_answered_there(tmp_path: Path) -> None:
    """Process A applies the call and exits; process B, on the same store, gets the call again."""
    script = textwrap.dedent(
        """
        import sys
        from toolcards import ToolFactory
        from toolcards.actors import ActorSystem
        from toolcards.planning import PlanningTool
        from toolcards.testing import FakeObserver

        with ActorSystem() as system:
            agent = FakeObserver("Alice", "team-x", system=system)
            tools = {t.name: t for t in ToolFactory([PlanningTool()], observer=agent).tools()}
            args = {"create_tasks": [{"description": "deploy"}]}
            print(tools["update_planning"].call_sync(args, idempotency_key=sys.argv[1]))
            print(str(tools["search_planning"].call_sync({})).count("deploy"))
        """
    )
    env = {"TOOLCARDS_STORE": str(tmp_path / "state.db"), "PATH": "/usr/bin:/bin"}

    def run(key: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", script, key], capture_output=True, text=True, env=env, timeout=120, check=True
        )
        return done.stdout.splitlines()

    assert run("req-7") == ["Created task 1.", "1"]
    assert run("req-7") == [
        "This call was already applied (board change 1); nothing was written again. Created task 1.",
        "1",
    ]
    assert run("req-8") == ["Created task 2.", "2"]


def test_a_durable_re_execution_of_a_run_applies_its_calls_once(alice: FakeObserver) -> None:
    """The same run id and step (what a durable workflow replays) make the same key."""
    toolset = ToolFactory([PlanningTool()], observer=alice).toolset()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            args = {"create_tasks": [{"description": "exactly once"}]}
            return ModelResponse(parts=[ToolCallPart("update_planning", args, tool_call_id="call_0")])
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), toolsets=[toolset])
    agent.run_sync("go", run_id="run-1")
    agent.run_sync("go", run_id="run-1")  # executed again, as a workflow engine would
    assert board(alice).count("exactly once") == 1
    # Runs of their own (a fresh run id each) are new calls, whatever ids the model reuses.
    agent.run_sync("go", run_id="run-2")
    agent.run_sync("go")
    agent.run_sync("go")
    assert board(alice).count("exactly once") == 4
