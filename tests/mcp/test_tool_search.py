"""Tool search covers the tools of external MCP servers attached with MCPTool."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import ToolFactory
from toolcards.mcp import MCPStdioConnectionConfig, MCPTool
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool

REPO = Path(__file__).resolve().parents[2]


def test_an_mcp_servers_tools_are_found_loaded_and_called(alice: FakeObserver) -> None:
    server = MCPStdioConnectionConfig(
        command=sys.executable,
        args=["-m", "bench._catalog_mcp_server"],
        cwd=str(REPO),
        tool_prefix="co",
        keep_alive=False,
        connect_timeout_s=30,
        untrusted_output=False,
    )
    factory = ToolFactory([WorkspaceTool(), MCPTool(connections=[server])], observer=alice)
    listed: list[list[str]] = []
    calls = [
        ("search_tools", {"query": "post a message to a chat channel"}),
        ("co_chat_post_message", {"channel": "#ops", "text": "deploy done"}),
    ]

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        listed.append([tool.name for tool in info.function_tools])
        step = sum(isinstance(message, ModelResponse) for message in messages)
        if step < len(calls):
            return ModelResponse(parts=[ToolCallPart(*calls[step])])
        return ModelResponse(parts=[TextPart("done")])

    result = Agent(FunctionModel(model), toolsets=[factory.toolset(tool_search=True)]).run_sync("tell #ops")
    found, posted = [p for m in result.all_messages() for p in getattr(m, "parts", ()) if isinstance(p, ToolReturnPart)]
    assert listed[0] == ["search_tools", "describe_tool"]  # the workspace's tools and the server's 39: unlisted
    assert found.content.startswith("Loaded: co_chat_post_message")
    assert "co_chat_post_message" in listed[1]
    assert posted.outcome == "success" and 'ok: chat_post_message {"channel": "#ops"' in str(posted.content)
