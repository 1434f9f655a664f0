"""PlanningTool through the factory and a pydantic-ai agent: one board per team, creator
stamping, batches, the plan in context, and the board surviving a restart."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import RetriableError, ToolFactory, dump_cards, load_cards
from toolcards.actors import ActorSystem
from toolcards.planning._tool import (
    GetPlanningParam,
    GetPlanningTaskParam,
    PlanningTool,
    SearchPlanningParam,
    UpdatePlanningParam,
)
from toolcards.testing import FakeObserver
from toolcards.vector import EmbeddingParam


def commands(observer: FakeObserver, card: PlanningTool | None = None) -> dict[type, Any]:
    return ToolFactory([card or PlanningTool()], observer=observer).get_commands()


def update(observer: FakeObserver, **kwargs: Any) -> str:
    tool = next(t for t in ToolFactory([PlanningTool()], observer=observer).tools() if t.name == "update_planning")
    return str(tool.call_sync(kwargs))


def test_agents_of_one_team_share_a_board_and_teams_do_not(alice: FakeObserver, bob: FakeObserver) -> None:
    update(alice, create_tasks=[{"description": "Implement auth module", "owner": "@Bob"}])
    assert "- #1 [pending] Implement auth module (creator @Alice)" in commands(bob)[GetPlanningParam]()
    with FakeObserver("Carol", "team-2", system=alice.system) as carol:
        assert commands(carol)[GetPlanningParam]() == "**Team planning:** no tasks yet."


def test_creator_is_stamped_never_taken_from_the_model(alice: FakeObserver) -> None:
    with pytest.raises(RetriableError, match="creator"):
        update(alice, create_tasks=[{"description": "x", "creator": "@Mallory"}])
    update(alice, create_tasks=[{"description": "x"}])
    assert "Creator: @Alice" in commands(alice)[GetPlanningTaskParam](task_id=1)


def test_a_refused_part_applies_nothing_and_every_refusal_is_reported(alice: FakeObserver) -> None:
    update(alice, create_tasks=[{"description": "first"}])
    with pytest.raises(RetriableError) as err:
        update(
            alice,
            create_tasks=[{"description": "second"}, {"id": 1, "description": "dup"}, {"description": "y" * 301}],
            update_tasks=[{"id": 99, "status": "in_progress"}],
        )
    message = str(err.value)
    assert message.startswith("Nothing was applied (a batch is all or nothing)")
    assert "Task 1 already exists" in message and "Task 99 does not exist" in message and "300" in message
    plan = commands(alice)[GetPlanningParam]()
    assert "first" in plan and "second" not in plan and "dup" not in plan


@pytest.mark.parametrize(
    ("batch", "refusals"),
    [
        ({"delete_tasks": [3, 3]}, ["- delete task 3: Task 3 appears twice in delete_tasks; list each id once."]),
        (
            {"create_tasks": [{"id": 50, "description": "a"}, {"id": 50, "description": "b"}]},
            [
                "- create task 50: Task 50 appears twice in create_tasks; give each new task its own id, or omit id "
                "to get the next free one."
            ],
        ),
        (
            {"update_tasks": [{"id": 2, "status": "in_progress"}, {"id": 1}, {"id": 2, "owner": "@Bob"}]},
            ["- update task 2: Task 2 appears twice in update_tasks; put all the changes of task 2 in one item."],
        ),
        (
            {"delete_tasks": [1, 3, 3, 3, 1]},
            ["- delete task 3: Task 3 appears 3 times in delete_tasks;", "- delete task 1: Task 1 appears twice"],
        ),
    ],
)
def test_a_batch_naming_a_task_twice_in_one_list_is_refused_saying_so(
    alice: FakeObserver, batch: dict[str, Any], refusals: list[str]
) -> None:
    # The second mention used to meet the first one's result: "Task 3 does not exist" for a task
    # on the board, "Task 50 already exists ... or update task 50" for a free id.
    update(alice, create_tasks=[{"description": "one"}, {"description": "two"}, {"description": "three"}])
    with pytest.raises(RetriableError) as refused:
        update(alice, **batch)
    message = str(refused.value)
    assert message.startswith("Nothing was applied (a batch is all or nothing).")
    assert [line for line in message.splitlines() if line.startswith("- ")] == [
        next(line for line in message.splitlines() if line.startswith(refusal)) for refusal in refusals
    ]
    assert "does not exist" not in message and "already exists" not in message
    found = commands(alice)[SearchPlanningParam]()
    assert "3 tasks match" in found and "[in_progress]" not in found and "@Bob" not in found  # nothing applied


def test_a_task_may_still_appear_in_two_lists_of_one_batch(alice: FakeObserver) -> None:
    update(alice, create_tasks=[{"description": "one"}, {"description": "two"}])
    answer = update(
        alice,
        create_tasks=[{"id": 9, "description": "scratch"}],
        update_tasks=[{"id": 9, "status": "in_progress"}, {"id": 2, "status": "aborted", "output": "dropped"}],
        delete_tasks=[9, 2],
    )
    assert answer == "Created task 9. Updated tasks 9, 2. Deleted tasks 9, 2."
    assert "1 task matches" in commands(alice)[SearchPlanningParam]()


def test_search_and_lookup(alice: FakeObserver) -> None:
    update(alice, create_tasks=[{"description": "Review PR #42", "owner": "@Bob"}, {"description": "Write docs"}])
    found = commands(alice)[SearchPlanningParam](query="review")
    assert "Review PR #42" in found and "Write docs" not in found
    assert "Write docs" in commands(alice)[SearchPlanningParam](owner="")
    with pytest.raises(RetriableError, match="Task 7 does not exist"):
        commands(alice)[GetPlanningTaskParam](task_id=7)


def test_empty_update_is_refused(alice: FakeObserver) -> None:
    with pytest.raises(RetriableError, match="Nothing to do"):
        update(alice)


def test_footer_names_only_exposed_tools(alice: FakeObserver) -> None:
    update(alice, create_tasks=[{"description": "x"}])
    card = PlanningTool(get_planning_task=False, search_planning=SearchPlanningParam(expose={"command"}))  # type: ignore[arg-type]
    plan = commands(alice, card)[GetPlanningParam]()
    assert "get_planning_task" not in plan and "search_planning" not in plan
    assert commands(alice)[GetPlanningParam]().endswith(
        "get_planning_task(id) shows a task in full; search_planning(...) filters the board."
    )


def test_an_agent_plans_and_sees_the_plan_in_its_context(alice: FakeObserver) -> None:
    seen: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return ModelResponse(parts=[TextPart("planned")])
        tasks = json.dumps([{"description": "Implement auth module", "owner": "@Alice", "status": "in_progress"}])
        return ModelResponse(parts=[ToolCallPart("update_planning", {"create_tasks": tasks})])

    factory = ToolFactory([PlanningTool()], observer=alice)
    assert Agent(FunctionModel(model), toolsets=[factory.toolset()]).run_sync("plan").output == "planned"
    assert seen[0] == "**Team planning:** no tasks yet."
    assert "- #1 [in_progress] Implement auth module\n" in (seen[1] or "")


def test_a_worker_finds_a_finished_task_s_output_from_its_compact_plan(alice: FakeObserver, bob: FakeObserver) -> None:
    """Closed tasks are one line of ids in the plan; the way to their outputs is on that line."""
    update(alice, create_tasks=[{"description": "Design the schema", "owner": "@Bob"}])
    update(bob, update_tasks=[{"id": 1, "status": "completed", "output": "schema.sql, 4 tables"}])
    update(alice, create_tasks=[{"description": "Write the migrations", "owner": "@Bob", "dependencies": [1]}])
    read: list[str] = []

    def worker(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            read.append(str(last.content))
            return ModelResponse(parts=[TextPart("ready")])
        plan = info.instructions or ""
        # What the plan says: the open task waits on 1, and 1 is done, its output a call away.
        assert "- #2 [pending] Write the migrations (creator @Alice, needs 1)" in plan
        assert "Completed: 1 (outputs: get_planning_task(id))." in plan
        return ModelResponse(parts=[ToolCallPart("get_planning_task", {"task_id": 1})])

    factory = ToolFactory([PlanningTool()], observer=bob)
    assert Agent(FunctionModel(worker), toolsets=[factory.toolset()]).run_sync("start task 2").output == "ready"
    assert "Output: schema.sql, 4 tables" in read[0]


def test_the_board_survives_a_restart() -> None:
    with ActorSystem() as system:
        update(FakeObserver("Alice", "t", system=system), create_tasks=[{"description": "persist me"}])
    with ActorSystem() as system:
        assert "persist me" in commands(FakeObserver("Bob", "t", system=system))[SearchPlanningParam]()


def test_semantic_search_with_an_embedding(alice: FakeObserver) -> None:
    card = PlanningTool(embedding=EmbeddingParam(provider="hashing"))
    factory = ToolFactory([card], observer=alice)
    tools = {t.name: t for t in factory.tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "Fix the login page styling"}]})
    card._board.when_indexed().get().result(10)
    out = tools["search_planning"].call_sync({"query": "login page"})
    assert "Fix the login page styling" in out


def test_round_trip_and_channels() -> None:
    card = PlanningTool(
        get_planning=GetPlanningParam(filter_by_agent=False), update_planning=UpdatePlanningParam(instructions="x")
    )
    assert load_cards(json.loads(json.dumps(dump_cards([card])))) == [card]
    with FakeObserver("Ann") as ann:
        factory = ToolFactory([PlanningTool()], observer=ann)
        assert sorted(t.name for t in factory.tools()) == [
            "claim_task",
            "get_planning",
            "get_planning_task",
            "next_task",
            "release_task",
            "search_planning",
            "update_planning",
        ]
        assert [t.name for t in factory.tools() if "tool_call" in t.channels] == [
            "get_planning_task",
            "update_planning",
            "search_planning",
            "claim_task",
            "next_task",
            "release_task",
        ]
