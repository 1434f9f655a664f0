"""Streamable HTTP on 127.0.0.1: round trips, agent names from a header, bearer auth, host checks."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as types
import pytest
from mcp import Client

from toolcards import WiringError
from toolcards.server import TeamServer, check_bind, is_loopback
from toolcards.server.http import serve_http

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def serving(team_server: TeamServer, **options: Any) -> Iterator[str]:
    """Serve on a free port in a background thread; yields the endpoint URL."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    def on_ready(url: str) -> None:
        state["url"] = url
        ready.set()

    async def main() -> None:
        state["stop"], state["loop"] = anyio.Event(), asyncio.get_running_loop()
        try:
            await serve_http(team_server, port=0, stop=state["stop"], on_ready=on_ready, **options)
        except Exception as exc:
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert ready.wait(60), "the server did not start"
    if "error" in state:
        raise state["error"]
    try:
        yield state["url"]
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(60)


def http_client(url: str, **headers: str) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)))


def test_loopback_and_bind_checks() -> None:
    assert all(is_loopback(h) for h in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"])
    assert not any(is_loopback(h) for h in ["0.0.0.0", "::", "192.168.1.5", "example.com"])
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "secret")
    with pytest.raises(WiringError, match=r"Refusing to serve on 0\.0\.0\.0 without a token"):
        check_bind("0.0.0.0", None)


def test_serving_a_public_address_without_a_token_is_refused(team_server: TeamServer) -> None:
    with pytest.raises(WiringError, match="without a token"), serving(team_server, host="0.0.0.0"):
        pass


def test_tools_over_http_with_the_agent_named_by_header(team_server: TeamServer) -> None:
    with serving(team_server) as url:

        async def main() -> tuple[list[str], str, str]:
            async with http_client(url, **{"X-Agent-Name": "Hank"}) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                who = (await c.call_tool("whoami", {})).content[0]
                bad = await c.call_tool("echo", {"text": ""})
            assert isinstance(who, types.TextContent) and bad.is_error
            bad_text = bad.content[0]
            assert isinstance(bad_text, types.TextContent)
            return names, who.text, bad_text.text

        names, who, bad = asyncio.run(main())
    assert "echo" in names and who == "@Hank"
    assert bad.startswith("Invalid arguments for echo")


def test_a_pydantic_ai_agent_over_http(team_server: TeamServer) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(str(returns[0].content))])
        return ModelResponse(parts=[ToolCallPart("whoami", {})])

    with serving(team_server) as url:
        agent = Agent(FunctionModel(respond), toolsets=[MCPToolset(url, headers={"X-Agent-Name": "Ivy"})])
        assert agent.run_sync("who am I?").output == "@Ivy"


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def test_a_token_is_required_on_every_request(team_server: TeamServer) -> None:
    with serving(team_server, token="s3cret") as url:
        status, headers = post(url, {})
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        assert post(url, {"Authorization": "Bearer wrong"})[0] == 401
        assert post(url, {"Authorization": "Basic s3cret"})[0] == 401

        async def main() -> str:
            async with http_client(url, Authorization="Bearer s3cret", **{"X-Agent-Name": "Jo"}) as c:
                part = (await c.call_tool("whoami", {})).content[0]
            assert isinstance(part, types.TextContent)
            return part.text

        assert asyncio.run(main()) == "@Jo"


def raw_status(url: str, host: str) -> int:
    parts = urlsplit(url)
    assert parts.hostname is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    connection.request(
        "POST",
        parts.path,
        body=body,
        headers={"Host": host, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    status = connection.getresponse().status
    connection.close()
    return status


def test_dns_rebinding_protection_checks_the_host_header(team_server: TeamServer) -> None:
    with serving(team_server, allowed_hosts=["tools.example.test"]) as url:
        port = urlsplit(url).port
        assert raw_status(url, f"evil.example.test:{port}") in (403, 421)
        assert raw_status(url, f"tools.example.test:{port}") not in (403, 421)
        assert raw_status(url, f"127.0.0.1:{port}") not in (403, 421)
