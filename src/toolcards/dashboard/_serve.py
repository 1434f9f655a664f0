"""Serving the dashboard: on its own (``toolcards dashboard``), or beside the MCP endpoint.

:func:`dashboard_for` builds what a team's dashboard needs (its source and hub);
:func:`serve_dashboard` serves it alone with uvicorn, with the same access rules as
``toolcards serve``: loopback by default, a token on every request (given, else generated
and handed out once, in the URL given to ``on_ready``), ``no_token`` on loopback only.
``toolcards serve --transport http`` passes :func:`dashboard_app` to the MCP server as the
app for every path but the MCP endpoint, behind the same token.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio
    from starlette.types import ASGIApp

    from toolcards.actors._system import TeamHandle
    from toolcards.core._card import ToolCard
    from toolcards.dashboard._hub import DashboardHub
    from toolcards.server._client_limits import ClientLimits

# The hub, its source and the app are imported when a dashboard is built: the command line
# reads DEFAULT_DASHBOARD_PORT on every start, also when it serves no dashboard.

__all__ = ["DEFAULT_DASHBOARD_PORT", "dashboard_asgi", "dashboard_for", "serve_dashboard"]

DEFAULT_DASHBOARD_PORT = 8766
"""``toolcards dashboard``'s port (``serve`` has 8765)."""


def dashboard_for(team: TeamHandle, cards: Sequence[ToolCard]) -> DashboardHub:
    """The hub of ``team``'s dashboard, its ``cards`` (fresh, unbound) bound to a viewer.

    Blocks while the cards bind (their actors start and load the team's state); the graph
    is laid out in the background (:meth:`TeamSource.warm`).
    """
    import threading

    from toolcards.dashboard._hub import DashboardHub
    from toolcards.dashboard._source import TeamSource

    source = TeamSource(team, cards)
    threading.Thread(target=source.warm, name="dashboard graph layout", daemon=True).start()
    return DashboardHub(source)


def dashboard_asgi(hub: DashboardHub, *, host: str, token: str | None) -> ASGIApp:
    """The dashboard app behind ``token`` (``None``: no token, loopback ``Host`` names only).

    The cookie the ``/?token=`` link sets opens the dashboard's routes (:func:`is_dashboard_read`).
    """
    from toolcards.dashboard._app import dashboard_app, is_dashboard_read
    from toolcards.server._http import TokenAuth, check_bind

    check_bind(host, token)
    app = dashboard_app(hub, loopback_only=not token)
    return TokenAuth(app, token, cookie_routes=is_dashboard_read) if token else app


async def serve_dashboard(
    hub: DashboardHub,
    *,
    host: str,
    port: int = DEFAULT_DASHBOARD_PORT,
    token: str | None = None,
    no_token: bool = False,
    sockets: Sequence[socket.socket] | None = None,
    stop: anyio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
    limits: ClientLimits | None = None,
) -> None:
    """Serve ``hub``'s dashboard with uvicorn until ``stop`` is set (or the task is cancelled).

    Args:
        token: Every request must carry it. Without one (and without ``no_token``) one is
            generated, and the URL given to ``on_ready`` carries it (``/?token=...``).
        no_token: Serve without a token (loopback only).
        sockets: Listening sockets from :func:`toolcards.server._http.listen`; closed at the end.
        limits: How slowly and how much a client may send (see :func:`~toolcards.server._http.serve_asgi`).

    Raises:
        WiringError: ``no_token`` on an address other machines can reach.
        OSError: the port cannot be bound.
    """
    from toolcards.server._http import endpoint_url, listen, serve_asgi

    generated = None if token or no_token else secrets.token_urlsafe(32)
    app = dashboard_asgi(hub, host=host, token=None if no_token else token or generated)
    listening = list(sockets) if sockets is not None else listen(host, port)
    try:
        await serve_asgi(
            app,
            listening,
            lifespan=False,
            stop=stop,
            on_ready=None if on_ready is None else lambda bound: on_ready(endpoint_url(host, bound, "/", generated)),
            on_stop=hub.close,  # open event streams end, so the server can stop at once
            limits=limits,
        )
    finally:
        hub.close()
