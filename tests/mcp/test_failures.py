"""Translation of MCP client failures: messages, pass-through, and what an agent run sees."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from pydantic_ai import Agent, FunctionToolset, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.mcp.http_servers import free_port, plain_mcp_server
from toolcards.errors import ToolFailed, WiringError
from toolcards.mcp import MCPHTTPConnectionConfig, build_toolset
from toolcards.mcp._failures import describe_failure, timed_out, toolcards_error_in, translated


def wrapped_error() -> RuntimeError:
    try:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError as cause:
            raise RuntimeError("Client failed to connect: refused") from cause
    except RuntimeError as exc:
        return exc


def test_describe_failure_unwraps_groups_and_fastmcp_wrappers() -> None:
    assert describe_failure(wrapped_error()) == "ConnectionRefusedError: refused"
    assert describe_failure(ExceptionGroup("", [ValueError("bad"), KeyError("k")])) == "ValueError: bad"
    assert describe_failure(TimeoutError()) == "TimeoutError"


def test_toolcards_errors_and_timeouts_are_found_inside_wrappers() -> None:
    own = WiringError("unset variable")
    try:
        try:
            raise own
        except WiringError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        group = ExceptionGroup("", [outer])
    assert toolcards_error_in(group) is own
    assert toolcards_error_in(wrapped_error()) is None
    assert timed_out(ExceptionGroup("", [TimeoutError()]))
    assert not timed_out(wrapped_error())


def answer_with_returns(tool: str) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"{last.outcome}: {last.content}")])
        return ModelResponse(parts=[ToolCallPart(tool, {})])

    return FunctionModel(model)


def test_a_failure_during_a_call_becomes_a_failed_result_and_signals_pass_through() -> None:
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain
    def broken() -> str:
        raise OSError("pipe closed")

    @toolset.tool_plain
    def picky() -> str:
        raise ModelRetry("pass a name")

    agent = Agent(answer_with_returns("broken"), toolsets=[translated(toolset, "files")])
    output = agent.run_sync("go").output
    assert output == (
        "failed: MCP server files failed during the call (OSError: pipe closed). "
        "It may be down: continue without this tool or try again later."
    )
    retried = Agent(answer_with_returns("picky"), toolsets=[translated(toolset, "files")], retries=2).run_sync("go")
    assert retried.output == "retried: pass a name"


def test_an_unreachable_server_fails_the_run_with_a_tool_failure_naming_it() -> None:
    toolset = build_toolset(MCPHTTPConnectionConfig(url=f"http://127.0.0.1:{free_port()}/mcp", name="search"))
    with pytest.raises(ToolFailed, match="Could not connect to MCP server search: ConnectError: All connection"):
        Agent(answer_with_returns("echo"), toolsets=[toolset]).run_sync("go")


def test_a_server_that_dies_mid_run_does_not_crash_the_run() -> None:
    with contextlib.ExitStack() as stack:
        url, _ = stack.enter_context(plain_mcp_server())

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1].parts[-1]
            if isinstance(last, ToolReturnPart):
                return ModelResponse(parts=[TextPart(f"{last.outcome}: {last.content}")])
            stack.close()  # the server goes away between listing tools and calling one
            return ModelResponse(parts=[ToolCallPart("echo", {"text": "x"})])

        toolset = build_toolset(MCPHTTPConnectionConfig(url=url, timeout_s=5))
        output = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("go").output
    assert output == "retried: Connection closed"
