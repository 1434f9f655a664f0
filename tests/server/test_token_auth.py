"""``TokenAuth`` as ASGI middleware, driven directly: which credentials pass, what is sent back.

The same behaviour over real sockets, with real MCP clients, is in ``test_http.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

from toolcards.dashboard._app import is_dashboard_read
from toolcards.server import TokenAuth, endpoint_url
from toolcards.server._http import CookieRoutes

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
    scope_type: str = "http",
    headers: list[tuple[str, str]] | None = None,
    query: str = "",
    port: int = 8765,
    *,
    method: str = "GET",
    path: str = "/",
    cookie_routes: CookieRoutes | None = is_dashboard_read,
) -> tuple[Recorder, list[dict[str, Any]]]:
    """Run one request through ``TokenAuth`` (by default with the dashboard's read routes open
    to its cookie, as ``toolcards serve`` has it); returns the app behind it and what was sent back."""
    app = Recorder()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": scope_type,
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers or []],
        "query_string": query.encode(),
        "server": ("127.0.0.1", port),
    }
    asyncio.run(TokenAuth(app, TOKEN, cookie_routes=cookie_routes)(scope, receive, send))
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


def cookie_set_by(port: int = 8765, path: str = "/") -> str:
    """The ``name=value`` of the cookie the server on ``port`` sets when ``path`` is opened
    with the query token."""
    app, sent = call(query=f"token={TOKEN}", port=port, path=path)
    assert app.scopes == ["http"], path
    (cookie,) = header(sent, b"set-cookie")
    return cookie.decode().split("; ")[0]


def test_the_query_token_on_the_dashboard_sets_the_cookie_later_reads_use() -> None:
    app, sent = call(query=f"a=1&token={TOKEN}")
    assert app.scopes == ["http"] and header(sent, b"x-app") == [b"yes"]
    (cookie,) = header(sent, b"set-cookie")
    pair, *attributes = cookie.decode().split("; ")
    assert set(attributes) == {"Path=/", "HttpOnly", "SameSite=Strict"}
    assert pair.startswith("toolcards-8765=") and TOKEN not in pair

    # Among other cookies, in a second Cookie header (HTTP/2 splits them): passes, no new cookie.
    for path in ["/", "/static/app.js", "/api/team", "/api/views/planning.board", "/api/events"]:
        app, sent = call(headers=[("Cookie", "theme=dark"), ("Cookie", pair)], path=path)
        assert app.scopes == ["http"] and header(sent, b"set-cookie") == [], path
    app, sent = call(headers=[("Cookie", pair)], method="HEAD", path="/api/files/image")
    assert app.scopes == ["http"]
    # Another port's server names its cookie differently, so this one is not taken for it.
    app, sent = call(headers=[("Cookie", pair)], port=9999)
    assert app.scopes == [] and sent[0]["status"] == 401


def test_the_cookie_is_refused_on_mcp_and_on_anything_but_a_dashboard_read() -> None:
    pair = cookie_set_by()
    for method, path in [("POST", "/mcp"), ("GET", "/mcp"), ("DELETE", "/mcp"), ("POST", "/"), ("PUT", "/api/team")]:
        app, sent = call(headers=[("Cookie", pair)], method=method, path=path)
        assert app.scopes == [] and sent[0]["status"] == 401, (method, path)
    # The bearer header and the query token still open the MCP endpoint; the query sets no cookie there.
    app, sent = call(headers=[("Authorization", f"Bearer {TOKEN}")], method="POST", path="/mcp")
    assert app.scopes == ["http"]
    app, sent = call(query=f"token={TOKEN}", method="POST", path="/mcp")
    assert app.scopes == ["http"] and header(sent, b"set-cookie") == []


def test_a_cookie_made_for_another_port_is_refused_even_under_this_ports_name() -> None:
    # Two servers given one token (TOOLCARDS_TOKEN): the cookie the browser got from one is
    # sent to every port of the host, and must open nothing at the other.
    name, _, value = cookie_set_by(port=9999).partition("=")
    assert name == "toolcards-9999"
    app, sent = call(headers=[("Cookie", f"toolcards-8765={value}")])
    assert app.scopes == [] and sent[0]["status"] == 401
    mine = cookie_set_by(port=8765).partition("=")[2]
    assert mine != value and TOKEN not in mine


def test_the_cookie_routes_are_the_dashboards_routes_read_with_get_or_head() -> None:
    from starlette.routing import Route

    from toolcards.dashboard._app import dashboard_app

    app = dashboard_app(cast(Any, None))
    routes = [route for route in app.app.routes if isinstance(route, Route)]  # type: ignore[attr-defined]
    assert len(routes) == 6
    for route in routes:
        path = route.path.replace("{name}", "app.js")
        assert route.methods == {"GET", "HEAD"}, route.path
        for method in ["GET", "HEAD"]:
            assert is_dashboard_read({"type": "http", "method": method, "path": path}), path
        assert not is_dashboard_read({"type": "http", "method": "POST", "path": path}), path
    for path in ["/mcp", "/static", "/static/a/b", "/api", "/api/views", "/api/teams", "//"]:
        assert not is_dashboard_read({"type": "http", "method": "GET", "path": path}), path
    assert not is_dashboard_read({"type": "websocket", "path": "/"})


def test_without_cookie_routes_no_cookie_is_set_or_taken() -> None:
    pair = cookie_set_by()
    app, sent = call(query=f"token={TOKEN}", cookie_routes=None)
    assert app.scopes == ["http"] and header(sent, b"set-cookie") == []
    app, sent = call(headers=[("Cookie", pair)], cookie_routes=None)
    assert app.scopes == [] and sent[0]["status"] == 401


def test_lifespan_passes_and_a_websocket_without_the_token_is_closed() -> None:
    app, sent = call("lifespan")
    assert app.scopes == ["lifespan"]
    app, sent = call("websocket")
    assert app.scopes == [] and sent == [{"type": "websocket.close", "code": 1008}]


def test_the_endpoint_url_carries_a_generated_token_and_brackets_ipv6() -> None:
    assert endpoint_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/mcp"
    assert endpoint_url("::1", 80, "/x", token="t") == "http://[::1]:80/x?token=t"
