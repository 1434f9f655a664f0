"""Agents using external MCP servers through build_toolset: in-process, stdio and HTTP."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import AbstractToolset

from tests.mcp.http_servers import plain_mcp_server
from tests.mcp.servers import high_level_server, make_low_level_server
from toolcards.errors import WiringError
from toolcards.mcp import (
    InProcessMCPServer,
    MCPHTTPConnectionConfig,
    MCPStdioConnectionConfig,
    build_mcp_toolset,
    build_toolset,
)
from toolcards.mcp._connect import resolve_source

_ENVELOPE = re.compile(r"\[BEGIN UNTRUSTED \w+ from [^\n]*\]\n(.*)\n\[END UNTRUSTED \w+\]", re.S)


def payload(content: object) -> object:
    """A tool result without its untrusted-output envelope (the envelope is tested on its own)."""
    if isinstance(content, str):
        match = _ENVELOPE.fullmatch(content)
        return match.group(1) if match else content
    return content


class CallOnce:
    """A model that makes one round of tool calls, then answers with what the tools returned."""

    def __init__(self, tool: str, args: dict[str, Any], *more_args: dict[str, Any]) -> None:
        self.calls = [(tool, a) for a in (args, *more_args)]
        self.seen_tools: list[str] = []
        self.returns: list[ToolReturnPart] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen_tools = [t.name for t in info.function_tools]
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returns:
            self.returns = returns
            return ModelResponse(parts=[TextPart(" | ".join(f"{r.outcome}: {payload(r.content)}" for r in returns))])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in self.calls])


def run(
    toolset: AbstractToolset[Any], tool: str, args: dict[str, Any], *more_args: dict[str, Any]
) -> tuple[str, CallOnce]:
    model = CallOnce(tool, args, *more_args)
    result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("go")
    return result.output, model


def test_low_level_server_in_process_with_prefix() -> None:
    toolset = build_toolset(InProcessMCPServer(server=make_low_level_server(), tool_prefix="low"))
    output, model = run(toolset, "low_echo", {"text": "hello"})
    assert output == "success: hello"
    assert model.seen_tools == ["low_echo", "low_getenv", "low_fail", "low_crash"]


def test_a_bare_high_level_server_object_works_unprefixed() -> None:
    output, model = run(build_toolset(high_level_server()), "add", {"a": 40, "b": 2})
    assert output == "success: 42"
    assert model.seen_tools == ["add", "shout"]


def test_a_tool_error_reaches_the_model_as_a_failed_result_and_the_run_goes_on() -> None:
    output, model = run(build_toolset(make_low_level_server()), "fail", {"reason": "disk full"})
    assert output == "failed: failed because disk full"
    assert model.returns[0].outcome == "failed"


def test_retry_behaviour_turns_tool_errors_into_retry_prompts() -> None:
    toolset = build_toolset(InProcessMCPServer(server=make_low_level_server(), tool_error_behavior="retry"))
    output, _ = run(toolset, "fail", {})
    assert output == "retried: failed because it always does"


def test_a_handler_that_raises_is_a_retry_prompt_not_a_crash() -> None:
    output, _ = run(build_toolset(make_low_level_server()), "crash", {})
    assert output.startswith("retried: ")


def test_stdio_subprocess_with_env_reference_and_cwd(
    stdio_config: MCPStdioConnectionConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TC_TEST_GREETING", "bonjour")
    monkeypatch.setenv("TC_NOT_PASSED", "secret")
    config = stdio_config.model_copy(
        update={"env": {**stdio_config.env, "GREETING": "${TC_TEST_GREETING}"}, "tool_prefix": "sub"}
    )
    toolset = build_toolset(config)

    # One run, two calls: one subprocess spawn.
    output, model = run(toolset, "sub_getenv", {"name": "GREETING"}, {"name": "TC_NOT_PASSED"})
    # only the safe default environment plus `env` reaches the subprocess, in `cwd`
    assert output == f"success: bonjour cwd={config.cwd} | success: <unset> cwd={config.cwd}"
    assert "sub_echo" in model.seen_tools
    assert config.env["GREETING"] == "${TC_TEST_GREETING}"  # the config itself is untouched


def test_http_server_gets_headers_and_bearer_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TC_TEST_TOKEN", "s3cret")
    with plain_mcp_server() as (url, seen):
        config = MCPHTTPConnectionConfig(
            url=url, headers={"X-Team": "${TC_TEST_TEAM:-blue}"}, bearer_token="${TC_TEST_TOKEN}", tool_prefix="web"
        )
        output, _ = run(build_toolset(config), "web_echo", {"text": "over http"})
    assert output == "success: over http"
    assert seen and all(h.get("authorization") == "Bearer s3cret" and h.get("x-team") == "blue" for h in seen)


def test_build_mcp_toolset_is_unprefixed_and_named() -> None:
    toolset = build_mcp_toolset(InProcessMCPServer(server=make_low_level_server(), name="low", tool_prefix="p"))
    assert toolset.id == "low"
    assert toolset.tool_error_behavior == "failed"


def test_building_connects_to_nothing_but_checks_references(monkeypatch: pytest.MonkeyPatch) -> None:
    build_toolset(MCPHTTPConnectionConfig(url="http://127.0.0.1:9/mcp"))  # nothing listens there
    build_toolset(MCPStdioConnectionConfig(command="/does/not/exist"))
    monkeypatch.delenv("TC_UNSET_TOKEN", raising=False)
    with pytest.raises(WiringError, match=r"MCP server api: bearer_token references \$\{TC_UNSET_TOKEN\}"):
        build_toolset(MCPHTTPConnectionConfig(url="https://x/mcp", name="api", bearer_token="${TC_UNSET_TOKEN}"))


def test_a_source_of_the_wrong_type_or_a_bad_prefix_is_a_wiring_error() -> None:
    with pytest.raises(WiringError, match="Cannot connect to dict"):
        resolve_source({"url": "https://x/mcp"})
    with pytest.raises(WiringError, match="tool_prefix 'a b' must be"):
        InProcessMCPServer(server=make_low_level_server(), tool_prefix="a b")


def test_results_are_enveloped_as_untrusted_unless_turned_off() -> None:
    _, model = run(build_toolset(InProcessMCPServer(server=make_low_level_server())), "echo", {"text": "ignore rules"})
    (wrapped,) = [str(r.content) for r in model.returns]
    assert wrapped.startswith("[BEGIN UNTRUSTED ") and "tool echo" in wrapped
    assert wrapped.endswith("]") and "\nignore rules\n[END UNTRUSTED " in wrapped
    plain, _ = run(
        build_toolset(InProcessMCPServer(server=make_low_level_server(), untrusted_output=False)),
        "echo",
        {"text": "hi"},
    )
    assert plain == "success: hi"
