"""OpenTelemetry spans for tool calls, at no cost when nobody traces.

Every call through the pipeline (:mod:`toolcards.core._tool`), on every channel, is an
``execute_tool {tool}`` span following the GenAI semantic conventions, with
``toolcards.channel`` and ``toolcards.card``, and on failure ``error.type`` and status
``ERROR``; the attributes and nesting are listed in ``docs/opentelemetry.md``. As pydantic-ai
without ``include_content``, no arguments, results or error messages are recorded: they can
quote files and tool outputs. When the current span is pydantic-ai's own ``execute_tool`` span
for this very call, the attributes are added to it instead of making a second span.

**Cost.** Nothing here imports OpenTelemetry: a span is made only when ``opentelemetry.trace``
is already imported and a tracer provider is set or a recording span is current; otherwise
:func:`start_tool_span` costs one dictionary lookup. The tracer is resolved once per provider.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcards.core._tool import Tool

__all__ = ["TRACER_NAME", "ToolSpan", "start_tool_span", "tracing"]

TRACER_NAME = "toolcards"
"""The instrumentation scope of the spans."""

_tracer_of: tuple[Any, Any] = (None, None)
"""The last provider a tracer was made for, and that tracer."""


class ToolSpan:
    """The span of one call: :meth:`finish` it with the call's outcome, in the context that
    started it."""

    __slots__ = ("_owned", "_span", "_token", "_trace")

    def __init__(self, trace: Any, span: Any, token: Any, owned: bool) -> None:
        self._trace = trace
        self._span = span
        self._token = token
        self._owned = owned

    def finish(self, error: BaseException | None) -> None:
        """Record ``error`` (``None``: success) and end the span if this call made it."""
        span = self._span
        if error is not None:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        if not self._owned:
            return
        from opentelemetry import context

        context.detach(self._token)
        span.end()


def tracing() -> bool:
    """Whether a span made now would be recorded: OpenTelemetry is imported, and a recording
    span is current or a tracer provider is configured. About a microsecond when it is
    imported, one dictionary lookup when it is not."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    return bool(trace.get_current_span().is_recording()) or _tracer(trace) is not None


def start_tool_span(tool: Tool, channel: str, call_id: str) -> ToolSpan | None:
    """The span of a call of ``tool`` starting now, or ``None`` when nobody traces."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    return _start(trace, tool, channel, call_id)


def _start(trace: Any, tool: Tool, channel: str, call_id: str) -> ToolSpan | None:
    current = trace.get_current_span()
    recording = current.is_recording()
    tracer = _tracer(trace)
    if not recording and tracer is None:
        return None  # imported, but nobody traces: no attributes built
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool.name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
        "toolcards.channel": channel,
        "toolcards.card": tool.card,
    }
    if tool.agent:
        attributes["gen_ai.agent.name"] = tool.agent.lstrip("@")
    if recording and _is_frameworks_span_of(current, tool.name, call_id):
        current.set_attributes(attributes)
        return ToolSpan(trace, current, None, owned=False)
    if tracer is None:
        return None
    from opentelemetry import context

    span = tracer.start_span(f"execute_tool {tool.name}", kind=trace.SpanKind.INTERNAL, attributes=attributes)
    token = context.attach(trace.set_span_in_context(span))
    return ToolSpan(trace, span, token, owned=True)


def _is_frameworks_span_of(span: Any, tool_name: str, call_id: str) -> bool:
    """Whether ``span`` is an agent framework's ``execute_tool`` span of this very call."""
    if getattr(span, "name", None) != f"execute_tool {tool_name}":
        return False
    attributes = getattr(span, "attributes", None) or {}
    return attributes.get("gen_ai.tool.name") == tool_name and attributes.get("gen_ai.tool.call.id") in (
        None,
        call_id,
    )


_UNKNOWN = object()


def _tracer(trace: Any) -> Any:
    global _tracer_of
    # The API's global, read directly: get_tracer_provider() looks up an environment variable
    # on every call while none is set (a microsecond a call). A provider named by that variable
    # is loaded by the first get_tracer_provider() anywhere (pydantic-ai's, the SDK's setup).
    provider: Any = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is None:
        return None
    if provider is _UNKNOWN:
        provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None  # no provider configured: spans would record nothing
    known, tracer = _tracer_of
    if provider is not known:
        tracer = provider.get_tracer(TRACER_NAME)
        _tracer_of = (provider, tracer)
    return tracer
