"""MCPTool: serialisable connections → toolsets an agent uses next to the factory's own."""

from __future__ import annotations

import json

from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from tests.core.cards import GreeterCard
from tests.mcp.conftest import SERVER_SCRIPT
from tests.mcp.test_connect import CallOnce
from toolcards import ToolFactory, dump_cards, load_cards
from toolcards.mcp import MCPHTTPConnectionConfig, MCPStdioConnectionConfig
from toolcards.mcp._tool import MCPTool


def test_connections_round_trip() -> None:
    card = MCPTool(
        connections=[
            MCPStdioConnectionConfig(command="python", args=["server.py"], env={"TOKEN": "${TOKEN}"}, tool_prefix="fs"),
            MCPHTTPConnectionConfig(url="https://example.com/mcp", headers={"X-Team": "a"}, tool_prefix="web"),
        ]
    )
    data = json.loads(json.dumps(dump_cards([card])))
    assert data[0]["connections"][0]["transport"] == "stdio"
    assert load_cards(data) == [card]


def test_an_agent_uses_a_stdio_server_next_to_card_tools(stdio_config: MCPStdioConnectionConfig) -> None:
    config = stdio_config.model_copy(update={"tool_prefix": "ext", "args": [str(SERVER_SCRIPT)]})
    factory = ToolFactory([MCPTool(connections=[config]), GreeterCard(motd=False)])
    model = CallOnce("ext_echo", {"text": "hello over stdio"})
    output = Agent(FunctionModel(model), toolsets=[factory.toolset(), *factory.get_toolsets()]).run_sync("go").output
    assert output == "success: hello over stdio"  # CallOnce shows the payload inside the envelope
    assert {"ext_echo", "greet_someone"} <= set(model.seen_tools)


def test_probe_lists_prefixed_tools(stdio_config: MCPStdioConnectionConfig) -> None:
    card = MCPTool(connections=[stdio_config.model_copy(update={"tool_prefix": "ext"})])
    (tools,) = card.probe().values()
    assert "ext_echo" in {tool.name for tool in tools}
