"""Serving a :class:`~toolcards.server.app.TeamServer` over streamable HTTP, safely.

* The server binds ``127.0.0.1`` by default. Binding any other address needs a bearer
  token (:func:`check_bind` refuses otherwise): anyone who can reach the port could
  otherwise act as an agent of the team, run commands in its sandbox and edit its files.
* With a token, every request must carry ``Authorization: Bearer <token>``; anything else
  gets ``401`` (:class:`BearerAuth`, compared in constant time).
* DNS-rebinding protection stays on: requests must name an allowed ``Host`` (and
  ``Origin``, when a browser sends one). On loopback the SDK allows ``127.0.0.1``,
  ``localhost`` and ``[::1]`` on any port; on another address the bound host, this
  machine's names and addresses, and the hosts given in ``allowed_hosts``.
* ``X-Agent-Name: <name>`` picks the agent a request acts as (see
  :mod:`toolcards.server.app`).

The MCP endpoint is ``http://<host>:<port>/mcp``. Sessions are stateful for handshake-era
clients (so resource-updated notifications reach them on their GET stream) and answered
per request for 2026-07-28 clients.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolcards.errors import WiringError

if TYPE_CHECKING:
    import anyio
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolcards.server.app import TeamServer

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PATH",
    "DEFAULT_PORT",
    "BearerAuth",
    "check_bind",
    "http_app",
    "is_loopback",
    "serve_http",
]

logger = logging.getLogger("toolcards.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``localhost``, 127.x, ::1)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve a non-loopback ``host`` without a token.

    Raises:
        WiringError: ``host`` is reachable from other machines and ``token`` is empty.
    """
    if not is_loopback(host) and not token:
        raise WiringError(
            f"Refusing to serve on {host} without a token: anyone who can reach it could act as an agent of "
            "the team. Pass --token (or set TOOLCARDS_TOKEN), or bind 127.0.0.1."
        )


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``, else 401.

    Lifespan and other non-HTTP scopes pass through. The comparison takes constant time.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("BearerAuth needs a non-empty token")
        self.app = app
        self._expected = token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "unauthorized", "error_description": "Send 'Authorization: Bearer <token>'."}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="toolcards"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope: Scope) -> bool:
        provided = b""
        for key, value in scope.get("headers", ()):
            if key.lower() == b"authorization":
                scheme, _, credential = bytes(value).partition(b" ")
                if scheme.lower() == b"bearer":
                    provided = credential.strip()
                break
        # compare_digest on bytes of any length: no early exit, no length leak beyond the length itself.
        return hmac.compare_digest(provided, self._expected)


def _host_patterns(host: str) -> list[str]:
    bare = host.strip().strip("[]")
    shown = f"[{bare}]" if ":" in bare else bare
    return [shown, f"{shown}:*"]


def _machine_names() -> list[str]:
    names = {"127.0.0.1", "localhost", "::1"}
    try:
        hostname = socket.gethostname()
        names.update({hostname, socket.getfqdn()})
        names.update(socket.gethostbyname_ex(hostname)[2])
    except OSError:
        pass
    return sorted(names)


def _security_settings(host: str, allowed_hosts: Sequence[str]) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    if is_loopback(host) and not allowed_hosts:
        return None  # the SDK's own loopback defaults
    unspecified = host.strip("[]") in ("0.0.0.0", "::", "")
    names = (
        [*_machine_names(), *allowed_hosts] if unspecified else [host, *allowed_hosts, "127.0.0.1", "localhost", "::1"]
    )
    hosts = sorted({pattern for name in names for pattern in _host_patterns(name)})
    origins = sorted({f"{scheme}://{pattern}" for pattern in hosts for scheme in ("http", "https")})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def http_app(
    team_server: TeamServer,
    *,
    host: str = DEFAULT_HOST,
    token: str | None = None,
    path: str = DEFAULT_PATH,
    allowed_hosts: Sequence[str] = (),
) -> ASGIApp:
    """The ASGI app serving ``team_server`` at ``path`` (call once per TeamServer).

    Its lifespan runs the MCP session manager: serve it with a server that runs lifespans
    (uvicorn does).

    Raises:
        WiringError: ``host`` is not loopback and there is no ``token``.
    """
    check_bind(host, token)
    app: ASGIApp = team_server.server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=_security_settings(host, allowed_hosts),
    )
    return BearerAuth(app, token) if token else app


async def serve_http(
    team_server: TeamServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    path: str = DEFAULT_PATH,
    allowed_hosts: Sequence[str] = (),
    stop: anyio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``team_server`` with uvicorn until ``stop`` is set (or the task is cancelled).

    Starts the team first. Does not close it: the caller does
    (``await team_server.aclose()``). uvicorn's own signal handling is off, so the caller
    decides what SIGINT/SIGTERM do.

    Args:
        on_ready: Called with the endpoint URL once the socket listens.

    Raises:
        WiringError: ``host`` is not loopback and there is no ``token``, or the cards
            cannot be bound.
        OSError: the port cannot be bound.
    """
    import contextlib

    import anyio
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield  # the caller owns SIGINT/SIGTERM

    app = http_app(team_server, host=host, token=token, path=path, allowed_hosts=allowed_hosts)
    await team_server.astart()
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False)
    server = Server(config)

    async def watch() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.02)
        if on_ready is not None:
            shown = f"[{host}]" if ":" in host else host
            bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
            on_ready(f"http://{shown}:{bound}{path}")
        if stop is not None:
            await stop.wait()
            server.should_exit = True

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        try:
            await server.serve()
        except SystemExit:
            # uvicorn exits the process when it cannot bind; report it as the error it is.
            raise OSError(f"Cannot serve on {host}:{port}: the address is in use or not available.") from None
        finally:
            tasks.cancel_scope.cancel()
