"""The SDK-free MCP connection in process: frames in, frames out, spans as the SDK's server makes them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from toolcards.server import TeamServer
from toolcards.server._connection import McpConnection

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "spanner", "version": "1"}}


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)  # set once per process: swapped for this test
    yield exporter
    provider.shutdown()


def converse(team_server: TeamServer, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    """Feed ``messages`` to a connection; its answers once every request is answered."""
    written: list[bytes] = []

    async def main() -> None:
        connection = McpConnection(team_server, written.append)
        for message in messages:
            connection.feed(json.dumps(message).encode())
        await connection.dispatcher.drain()
        await connection.aclose()

    asyncio.run(main())
    return [json.loads(frame) for frame in written]


def call(request_id: int, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_a_call_is_a_server_span_in_the_clients_trace(team_server: TeamServer, spans: InMemorySpanExporter) -> None:
    answers = converse(
        team_server,
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        call(2, "echo", {"text": "hi"}, meta={"traceparent": TRACEPARENT}),
        call(3, "crash", {}),
    )
    assert [answer["id"] for answer in answers] == [1, 2, 3]
    found = {span.name: span for span in spans.get_finished_spans()}
    server = found["tools/call echo"]
    assert server.kind is trace.SpanKind.SERVER
    assert f"{server.context.trace_id:032x}" == TRACEPARENT.split("-")[1]
    assert server.attributes["gen_ai.tool.name"] == "echo"
    assert server.attributes["mcp.protocol.version"] == "2025-06-18"
    assert server.attributes["jsonrpc.request.id"] == "2"
    assert found["execute_tool echo"].parent.span_id == server.context.span_id
    failed = found["tools/call crash"]
    assert failed.attributes["error.type"] == "tool_error" and failed.status.status_code is StatusCode.ERROR


def test_a_connection_answers_in_process_without_a_transport(team_server: TeamServer) -> None:
    answers = converse(
        team_server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, call(2, "echo", {"text": "x"})
    )
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "x"}]
