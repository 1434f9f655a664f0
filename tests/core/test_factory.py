"""The factory: binding, aggregation per channel, and pydantic-ai agents driven offline."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.core.cards import BasketCard, GreeterCard, GreetParam, MotdParam
from toolcards import COMMAND, TOOL_CALL, RetriableError, ToolExecutionRecord, ToolFactory, WiringError
from toolcards.errors import StoreError
from toolcards.testing import FakeObserver


def scripted(*calls: ToolCallPart, seen: list[Any] | None = None) -> FunctionModel:
    """A model that makes ``calls`` once, then answers with every tool return it saw."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(" | ".join(f"{p.outcome}:{p.content}" for p in returns))])
        return ModelResponse(parts=list(calls))

    return FunctionModel(respond)


def test_duplicate_names_name_both_cards() -> None:
    with pytest.raises(
        WiringError, match="'greet_someone' on tool_call is produced by both GreeterCard and GreeterCard"
    ):
        ToolFactory([GreeterCard(), GreeterCard(motd=False)])


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        ("greeter", "Expected a list of cards, got str 'greeter'"),
        (GreeterCard(), r"Expected a list of cards, got one card: pass \[GreeterCard\(...\)\]"),
        ([GreeterCard], r"item 0: the class GreeterCard \(call it: GreeterCard\(\)\)"),
        ([GreeterCard(), "greeter"], r"item 1: str 'greeter'"),
        ([[GreeterCard()]], r"item 0: list \[GreeterCard"),
    ],
)
def test_what_is_not_a_card_is_refused_in_words(cards: Any, expected: str) -> None:
    # Each failed later with an AttributeError or a TypeError about a missing self.
    with FakeObserver("Ann") as ann, pytest.raises(WiringError, match=expected):
        ToolFactory(cards, observer=ann)


def test_same_name_on_different_channels_is_fine() -> None:
    factory = ToolFactory(
        [GreeterCard(greet=GreetParam(expose={TOOL_CALL}), motd=False), GreeterCard(greet=GreetParam(expose={COMMAND}))]
    )
    assert len(factory.get_tools()) == 1 and len(factory.get_commands()) == 2


def test_every_wiring_problem_is_reported_together() -> None:
    with pytest.raises(WiringError) as err:
        ToolFactory([GreeterCard(motd=MotdParam(expose={TOOL_CALL})), GreeterCard(), GreeterCard()])
    assert str(err.value).count("produced by both") == 3
    assert "cannot serve" in str(err.value)


def test_toolset_attaches_tools_and_instructions() -> None:
    seen: list[AgentInfo] = []
    factory = ToolFactory([GreeterCard(motd_text="Be brief.")])
    model = scripted(ToolCallPart("greet_someone", {"name": "Ann", "times": "2"}), seen=seen)
    result = Agent(model, toolsets=[factory.toolset()]).run_sync("go")
    assert result.output == "success:Hello, Ann! Hello, Ann!"
    assert seen[0].instructions == "Be brief."
    (definition,) = seen[0].function_tools
    assert definition.name == "greet_someone"
    assert definition.parameters_json_schema == factory.tools(TOOL_CALL)[0].parameters_schema


def test_retriable_errors_become_retries_and_failures_reach_the_model() -> None:
    factory = ToolFactory([GreeterCard()])
    model = scripted(
        ToolCallPart("greet_someone", {"name": "Voldemort"}),
        ToolCallPart("greet_someone", {"name": "crash"}),
        ToolCallPart("greet_someone", {"nam": "typo"}),
    )
    output = Agent(model, toolsets=[factory.toolset()]).run_sync("go").output
    assert "retried:That name must not be spoken" in output
    assert "failed:greet_someone failed: ValueError: boom" in output
    assert "retried:Invalid arguments for greet_someone" in output and "unknown parameter nam" in output


def test_plain_tools_and_instructions_work_too() -> None:
    seen: list[AgentInfo] = []
    factory = ToolFactory([GreeterCard()], retry_exception=ModelRetry)
    model = scripted(
        ToolCallPart("greet_someone", {"name": "Bo"}), ToolCallPart("greet_someone", {"name": "Voldemort"}), seen=seen
    )
    agent = Agent(model, tools=factory.get_tools(), instructions=factory.get_system_prompts())
    output = agent.run_sync("go").output
    assert "success:Hello, Bo!" in output and "retried:That name must not be spoken" in output
    assert seen[0].instructions == "Be kind."
    assert seen[0].function_tools[0].parameters_json_schema["required"] == ["name"]


def test_without_retry_exception_errors_come_back_as_text() -> None:
    (greet,) = ToolFactory([GreeterCard(motd=False)]).get_tools()
    assert greet(name="Voldemort") == "Error: That name must not be spoken. Greet someone else."


def test_system_prompts_are_re_evaluated_before_every_request() -> None:
    card = GreeterCard(motd_text="first")
    factory = ToolFactory([card])
    seen: list[AgentInfo] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        if len(seen) == 1:
            card.motd_text = "second"
            return ModelResponse(parts=[ToolCallPart("greet_someone", {"name": "A"})])
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("go")
    assert [info.instructions for info in seen] == ["first", "second"]


def test_in_append_mode_a_changed_prompt_is_appended_and_the_start_of_the_request_stays() -> None:
    card = GreeterCard(motd_text="first")
    factory = ToolFactory([card])
    seen: list[tuple[str | None, list[ModelMessage]]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((info.instructions, list(messages)))
        if len(seen) == 1:
            card.motd_text = "second"
            return ModelResponse(parts=[ToolCallPart("greet_someone", {"name": "A"})])
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset(context="append")]).run_sync("go")
    # The instructions (the start of every request, which provider caches keep) never change...
    first, second = (instructions for instructions, _ in seen)
    assert first == second and first is not None and "first" in first and "second" not in first
    # ...and the model still reads the new text, at the end of the conversation.
    assert "second" in repr(seen[1][1][-1].parts)


def test_requires_approval_defers_the_call() -> None:
    factory = ToolFactory([GreeterCard(greet=GreetParam(requires_approval=True), motd=False)])
    agent = Agent(
        scripted(ToolCallPart("greet_someone", {"name": "Ann"})),
        toolsets=[factory.toolset()],
        output_type=[str, DeferredToolRequests],
    )
    result = agent.run_sync("go")
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["greet_someone"]


def test_commands_raise_and_records_reach_observer_and_subscribers() -> None:
    with FakeObserver("Alice") as alice:
        factory = ToolFactory([GreeterCard(), BasketCard()], observer=alice)
        records: list[ToolExecutionRecord] = []
        unsubscribe = factory.subscribe(records.append)
        commands = factory.get_commands()
        assert commands[GreetParam](name="Ann") == "Hello, Ann!"
        with pytest.raises(RetriableError):
            commands[GreetParam](name="Voldemort")
        unsubscribe()
        commands[GreetParam](name="Bo")
        assert [r.success for r in records] == [True, False]
        assert [r.agent for r in records] == ["@Alice", "@Alice"]
        assert len([e for e in alice.events if isinstance(e, ToolExecutionRecord)]) == 3


def test_structured_arguments_through_an_agent() -> None:
    factory = ToolFactory([BasketCard()])
    model = scripted(ToolCallPart("add_items", {"items": '[{"name": "apple", "qty": "3"}]'}))
    assert Agent(model, toolsets=[factory.toolset()]).run_sync("go").output == "success:1 items"


def test_one_card_object_configures_many_agents_without_mixing_them() -> None:
    with FakeObserver("Alice") as alice, FakeObserver("Bob") as bob:
        card = GreeterCard()
        records: list[ToolExecutionRecord] = []
        as_alice = ToolFactory([card], observer=alice)
        as_bob = ToolFactory([card], observer=bob)
        as_alice.subscribe(records.append)
        as_bob.subscribe(records.append)
        as_alice.get_commands()[GreetParam](name="Ann")
        as_bob.get_commands()[GreetParam](name="Ann")
        assert [r.agent for r in records] == ["@Alice", "@Bob"]
        assert as_alice.cards[0] is card and as_bob.cards[0] is not card
        assert as_bob.cards[0] == card  # the same configuration
        assert card.get_observer() is alice


class _OutageGreeter(GreeterCard):
    """A steering card whose store is out of reach (a PostgreSQL outage)."""

    def take_stop(self) -> None:
        raise StoreError("the team's store is out of reach", transient=True)

    def deliveries(self) -> list[str]:
        raise StoreError("the team's store is out of reach", transient=True)


def test_a_call_needing_no_store_runs_while_the_stop_check_cannot_reach_it() -> None:
    # The stop check runs before every tool call: an outage failed every call with a raw
    # StoreError, reading a file included.
    factory = ToolFactory([_OutageGreeter()], observer=FakeObserver("Ann"))
    assert factory.steers
    assert factory.take_stop() is None and factory.deliveries() == []
    agent = Agent(scripted(ToolCallPart("greet_someone", {"name": "Bob"})), toolsets=[factory.toolset()])
    assert agent.run_sync("go").output == "success:Hello, Bob!"
