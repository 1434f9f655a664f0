"""Streamable HTTP on 127.0.0.1: round trips, agent names from a header, the token, host checks.

Every test talks to a real uvicorn server over real sockets: urllib/http.client for the raw
HTTP behaviour (status codes, cookies), the MCP SDK's client and pydantic-ai's
``MCPToolset`` for what clients do.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import http.client
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import mcp_types as types
import pytest
from mcp import Client

from tests.serving import serving_in_thread
from toolcards import WiringError
from toolcards.server import TeamServer, listen
from toolcards.server._http import check_bind, http_app, is_loopback, serve_http

pytestmark = pytest.mark.slow


def serving(team_server: TeamServer, **options: Any) -> contextlib.AbstractContextManager[str]:
    """Serve on a free port in a background thread; yields the endpoint URL."""
    return serving_in_thread(
        lambda stop, ready: serve_http(team_server, port=0, stop=stop, on_ready=ready, **options), what="the server"
    )


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


def bare(url: str) -> str:
    """``url`` without its query (the ``?token=...`` a generated token adds)."""
    return urlunsplit(urlsplit(url)._replace(query=""))


def token_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


def test_no_token_is_refused_off_loopback_and_with_a_token(team_server: TeamServer) -> None:
    with pytest.raises(WiringError, match="without a token"), serving(team_server, host="0.0.0.0", no_token=True):
        pass
    with pytest.raises(WiringError, match="not both"), serving(team_server, token="s3cret", no_token=True):
        pass
    with pytest.raises(WiringError, match="needs a token"):
        http_app(team_server)
    assert not team_server._started  # refused before the team started


def test_a_generated_token_is_in_the_url_and_guards_every_request(team_server: TeamServer) -> None:
    with serving(team_server) as url:
        token = token_of(url)
        assert len(token) >= 40  # secrets.token_urlsafe(32)
        status, _, body = post(bare(url), {})
        assert status == 401
        assert json.loads(body)["error"] == "unauthorized" and b"\n" not in body.strip()
        assert post(bare(url), {"Authorization": f"Bearer {token}"})[0] == 200
        assert post(url, {})[0] == 200  # the printed URL works as it is

        async def main() -> str:
            async with http_client(url, **{"X-Agent-Name": "Gus"}) as c:
                part = (await c.call_tool("whoami", {})).content[0]
            assert isinstance(part, types.TextContent)
            return part.text

        assert asyncio.run(main()) == "@Gus"


def test_each_server_generates_its_own_token(team_server: TeamServer, config: Any, system: Any) -> None:
    other = TeamServer(config, system=system)
    try:
        with serving(team_server) as first, serving(other) as second:
            assert token_of(first) != token_of(second)
            assert post(bare(second), {"Authorization": f"Bearer {token_of(first)}"})[0] == 401
    finally:
        other.close()


def test_the_dashboard_cookie_opens_the_dashboards_reads_and_never_the_endpoint(team_server: TeamServer) -> None:
    from tests.server.test_token_auth import Recorder
    from toolcards.dashboard._app import is_dashboard_read

    def get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}

    # The endpoint's own path is also one of the dashboard's: the endpoint still wins.
    with serving(team_server, fallback=Recorder(), cookie_routes=is_dashboard_read, path="/api/events") as url:
        status, headers, _ = post(url, {})
        assert status == 200 and "set-cookie" not in headers  # the query opens the endpoint, sets nothing
        root = bare(url).removesuffix("/api/events")
        status, headers = get(f"{root}/?token={token_of(url)}", {})
        assert status == 200
        cookie = headers["set-cookie"]
        name_value, *attributes = [part.strip() for part in cookie.split(";")]
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
        name, _, value = name_value.partition("=")
        assert name == f"toolcards-{urlsplit(url).port}"
        assert token_of(url) not in cookie  # a digest, not the token

        status, headers = get(f"{root}/api/team", {"Cookie": f"other=1; {name_value}"})
        assert status == 200 and "set-cookie" not in headers  # already has it
        assert get(f"{root}/api/team", {"Cookie": f"{name}={value[:-1]}x"})[0] == 401
        assert post(bare(url), {"Cookie": name_value})[0] == 401
        assert post(f"{bare(url)}?token=wrong", {})[0] == 401


def test_no_token_on_loopback_serves_everyone(team_server: TeamServer) -> None:
    with serving(team_server, no_token=True) as url:
        assert urlsplit(url).query == ""
        assert post(url, {})[0] == 200


def test_a_port_in_use_fails_before_the_team_starts(team_server: TeamServer) -> None:
    (held,) = listen("127.0.0.1", 0)
    port = held.getsockname()[1]
    try:
        with pytest.raises(OSError, match=rf"Cannot serve on 127\.0\.0\.1:{port}: the port is in use") as caught:
            asyncio.run(serve_http(team_server, port=port))
        assert caught.value.errno == errno.EADDRINUSE
        assert not team_server._started
    finally:
        held.close()


def test_an_unresolvable_host_is_one_message() -> None:
    with pytest.raises(OSError, match=r"Cannot serve on nosuch\.invalid:8765: the host name does not resolve"):
        listen("nosuch.invalid", 8765)


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
        # As docs/serving.md shows: the bare endpoint, the token as a bearer header.
        headers = {"Authorization": f"Bearer {token_of(url)}", "X-Agent-Name": "Ivy"}
        agent = Agent(FunctionModel(respond), toolsets=[MCPToolset(bare(url), headers=headers)])
        assert agent.run_sync("who am I?").output == "@Ivy"
        # The printed URL, token included, works as well.
        agent = Agent(FunctionModel(respond), toolsets=[MCPToolset(url, headers={"X-Agent-Name": "Ike"})])
        assert agent.run_sync("who am I?").output == "@Ike"
        # Without the token the toolset cannot even list the tools.
        agent = Agent(FunctionModel(respond), toolsets=[MCPToolset(bare(url))])
        with pytest.raises(Exception, match="error response"):  # the SDK's word for the 401
            agent.run_sync("who am I?")


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """An MCP ``initialize`` as a raw POST: status, headers (lower-case names), body."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
    ).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def test_a_token_is_required_on_every_request(team_server: TeamServer) -> None:
    with serving(team_server, token="s3cret") as url:
        assert urlsplit(url).query == ""  # a token the caller chose is not repeated
        status, headers, _ = post(url, {})
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        assert post(url, {"Authorization": "Bearer wrong"})[0] == 401
        assert post(url, {"Authorization": "Basic s3cret"})[0] == 401

        async def main() -> str:
            async with http_client(url, Authorization="Bearer s3cret", **{"X-Agent-Name": "Jo"}) as c:
                part = (await c.call_tool("whoami", {})).content[0]
            assert isinstance(part, types.TextContent)
            return part.text

        assert asyncio.run(main()) == "@Jo"


def raw_status(url: str, host: str, *, slash: bool = False) -> int:
    parts = urlsplit(url)
    assert parts.hostname is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    connection.request(
        "POST",
        parts.path + ("/" if slash else ""),
        body=body,
        headers={
            "Host": host,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token_of(url)}",
        },
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
        # With a trailing slash too: never a redirect to the foreign host (with the token).
        assert raw_status(url, f"evil.example.test:{port}", slash=True) in (403, 421)
        assert raw_status(url, f"127.0.0.1:{port}", slash=True) not in (307, 403, 421)
