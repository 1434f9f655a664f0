"""The same call gives the same answer over MCP as in-process through the factory's toolset."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import ToolFactory
from toolcards.server import TeamServer
from toolcards.testing import FakeObserver

CASES: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "hi"}),
    ("echo", {"text": "hi", "times": "3"}),
    ("echo", {"text": ""}),
    ("echo", {"text": "hi", "extra": 1}),
    ("echo", {"times": 2}),
    ("fussy", {"name": "Voldemort"}),
    ("fussy", {"name": "x" * 30}),
    ("whoami", {}),
    ("crash", {}),
]


def via_agent(factory: ToolFactory, name: str, args: dict[str, Any]) -> str:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(str(returns[0].content))])
        return ModelResponse(parts=[ToolCallPart(name, args)])

    return Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("go").output


def via_mcp(server: TeamServer, name: str, args: dict[str, Any]) -> str:
    async def main() -> str:
        async with Client(server.server, client_info=types.Implementation(name="Alice", version="1")) as c:
            result = await c.call_tool(name, args)
        part = result.content[0]
        assert isinstance(part, types.TextContent)
        return part.text

    return asyncio.run(main())


@pytest.mark.parametrize(("name", "args"), CASES)
def test_mcp_and_in_process_calls_agree(
    team_server: TeamServer, alice: FakeObserver, name: str, args: dict[str, Any]
) -> None:
    factory = ToolFactory(team_server.config.build_cards(), observer=alice)
    assert via_mcp(team_server, name, args) == via_agent(factory, name, args)
