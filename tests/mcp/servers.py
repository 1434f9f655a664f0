"""Small MCP servers the tests connect to.

``low_level_server`` is an ``mcp.server.Server`` (explicit schemas), ``high_level_server()``
builds an ``MCPServer`` (schemas from signatures). Run as a script, this module serves
the low-level server over stdio: ``python tests/mcp/servers.py``.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

TOOLS: dict[str, dict[str, Any]] = {
    "echo": {
        "description": "Echo text back.",
        "schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "text to echo"}},
            "required": ["text"],
        },
    },
    "getenv": {
        "description": "Read an environment variable of the server process.",
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    "fail": {
        "description": "Always reports an error.",
        "schema": {"type": "object", "properties": {"reason": {"type": "string"}}},
    },
    "crash": {
        "description": "Raises inside the handler (a protocol error).",
        "schema": {"type": "object", "properties": {}},
    },
}


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=t["description"], input_schema=t["schema"]) for name, t in TOOLS.items()
        ]
    )


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return _text(str(args.get("text", "")))
    if params.name == "getenv":
        return _text(os.environ.get(str(args.get("name")), "<unset>") + f" cwd={os.getcwd()}")
    if params.name == "fail":
        return _text(f"failed because {args.get('reason', 'it always does')}", error=True)
    if params.name == "crash":
        raise RuntimeError("handler blew up")
    return _text(f"Unknown tool {params.name}", error=True)


def make_low_level_server(name: str = "tiny-low") -> Server[Any]:
    """A fresh low-level server with the tools above."""
    return Server(name, version="0.1", on_list_tools=list_tools, on_call_tool=call_tool)


low_level_server = make_low_level_server()


def high_level_server() -> Any:
    """A fresh ``MCPServer`` with ``add`` and ``shout`` (built on demand: its constructor touches logging)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("tiny-high")

    @server.tool()
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    return server


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await low_level_server.run(read, write, low_level_server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_serve_stdio)
