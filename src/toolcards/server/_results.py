"""A tool's return value (or failure) as an MCP ``tools/call`` result, in wire form.

* ``str`` → one text part; :class:`~toolcards.core._records.Records` → that text and its
  records as ``structuredContent``;
* an image (an object with ``data: bytes`` and ``media_type: "image/..."``, such as
  pydantic-ai's ``BinaryContent``) → an image part (base64); audio → an audio part;
  other bytes → an embedded blob resource;
* ``dict`` → JSON text plus ``structuredContent``; ``list`` → JSON text (and
  ``structuredContent={"result": [...]}``), unless it mixes text and binary parts, which
  become one content part each;
* a pydantic model → its JSON; anything else → JSON (``str()`` for what JSON cannot hold).

Failures are results too (``isError: true``) with one message the model can act on: an
escaping exception would reach the client as "Internal server error".

:func:`call_result` and :func:`error_wire` build the plain JSON-ready dicts (camelCase keys,
as on the wire) that both servers send: the stdio server encodes them as they are, and the
SDK's ``Server`` accepts them from its handlers and validates them against the negotiated
protocol version. :func:`to_call_result` and :func:`error_result` give the same results as
the SDK's ``CallToolResult`` models, for code that works with those.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import TYPE_CHECKING, Any

from toolcards.core._unexpected import log_unexpected

if TYPE_CHECKING:
    import mcp_types

logger = logging.getLogger("toolcards.server")

__all__ = ["call_failure", "call_result", "error_result", "error_wire", "to_call_result", "to_content"]


def error_wire(message: str) -> dict[str, Any]:
    """A failed call whose text is ``message``, in wire form."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def call_failure(name: str, exc: Exception) -> dict[str, Any]:
    """The result of a call of ``name`` that failed outside the pipeline (logged with its
    traceback, without its message): the model reads what went wrong instead of "Internal
    server error"."""
    log_unexpected(logger, f"tools/call {name}", exc)
    return error_wire(f"{name} failed: {type(exc).__name__}: {exc}")


def call_result(value: Any, *, uri_prefix: str = "toolcards://result") -> dict[str, Any]:
    """The successful result for a tool's return ``value``, in wire form (see the module docstring)."""
    if type(value) is str:  # most tools answer text: nothing to inspect
        return {"content": [{"type": "text", "text": value}], "isError": False}
    records = getattr(value, "records", None)
    if isinstance(value, str) and isinstance(records, dict):  # core.records.Records: text and its data
        return {"content": [{"type": "text", "text": str(value)}], "structuredContent": records, "isError": False}
    result: dict[str, Any] = {"content": to_content(value, uri_prefix=uri_prefix), "isError": False}
    plain = _plain(value)
    if isinstance(plain, dict):
        result["structuredContent"] = plain
    elif isinstance(plain, list) and not _has_binary(value):
        result["structuredContent"] = {"result": plain}
    return result


def error_result(message: str) -> mcp_types.CallToolResult:
    """:func:`error_wire` as the SDK's model."""
    import mcp_types

    return mcp_types.CallToolResult.model_validate(error_wire(message), by_name=False)


def to_call_result(value: Any, *, uri_prefix: str = "toolcards://result") -> mcp_types.CallToolResult:
    """:func:`call_result` as the SDK's model."""
    import mcp_types

    return mcp_types.CallToolResult.model_validate(call_result(value, uri_prefix=uri_prefix), by_name=False)


def to_content(value: Any, *, uri_prefix: str = "toolcards://result") -> list[dict[str, Any]]:
    """MCP content parts for ``value``, in wire form."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if _is_binary(value):
        return [_binary_part(value, uri_prefix)]
    if isinstance(value, (list, tuple)) and _has_binary(value):
        parts: list[dict[str, Any]] = []
        for item in value:
            parts.extend(to_content(item, uri_prefix=uri_prefix))
        return parts
    return [{"type": "text", "text": json.dumps(_plain(value), ensure_ascii=False, default=str)}]


def _is_binary(value: Any) -> bool:
    return isinstance(getattr(value, "data", None), (bytes, bytearray)) and isinstance(
        getattr(value, "media_type", None), str
    )


def _has_binary(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(_is_binary(item) for item in value)


def _binary_part(value: Any, uri_prefix: str) -> dict[str, Any]:
    data = base64.b64encode(bytes(value.data)).decode("ascii")
    media_type: str = value.media_type
    if media_type.startswith("image/"):
        return {"type": "image", "data": data, "mimeType": media_type}
    if media_type.startswith("audio/"):
        return {"type": "audio", "data": data, "mimeType": media_type}
    name = getattr(value, "identifier", None) or "data"
    return {"type": "resource", "resource": {"uri": f"{uri_prefix}/{name}", "mimeType": media_type, "blob": data}}


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
