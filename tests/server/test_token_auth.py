"""``TokenAuth`` as ASGI middleware, driven directly: which credentials pass, what is sent back.

The same behaviour over real sockets, with real MCP clients, is in ``test_http.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from toolcards.server import TokenAuth, endpoint_url

TOKEN = "tok-123_ABC"


class Recorder:
    """An ASGI app that answers 200 and remembers that it was reached."""

    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope["type"])
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"x-app", b"yes")]})
            await send({"type": "http.response.body", "body": b"ok"})


def call(
    scope_type: str = "http", headers: list[tuple[str, str]] | None = None, query: str = "", port: int = 8765
) -> tuple[Recorder, list[dict[str, Any]]]:
    """Run one request through ``TokenAuth``; returns the app behind it and what was sent back."""
    app = Recorder()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": scope_type,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers or []],
        "query_string": query.encode(),
        "server": ("127.0.0.1", port),
    }
    asyncio.run(TokenAuth(app, TOKEN)(scope, receive, send))
    return app, sent


def header(sent: list[dict[str, Any]], name: bytes) -> list[bytes]:
    return [value for key, value in sent[0].get("headers", ()) if key == name]


def test_without_the_token_the_answer_is_401_with_one_line_of_json() -> None:
    for headers, query in [
        ([], ""),
        ([("Authorization", "Bearer wrong")], ""),
        ([("Authorization", f"Basic {TOKEN}")], ""),
        ([("Authorization", f"Bearer {TOKEN}x")], ""),
        ([], "token=wrong"),
        ([], f"tokens={TOKEN}"),
        ([("Cookie", f"toolcards-8765={TOKEN}")], ""),  # the cookie holds a digest, not the token
    ]:
        app, sent = call(headers=headers, query=query)
        assert app.scopes == [], (headers, query)
        assert sent[0]["status"] == 401
        body = sent[1]["body"]
        assert b"\n" not in body and json.loads(body)["error"] == "unauthorized"
        assert header(sent, b"www-authenticate") == [b'Bearer realm="toolcards"']


def test_a_bearer_header_passes_and_sets_no_cookie() -> None:
    app, sent = call(headers=[("Authorization", f"Bearer {TOKEN}")])
    assert app.scopes == ["http"] and sent[0]["status"] == 200
    assert header(sent, b"set-cookie") == []


def test_the_query_token_passes_and_sets_the_cookie_later_requests_use() -> None:
    app, sent = call(query=f"a=1&token={TOKEN}")
    assert app.scopes == ["http"] and header(sent, b"x-app") == [b"yes"]
    (cookie,) = header(sent, b"set-cookie")
    pair, *attributes = cookie.decode().split("; ")
    assert set(attributes) == {"Path=/", "HttpOnly", "SameSite=Strict"}
    assert pair.startswith("toolcards-8765=") and TOKEN not in pair

    # Among other cookies, in a second Cookie header (HTTP/2 splits them): passes, no new cookie.
    app, sent = call(headers=[("Cookie", "theme=dark"), ("Cookie", pair)])
    assert app.scopes == ["http"] and header(sent, b"set-cookie") == []
    # Another port's server names its cookie differently, so this one is not taken for it.
    app, sent = call(headers=[("Cookie", pair)], port=9999)
    assert app.scopes == [] and sent[0]["status"] == 401


def test_lifespan_passes_and_a_websocket_without_the_token_is_closed() -> None:
    app, sent = call("lifespan")
    assert app.scopes == ["lifespan"]
    app, sent = call("websocket")
    assert app.scopes == [] and sent == [{"type": "websocket.close", "code": 1008}]


def test_the_endpoint_url_carries_a_generated_token_and_brackets_ipv6() -> None:
    assert endpoint_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/mcp"
    assert endpoint_url("::1", 80, "/x", token="t") == "http://[::1]:80/x?token=t"
