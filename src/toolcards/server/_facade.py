"""Facade mode: three meta tools in front of a large catalog, so a client's context stays small.

Instead of every tool definition on every request, ``tools/list`` shows:

* ``search_tools(query)`` — tools ranked by the team's catalog search
  (:mod:`toolcards.core._catalog`, which an agent's in-process tool search shares), with a
  one-line summary and a score each; a card's entries (a skill) come back as the tool that
  serves them and its arguments;
* ``describe_tool(name)`` — one tool's full description and input schema;
* ``call_tool(name, arguments)`` — run it, through the same pipeline as a direct call;

plus the tools the config keeps on the hot path (``hot_tools``). An unknown name gets
"did you mean" suggestions. Nothing here imports mcp: results are plain data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from toolcards.core._catalog import (
    DESCRIBE_TOOL,
    SEARCH_TOOLS,
    BM25Index,
    ToolCatalog,
    did_you_mean,
    query_terms,
    summary,
    tokenize,
    unknown_tool_message,
)

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = [
    "CALL_TOOL",
    "DESCRIBE_TOOL",
    "META_TOOLS",
    "SEARCH_TOOLS",
    "BM25Index",
    "ToolCatalog",
    "did_you_mean",
    "meta_tools",
    "query_terms",
    "summary",
    "tokenize",
    "unknown_tool_message",
]

CALL_TOOL = "call_tool"
META_TOOLS = (SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL)


def meta_tools(catalog: ToolCatalog[Tool]) -> dict[str, Tool]:
    """The three meta tools over ``catalog``, as pipeline tools (their signatures are the schemas).

    ``call_tool``'s handler only echoes its validated arguments: the server runs the
    named tool itself, so the call goes through that tool's own pipeline.
    """
    from toolcards.core._tool import Tool

    def search_tools(query: str, limit: Annotated[int, Field(ge=1, le=50)] = 8) -> list[dict[str, Any]]:
        """Find tools for a task, best first; then describe_tool gives a tool's arguments.

        Args:
            query: The task, e.g. 'edit a file'.
        """
        return catalog.search(query, limit)

    def describe_tool(name: str) -> dict[str, Any]:
        """One tool's description and input schema."""
        return catalog.describe(name)

    def call_tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a tool by name with its arguments."""
        return {"name": name, "arguments": arguments or {}}

    from toolcards.core._hints import ToolHints

    # call_tool runs any tool: clients are told the worst of it (it may change and delete
    # things, and reach the web); the tool it runs has its own hints in describe_tool.
    return {
        SEARCH_TOOLS: Tool.from_function(search_tools, name=SEARCH_TOOLS, hints=ToolHints(title="Find tools")),
        DESCRIBE_TOOL: Tool.from_function(describe_tool, name=DESCRIBE_TOOL, hints=ToolHints(title="Describe tool")),
        CALL_TOOL: Tool.from_function(
            call_tool,
            name=CALL_TOOL,
            mutates=True,
            hints=ToolHints(title="Call tool", destructive=True, open_world=True),
        ),
    }
