"""Exactly-once writes over MCP: the client's key in ``_meta``, or its HTTP session and request id."""

from __future__ import annotations

import asyncio

import mcp_types as types
from mcp import Client

from toolcards.actors._system import ActorSystem
from toolcards.server import ServeConfig, TeamServer
from toolcards.server._idempotency import idempotency_key

ARGS = {"create_tasks": [{"description": "Ship it"}]}


def texts(server: TeamServer, metas: list[dict[str, object] | None]) -> list[str]:
    async def main() -> list[str]:
        answers = []
        async with Client(server.server, client_info=types.Implementation(name="Alice", version="1")) as client:
            for meta in metas:
                result = await client.call_tool("update_planning", ARGS, meta=meta)  # type: ignore[arg-type]
                part = result.content[0]
                assert isinstance(part, types.TextContent)
                answers.append(part.text)
        return answers

    return asyncio.run(main())


def test_a_tools_call_sent_again_with_its_meta_key_is_applied_once(system: ActorSystem) -> None:
    server = TeamServer(ServeConfig.model_validate({"team_id": "t", "cards": [{"kind": "planning"}]}), system=system)
    try:
        answers = texts(
            server, [{"io.toolcards/idempotency-key": "a-1"}, {"io.toolcards/idempotency-key": "a-1"}, None, None]
        )
    finally:
        server.close()
    assert answers == [
        "Created task 1.",
        "This call was already applied (board change 1); nothing was written again. Created task 1.",
        "Created task 2.",
        "Created task 3.",
    ]


def test_which_key_a_request_carries() -> None:
    assert idempotency_key({"io.toolcards/idempotency-key": "k"}, "s", 4) == "client:k"
    assert idempotency_key({"idempotencyKey": 12}, None, 4) == "client:12"
    assert idempotency_key({"progressToken": 1}, "sess", 4) == "session:sess/4"
    # A request id names nothing across connections: no session, no key.
    assert idempotency_key(None, None, 4) is None
    assert idempotency_key({"idempotencyKey": ""}, None, 4) is None
    assert idempotency_key({"idempotencyKey": True}, None, 4) is None


def test_an_http_request_sent_again_in_its_session_is_applied_once(system: ActorSystem) -> None:
    """A client that lost the answer re-POSTs the request with its id: the session and id are its key."""
    import json
    import urllib.request

    from tests.serving import serving_in_thread
    from toolcards.server._http import serve_http

    server = TeamServer(ServeConfig.model_validate({"team_id": "t", "cards": [{"kind": "planning"}]}), system=system)

    def post(url: str, message: dict[str, object], session: str | None) -> tuple[str | None, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
        request = urllib.request.Request(url, data=json.dumps(message).encode(), method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.headers.get("mcp-session-id"), response.read().decode()

    def answer_text(body: str) -> str:
        data = [line[5:] for line in body.splitlines() if line.startswith("data:")] or [body]
        return str(json.loads(data[-1])["result"]["content"][0]["text"])

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "update_planning", "arguments": ARGS}}
    try:
        with serving_in_thread(
            lambda stop, ready: serve_http(server, port=0, stop=stop, on_ready=ready, no_token=True), what="the server"
        ) as url:
            session, _ = post(url, init, None)
            assert session
            post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            first = answer_text(post(url, call, session)[1])
            again = answer_text(post(url, call, session)[1])
            other = answer_text(post(url, {**call, "id": 8}, session)[1])
    finally:
        server.close()
    assert first == "Created task 1."
    assert again.startswith("This call was already applied (board change 1)")
    assert other == "Created task 2."
