"""The dashboard's ASGI app: one page, its script and style, JSON views and an event stream.

Routes, all read-only: ``GET /`` and ``/static/...``; ``/api/team`` (the id and views);
``/api/views/<name>`` (one view as JSON: ``404`` for an unknown view, ``422`` with
``{"error": ...}`` when it refuses); ``/api/files/image?path=...`` (a workspace image, its
media type read from its content: PNG, JPEG, GIF, WebP); ``/api/events`` (server-sent events,
:class:`~toolcards.dashboard._hub.DashboardHub`).

Every response carries a same-origin Content-Security-Policy (no inline script or handler, no
frame, no form), ``nosniff``, ``Referrer-Policy: no-referrer`` (the first URL carries the
token) and ``Cache-Control: no-store``; the page builds text with ``textContent``, so team data
is never markup. Authentication is the caller's: :class:`~toolcards.server._http.TokenAuth`
with ``cookie_routes=is_dashboard_read`` (:func:`~toolcards.dashboard._serve.dashboard_asgi`),
so the cookie of the printed ``/?token=`` link opens these GET/HEAD routes and nothing else.
Without a token (loopback only), requests must name a loopback ``Host``, so a page rebinding
its name to this machine cannot read the team.
"""

from __future__ import annotations

import logging
import re
from importlib import resources
from typing import TYPE_CHECKING

from toolcards.dashboard._hub import DashboardHub
from toolcards.dashboard._source import UnknownView
from toolcards.errors import RetriableError, ToolFailed

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "STATIC_FILES", "SecurityHeaders", "dashboard_app", "is_dashboard_read"]

logger = logging.getLogger("toolcards.dashboard")

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Scripts, styles, images and fetches from this origin only; nothing inline, no frames, no forms."""

STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
"""The files the page is made of (package data of :mod:`toolcards.dashboard`), and their types."""

_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
_READ_PATH = re.compile(r"/(?:static/[^/]+|api/team|api/views/[^/]+|api/files/image|api/events)?")
"""The paths of the routes above; a test checks it against the app's routes."""


def is_dashboard_read(scope: Scope) -> bool:
    """Whether ``scope`` is a GET or HEAD of one of the dashboard's routes (all of them reads).

    What the dashboard cookie may authorise (``TokenAuth(cookie_routes=...)``): a browser
    sends that cookie to every port of the host, so it opens reads of the team and nothing
    that changes it or reaches its tools.
    """
    return (
        scope["type"] == "http"
        and scope.get("method") in ("GET", "HEAD")
        and _READ_PATH.fullmatch(str(scope.get("path", ""))) is not None
    )


class SecurityHeaders:
    """ASGI middleware: the headers above on every response, and ``Cache-Control: no-store``.

    With ``loopback_only``, a request whose ``Host`` is not a loopback name is refused (403):
    what protects a server without a token from pages that rebind their name to 127.0.0.1.
    """

    def __init__(self, app: ASGIApp, *, loopback_only: bool = False) -> None:
        self.app = app
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.loopback_only and not _loopback_host(scope):
            await _plain(send, 403, b"This dashboard answers to 127.0.0.1 and localhost only.")
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"cache-control"]
                message = {**message, "headers": [*headers, *_HEADERS, (b"cache-control", b"no-store")]}
            await send(message)

        await self.app(scope, receive, with_headers)


def _loopback_host(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"host":
            host = value.decode("latin-1").strip().lower()
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            return name in _LOOPBACK_NAMES
    return False


async def _plain(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _static(name: str) -> bytes:
    return resources.files("toolcards.dashboard").joinpath("static", name).read_bytes()


def dashboard_app(hub: DashboardHub, *, loopback_only: bool = False) -> ASGIApp:
    """The dashboard of ``hub``'s team as an ASGI app, with the security headers (not the token)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    files = {name: _static(name) for name in STATIC_FILES}

    async def page(request: Request) -> Response:
        return Response(files["index.html"], media_type=STATIC_FILES["index.html"])

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files or name == "index.html":
            return JSONResponse({"error": "not found"}, status_code=404)
        return Response(files[name], media_type=STATIC_FILES[name])

    async def team(request: Request) -> Response:
        return JSONResponse({"team": hub.source.team_id, "views": hub.source.names()})

    async def view(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            data = await hub.render(name, dict(request.query_params))
        except UnknownView as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except (RetriableError, ToolFailed) as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        return JSONResponse(data)

    async def image(request: Request) -> Response:
        from toolcards.core._views import FileBytes

        try:
            data = await hub.render("workspace.image", {"path": request.query_params.get("path", "")})
        except UnknownView as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except (RetriableError, ToolFailed) as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        assert isinstance(data, FileBytes)
        # Only raster images, by content: never a type a browser would run as a document.
        return Response(
            data.data,
            media_type=data.media_type,
            headers={"content-disposition": "inline", "content-security-policy": "default-src 'none'; sandbox"},
        )

    async def events(request: Request) -> Response:
        return StreamingResponse(
            hub.stream(),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    app: Starlette = Starlette(
        routes=[
            Route("/", page),
            Route("/static/{name}", static),
            Route("/api/team", team),
            Route("/api/views/{name}", view),
            Route("/api/files/image", image),
            Route("/api/events", events),
        ]
    )
    return SecurityHeaders(app, loopback_only=loopback_only)
