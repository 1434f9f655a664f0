"""External servers' results as outside data: the untrusted-output envelope around them.

A tool of another MCP server returns whatever that server (and the pages, files or
messages behind it) put there; a model must read it as data, not as instructions. The
wrapper applies the same envelope the pipeline gives workspace reads and web results.
Images pass through unchanged; structured results are enveloped as JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from toolcards.core._output import wrap_untrusted

__all__ = ["enveloped"]


def enveloped(toolset: Any, server_label: str) -> Any:
    """``toolset`` with every text or JSON result wrapped in the untrusted envelope."""
    return _enveloped_class()(wrapped=toolset, server_label=server_label)


def _envelope(result: Any, source: str) -> Any:
    if isinstance(result, str):
        return wrap_untrusted(result, source)
    if isinstance(result, (dict, int, float, bool)) or result is None:
        return wrap_untrusted(json.dumps(result, ensure_ascii=False, default=str), source)
    if isinstance(result, list):
        return [_envelope(item, source) for item in result]
    return result  # images and other binary content


def _enveloped_class() -> type[Any]:
    # pydantic-ai loads only when an MCP toolset is built, not when this package is imported.
    from dataclasses import dataclass

    from pydantic_ai.toolsets import WrapperToolset

    @dataclass
    class MCPOutputEnveloped(WrapperToolset[Any]):
        server_label: str = ""

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
            result = await self.wrapped.call_tool(name, tool_args, ctx, tool)
            return _envelope(result, f"MCP server {self.server_label}, tool {name}")

    return MCPOutputEnveloped
