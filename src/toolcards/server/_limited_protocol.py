"""uvicorn's HTTP/1.1 protocol with :class:`~toolcards.server._client_limits.ClientLimits` enforced.

uvicorn has no header-read or body-rate timeout of its own (see
:mod:`toolcards.server._client_limits`), and an ASGI middleware cannot add one: the
application is called only once the headers have all arrived. So the limits live in the
protocol, as a subclass of uvicorn's h11 protocol (the one uvicorn picks when ``httptools``
is not installed, and the one used here whether or not it is). It adds one timer per
connection and changes nothing else.

The timer follows what h11 says the client is doing (``their_state``): sending a request's
line and headers (``IDLE``), sending its body (``SEND_BODY``), or nothing we wait for (the
request has arrived: the answer, a long tool call or an event stream, is not timed). The
state is looked at after each chunk of data is handled and after each response, which is
where it can change.

When serving stops, a connection still being answered gets :data:`SHUTDOWN_GRACE_S` to
finish, then is closed: an event stream never finishes by itself (every connected MCP client
keeps a GET on ``/mcp`` open), and uvicorn would wait for it forever, so SIGTERM did not stop
the server. Closing the connection ends the stream the way a client leaving does; uvicorn's own
``timeout_graceful_shutdown`` cancels the application's task instead, and logs a traceback for it.

The size of a request's line and headers is bounded twice. h11 refuses (``400``) a request
whose head is still incomplete past ``max_header_bytes``, which bounds what is buffered while
it arrives; but it checks only what it could not parse yet, so a larger head that arrives in
one read (up to 256 KiB) is parsed whole. That one is answered ``431`` before the
application sees it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar, Literal, cast

import h11
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolcards.server._client_limits import ClientLimits

__all__ = ["SHUTDOWN_GRACE_S", "LimitedH11Protocol", "limited_protocol"]

logger = logging.getLogger("toolcards.server")

Phase = Literal["headers", "body"] | None
"""What the client is sending that is timed: a request's headers, its body, or nothing."""
SHUTDOWN_GRACE_S = 5.0
"""How long a connection still being answered when serving stops may go on."""


def limited_protocol(limits: ClientLimits) -> type[asyncio.Protocol]:
    """The protocol class enforcing ``limits``, for ``uvicorn.Config(http=...)``."""
    return cast(type[asyncio.Protocol], type("LimitedH11Protocol", (LimitedH11Protocol,), {"limits": limits}))


class LimitedH11Protocol(H11Protocol):
    """uvicorn's ``H11Protocol``, closing connections whose client sends too slowly.

    Use :func:`limited_protocol`, which sets :attr:`limits`. Pass ``limits.max_header_bytes``
    to uvicorn as ``h11_max_incomplete_event_size`` too: h11 enforces that one.
    """

    limits: ClassVar[ClientLimits] = ClientLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.app = _HeadersWithin(self.app, self.limits.max_header_bytes)
        self._timer: asyncio.TimerHandle | None = None
        self._phase: Phase = None
        self._since = 0.0
        """When the phase began, or (for a body) when the server last resumed reading it."""
        self._received = 0
        """Bytes of the body received since ``_since``."""
        self._heard = False
        """Whether any byte of the request in ``headers`` phase has come."""

    # -- uvicorn's protocol, followed -------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow()

    def data_received(self, data: bytes) -> None:
        if self._phase == "body":
            self._received += len(data)
        elif self._phase == "headers":
            self._heard = True
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._enter(None)
        super().connection_lost(exc)

    def shutdown(self) -> None:
        super().shutdown()
        if not self.transport.is_closing():  # an answer still going: a stream, a long call
            self.loop.call_later(SHUTDOWN_GRACE_S, self._close_after_grace)

    def _close_after_grace(self) -> None:
        if not self.transport.is_closing() and self.transport.get_protocol() is self:
            logger.debug("closed a connection still being answered %g s after serving stopped", SHUTDOWN_GRACE_S)
            self.transport.close()

    # -- the timer --------------------------------------------------------------------------

    def _follow(self) -> None:
        """Time the phase the client is in, from now if it has just entered it."""
        state = self.conn.their_state
        if self.transport.is_closing():
            phase: Phase = None
        elif state is h11.IDLE:
            phase = "headers"
        elif state is h11.SEND_BODY:
            phase = "body"
        else:
            phase = None
        if phase != self._phase:
            self._enter(phase)

    def _enter(self, phase: Phase) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._phase, self._since, self._received, self._heard = phase, self.loop.time(), 0, False
        if phase == "headers":
            self._timer = self.loop.call_later(self.limits.header_timeout_s, self._expired)
        elif phase == "body":
            self._timer = self.loop.call_later(self.limits.body_timeout_s, self._expired)

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return  # closed meanwhile, or handed over (a websocket upgrade)
        limits = self.limits
        if self._phase == "body":
            if self.flow.read_paused:
                # The application has not taken what arrived: the client is not the one late.
                self._enter("body")
                return
            deadline = self._since + limits.body_timeout_s + self._received / limits.body_min_rate
            late = self.loop.time() - deadline
            if late < 0:
                self._timer = self.loop.call_later(-late, self._expired)
                return
            self._close(
                f"its request body arrived slower than {limits.body_min_rate:g} bytes/s "
                f"(after {limits.body_timeout_s:g} s of grace)"
            )
        elif self._phase == "headers":
            if self._heard:
                self.transport.write(_request_timeout(limits.header_timeout_s))
            self._close(f"its request headers did not arrive within {limits.header_timeout_s:g} s")

    def _close(self, why: str) -> None:
        # DEBUG: a client that does this on purpose must not fill the log either.
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        logger.debug("closed the connection of %s: %s", client, why)
        self._enter(None)
        self.transport.close()


class _HeadersWithin:
    """ASGI: a request whose line and headers exceed ``limit`` bytes is answered ``431``, and its
    connection closed, instead of reaching ``app``."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        size = _head_size(scope)
        if scope["type"] != "http" or size <= self.limit:
            await self.app(scope, receive, send)
            return
        body = (
            f"The request's line and headers are {size:,} bytes, over this server's limit of {self.limit:,}. "
            "Send fewer or shorter headers.\n"
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 431,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _head_size(scope: Any) -> int:
    """The bytes of the request line and headers, as sent (give or take optional spaces)."""
    line = len(scope.get("method", "")) + len(scope.get("raw_path", b"")) + len(scope.get("query_string", b""))
    headers = sum(len(name) + len(value) + 4 for name, value in scope.get("headers", ()))
    return line + 14 + headers + 2  # " ", "?", " HTTP/1.1\r\n"; ": " and "\r\n" per header; the blank line


def _request_timeout(seconds: float) -> bytes:
    # Written as bytes: h11 can only answer a request it has received in full.
    body = f"The request's headers did not all arrive within {seconds:g} s; the connection is closed.\n".encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body
