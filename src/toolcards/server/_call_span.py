"""The server span of a ``tools/call`` on the stdio server, as the SDK's server makes it.

Over HTTP the SDK's OpenTelemetry middleware wraps each request in a SERVER span named
``tools/call <tool>``, a child of the client's trace when the request's ``_meta`` carries a
W3C ``traceparent``; the pipeline's ``execute_tool <tool>`` span nests under it. The stdio
server makes the same span with the same attributes, and only when something traces
(:func:`toolcards.core._tracing.tracing`): otherwise nothing is imported and a call pays one
dictionary lookup.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from toolcards.core._tracing import tracing

__all__ = ["call_span", "mark_tool_error"]


@contextlib.contextmanager
def call_span(name: str, request_id: str, version: str, meta: Any) -> Iterator[Any]:
    """The span of a call of tool ``name`` (``None`` when nobody traces); the caller marks an
    ``isError`` result with :func:`mark_tool_error`."""
    if not tracing():
        yield None
        return
    from opentelemetry import propagate, trace

    parent = None
    if isinstance(meta, Mapping):
        try:
            extracted = propagate.extract(meta)
        except (ValueError, TypeError):
            extracted = None
        if extracted is not None and trace.get_current_span(extracted).get_span_context().is_valid:
            parent = extracted
    attributes = {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": version,
        "jsonrpc.request.id": request_id,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
    }
    tracer = trace.get_tracer("toolcards.server")
    with tracer.start_as_current_span(
        f"tools/call {name}", kind=trace.SpanKind.SERVER, attributes=attributes, context=parent
    ) as span:
        yield span


def mark_tool_error(span: Any, result: Mapping[str, Any]) -> None:
    """Record an ``isError`` result on ``span`` as the SDK does (``error.type=tool_error``)."""
    if span is not None and result.get("isError"):
        from opentelemetry.trace import StatusCode

        span.set_attribute("error.type", "tool_error")
        span.set_status(StatusCode.ERROR)
