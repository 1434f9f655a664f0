"""Serving a :class:`~toolcards.server._app.TeamServer` over streamable HTTP, safely.

* The server binds ``127.0.0.1`` by default.
* Every request must carry the server's token (:class:`TokenAuth`), as on a notebook
  server: anyone else who can reach the port, a local user or a web page in a browser,
  could otherwise act as an agent of the team, run commands in its sandbox and edit its
  files. :func:`serve_http` uses the token it is given, or generates one at start
  (``secrets.token_urlsafe(32)``) and hands it out once, in the URL given to ``on_ready``
  (``http://127.0.0.1:8765/mcp?token=...``). ``no_token=True`` serves without one, and
  only on loopback (:func:`check_bind` refuses any other address).
* The token is accepted as ``Authorization: Bearer <token>``, or as ``?token=<token>`` in
  the URL. Opening a dashboard page with ``?token=`` also sets an HttpOnly, SameSite=Strict
  cookie, which opens the dashboard's read-only routes and nothing else (not ``/mcp``).
  Anything else gets ``401`` with a one-line JSON error. Comparisons take constant time.
* DNS-rebinding protection stays on: requests must name an allowed ``Host`` (and
  ``Origin``, when a browser sends one). On loopback the SDK allows ``127.0.0.1``,
  ``localhost`` and ``[::1]`` on any port; on another address the bound host, this
  machine's names and addresses, and the hosts given in ``allowed_hosts``.
* The port is bound (:func:`listen`) before the team starts, so a port in use fails at
  once, with one message, and nothing has to be stopped.
* ``X-Agent-Name: <name>`` picks the agent a request acts as (see
  :mod:`toolcards.server._app`).
* A client that sends too slowly is dropped: a request's headers must arrive within 10 s
  and its body at 1 KB/s after 10 s of grace; headers are at most 16 KiB
  (:class:`~toolcards.server._client_limits.ClientLimits`, ``limits=``). Answers are not
  timed: long tool calls and event streams live on.

The MCP endpoint is ``http://<host>:<port>/mcp``. Sessions are stateful for handshake-era
clients (so resource-updated notifications reach them on their GET stream) and answered
per request for 2026-07-28 clients. Streams are resumable: a client that reconnects with
``Last-Event-ID`` gets what it missed (:mod:`toolcards.server._event_store`).
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from toolcards.errors import WiringError
from toolcards.server._client_limits import ClientLimits

if TYPE_CHECKING:
    import anyio
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from toolcards.server._app import TeamServer

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PATH",
    "DEFAULT_PORT",
    "TOKEN_QUERY",
    "TokenAuth",
    "check_bind",
    "endpoint_url",
    "http_app",
    "is_loopback",
    "listen",
    "serve_asgi",
    "serve_http",
]

logger = logging.getLogger("toolcards.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_PATH = "/mcp"
TOKEN_QUERY = "token"
"""The query parameter that carries the token in a URL (``/mcp?token=...``)."""
LISTEN_BACKLOG = 2048


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
            "the team. Drop --no-token (a token is then generated), pass --token (or set TOOLCARDS_TOKEN), "
            "or bind 127.0.0.1."
        )


def endpoint_url(host: str, port: int, path: str = DEFAULT_PATH, token: str | None = None) -> str:
    """The URL a client connects to, with ``?token=`` when ``token`` is given."""
    bare = host.strip("[]")
    shown = f"[{bare}]" if ":" in bare else bare
    url = f"http://{shown}:{port}{path}"
    return f"{url}?{TOKEN_QUERY}={token}" if token else url


CookieRoutes = Callable[["Scope"], bool]
"""Which requests the dashboard cookie may authorise: a predicate on the ASGI scope."""


class TokenAuth:
    """ASGI middleware: an HTTP request is passed on only if it carries the token, else 401.

    Accepted, each compared in constant time:

    * ``Authorization: Bearer <token>`` (what API clients send), on every route;
    * ``?token=<token>`` in the URL, on every route;
    * the dashboard cookie, only on the requests ``cookie_routes`` admits: the dashboard's
      read-only routes (:func:`toolcards.dashboard._app.is_dashboard_read`). A request with
      the query token on such a route sets it (HttpOnly, SameSite=Strict, ``Path=/``, named
      ``toolcards-<port>``), so a browser that opened the printed link needs no query later.
      Without ``cookie_routes`` no cookie is set or accepted.

    The cookie is a lesser credential than the token, by design. Browsers send a host's
    cookies to every port of that host, so any local listener the user's browser visits
    receives it: it must not open anything that changes the team or reaches its tools
    (``/mcp``: tool calls, writes, commands). Its value is an HMAC of
    ``dashboard:<port>`` keyed by the token: never the token itself, and worthless at a
    server on another port even when both were given the same token.

    A wrong credential is not an error of its own: the request is refused unless another one
    it carries is right. Lifespan scopes pass through; a websocket without the token is
    closed.
    """

    def __init__(self, app: ASGIApp, token: str, *, cookie_routes: CookieRoutes | None = None) -> None:
        if not token:
            raise ValueError("TokenAuth needs a non-empty token")
        self.app = app
        self.cookie_routes = cookie_routes
        self._token = token.encode("utf-8")
        self._cookie_values: dict[int | None, bytes] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = self._headers(scope)
        browsing = self.cookie_routes is not None and self.cookie_routes(scope)
        if self._bearer_ok(headers) or (browsing and self._cookie_ok(headers, scope)):
            await self.app(scope, receive, send)
        elif self._query_ok(scope):
            await self.app(scope, receive, self._setting_cookie(send, scope) if browsing else send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _unauthorized(send)

    def cookie_for(self, port: int | None) -> str:
        """The ``name=value`` of the dashboard cookie this middleware sets on ``port``."""
        return f"{_cookie_name(port)}={self._cookie_value(port).decode()}"

    # -- credentials --------------------------------------------------------------------

    @staticmethod
    def _headers(scope: Scope) -> dict[bytes, bytes]:
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            name = bytes(key).lower()
            # Several Cookie headers (HTTP/2 splits them) are one list of pairs.
            headers[name] = (
                headers[name] + b"; " + bytes(value) if name == b"cookie" and name in headers else bytes(value)
            )
        return headers

    def _cookie_value(self, port: int | None) -> bytes:
        value = self._cookie_values.get(port)
        if value is None:
            purpose = f"dashboard:{'' if port is None else port}".encode()
            value = self._cookie_values[port] = hmac.new(self._token, purpose, hashlib.sha256).hexdigest().encode()
        return value

    def _bearer_ok(self, headers: dict[bytes, bytes]) -> bool:
        scheme, _, credential = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self._token)

    def _cookie_ok(self, headers: dict[bytes, bytes], scope: Scope) -> bool:
        port = _port(scope)
        wanted, expected = _cookie_name(port).encode(), self._cookie_value(port)
        for pair in headers.get(b"cookie", b"").split(b";"):
            key, _, value = pair.strip().partition(b"=")
            if key == wanted and hmac.compare_digest(value, expected):
                return True
        return False

    def _query_ok(self, scope: Scope) -> bool:
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        provided = [value for key, value in parse_qsl(query) if key == TOKEN_QUERY]
        return bool(provided) and hmac.compare_digest(provided[0].encode("utf-8"), self._token)

    def _setting_cookie(self, send: Send, scope: Scope) -> Send:
        cookie = f"{self.cookie_for(_port(scope))}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), (b"set-cookie", cookie)]}
            await send(message)

        return send_with_cookie


def _port(scope: Scope) -> int | None:
    server = scope.get("server")
    return server[1] if server else None


def _cookie_name(port: int | None) -> str:
    # Browsers share cookies between the ports of a host: one name per port keeps two
    # servers on one machine from overwriting each other's cookie.
    return "toolcards" if port is None else f"toolcards-{port}"


async def _unauthorized(send: Send) -> None:
    body = json.dumps(
        {
            "error": "unauthorized",
            "error_description": "This server needs its token: send 'Authorization: Bearer <token>', "
            "or use the URL toolcards serve printed (it ends in ?token=...).",
        }
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


def listen(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> list[socket.socket]:
    """Listening sockets on ``host:port``, one per address ``host`` resolves to.

    With ``port`` 0 the first address gets a free port and the others the same one. Call it
    before starting anything, and pass the sockets to :func:`serve_http` (which closes them).

    Raises:
        OSError: the address cannot be served (in use, not this machine's, a port that needs
            privileges, a name that does not resolve); the message names it and the fix.
    """
    where = endpoint_url(host, port, path="").removeprefix("http://")
    try:
        addresses = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise OSError(
            f"Cannot serve on {where}: the host name does not resolve ({reason}). "
            "Pass an address of this machine, such as 127.0.0.1."
        ) from None
    unique = list(dict.fromkeys(addresses))
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in unique:
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and len(unique) > 1:
                # The IPv4 address has its own socket.
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            bound_port = sockets[0].getsockname()[1] if port == 0 and len(sockets) > 1 else address[1]
            sock.bind((address[0], bound_port, *address[2:]))
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        error = OSError(f"Cannot serve on {where}: {_bind_problem(exc, port)}")
        error.errno = exc.errno  # callers may still tell "in use" from other failures
        raise error from None
    return sockets


def _bind_problem(exc: OSError, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "the port is in use. Stop the process holding it, or pick another port (0 picks a free one)."
    if exc.errno == errno.EADDRNOTAVAIL:
        return "that address is not one of this machine's. Bind 127.0.0.1 or an address of this machine."
    if exc.errno in (errno.EACCES, errno.EPERM):
        hint = "ports below 1024 need privileges: pick a higher port" if 0 < port < 1024 else "pick another port"
        return f"permission denied; {hint}."
    return f"{exc.strerror or exc}."


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
    no_token: bool = False,
    path: str = DEFAULT_PATH,
    allowed_hosts: Sequence[str] = (),
    fallback: ASGIApp | None = None,
    cookie_routes: CookieRoutes | None = None,
) -> ASGIApp:
    """The ASGI app serving ``team_server`` at ``path`` (call once per TeamServer).

    Its lifespan runs the MCP session manager: serve it with a server that runs lifespans
    (uvicorn does).

    Args:
        token: Every request must carry it (:class:`TokenAuth`).
        no_token: Serve without a token instead (loopback only): any local user or web page
            that reaches the port can call the team's tools.
        fallback: The app for every other path (``toolcards serve`` puts the dashboard at
            ``/``), behind the same token.
        cookie_routes: The requests of ``fallback`` the dashboard cookie may authorise (its
            read-only routes); never the MCP endpoint, whatever it admits. ``None``: the
            token is needed everywhere and no cookie is set (see :class:`TokenAuth`).

    Raises:
        WiringError: neither ``token`` nor ``no_token`` (or both) is given, or ``no_token``
            on an address other machines can reach.
    """
    if no_token and token:
        raise WiringError("Pass a token or no_token=True, not both.")
    if not no_token and not token:
        raise WiringError("http_app needs a token (or no_token=True, on loopback only); serve_http generates one.")
    check_bind(host, token)
    from toolcards.server._event_store import ReplayBuffer

    app: ASGIApp = team_server.server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=_security_settings(host, allowed_hosts),
        event_store=ReplayBuffer(),
    )
    app = _EndpointWithSlash(app, path)
    browser_routes: CookieRoutes | None = None
    if fallback is not None:
        routed = _EndpointOrElse(app, path, fallback)
        app = routed
        if cookie_routes is not None:
            browser_routes = routed.beside_endpoint(cookie_routes)
    return TokenAuth(app, token, cookie_routes=browser_routes) if token else app


class _EndpointWithSlash:
    """``<path>/`` served as ``<path>``. The SDK's router would redirect it there, naming the
    request's ``Host`` (and keeping a ``?token=``) before its DNS-rebinding check runs: a
    foreign host got a redirect to itself carrying the token, where ``<path>`` gets 421."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.slashed = path.rstrip("/") + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == self.slashed:
            path = self.slashed[:-1]
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


class _EndpointOrElse:
    """Requests for the MCP endpoint (and lifespan events) go to ``endpoint``, others to ``other``."""

    def __init__(self, endpoint: ASGIApp, path: str, other: ASGIApp) -> None:
        self.endpoint = endpoint
        self.path = path.rstrip("/") or "/"
        self.other = other

    def beside_endpoint(self, routes: CookieRoutes) -> CookieRoutes:
        """``routes``, except requests for the endpoint: whatever ``routes`` says of its path."""
        return lambda scope: not self.is_endpoint(scope) and routes(scope)

    def is_endpoint(self, scope: Scope) -> bool:
        """Whether ``scope`` goes to the endpoint (a lifespan event does too)."""
        if scope["type"] == "lifespan":
            return True
        path = str(scope.get("path", ""))
        return path == self.path or path.startswith(self.path + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self.endpoint if self.is_endpoint(scope) else self.other)(scope, receive, send)


async def serve_http(
    team_server: TeamServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    no_token: bool = False,
    path: str = DEFAULT_PATH,
    allowed_hosts: Sequence[str] = (),
    sockets: Sequence[socket.socket] | None = None,
    stop: anyio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
    fallback: ASGIApp | None = None,
    cookie_routes: CookieRoutes | None = None,
    on_stop: Callable[[], None] | None = None,
    limits: ClientLimits | None = None,
) -> None:
    """Serve ``team_server`` with uvicorn until ``stop`` is set (or the task is cancelled).

    Binds the port (unless ``sockets`` are given), then starts the team. Does not close the
    team: the caller does (``await team_server.aclose()``). uvicorn's own signal handling is
    off, so the caller decides what SIGINT/SIGTERM do.

    Args:
        token: The token every request must carry. Without one (and without ``no_token``) a
            token is generated, and the URL given to ``on_ready`` carries it.
        no_token: Serve without a token (loopback only).
        sockets: Listening sockets from :func:`listen` on ``host``; closed when serving ends.
        on_ready: Called with the endpoint URL once the server accepts connections; the URL
            ends in ``?token=...`` when the token was generated here (a token the caller
            passed is not repeated).
        fallback: Served at every other path, behind the same token (see :func:`http_app`).
        cookie_routes: The requests of ``fallback`` the dashboard cookie may authorise (see
            :func:`http_app`).
        on_stop: Called when ``stop`` is set, before the server stops (to end long streams).
        limits: How slowly and how much a client may send (default :class:`ClientLimits`()).

    Raises:
        WiringError: ``no_token`` on an address other machines can reach (or with a
            ``token``), or the cards cannot be bound.
        OSError: the port cannot be bound (see :func:`listen`).
    """
    generated = None if token or no_token else secrets.token_urlsafe(32)
    listening = list(sockets) if sockets is not None else None
    try:
        app = http_app(
            team_server,
            host=host,
            token=token or generated,
            no_token=no_token,
            path=path,
            allowed_hosts=allowed_hosts,
            fallback=fallback,
            cookie_routes=cookie_routes,
        )
        if listening is None:
            listening = listen(host, port)
        await team_server.astart()
    except BaseException:
        for sock in listening or ():
            sock.close()
        raise
    await serve_asgi(
        app,
        listening,
        lifespan=True,
        stop=stop,
        on_ready=None if on_ready is None else lambda bound: on_ready(endpoint_url(host, bound, path, generated)),
        on_stop=on_stop,
        failed=f"The HTTP server on {endpoint_url(host, port, path)} failed to start; uvicorn logged why.",
        limits=limits,
    )


async def serve_asgi(
    app: ASGIApp,
    sockets: Sequence[socket.socket],
    *,
    lifespan: bool,
    stop: anyio.Event | None = None,
    on_ready: Callable[[int], None] | None = None,
    on_stop: Callable[[], None] | None = None,
    failed: str = "The HTTP server failed to start; uvicorn logged why.",
    limits: ClientLimits | None = None,
) -> None:
    """Serve ``app`` with uvicorn on listening ``sockets`` until ``stop`` is set (or the task
    is cancelled), then close the sockets.

    uvicorn's own signal handling is off: the caller decides what SIGINT/SIGTERM do.
    ``on_ready`` gets the bound port once connections are accepted; ``on_stop`` runs when
    ``stop`` is set, before the server stops (to end long-lived streams); a connection still
    being answered ``SHUTDOWN_GRACE_S`` later is closed. Every connection is held to ``limits``
    (default :class:`ClientLimits`(); see :mod:`toolcards.server._limited_protocol`).

    Raises:
        RuntimeError: ``failed``, when uvicorn could not start (it exits the process on its own).
    """
    import contextlib

    import anyio
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield  # the caller owns SIGINT/SIGTERM

    from toolcards.server._limited_protocol import limited_protocol

    limits = limits or ClientLimits()
    try:
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on" if lifespan else "off",
            access_log=False,
            http=limited_protocol(limits),
            h11_max_incomplete_event_size=limits.max_header_bytes,
        )
        server = Server(config)

        async def watch() -> None:
            while not server.started:
                if server.should_exit:
                    return
                await anyio.sleep(0.02)
            if on_ready is not None:
                on_ready(sockets[0].getsockname()[1])
            if stop is not None:
                await stop.wait()
                if on_stop is not None:
                    on_stop()
                server.should_exit = True

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            try:
                await server.serve(sockets=list(sockets))
            except SystemExit:
                # uvicorn exits the process when its startup fails; report it as the error it is.
                raise RuntimeError(failed) from None
            finally:
                tasks.cancel_scope.cancel()
    finally:
        for sock in sockets:
            sock.close()
