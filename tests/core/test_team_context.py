"""TeamContext: the instructions stay byte-identical while the team's context changes, and the
model still learns every change, in compact updates kept in the conversation."""

from __future__ import annotations

import itertools
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import ToolFactory
from toolcards.planning import PlanningTool
from toolcards.pydantic_ai import TeamContext
from toolcards.pydantic_ai._context import ContextTracker, line_label
from toolcards.testing import FakeObserver

PLAN = "\n".join(
    [
        "**Team planning:** 2 tasks (2 pending)",
        "**Your tasks** (you own or created them):",
        "- #1 [pending] Write the parser",
        "- #2 [pending] Write the tests (needs 1)",
    ]
)


def test_labels_say_what_a_line_is_about() -> None:
    assert line_label("- #12 [in_progress] Ship it") == "#12"
    assert line_label("Owners: @Ann 2") == "Owners"
    assert line_label("**Team planning:** 3 tasks") == "**Team planning"
    assert line_label("a line without a label") is None


def test_an_update_carries_only_what_changed() -> None:
    tracker = ContextTracker()
    assert tracker.baseline([("plan", PLAN)]) == PLAN
    assert tracker.update([("plan", PLAN)]) is None

    changed = PLAN.replace("- #1 [pending] Write the parser", "- #1 [completed] Write the parser — Output: ok")
    update = tracker.update([("plan", changed)])

    assert update == "[context update]\nnow: - #1 [completed] Write the parser — Output: ok"
    removed = "\n".join(line for line in changed.splitlines() if not line.startswith("- #2"))
    assert tracker.update([("plan", removed)]) == "[context update]\ngone: - #2 [pending] Write the tests (needs 1)"


def test_the_whole_context_is_sent_again_after_enough_updates_or_when_smaller() -> None:
    tracker = ContextTracker(full_every=2)
    tracker.baseline([("plan", PLAN)])
    texts = [PLAN.replace("Write the parser", f"Write the parser v{i}") for i in range(4)]
    kinds = [(tracker.update([("plan", text)]) or "").splitlines()[0] for text in texts]
    assert kinds == ["[context update]", "[context update]", "[context update: whole context]", "[context update]"]
    assert tracker.update([("plan", "x")]) == "[context update: whole context]\nx"  # shorter than its delta


def test_an_agent_keeps_its_instructions_while_the_board_changes(alice: FakeObserver, bob: FakeObserver) -> None:
    board = {t.name: t for t in ToolFactory([PlanningTool()], observer=bob).tools()}
    board["update_planning"].call_sync({"create_tasks": [{"description": "Write the parser", "owner": "@Alice"}]})
    factory = ToolFactory([PlanningTool()], observer=alice)
    seen: list[tuple[str | None, list[ModelMessage]]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((info.instructions, list(messages)))
        if len(seen) <= 3:
            # Another agent changes the board while this one works.
            board["update_planning"].call_sync(
                {"create_tasks": [{"description": f"Follow-up {len(seen)}", "owner": "@Alice"}]}
            )
            return ModelResponse(parts=[ToolCallPart("get_planning_task", {"task_id": 1})])
        return ModelResponse(parts=[TextPart("done")])

    result = Agent(FunctionModel(model), capabilities=[TeamContext(factory)]).run_sync("work")

    assert result.output == "done"
    instructions = {text for text, _ in seen}
    assert len(instructions) == 1  # byte-identical on every request
    (only,) = instructions
    assert only is not None and "- #1 [pending] Write the parser (creator @Bob)" in only
    updates = [
        part.content
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and str(part.content).startswith("[context update")
    ]
    assert len(updates) == 3
    assert all("now: - #" in str(update) and "Follow-up" in str(update) for update in updates)
    # Each request starts with the whole previous one: the history is only ever extended.
    for (_, before), (_, after) in itertools.pairwise(seen):
        assert after[: len(before)] == before


def test_the_capability_carries_the_factory_tools(alice: FakeObserver) -> None:
    names: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        names.extend(tool.name for tool in info.function_tools)
        return ModelResponse(parts=[TextPart("ok")])

    capability: Any = TeamContext(ToolFactory([PlanningTool()], observer=alice))
    Agent(FunctionModel(model), capabilities=[capability]).run_sync("hi")
    assert {"get_planning_task", "update_planning", "search_planning"} <= set(names)
