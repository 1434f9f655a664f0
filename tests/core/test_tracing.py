"""OpenTelemetry spans of tool calls, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.core.cards import GreeterCard, GreetParam
from toolcards import SYSTEM_PROMPT, RetriableError, ToolFactory
from toolcards.core import _tracing as tracing
from toolcards.examples.quickstart import NotesCard


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # The global provider can be set once per process: swap it for this test only.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield exporter
    provider.shutdown()


def by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_every_channel_makes_an_execute_tool_span(spans: InMemorySpanExporter, alice: Any) -> None:
    factory = ToolFactory([NotesCard()], observer=alice)
    tools = {t.name: t for t in factory.tools()}
    tools["add_note"].call_sync({"text": "hi"}, call_id="call-7")
    tools["show_notes"].call_sync({}, channel=SYSTEM_PROMPT)

    found = by_name(spans)
    span = found["execute_tool add_note"]
    assert span.kind is trace.SpanKind.INTERNAL
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add_note",
        "gen_ai.tool.call.id": "call-7",
        "gen_ai.tool.type": "function",
        "gen_ai.agent.name": "Alice",
        "toolcards.channel": "command",
        "toolcards.card": "NotesCard",
    }
    assert span.status.status_code is StatusCode.UNSET
    assert found["execute_tool show_notes"].attributes["toolcards.channel"] == "system_prompt"


def test_a_failed_call_has_its_error_type_and_no_content(spans: InMemorySpanExporter) -> None:
    tool = ToolFactory([GreeterCard()]).tools()[0]
    with pytest.raises(RetriableError):
        tool.call_sync({"name": "Voldemort"})
    span = spans.get_finished_spans()[-1]
    assert span.attributes["error.type"] == "RetriableError"
    assert span.status.status_code is StatusCode.ERROR and not span.status.description
    assert span.attributes["gen_ai.tool.call.id"].startswith(f"{tool.name}-")  # the record's id
    assert not span.events  # no message: it could quote a file


def test_the_async_channel_and_a_timeout_keep_the_span_current(spans: InMemorySpanExporter) -> None:
    seen: list[Any] = []

    def handler(text: str) -> str:
        seen.append(trace.get_current_span().name)
        return text

    from toolcards import Tool

    tool = Tool.from_function(handler, name="echo_text", timeout_s=5)
    assert asyncio.run(tool.call({"text": "x"})) == "x"
    assert seen == ["execute_tool echo_text"]


def test_inside_pydantic_ais_own_tool_span_no_second_span_is_made(spans: InMemorySpanExporter) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: Any, info: Any) -> ModelResponse:
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("add_note", {"text": "ship it"}, tool_call_id="c1")])

    agent = Agent(
        FunctionModel(model), toolsets=[ToolFactory([NotesCard()]).toolset()], capabilities=[Instrumentation()]
    )
    agent.run_sync("go")

    finished = spans.get_finished_spans()
    calls = [span for span in finished if span.name == "execute_tool add_note"]
    assert len(calls) == 1
    (call,) = calls
    assert call.instrumentation_scope.name != tracing.TRACER_NAME  # pydantic-ai's span, enriched
    assert call.attributes["toolcards.channel"] == "tool_call" and call.attributes["gen_ai.tool.call.id"] == "c1"
    run = next(span for span in finished if span.name.startswith("invoke_agent"))
    assert call.parent is not None and call.context.trace_id == run.context.trace_id


def test_no_provider_means_no_span_and_the_extra_is_never_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    greet = ToolFactory([GreeterCard()]).get_commands()[GreetParam]
    assert tracing.start_tool_span(ToolFactory([GreeterCard()]).tools()[0], "command", "c") is None
    assert greet(name="Ann") == "Hello, Ann!"
    code = (
        "import sys, toolcards; from toolcards import ToolFactory; "
        "from tests.core.cards import GreetParam, GreeterCard; "
        "ToolFactory([GreeterCard()]).get_commands()[GreetParam](name='x'); "
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'opentelemetry was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
