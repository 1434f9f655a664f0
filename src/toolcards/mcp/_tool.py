"""``MCPTool``: the tools of external MCP servers, as pydantic-ai toolsets.

The card has no capability of its own: ``get_toolsets()`` returns one toolset per
connection (prefixed with its ``tool_prefix`` when set), which a factory hands to the
agent next to its own toolset: ``Agent(model, toolsets=[factory.toolset(), *factory.get_toolsets()])``.
Connections are plain config (stdio commands, HTTP URLs with headers, bearer tokens or
OAuth), so they serialise with the rest of a team's cards.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from toolcards.core._card import ToolCard
from toolcards.mcp._config import MCPConnectionConfig
from toolcards.mcp._connect import build_toolset
from toolcards.mcp._probe import ToolInfo, probe

__all__ = ["MCPTool"]


class MCPTool(ToolCard):
    """External MCP servers an agent may use."""

    kind: ClassVar[str] = "mcp"

    connections: list[MCPConnectionConfig] = Field(default_factory=list)
    """The servers, each over stdio or HTTP (``transport``); one toolset per server."""

    def get_toolsets(self) -> list[Any]:
        """One pydantic-ai toolset per connection. Building connects to nothing; the agent
        connects when it runs (``async with agent:`` keeps connections open across runs).

        Raises:
            WiringError: a connection references an unset environment variable.
        """
        return [build_toolset(connection) for connection in self.connections]

    def probe(self) -> dict[str, list[ToolInfo]]:
        """List every server's tools without an agent (blocks; for diagnostics and the CLI).

        Raises:
            ToolFailed: a server could not be reached; the message names it and the cause.
        """
        return {connection.label: probe(connection) for connection in self.connections}
