"""UsageTool with real agents: calls counted per member, task and card on every channel,
budgets refusing calls with words naming who can raise them, and warnings in the context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import ToolFactory
from toolcards.actors import ActorSystem
from toolcards.core._channels import Channels
from toolcards.core._usage import parse_since
from toolcards.errors import BudgetExceeded, RetriableError
from toolcards.planning import PlanningTool
from toolcards.store import SQLiteStore, StoreLedger, store_ledgers
from toolcards.testing import FakeObserver
from toolcards.usage import RemoveBudgetParam, SetBudgetParam, UsageTool


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "state.db")
    yield opened
    opened.close()


@pytest.fixture
def system(store: SQLiteStore) -> Iterator[ActorSystem]:
    with ActorSystem(ledger=store_ledgers(store, interval_s=0.05)) as actor_system:
        yield actor_system


def tools_of(observer: FakeObserver) -> dict[str, Any]:
    factory = ToolFactory([PlanningTool(), UsageTool()], observer=observer)
    return {tool.name: tool for tool in factory.tools()}


def tools_changing_budgets(observer: FakeObserver) -> dict[str, Any]:
    """A member given set_budget and remove_budget as tools (a lead, say)."""
    usage = UsageTool(
        set_budget=SetBudgetParam(expose={Channels.TOOL_CALL, Channels.COMMAND}),
        remove_budget=RemoveBudgetParam(expose={Channels.TOOL_CALL, Channels.COMMAND}),
    )
    return {tool.name: tool for tool in ToolFactory([PlanningTool(), usage], observer=observer).tools()}


def ledger_of(observer: FakeObserver) -> StoreLedger:
    ledger = observer.team.ledger
    assert isinstance(ledger, StoreLedger)
    return ledger


def test_an_agents_calls_are_counted_against_its_claimed_task(system: ActorSystem) -> None:
    alice = FakeObserver("Alice", "team-1", system=system)
    tools = tools_of(alice)
    tools["update_planning"].call_sync({"create_tasks": [{"description": "write the report"}]})
    tools["claim_task"].call_sync({"task_id": 1})
    toolset = ToolFactory([PlanningTool(), UsageTool()], observer=alice).toolset()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("search_planning", {"query": "report"}, tool_call_id="c1")])
        if len(messages) == 3:
            return ModelResponse(parts=[ToolCallPart("usage", {"member": "Alice"}, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("done")])

    result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("go")
    answer = next(
        part.content
        for message in result.all_messages()
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart) and part.tool_name == "usage"
    )
    assert "Usage (member @Alice): 3 calls" in answer  # update, claim, search; usage counts after
    report = ledger_of(alice).usage(member="@Alice")
    assert report.by_task["1"].calls == 2  # search_planning and usage ran while task 1 was claimed
    assert report.by_task["none"].calls == 2
    assert report.by_card["PlanningTool"].calls == 3 and report.by_card["UsageTool"].calls == 1
    assert report.total.result_tokens > 0 and report.total.argument_tokens > 0


def test_commands_are_counted_and_system_prompts_are_not(system: ActorSystem) -> None:
    alice = FakeObserver("Alice", "team-1", system=system)
    factory = ToolFactory([PlanningTool(), UsageTool()], observer=alice)
    registry = factory.command_registry()
    registry.dispatch("/search_planning anything")
    for prompt in factory.get_system_prompts():
        prompt()
    report = ledger_of(alice).usage()
    assert report.total.calls == 1 and set(report.by_tool) == {"search_planning"}


def test_a_spent_member_budget_refuses_the_agents_next_call(system: ActorSystem) -> None:
    lead = FakeObserver("Lead", "team-1", system=system)
    alice = FakeObserver("Alice", "team-1", system=system)
    alice.team.register_member(alice.address)
    lead_tools = tools_of(lead)
    answer = lead_tools["set_budget"].call_sync({"member": "@Alice", "calls": 2})
    assert answer == "Budget of member @Alice set: calls=2. Calls past it are refused."
    seen: list[str] = []
    calls = {"first": 2, "second": 1}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        run = "first" if "first" in str(messages[0]) else "second"
        seen.extend(
            str(part.content)
            for part in getattr(messages[-1], "parts", [])
            if isinstance(part, ToolReturnPart | RetryPromptPart)
        )
        if len(messages) < 2 * calls[run]:
            return ModelResponse(parts=[ToolCallPart("search_planning", {}, tool_call_id=f"c{len(messages)}")])
        return ModelResponse(parts=[TextPart("done")])

    toolset = ToolFactory([PlanningTool(), UsageTool()], observer=alice).toolset()
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    agent.run_sync("first")
    ledger_of(alice).flush()  # the writer's pass: from here every process sees both calls
    seen.clear()
    agent.run_sync("second")
    refusal = (
        "search_planning was not run: the budget of member @Alice is spent (2 calls of 2 calls). "
        "It was set by @Lead, and only @Lead or the user can raise it: "
        "stop calling tools that count against it and tell @Lead or the user."
    )
    assert any(refusal in text for text in seen), seen
    tools = tools_of(alice)
    with pytest.raises(BudgetExceeded, match="budget of member @Alice is spent"):
        tools["search_planning"].call_sync({})
    calls_before = ledger_of(alice).usage(member="@Alice").total.calls
    with pytest.raises(BudgetExceeded):
        tools["search_planning"].call_sync({})
    assert ledger_of(alice).usage(member="@Alice").total.calls == calls_before  # refusals are not calls
    lead_tools["set_budget"].call_sync({"member": "@Alice", "calls": 100})
    tools["search_planning"].call_sync({})  # raised: runs again


def test_a_budget_spent_already_when_it_is_set_says_so_at_once(system: ActorSystem) -> None:
    # "Calls past it are refused" read as if the member still had calls left: its next call was
    # refused, and nothing had said the budget was spent from the start.
    boss = FakeObserver("Boss", "team-1", system=system)
    boss.team.register_member(boss.address)
    tools = tools_of(boss)
    tools["search_planning"].call_sync({})
    tools["search_planning"].call_sync({})
    answer = tools["set_budget"].call_sync({"member": "@Boss", "calls": 2})
    assert answer == (
        "Budget of member @Boss set: calls=2. It is spent already (2 of 2 calls): calls counting against it are "
        "refused from now on."
    )
    with pytest.raises(BudgetExceeded, match="budget of member @Boss is spent"):
        tools["search_planning"].call_sync({})
    lead = tools_of(FakeObserver("Lead", "team-1", system=system))
    answer = lead["set_budget"].call_sync({"card": "planning", "tool_time_s": 3600})
    assert answer == "Budget of card PlanningTool set: tool_time_s=3600. Calls past it are refused."


def test_a_member_that_spent_a_budget_it_set_itself_can_still_change_it(system: ActorSystem) -> None:
    # remove_budget and set_budget were refused by the very budget they would lift, "set by
    # @Boss, and only @Boss or the user can raise it": @Boss was locked out, and told otherwise.
    boss = FakeObserver("Boss", "team-1", system=system)
    boss.team.register_member(boss.address)
    tools = tools_changing_budgets(boss)
    tools["search_planning"].call_sync({})
    tools["search_planning"].call_sync({})
    tools["set_budget"].call_sync({"member": "@Boss", "calls": 2})
    ledger_of(boss).flush()
    with pytest.raises(BudgetExceeded) as refused:
        tools["search_planning"].call_sync({})
    assert str(refused.value) == (
        "search_planning was not run: the budget of member @Boss is spent (3 calls of 2 calls). You set it: raise "
        "it with set_budget or lift it with remove_budget (no budget refuses those), or stop calling tools that "
        "count against it."
    )
    assert tools["set_budget"].call_sync({"member": "@Boss", "calls": 3}).startswith("Budget of member @Boss set")
    assert tools["remove_budget"].call_sync({"member": "@Boss"}) == "Budget of member @Boss removed."
    tools["search_planning"].call_sync({})
    assert ledger_of(boss).usage(member="@Boss").by_tool["set_budget"].calls == 2  # still counted


def test_a_budget_set_through_a_members_own_card_names_the_user(system: ActorSystem) -> None:
    # By default set_budget is a command: on Alice's card it is the orchestrator's, not hers.
    alice = FakeObserver("Alice", "team-1", system=system)
    alice.team.register_member(alice.address)
    tools = tools_of(alice)
    tools["set_budget"].call_sync({"member": "@Alice", "calls": 1})
    ledger_of(alice).flush()
    with pytest.raises(BudgetExceeded) as refused:
        tools["search_planning"].call_sync({})
    assert str(refused.value).endswith(
        "It was set by your own card (by the user or an orchestrator), and only the user can raise it: stop "
        "calling tools that count against it and tell the user."
    )
    # The orchestrator lifts it through the same card, whose budget it is.
    assert tools["remove_budget"].call_sync({"member": "@Alice"}) == "Budget of member @Alice removed."


def test_a_card_budget_on_the_usage_card_never_refuses_changing_budgets(system: ActorSystem) -> None:
    lead = FakeObserver("Lead", "team-1", system=system)
    lead.team.register_member(lead.address)
    tools = tools_changing_budgets(lead)
    tools["set_budget"].call_sync({"card": "usage", "calls": 1})
    tools["usage"].call_sync({})
    ledger_of(lead).flush()
    with pytest.raises(BudgetExceeded, match="the budget of card UsageTool is spent"):
        tools["usage"].call_sync({})
    tools["set_budget"].call_sync({"member": "@Lead", "calls": 50})
    assert tools["remove_budget"].call_sync({"card": "usage"}) == "Budget of card UsageTool removed."
    tools["usage"].call_sync({})


def test_the_warning_line_reaches_the_context_at_80_percent(system: ActorSystem) -> None:
    alice = FakeObserver("Alice", "team-1", system=system)
    alice.team.register_member(alice.address)
    tools = tools_of(alice)
    tools["set_budget"].call_sync({"member": "@Alice", "calls": 5})
    instructions: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        instructions.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), toolsets=[ToolFactory([UsageTool()], observer=alice).toolset()])
    agent.run_sync("go")
    assert "Budget warning" not in instructions[-1]
    for _ in range(3):  # with set_budget: 4 calls of 5
        tools["search_planning"].call_sync({})
    ledger_of(alice).flush()
    agent.run_sync("go")
    # Set through Alice's own card, by the orchestrator: Alice herself cannot change budgets.
    assert (
        "Budget warning: member @Alice has used 80% (4 calls of 5 calls); at 100% its calls are refused. "
        "The user can raise it." in instructions[-1]
    )
    tools["search_planning"].call_sync({})
    ledger_of(alice).flush()
    agent.run_sync("go")
    assert (
        "Budget spent: member @Alice (5 calls of 5 calls); calls counting against it are refused." in instructions[-1]
    )


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"member": "@Alice", "calls": 0}, "calls=0 would refuse every call of member @Alice"),
        ({"card": "workspace", "result_tokens": -5}, "result_tokens=-5 would refuse every call"),
        ({"member": "@Nobody", "calls": 3}, "@Nobody is not a member of the team. Members: @Alice"),
        ({"member": "@Alice", "card": "planning", "calls": 3}, "Give exactly one of member, task_id or card"),
        ({"card": "Telepathy", "calls": 3}, "Unknown card 'Telepathy'"),
        ({"task_id": 0, "calls": 3}, "task_id must be a task's id"),
        ({"task_id": 4}, "Give at least one limit"),
    ],
)
def test_bad_budgets_are_refused_and_nothing_is_set(system: ActorSystem, arguments: dict[str, Any], words: str) -> None:
    alice = FakeObserver("Alice", "team-1", system=system)
    alice.team.register_member(alice.address)
    tools = tools_of(alice)
    with pytest.raises(RetriableError, match=words.replace("(", r"\(")):
        tools["set_budget"].call_sync(arguments)
    assert ledger_of(alice).budgets() == []


def test_card_budgets_take_kinds_and_remove_budget_takes_them_away(system: ActorSystem) -> None:
    alice = FakeObserver("Alice", "team-1", system=system)
    tools = tools_of(alice)
    assert "card PlanningTool" in tools["set_budget"].call_sync({"card": "planning", "tool_time_s": 30})
    assert tools["remove_budget"].call_sync({"card": "PlanningTool"}) == "Budget of card PlanningTool removed."
    with pytest.raises(RetriableError, match="There is no budget of card PlanningTool"):
        tools["remove_budget"].call_sync({"card": "PlanningTool"})


def test_usage_refuses_unknown_members_and_bad_times(system: ActorSystem) -> None:
    alice = FakeObserver("Alice", "team-1", system=system)
    tools = tools_of(alice)
    with pytest.raises(RetriableError, match="No calls are recorded for @Nobody"):
        tools["usage"].call_sync({"member": "Nobody"})
    with pytest.raises(RetriableError, match="is not a time"):
        tools["usage"].call_sync({"since": "yesterday-ish"})
    with pytest.raises(RetriableError, match="is in the future"):
        tools["usage"].call_sync({"since": "2999-01-01"})
    assert tools["usage"].call_sync({"since": "2h"}).startswith("Usage (since ")


@pytest.mark.parametrize(
    ("since", "words"),
    [
        ("99999999999d", "reaches back before the year 1"),
        ("9999999999h", "reaches back before the year 1"),
        ("0001-01-01T00:00:00+05:00", "falls outside the years 1 to 9999 in UTC"),
        ("9999-12-31T23:00:00-05:00", "falls outside the years 1 to 9999 in UTC"),
    ],
)
def test_usage_refuses_a_since_outside_the_calendar_in_words(system: ActorSystem, since: str, words: str) -> None:
    tools = tools_of(FakeObserver("Alice", "team-1", system=system))
    with pytest.raises(RetriableError, match=words):
        tools["usage"].call_sync({"since": since})
    # The first hour there is counts from there.
    assert tools["usage"].call_sync({"since": "0001-01-01T00:00:00Z"}).startswith("Usage (since ")


@pytest.mark.parametrize("member", ["", "  ", "@", " @ "])
def test_a_member_without_a_name_is_refused_not_read_as_the_whole_team(system: ActorSystem, member: str) -> None:
    tools = tools_of(FakeObserver("Alice", "team-1", system=system))
    tools["search_planning"].call_sync({})
    for tool, arguments in (
        ("usage", {"member": member}),
        ("set_budget", {"member": member, "calls": 5}),
        ("remove_budget", {"member": member}),
    ):
        with pytest.raises(RetriableError, match="names nobody: give a member's name"):
            tools[tool].call_sync(arguments)


def test_parse_since_reads_iso_times_and_durations() -> None:
    assert parse_since("2026-01-02T03:04").isoformat() == "2026-01-02T03:04:00+00:00"
    assert parse_since("2026-01-02T03:04+01:00").utcoffset() is not None
    assert (parse_since("0m") - parse_since("1d")).total_seconds() == pytest.approx(86400, abs=5)


def test_usage_is_a_command_and_a_tool_and_budgets_are_commands() -> None:
    card = UsageTool()
    channels = {name: card.param(name).expose for name in ("usage", "set_budget", "remove_budget", "budget_warnings")}
    assert channels == {
        "usage": {Channels.TOOL_CALL, Channels.COMMAND},
        "set_budget": {Channels.COMMAND},
        "remove_budget": {Channels.COMMAND},
        "budget_warnings": {Channels.SYSTEM_PROMPT},
    }
    assert UsageTool.model_validate(card.model_dump()) == card


def test_a_usage_card_turns_the_ledger_on_for_a_team_without_one(tmp_path: Path) -> None:
    with ActorSystem() as bare:
        alice = FakeObserver("Alice", "team-2", system=bare)
        tools = tools_of(alice)
        tools["search_planning"].call_sync({})
        assert "1 calls" in tools["usage"].call_sync({})
