"""Approval on every channel: a tool that requires it never runs unapproved, and runs once approved."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from pydantic import PrivateAttr
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import COMMAND, TOOL_CALL, BaseToolParam, Channels, GuardError, RetriableError, ToolCard, capability
from toolcards.core import ApprovalRequest, ApprovalRequired, ToolExecutionRecord, ToolFactory
from toolcards.core._guards import GuardContext


class LaunchParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}
    requires_approval: bool = True


class LaterParam(LaunchParam):
    pass


class LaunchCard(ToolCard):
    kind: ClassVar[str] = "test_launch"

    launch: LaunchParam | bool = True
    launch_later: LaterParam | bool = True
    _launched: list[str] = PrivateAttr(default_factory=list)

    @capability("launch", name="launch", serves={TOOL_CALL, COMMAND}, mutates=True)
    def launch_rocket(self, target: str) -> str:
        """Launch the rocket.

        Args:
            target: Where to.
        """
        self._launched.append(target)
        return f"Launched to {target}."

    @capability("launch_later", name="launch_later", serves={TOOL_CALL, COMMAND}, mutates=True)
    async def launch_rocket_later(self, target: str) -> str:
        """Launch the rocket, asynchronously.

        Args:
            target: Where to.
        """
        self._launched.append(target)
        return f"Launched to {target} later."


def approve_all(request: ApprovalRequest) -> bool:
    return True


def decline_all(request: ApprovalRequest) -> bool:
    return False


def bound(approve: Callable[[ApprovalRequest], bool] | None = None) -> tuple[LaunchCard, ToolFactory]:
    card = LaunchCard()
    return card, ToolFactory([card], approve=approve)


def scripted(*calls: ToolCallPart) -> FunctionModel:
    """A model that makes ``calls`` once, then answers with every tool return it saw."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(" | ".join(f"{p.outcome}:{p.content}" for p in returns))])
        return ModelResponse(parts=list(calls))

    return FunctionModel(respond)


# -- every channel, unapproved and approved ---------------------------------------------------


def via_tool_function(factory: ToolFactory, name: str) -> Any:
    function = next(f for f in factory.get_tools() if f.__name__ == name)
    result = function(target="Mars")
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def via_command(factory: ToolFactory, name: str) -> Any:
    return factory.get_commands()[LaterParam if name == "launch_later" else LaunchParam](target="Mars")


def via_dispatch(factory: ToolFactory, name: str) -> Any:
    return factory.command_registry().dispatch(f"/{name} Mars")


def via_call_sync(factory: ToolFactory, name: str) -> Any:
    return next(t for t in factory.tools() if t.name == name).call_sync({"target": "Mars"})


def via_call(factory: ToolFactory, name: str) -> Any:
    return asyncio.run(next(t for t in factory.tools() if t.name == name).call({"target": "Mars"}))


CHANNELS = [via_tool_function, via_command, via_dispatch, via_call_sync, via_call]


@pytest.mark.parametrize("name", ["launch", "launch_later"])
@pytest.mark.parametrize("channel", CHANNELS)
def test_no_channel_runs_the_handler_without_approval(channel: Callable[..., Any], name: str) -> None:
    card, factory = bound()
    try:
        outcome: Any = channel(factory, name)
    except ApprovalRequired as exc:
        outcome = str(exc)
    assert card._launched == []
    assert f"{name} needs a human's approval and was not approved, so it did not run" in str(outcome)


@pytest.mark.parametrize("name", ["launch", "launch_later"])
@pytest.mark.parametrize("channel", CHANNELS)
def test_every_channel_runs_the_handler_once_the_approver_approves(channel: Callable[..., Any], name: str) -> None:
    card, factory = bound(approve_all)
    assert "Launched to Mars" in channel(factory, name)
    assert card._launched == ["Mars"]


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_declined_call_does_not_run_and_says_so(channel: Callable[..., Any]) -> None:
    card, factory = bound(decline_all)
    try:
        outcome: Any = channel(factory, "launch")
    except ApprovalRequired as exc:
        assert not exc.deferrable
        outcome = str(exc)
    assert card._launched == []
    assert "The user declined this call of launch, so it did not run" in outcome


def test_commands_raise_approval_required() -> None:
    card, factory = bound()
    with pytest.raises(ApprovalRequired) as refused:
        factory.get_commands()[LaunchParam](target="Mars")
    assert refused.value.deferrable and card._launched == []


def test_the_caller_approves_with_approved_true() -> None:
    card, factory = bound()
    tools = {tool.name: tool for tool in factory.tools()}
    assert tools["launch"].call_sync({"target": "Mars"}, approved=True) == "Launched to Mars."
    assert asyncio.run(tools["launch_later"].call({"target": "Moon"}, approved=True)) == "Launched to Moon later."
    assert asyncio.run(tools["launch"].call({"target": "Venus"}, approved=True)) == "Launched to Venus."
    assert factory.command_registry().dispatch("/launch Io", approved=True) == "Launched to Io."
    assert card._launched == ["Mars", "Moon", "Venus", "Io"]


def test_the_refusal_is_text_for_the_model_even_with_a_retry_exception() -> None:
    # Retrying an unapproved call cannot succeed: it is a failed result, not a ModelRetry.
    card = LaunchCard(launch_later=False)
    (launch,) = ToolFactory([card], retry_exception=ModelRetry).get_tools()
    assert launch(target="Mars").startswith("Error: launch needs a human's approval")
    assert card._launched == []


def test_the_approver_sees_the_validated_arguments_after_guards_read_only() -> None:
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        seen.append(request)
        with pytest.raises(TypeError):
            request.args["target"] = "Sun"  # type: ignore[index]
        return True

    def to_the_moon(call: GuardContext) -> dict[str, Any]:
        return {"target": "Moon"}

    card = LaunchCard(launch_later=False)
    factory = ToolFactory([card], approve=approve, guards=[to_the_moon])
    (tool,) = factory.tools()
    assert tool.call_sync({"target": "Mars"}, call_id="c-1") == "Launched to Moon."
    (request,) = seen
    assert (request.tool.name, dict(request.args), request.channel, request.call_id) == (
        "launch",
        {"target": "Moon"},
        Channels.COMMAND,
        "c-1",
    )
    assert request.describe() == "Run launch(target='Moon')"


def test_invalid_arguments_and_guard_denials_come_before_the_approver() -> None:
    asked: list[ApprovalRequest] = []

    def deny(call: GuardContext) -> None:
        if call.args["target"] == "Sun":
            raise GuardError("Not the Sun: pick a planet.")

    card = LaunchCard(launch_later=False)

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    factory = ToolFactory([card], approve=approve, guards=[deny])
    (tool,) = factory.tools()
    with pytest.raises(RetriableError, match="Invalid arguments for launch"):
        tool.call_sync({})
    with pytest.raises(GuardError):
        tool.call_sync({"target": "Sun"})
    assert asked == [] and card._launched == []


def test_an_approver_may_refuse_with_its_own_message_and_its_errors_fail_the_call() -> None:
    def refuse(request: ApprovalRequest) -> bool:
        raise ApprovalRequired("Launches need two keys; ask mission control.")

    card = LaunchCard(launch_later=False)
    (tool,) = ToolFactory([card], approve=refuse).tools()
    with pytest.raises(ApprovalRequired, match="two keys"):
        tool.call_sync({"target": "Mars"})

    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("no human available")

    (tool,) = ToolFactory([card], approve=broken).tools()
    with pytest.raises(Exception, match="launch failed: RuntimeError: no human available"):
        tool.call_sync({"target": "Mars"})
    assert card._launched == []


def test_an_answer_other_than_true_is_a_refusal() -> None:
    card = LaunchCard(launch_later=False)
    (tool,) = ToolFactory([card], approve=lambda request: "yes").tools()  # type: ignore[arg-type,return-value]
    with pytest.raises(ApprovalRequired, match="declined"):
        tool.call_sync({"target": "Mars"})
    assert card._launched == []


def test_a_refusal_is_recorded_as_a_failure() -> None:
    card, factory = bound()
    records: list[ToolExecutionRecord] = []
    factory.subscribe(records.append)
    factory.command_registry().dispatch("/launch Mars")
    (record,) = records
    assert not record.success and record.error is not None and record.error.startswith("ApprovalRequired: ")
    assert card._launched == []


def test_tools_without_requires_approval_never_ask() -> None:
    card = LaunchCard(launch=LaunchParam(requires_approval=False), launch_later=False)
    (tool,) = ToolFactory([card], approve=decline_all).tools()
    assert tool.call_sync({"target": "Mars"}) == "Launched to Mars."


# -- pydantic-ai: the toolset defers, the application decides ------------------------------------


def test_the_toolset_defers_then_runs_the_call_the_application_approved() -> None:
    card = LaunchCard(launch_later=False)
    agent = Agent(
        scripted(ToolCallPart("launch", {"target": "Mars"}, tool_call_id="call-1")),
        toolsets=[ToolFactory([card]).toolset()],
        output_type=[str, DeferredToolRequests],
    )
    first = agent.run_sync("go")
    assert isinstance(first.output, DeferredToolRequests)
    assert [call.tool_name for call in first.output.approvals] == ["launch"]
    assert card._launched == []
    approved = agent.run_sync(
        message_history=first.all_messages(), deferred_tool_results=DeferredToolResults(approvals={"call-1": True})
    )
    assert approved.output == "success:Launched to Mars."
    assert card._launched == ["Mars"]


def test_the_toolset_refuses_invalid_arguments_before_asking_for_approval() -> None:
    card = LaunchCard(launch_later=False)
    model = scripted(ToolCallPart("launch", {"destination": "Mars"}))
    agent = Agent(model, toolsets=[ToolFactory([card]).toolset()], output_type=[str, DeferredToolRequests])
    result = agent.run_sync("go")
    assert isinstance(result.output, str) and "retried:Invalid arguments for launch" in result.output


def test_with_an_approve_hook_the_toolset_asks_it_instead_of_deferring() -> None:
    cases = [(approve_all, "success:Launched to Mars.", ["Mars"]), (decline_all, "failed:The user declined", [])]
    for approve, expected, launched in cases:
        card = LaunchCard(launch_later=False)
        agent = Agent(
            scripted(ToolCallPart("launch", {"target": "Mars"})),
            toolsets=[ToolFactory([card], approve=approve).toolset()],
            output_type=[str, DeferredToolRequests],
        )
        output = agent.run_sync("go").output
        assert isinstance(output, str) and output.startswith(expected)
        assert card._launched == launched
