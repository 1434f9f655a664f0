"""A bare MCP server on the official SDK: the low-level ``Server`` with one ``echo`` tool, over stdio.

``python -m bench._bare_mcp_server`` is what :mod:`bench.server` starts beside ``toolcards
serve``: the same tool and transport with nothing of ours, so the difference between the
two is our own cost (start-up and per call). It imports what such a server needs and no more.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types
from mcp.server import Server
from mcp.server.stdio import stdio_server

__all__ = ["build_server", "main"]

ECHO = mcp_types.Tool(
    name="echo",
    description="Return the text.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


async def _list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
    return mcp_types.ListToolsResult(tools=[ECHO])


async def _call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=text)])


def build_server() -> Server[Any]:
    """The bare server (also usable in-process with ``mcp.Client``)."""
    return Server("bare", on_list_tools=_list_tools, on_call_tool=_call_tool)


async def _serve() -> None:
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    """Serve on stdin/stdout until stdin closes."""
    anyio.run(_serve)


if __name__ == "__main__":
    main()
