"""With tool search, the run tools ``exec_command`` and the context tell the model to call are
listed from the first request, as the skill menu's ``use_skill`` is; with no background runs
offered they are not."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.sandbox.conftest import marker
from toolcards import ToolFactory
from toolcards.sandbox import ExecTool
from toolcards.testing import FakeObserver

RUN_TOOLS = {"exec_status", "exec_output", "exec_stop"}


def test_the_run_tools_are_listed_with_tool_search(alice: FakeObserver) -> None:
    listed: list[list[str]] = []
    steps: list[tuple[str, dict[str, object]]] = [
        ("search_tools", {"query": "run a shell command"}),
        ("exec_command", {"cmd": f"sleep {marker()}", "background": True}),
    ]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        listed.append([tool.name for tool in info.function_tools])
        done = sum(isinstance(message, ModelResponse) for message in messages)
        if done < len(steps):
            return ModelResponse(parts=[ToolCallPart(*steps[done])])
        if done == len(steps):  # the run id, as the answer gave it
            started = str(_returns(messages)[-1].content)
            run_id = started.split("Started background run ", 1)[1].split(" ", 1)[0]
            return ModelResponse(parts=[ToolCallPart("exec_stop", {"run_id": run_id})])
        return ModelResponse(parts=[TextPart("done")])

    card = ExecTool(mode="local", allowed_commands=[], max_background_runs=1)
    toolset = ToolFactory([card], observer=alice).toolset(tool_search=True)
    result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("start a server, then stop it")
    assert set(listed[0]) >= RUN_TOOLS  # before any run: the answer that starts one names them
    assert "exec_command" not in listed[0]  # found by search, as before
    retries = [p for m in result.all_messages() for p in m.parts if isinstance(p, RetryPromptPart)]
    assert not retries
    stopped = _returns(result.all_messages())[-1]
    assert stopped.tool_name == "exec_stop" and "stopped: stop requested" in str(stopped.content)


@pytest.mark.parametrize(
    "card",
    [
        ExecTool(mode="local", max_background_runs=0),
        ExecTool(mode="local", exec_command=False, exec_runs=False),  # nothing names them to the model
    ],
)
def test_they_are_not_listed_when_nothing_names_them(card: ExecTool, alice: FakeObserver) -> None:
    factory = ToolFactory([card], observer=alice)
    assert not factory.context_tools()


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
