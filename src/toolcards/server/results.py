"""A tool's return value (or failure) as an MCP ``CallToolResult``.

* ``str`` → one ``TextContent``;
* an image (an object with ``data: bytes`` and ``media_type: "image/..."``, such as
  pydantic-ai's ``BinaryContent``) → ``ImageContent`` (base64); audio → ``AudioContent``;
  other bytes → an embedded blob resource;
* ``dict`` → JSON ``TextContent`` plus ``structured_content``; ``list`` → JSON text (and
  ``structured_content={"result": [...]}``), unless it mixes text and binary parts, which
  become one content part each;
* a pydantic model → its JSON; anything else → JSON (``str()`` for what JSON cannot hold).

Failures are results too (``is_error=True``) with one message the model can act on: the
low-level MCP server would turn an escaping exception into "Internal server error".
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types

__all__ = ["error_result", "to_call_result", "to_content"]


def error_result(message: str) -> mcp_types.CallToolResult:
    """A failed call whose text is ``message``."""
    import mcp_types

    return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=message)], is_error=True)


def to_call_result(value: Any, *, uri_prefix: str = "toolcards://result") -> mcp_types.CallToolResult:
    """The successful result for a tool's return ``value`` (see the module docstring)."""
    import mcp_types

    if type(value) is str:  # most tools answer text: nothing to inspect
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=value)])
    structured: dict[str, Any] | None = None
    plain = _plain(value)
    if isinstance(plain, dict):
        structured = plain
    elif isinstance(plain, list) and not _has_binary(value):
        structured = {"result": plain}
    return mcp_types.CallToolResult(content=to_content(value, uri_prefix=uri_prefix), structured_content=structured)


def to_content(value: Any, *, uri_prefix: str = "toolcards://result") -> list[Any]:
    """MCP content parts for ``value``."""
    import mcp_types

    if isinstance(value, str):
        return [mcp_types.TextContent(text=value)]
    if _is_binary(value):
        return [_binary_part(value, uri_prefix)]
    if isinstance(value, (list, tuple)) and _has_binary(value):
        parts: list[Any] = []
        for item in value:
            parts.extend(to_content(item, uri_prefix=uri_prefix))
        return parts
    return [mcp_types.TextContent(text=json.dumps(_plain(value), ensure_ascii=False, default=str))]


def _is_binary(value: Any) -> bool:
    return isinstance(getattr(value, "data", None), (bytes, bytearray)) and isinstance(
        getattr(value, "media_type", None), str
    )


def _has_binary(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(_is_binary(item) for item in value)


def _binary_part(value: Any, uri_prefix: str) -> Any:
    import mcp_types

    data = base64.b64encode(bytes(value.data)).decode("ascii")
    media_type: str = value.media_type
    if media_type.startswith("image/"):
        return mcp_types.ImageContent(data=data, mime_type=media_type)
    if media_type.startswith("audio/"):
        return mcp_types.AudioContent(data=data, mime_type=media_type)
    name = getattr(value, "identifier", None) or "data"
    return mcp_types.EmbeddedResource(
        resource=mcp_types.BlobResourceContents(uri=f"{uri_prefix}/{name}", mime_type=media_type, blob=data)
    )


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (pydantic models dumped, tuples as lists)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value
